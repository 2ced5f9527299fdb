// SPDX-License-Identifier: MIT OR Apache-2.0
//! Module life cycle: rmmod/insmod cycles with and without open files and mappings (rmmod must
//! fail while either module is busy and succeed after), and unbind/bind of HDUs while a
//! process does I/O on them or races open/mmap/close against the unbind.
//!
//! `LIFECYCLE_CYCLES` sets the reload count (default 20).

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use directnvm_abi::*;

use crate::fixtures::data::{dev, env_u64, handle, write_read, BLOCK};
use crate::fixtures::modules::{hdu_device, insmod_both, rmmod, wait_nodes};
use crate::fixtures::unbind::unbind_race;
use crate::summary::{self, FAULTS_INJECTED, FAULTS_SURVIVED, RELOADS};
use crate::sys::{ioctl, open, sh, Map};
use crate::tap::{check, Case, Tap};

fn data_region(fd: &OwnedFd, core: u32) -> Result<DnvmRegion, String> {
    // SAFETY: plain-integer struct, all-zero valid.
    let mut l: DnvmLayout = unsafe { std::mem::zeroed() };
    ioctl(fd, DNVM_IOC_GET_LAYOUT, &mut l).map_err(|e| e.to_string())?;
    l.regions[..l.count as usize].iter().copied().find(|r| r.core == core && r.kind == DNVM_REGION_DATA).ok_or("no data region".into())
}

/// One reload cycle; `busy` selects what holds a module while the first rmmod is tried.
fn cycle(busy: u32) -> Case {
    match busy {
        // /dev/directnvm open: directnvm stays, hdu goes.
        1 => {
            let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
            check(rmmod("hdu"), "rmmod hdu failed (nothing holds it)")?;
            check(!rmmod("directnvm"), "rmmod directnvm succeeded with /dev/directnvm open")?;
            drop(fd);
            check(rmmod("directnvm"), "rmmod directnvm failed after close")?;
        }
        // Only a mapping of a claimed data region (descriptor closed) holds directnvm.
        2 => {
            let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
            let r = data_region(&fd, 1)?;
            let mut c = DnvmClaim { core: 1, flags: 0 };
            ioctl(&fd, DNVM_IOC_CLAIM, &mut c).map_err(|e| e.to_string())?;
            let mut m = Map::shared(&fd, 4096, r.offset).map_err(|e| e.to_string())?;
            drop(fd);
            m.bytes()[0] = 0x5a;
            check(rmmod("hdu"), "rmmod hdu failed")?;
            check(!rmmod("directnvm"), "rmmod directnvm succeeded while a mapping holds the file")?;
            check(m.bytes()[0] == 0x5a, "mapping changed while the module stayed")?;
            drop(m);
            check(rmmod("directnvm"), "rmmod directnvm failed after munmap")?;
        }
        // Only a mapping of the HDU register page holds hdu.
        3 => {
            let fd = open("/dev/hdu2").map_err(|e| e.to_string())?;
            let m = Map::shared(&fd, 4096, 0).map_err(|e| e.to_string())?;
            drop(fd);
            let _ = m.rd64(HDU_REG_DONE);
            check(!rmmod("hdu"), "rmmod hdu succeeded while a register mapping holds the file")?;
            drop(m);
            check(rmmod("hdu"), "rmmod hdu failed after munmap")?;
            check(rmmod("directnvm"), "rmmod directnvm failed")?;
        }
        // /dev/hdu0 open (and /dev/directnvm open): both refuse, then both go.
        4 => {
            let h = open("/dev/hdu0").map_err(|e| e.to_string())?;
            let d = open("/dev/directnvm").map_err(|e| e.to_string())?;
            check(!rmmod("hdu"), "rmmod hdu succeeded with /dev/hdu0 open")?;
            check(!rmmod("directnvm"), "rmmod directnvm succeeded with /dev/directnvm open")?;
            drop(h);
            drop(d);
            check(rmmod("hdu"), "rmmod hdu failed after close")?;
            check(rmmod("directnvm"), "rmmod directnvm failed after close")?;
        }
        _ => {
            check(rmmod("hdu"), "rmmod hdu (idle) failed")?;
            check(rmmod("directnvm"), "rmmod directnvm (idle) failed")?;
        }
    }
    wait_nodes(false)?;
    let (_, iomem) = sh("grep -E 'directnvm' /proc/iomem");
    check(iomem.trim().is_empty(), format!("resources still held after rmmod: {iomem}"))?;
    insmod_both()?;
    summary::add(&RELOADS, 1);
    // Control path back: controller up, HDUs answer.
    let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
    // SAFETY: plain-integer struct, all-zero valid.
    let mut i: DnvmInfo = unsafe { std::mem::zeroed() };
    ioctl(&fd, DNVM_IOC_GET_INFO, &mut i).map_err(|e| e.to_string())?;
    check(i.flags & DNVM_INFO_READY != 0, "controller not ready after reload")?;
    for n in 0..i.cores {
        let h = open(&format!("/dev/hdu{n}")).map_err(|e| format!("hdu{n} after reload: {e}"))?;
        let mut hi = HduInfo::default();
        ioctl(&h, HDU_IOC_GET_INFO, &mut hi).map_err(|e| format!("hdu{n} GET_INFO after reload: {e}"))?;
    }
    Ok(())
}

