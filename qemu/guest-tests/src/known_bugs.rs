//! Reproducers of kernel-module bugs found by the reliability groups. Not in the suite (they
//! fail, or crash the guest, until the modules are fixed): `run.sh --mode knownbugs`. Each
//! case passes once its bug is fixed, so it can move into the suite then.

use std::time::Duration;

use directnvm_abi::*;

use crate::soak::{dev, handle, read_check, scratch, write_read, BLOCK};
use crate::sys::{ioctl, ioctl_none, open, sh};
use crate::tap::{check, eq, Case, Tap};

/// GET_STATS.claimed_mask keeps the bit of a claim released by close.
fn stats_mask_after_close() -> Case {
    let a = open("/dev/directnvm").map_err(|e| e.to_string())?;
    let mut c = DnvmClaim { core: 0, flags: 0 };
    ioctl(&a, DNVM_IOC_CLAIM, &mut c).map_err(|e| e.to_string())?;
    drop(a);
    let b = open("/dev/directnvm").map_err(|e| e.to_string())?;
    let mut s = DnvmStats::default();
    ioctl(&b, DNVM_IOC_GET_STATS, &mut s).map_err(|e| e.to_string())?;
    let sysfs = std::fs::read_to_string("/sys/class/misc/directnvm/claimed").unwrap_or_default();
    eq(format!("{:#x}", s.claimed_mask), sysfs.trim().to_string(), "GET_STATS.claimed_mask vs sysfs claimed after close")
}

fn on_all_cores(off: u64, gen: u32, write: bool) -> Case {
    let d = dev()?;
    for core in 0..d.cores() {
        let mut h = handle(&d, core, Duration::from_secs(2))?;
        let mut b = h.buf_alloc(4 * BLOCK).map_err(|e| e.to_string())?;
        let lba = scratch(d.info().capacity_lbas) + 0x3_c000 + off + u64::from(core) * 64;
        let r = if write { write_read(&mut h, &mut b, lba, gen) } else { read_check(&mut h, &mut b, lba, gen) };
        r.map_err(|e| format!("core {core}: {e}"))?;
    }
    Ok(())
}

/// Block A written before, block B after `disrupt`; A must still hold its data. With stale
/// engine queue pointers the controller re-executes the old SQEs (A's write, now taking the
/// buffer that holds B's data).
fn io_across(disrupt: impl FnOnce() -> Case, gen: u32) -> Case {
    on_all_cores(0, gen, true)?;
    disrupt()?;
    std::thread::sleep(Duration::from_millis(300));
    on_all_cores(0x400, gen + 1, true)?;
    on_all_cores(0, gen, false)
}

/// I/O, module reload, I/O: the re-probe re-creates the NVMe I/O queues but the engines keep
/// their SQ tail / CQ head / phase (no QRESET on rev 2; impossible on rev 1).
fn io_after_reload() -> Case {
    io_across(|| {
        let (ok, out) = sh("rmmod hdu && rmmod directnvm && insmod /lib/modules/directnvm.ko && insmod /lib/modules/hdu.ko");
        check(ok, format!("reload: {out}"))
    }, 10)
}

/// I/O, CONTROLLER_INIT, I/O: same queue-pointer problem without a reload.
fn io_after_controller_init() -> Case {
    io_across(|| {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        ioctl_none(&fd, DNVM_IOC_CONTROLLER_INIT).map_err(|e| format!("CONTROLLER_INIT: {e}"))
    }, 20)
}

/// The reproducers.
pub fn run(t: &mut Tap) {
    t.case("known bug: GET_STATS.claimed_mask after a close released the claim", stats_mask_after_close);
    t.case("known bug: verified I/O after CONTROLLER_INIT", io_after_controller_init);
    t.case("known bug: verified I/O after rmmod/insmod", io_after_reload);
    // Last: today this oopses in HduFile::open and leaves misc_mtx held (the guest hangs).
    t.case("known bug: hdu1 unbind AND bind x10 under racing opens", || crate::lifecycle::unbind_race(1, 10, true));
}
