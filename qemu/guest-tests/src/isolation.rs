// SPDX-License-Identifier: MIT OR Apache-2.0
//! Isolation under races: no mapping of a core's pages, or of an HDU's register page,
//! is usable once RELEASE, close or unbind has returned, whatever mmap, mremap or fork does
//! beside it; state-changing ioctls need a file opened for writing.
//!
//! A mapping is probed from the kernel side, so a dead one cannot kill the test with SIGBUS:
//! `write(2)` from it into a pipe reads it, `read(2)` from a pipe into it writes it; both
//! return `EFAULT` when the page cannot be faulted in. Each race ends with the proof the issue
//! asks for: a new owner (another process) fills its memory, every surviving old mapping is
//! read and written, and the new owner checks that nothing changed and nothing was read.
//!
//! `ISOLATION_ITERS` sets the iterations of the directnvm races (suite default 400; the fuzz
//! mode uses 5x).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use directnvm_abi::*;

use crate::fixtures::data::{env_u64, seed_from_env, Rng};
use crate::fixtures::modules::hdu_device;
use crate::sys::{errno, ioctl, ioctl_none, open};
use crate::tap::{check, Case, Tap};
use dnvm_testkit::ioctl::claim_raw;

const PAGE: usize = 4096;

/// Kernel-side access to user addresses through a pipe.
struct Probe {
    r: OwnedFd,
    w: OwnedFd,
}

impl Probe {
    fn new() -> Probe {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
        assert_eq!(rc, 0, "pipe2");
        // SAFETY: fresh descriptors we own.
        unsafe { Probe { r: OwnedFd::from_raw_fd(fds[0]), w: OwnedFd::from_raw_fd(fds[1]) } }
    }

    /// Read `len` bytes at `addr` through the kernel: Some(bytes) if the page is reachable.
    fn read(&self, addr: usize, len: usize) -> Option<Vec<u8>> {
        // SAFETY: the kernel checks `addr`; a bad address is EFAULT, never a signal.
        let n = unsafe { libc::write(self.w.as_raw_fd(), addr as *const libc::c_void, len) };
        if n < 0 {
            return None;
        }
        let mut buf = vec![0u8; n as usize];
        // SAFETY: `buf` holds `n` bytes; the pipe has exactly what was just written.
        unsafe { libc::read(self.r.as_raw_fd(), buf.as_mut_ptr().cast(), n as usize) };
        Some(buf)
    }

