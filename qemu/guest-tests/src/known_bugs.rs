// SPDX-License-Identifier: MIT OR Apache-2.0
//! Kernel-module bugs found by the reliability groups. The fixed ones run in the suite as
//! regression tests (`run_fixed`). `run.sh --mode knownbugs` shows what the raw ioctls still
//! allow without the controller re-init protocol (data corruption); not in the suite.

use std::time::Duration;

use directnvm_abi::*;

use crate::fixtures::data::{dev, handle, read_check, scratch, write_read, BLOCK};
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
    io_across(
        || {
            let (ok, out) = sh("rmmod hdu && rmmod directnvm && insmod /lib/modules/directnvm.ko && insmod /lib/modules/hdu.ko");
            check(ok, format!("reload: {out}"))
        },
        10,
    )
}

/// I/O, CONTROLLER_INIT, I/O: same queue-pointer problem without a reload.
fn io_after_controller_init() -> Case {
    io_across(
        || {
            let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
            ioctl_none(&fd, DNVM_IOC_CONTROLLER_INIT).map_err(|e| format!("CONTROLLER_INIT: {e}"))
        },
        20,
    )
}

/// Regression tests of the module bugs these groups found and that are fixed (in `suite`).
pub fn run_fixed(t: &mut Tap) {
    t.case("regression: GET_STATS.claimed_mask after a close released the claim", stats_mask_after_close);
    // Was an oops in HduFile::open (the misc node was registered before its shared state).
    t.case("regression: hdu1 unbind AND bind x10 under racing opens", || crate::fixtures::unbind::unbind_race(1, 10, true));
}

/// What the raw ioctls still allow: re-creating the I/O queues under engines that did I/O.
/// libnvmedl's `Device::controller_init` (queue reset on rev 2, refusal on rev 1) is the
/// supported path (docs/design.md); these show why.
pub fn run(t: &mut Tap) {
    t.case("raw CONTROLLER_INIT without the engines' queue reset: verified I/O after", io_after_controller_init);
    t.case("module reload without the engines' queue reset: verified I/O after", io_after_reload);
}