fn state(core: u32) -> String {
    std::fs::read_to_string(format!("/sys/class/misc/hdu{core}/state")).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// A child does verified I/O on `core` in a loop; the HDU is unbound under it. The child must
/// end (SIGBUS on the zapped register page, or a library error), never hang; after bind the
/// next owner's I/O verifies.
fn unbind_under_io(core: u32) -> Case {
    let devname = hdu_device(core)?;
    let d = dev()?;
    let base = crate::fixtures::data::scratch(d.info().capacity_lbas) + 0x3_0000 + u64::from(core) * 0x100;
    drop(d);
    // SAFETY: fork; the child runs the closure and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = (|| -> Result<(), i32> {
            let d = dev().map_err(|_| 2)?;
            let mut h = handle(&d, core, Duration::from_secs(2)).map_err(|_| 3)?;
            let mut b = h.buf_alloc(4 * BLOCK).map_err(|_| 4)?;
            for gen in 1.. {
                write_read(&mut h, &mut b, base, gen).map_err(|_| 5)?;
            }
            Ok(())
        })();
        // SAFETY: leave the forked child without running the parent's destructors.
        unsafe { libc::_exit(code.err().unwrap_or(0)) }
    }
    check(pid > 0, "fork")?;
    std::thread::sleep(Duration::from_millis(150));
    let unbound = std::fs::write("/sys/bus/platform/drivers/hdu/unbind", &devname);
    summary::add(&FAULTS_INJECTED, 1);
    let t0 = Instant::now();
    let mut st = 0;
    let ended = loop {
        // SAFETY: polling our own child.
        if unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) } == pid {
            break true;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            // SAFETY: our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            // SAFETY: reaping it.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            break false;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let bound = std::fs::write("/sys/bus/platform/drivers/hdu/bind", &devname);
    unbound.map_err(|e| format!("unbind {devname}: {e}"))?;
    bound.map_err(|e| format!("bind {devname}: {e}"))?;
    check(ended, "the I/O process did not end within 10 s of the unbind (hung)")?;
    let sigbus = libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGBUS;
    let lib_err = libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 5;
    check(sigbus || lib_err, format!("child status {st:#x}: want SIGBUS or a library error (exit 5)"))?;
    // Engine idle again (rev 2: probe resets it; rev 1: the batch ran out), then I/O.
    let t0 = Instant::now();
    while !["idle", "done"].contains(&state(core).as_str()) {
        check(t0.elapsed() < Duration::from_secs(5), format!("hdu{core} state {} 5 s after bind", state(core)))?;
        std::thread::sleep(Duration::from_millis(5));
    }
    let d = dev()?;
    let mut h = handle(&d, core, Duration::from_secs(5)).map_err(|e| format!("after rebind: {e}"))?;
    let mut b = h.buf_alloc(4 * BLOCK).map_err(|e| e.to_string())?;
    write_read(&mut h, &mut b, base, 1000).map_err(|e| format!("after rebind: {e}"))?;
    summary::add(&FAULTS_SURVIVED, 1);
    println!("# hdu{core} unbound under I/O: child {}", if sigbus { "got SIGBUS" } else { "saw a library error" });
    Ok(())
}

/// Unbind/bind cases (they need I/O; run them before the reload cycles).
pub fn run_unbind(t: &mut Tap) {
    for core in [0u32, 3] {
        t.case(&format!("lifecycle: hdu{core} unbound while a process does I/O on it: process ends, rebind, I/O verifies"), || {
            unbind_under_io(core)
        });
    }
    t.case("lifecycle: hdu1 unbind x10 under racing open/ioctl/mmap/close threads", || unbind_race(1, 10, false));
}

/// Reload cycles (no I/O after them: see the report on queue pointers across re-probe).
pub fn run_reload(t: &mut Tap) {
    let n = env_u64("LIFECYCLE_CYCLES", 20) as u32;
    t.case(&format!("lifecycle: {n} rmmod/insmod cycles, busy files and mappings refuse rmmod, control path back each time"), || {
        let t0 = Instant::now();
        for i in 0..n {
            cycle(i % 5).map_err(|e| format!("cycle {i}: {e}"))?;
        }
        println!("# {n} reload cycles in {:.1} s", t0.elapsed().as_secs_f64());
        Ok(())
    });
}