    /// Write `data` at `addr` through the kernel: true if the page was reachable.
    fn write(&self, addr: usize, data: &[u8]) -> bool {
        // SAFETY: `data` is a valid buffer; the pipe is drained below in every case.
        unsafe { libc::write(self.w.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        // SAFETY: as in `read`: the kernel checks `addr`.
        let n = unsafe { libc::read(self.r.as_raw_fd(), addr as *mut libc::c_void, data.len()) };
        if n < 0 {
            let mut sink = vec![0u8; data.len()];
            // SAFETY: drain what the failed read left in the pipe.
            unsafe { libc::read(self.r.as_raw_fd(), sink.as_mut_ptr().cast(), data.len()) };
            return false;
        }
        true
    }
}

fn mmap_raw(fd: i32, len: usize, offset: u64) -> Result<usize, i32> {
    // SAFETY: a new shared mapping chosen by the kernel; nothing existing is affected.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, offset as libc::off_t) };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(p as usize)
    }
}

fn munmap(addr: usize, len: usize) {
    // SAFETY: unmaps a mapping this test created (or nothing, if it is already gone).
    unsafe { libc::munmap(addr as *mut libc::c_void, len) };
}

fn data_region(fd: &OwnedFd, core: u32) -> Result<DnvmRegion, String> {
    // SAFETY: plain-integer struct, all-zero valid.
    let mut l: DnvmLayout = unsafe { std::mem::zeroed() };
    ioctl(fd, DNVM_IOC_GET_LAYOUT, &mut l).map_err(|e| format!("GET_LAYOUT: {e}"))?;
    l.regions[..l.count as usize].iter().copied().find(|r| r.core == core && r.kind == DNVM_REGION_DATA).ok_or("no data region".into())
}

/// One racing mapper: maps `pages` pages at `offset` of `fd` until mmap is refused, touching
/// each mapping (so its PTEs exist before the revocation), shrinking or moving every other one
/// with mremap and forking a child that must not see it (VM_DONTCOPY). Returns the mappings.
fn mapper(fd: i32, offset: u64, started: &AtomicU64, max: usize, seed: u64) -> Result<Vec<(usize, usize)>, String> {
    let probe = Probe::new();
    let mut rng = Rng(seed);
    let mut maps = Vec::new();
    while maps.len() < max {
        let len = 2 * PAGE;
        let mut addr = match mmap_raw(fd, len, offset) {
            Ok(a) => a,
            Err(libc::EACCES) | Err(libc::EBADF) | Err(libc::ENODEV) => break,
            Err(e) => return Err(format!("mmap: unexpected errno {e}")),
        };
        started.fetch_add(1, SeqCst);
        // Half the mappings get their PTEs before the revocation (the zap must remove them),
        // half stay untouched (the fault after it must refuse them).
        let touched = rng.next().is_multiple_of(2);
        if touched {
            let _ = probe.read(addr, 8);
        }
        let mut cur = len;
        match rng.next() % 8 {
            0 => {
                // Shrink in place.
                // SAFETY: resizes our own mapping.
                let p = unsafe { libc::mremap(addr as *mut libc::c_void, len, PAGE, 0) };
                if p != libc::MAP_FAILED {
                    cur = PAGE;
                }
            }
            1 => {
                // Move to a place reserved with an anonymous PROT_NONE mapping.
                // SAFETY: a fresh anonymous reservation.
                let to = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
                if to != libc::MAP_FAILED {
                    // SAFETY: moves our mapping over our reservation.
                    let p = unsafe { libc::mremap(addr as *mut libc::c_void, len, len, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, to) };
                    if p == libc::MAP_FAILED {
                        munmap(to as usize, len);
                    } else {
                        addr = p as usize;
                    }
                }
            }
            2 => {
                // A forked child must not inherit the mapping: probing it there is EFAULT.
                // SAFETY: the child only calls async-signal-safe functions (write, read, _exit).
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    let leaked = probe.read(addr, 8).is_some();
                    // SAFETY: leave the child without running the parent's destructors.
                    unsafe { libc::_exit(if leaked { 1 } else { 0 }) };
                }
                let mut st = 0;
                // SAFETY: reaps our own child.
                unsafe { libc::waitpid(pid, &mut st, 0) };
                if !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0) {
                    return Err("a forked child could reach the parent's mapping (VM_DONTCOPY)".into());
                }
            }
            _ => {}
        }
        if touched {
            let _ = probe.read(addr, 8);
        }
        maps.push((addr, cur));
    }
    Ok(maps)
}

/// A process other than this one claims `core`, fills its first data page with `fill` and waits;
/// meanwhile `attack` reads and writes every stale mapping. Err if the attack reached anything
/// or the new owner's page changed.
fn new_owner_check(core: u32, offset: u64, attack: impl FnOnce() -> (usize, usize)) -> Case {
    let (ready, done) = (Probe::new(), Probe::new());
    // SAFETY: the child runs straight-line code on fresh descriptors and ends in _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = (|| {
            let fd = open("/dev/directnvm").ok()?;
            let t0 = Instant::now();
            while claim_raw(fd.as_raw_fd(), DNVM_IOC_CLAIM, core) != 0 {
                if t0.elapsed() > Duration::from_secs(5) {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let a = mmap_raw(fd.as_raw_fd(), PAGE, offset).ok()?;
            // SAFETY: our own fresh mapping of one page.
            let page = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, PAGE) };
            page.fill(0xC5);
            // SAFETY: signalling and waiting on the pipes (one byte each).
            unsafe {
                libc::write(ready.w.as_raw_fd(), b"r".as_ptr().cast(), 1);
                let mut b = 0u8;
                libc::read(done.r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            }
            Some(page.iter().all(|&b| b == 0xC5))
        })();
        // SAFETY: end the child without the parent's destructors.
        unsafe {
            libc::_exit(match code {
                Some(true) => 0,
                Some(false) => 1,
                None => 2,
            })
        };
    }
    let mut b = 0u8;
    // SAFETY: wait for the child's "ready" byte (it exits with 2 and closes the pipe on failure).
    unsafe { libc::read(ready.r.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
    let (reads, writes) = attack();
    let mut st = 0;
    // SAFETY: release the child and reap it.
    unsafe {
        libc::write(done.w.as_raw_fd(), b"d".as_ptr().cast(), 1);
        libc::waitpid(pid, &mut st, 0);
    }
    let code = if libc::WIFEXITED(st) { libc::WEXITSTATUS(st) } else { 99 };
    check(code != 2, "new owner could not claim and map the core")?;
    check(
        reads == 0 && writes == 0 && code == 0,
        format!(
            "LEAK: {reads} stale mappings read and {writes} written the new owner's memory; new owner's page {}",
            if code == 0 { "intact" } else { "CHANGED" }
        ),
    )
}

/// Stale mappings read/written by `attack` (kernel-side probes), given the list.
fn attack(maps: &[(usize, usize)]) -> (usize, usize) {
    let probe = Probe::new();
    let (mut reads, mut writes) = (0, 0);
    for &(a, _) in maps {
        if probe.read(a, 16).is_some() {
            reads += 1;
        }
        if probe.write(a, &[0x3A; 16]) {
            writes += 1;
        }
    }
    (reads, writes)
}

/// mmap (+ mremap, fork) in one thread against RELEASE in another, `iters` times.
fn mmap_vs_release(core: u32, iters: u64, seed: u64) -> Case {
    let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
    let offset = data_region(&fd, core)?.offset;
    let mut rng = Rng(seed);
    let mut alive = Vec::new();
    let mut total = 0usize;
    let t0 = Instant::now();
    for i in 0..iters {
        check(claim_raw(fd.as_raw_fd(), DNVM_IOC_CLAIM, core) == 0, format!("iteration {i}: CLAIM failed"))?;
        let started = Arc::new(AtomicU64::new(0));
        let (raw, st2, s) = (fd.as_raw_fd(), started.clone(), rng.next());
        let t = std::thread::spawn(move || mapper(raw, offset, &st2, 64, s));
        while started.load(SeqCst) == 0 {
            std::hint::spin_loop();
        }
        for _ in 0..rng.next() % 3000 {
            std::hint::spin_loop();
        }
        let rc = claim_raw(fd.as_raw_fd(), DNVM_IOC_RELEASE, core);
        let maps = t.join().map_err(|_| "mapper panicked".to_string())??;
        check(rc == 0, format!("iteration {i}: RELEASE errno {rc}"))?;
        total += maps.len();
        let probe = Probe::new();
        for (a, l) in maps {
            if probe.read(a, 8).is_some() {
                alive.push((a, l));
            } else {
                munmap(a, l);
            }
        }
    }
    let n_alive = alive.len();
    let r = new_owner_check(core, offset, || attack(&alive));
    for (a, l) in alive {
        munmap(a, l);
    }
    println!("# isolation: core {core}: {iters} RELEASE races in {:.1} s,", t0.elapsed().as_secs_f64());
    println!("#   {iters} RELEASE races, {total} racing mappings, {n_alive} usable after RELEASE");
    match r {
        Ok(()) => check(n_alive == 0, format!("{n_alive} of {total} mappings stayed usable after RELEASE returned")),
        Err(leak) => Err(format!("{n_alive} of {total} mappings stayed usable after RELEASE returned; {leak}")),
    }
}

/// mmap in one thread against close of the descriptor in another: the mappings keep the file
/// (and so its claim) alive; the core is someone else's only after the last munmap.
fn mmap_vs_close(core: u32, iters: u64, seed: u64) -> Case {
    let other = open("/dev/directnvm").map_err(|e| e.to_string())?;
    let offset = data_region(&other, core)?.offset;
    let mut rng = Rng(seed);
    for i in 0..iters {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        check(claim_raw(fd.as_raw_fd(), DNVM_IOC_CLAIM, core) == 0, format!("iteration {i}: CLAIM failed"))?;
        let started = Arc::new(AtomicU64::new(0));
        let (raw, st2, s) = (fd.as_raw_fd(), started.clone(), rng.next());
        // The number stays ours until the mapper is done: `fd` is dropped (closed) below.
        let t = std::thread::spawn(move || mapper(raw, offset, &st2, 16, s));
        while started.load(SeqCst) == 0 {
            std::hint::spin_loop();
        }
        for _ in 0..rng.next() % 2000 {
            std::hint::spin_loop();
        }
        // Close while the mapper may be mid-mmap: it then sees EBADF (the number is not reused
        // before the join: this thread opens nothing in between).
        drop(fd);
        let maps = t.join().map_err(|_| "mapper panicked".to_string())??;
        let rc = claim_raw(other.as_raw_fd(), DNVM_IOC_CLAIM, core);
        if maps.is_empty() {
            check(rc == 0, format!("iteration {i}: core not claimable after close without mappings (errno {rc})"))?;
        } else {
            check(rc == libc::EBUSY, format!("iteration {i}: core claimable (errno {rc}) while the closed file's mappings live"))?;
            for (a, l) in maps {
                munmap(a, l);
            }
            let rc = claim_raw(other.as_raw_fd(), DNVM_IOC_CLAIM, core);
            check(rc == 0, format!("iteration {i}: core not claimable after the last munmap (errno {rc})"))?;
        }
        check(claim_raw(other.as_raw_fd(), DNVM_IOC_RELEASE, core) == 0, "release by the other file")?;
    }
    println!("# isolation: core {core}: {iters} close races");
    Ok(())
}

/// mmap of /dev/hduN's register page against unbind: after unbind returns, no mapping reaches
/// the registers.
fn mmap_vs_unbind(core: u32, rounds: u64, seed: u64) -> Case {
    let devname = hdu_device(core)?;
    let node = format!("/dev/hdu{core}");
    let mut rng = Rng(seed);
    let mut res = Ok(());
    let mut total = 0;
    for i in 0..rounds {
        let t0 = Instant::now();
        let fd = loop {
            match open(&node) {
                Ok(fd) => break fd,
                Err(e) if t0.elapsed() > Duration::from_secs(5) => return Err(format!("round {i}: open {node}: {e}")),
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        };
        let started = Arc::new(AtomicU64::new(0));
        let (raw, st2) = (fd.as_raw_fd(), started.clone());
        let stop = Arc::new(AtomicBool::new(false));
        let t = {
            let stop = stop.clone();
            std::thread::spawn(move || -> Result<Vec<usize>, String> {
                let probe = Probe::new();
                let mut maps = Vec::new();
                while !stop.load(SeqCst) && maps.len() < 256 {
                    match mmap_raw(raw, PAGE, 0) {
                        Ok(a) => {
                            st2.fetch_add(1, SeqCst);
                            let _ = probe.read(a, 8);
                            maps.push(a);
                        }
                        Err(libc::ENODEV) => break,
                        Err(e) => return Err(format!("hdu mmap: unexpected errno {e}")),
                    }
                }
                Ok(maps)
            })
        };
        while started.load(SeqCst) == 0 {
            std::hint::spin_loop();
        }
        for _ in 0..rng.next() % 20000 {
            std::hint::spin_loop();
        }
        let u = std::fs::write("/sys/bus/platform/drivers/hdu/unbind", &devname);
        // Everything mapped so far must be dead now; the mapper may still be mid-mmap.
        stop.store(true, SeqCst);
        let maps = t.join().map_err(|_| "hdu mapper panicked".to_string());
        let probe = Probe::new();
        let maps = maps.and_then(|m| m).unwrap_or_default();
        let alive = maps.iter().filter(|&&a| probe.read(a, 8).is_some()).count();
        total += maps.len();
        // The old instance's register claim goes with its last file and mapping: bind after.
        for a in maps {
            munmap(a, PAGE);
        }
        drop(fd);
        let b = std::fs::write("/sys/bus/platform/drivers/hdu/bind", &devname);
        u.map_err(|e| format!("unbind: {e}"))?;
        b.map_err(|e| format!("bind: {e}"))?;
        if alive > 0 {
            res = Err(format!("round {i}: {alive} register mappings usable after unbind returned"));
            break;
        }
    }
    println!("# isolation: hdu{core}: {rounds} unbind races, {total} racing mappings");
    res
}

/// State-changing ioctls need a writable open (EBADF); read-only opens keep the queries.
fn readonly_opens() -> Case {
    let c = std::ffi::CString::new("/dev/directnvm").unwrap();
    // SAFETY: valid path; the fd is owned below.
    let raw = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    check(raw >= 0, "open O_RDONLY")?;
    // SAFETY: fresh descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: plain-integer structs, all-zero valid.
    let (mut info, mut lay, mut stats): (DnvmInfo, DnvmLayout, DnvmStats) = unsafe { std::mem::zeroed() };
    ioctl(&fd, DNVM_IOC_GET_INFO, &mut info).map_err(|e| format!("read-only GET_INFO: {e}"))?;
    ioctl(&fd, DNVM_IOC_GET_LAYOUT, &mut lay).map_err(|e| format!("read-only GET_LAYOUT: {e}"))?;
    ioctl(&fd, DNVM_IOC_GET_STATS, &mut stats).map_err(|e| format!("read-only GET_STATS: {e}"))?;
    for (name, rc) in [
        ("CLAIM", claim_raw(raw, DNVM_IOC_CLAIM, 0)),
        ("RELEASE", claim_raw(raw, DNVM_IOC_RELEASE, 0)),
        ("CONTROLLER_INIT", ioctl_none(&fd, DNVM_IOC_CONTROLLER_INIT).err().map_or(0, |e| errno(&e))),
        ("SET_ARBITRATION", {
            let mut a = DnvmArbitration::default();
            ioctl(&fd, DNVM_IOC_SET_ARBITRATION, &mut a).err().map_or(0, |e| errno(&e))
        }),
    ] {
        check(rc == libc::EBADF, format!("read-only {name}: errno {rc}, want EBADF"))?;
    }
    Ok(())
}

/// Every isolation case; `scale` multiplies the iteration counts.
pub fn run(t: &mut Tap, scale: u64) {
    let seed = seed_from_env("ISOLATION_SEED");
    let iters = env_u64("ISOLATION_ITERS", 400) * scale;
    println!("# isolation seed {seed:#x} (ISOLATION_SEED to reproduce)");
    t.case("isolation: read-only /dev/directnvm: queries work, CLAIM/RELEASE/CONTROLLER_INIT/SET_ARBITRATION are EBADF", readonly_opens);
    t.case(
        &format!("isolation: {iters} x mmap/mremap/fork racing RELEASE on core 2: no mapping usable after RELEASE, new owner untouched"),
        || mmap_vs_release(2, iters, seed),
    );
    let close_iters = iters / 4;
    t.case(&format!("isolation: {close_iters} x mmap racing close on core 3: the claim lives exactly as long as the mappings"), || {
        mmap_vs_close(3, close_iters, seed ^ 1)
    });
    let rounds = 10 * scale;
    t.case(&format!("isolation: {rounds} x mmap of /dev/hdu3 racing unbind: no register mapping usable after unbind"), || {
        mmap_vs_unbind(3, rounds, seed ^ 2)
    });
}
