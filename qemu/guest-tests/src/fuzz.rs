// SPDX-License-Identifier: MIT OR Apache-2.0
//! Bounded random ioctl/mmap fuzzer for /dev/directnvm and /dev/hduN.
//!
//! Each iteration picks one operation: an ioctl (a valid command, a valid type/number with a
//! random direction and size, or a random number; argument: random bytes, NULL or an
//! unreadable page), an mmap (random offset, length, protection and flags, MAP_FIXED never),
//! a partial or whole munmap, an mremap, open/close of a random node, or read/write/lseek on
//! a node. The seed is printed (`FUZZ_SEED` reproduces a run); `FUZZ_ITERS` sets the count.
//! Afterwards the stack must be healthy: nothing claimed, every HDU openable, controller up,
//! verified I/O on every core. The kernel-log check runs after the group.
//!
//! Never done, on purpose: stores to a mapped HDU register page (on rev 1 a random REQBUF
//! would let the engine DMA anywhere in guest RAM: that is the hardware's documented lack of
//! a DMA window, not a kernel bug), touching a mapping after any other call (a RELEASE may
//! have zapped it: SIGBUS by design), and the two halves of the controller re-init protocol,
//! `DNVM_IOC_CONTROLLER_INIT` and `HDU_IOC_RESET_QUEUES`, unless `FUZZ_CONTROLLER_INIT=1`:
//! either one alone leaves the engines' queue pointers and the controller's queues out of
//! step (docs/hardware.md "Queue pointers across controller reset", docs/design.md), so later
//! I/O on that core times out until `nvmedl reset controller`. That is documented behaviour of
//! an owner's own HDU, not a kernel bug, and the post-fuzz health check would report it.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nvmedl::abi_types::*;

use crate::fixtures::data::{dev, env_u64, handle, seed_from_env, write_read, Rng, BLOCK};
use crate::summary::{self, FUZZ_ITERS};
use crate::sys::open;
use crate::tap::{check, eq, Case, Tap};

const BUF: usize = 16384 + 64;

struct Mapping {
    addr: usize,
    len: usize,
}

struct Fuzzer {
    rng: Rng,
    fds: Vec<(String, OwnedFd)>,
    maps: Vec<Mapping>,
    buf: Vec<u8>,
    guard: *mut u8,
    regions: Vec<DnvmRegion>,
    errnos: BTreeMap<(&'static str, i32), u64>,
    allow_init: bool,
}

const VALID: &[u32] = &[
    DNVM_IOC_GET_INFO,
    DNVM_IOC_GET_LAYOUT,
    DNVM_IOC_CLAIM,
    DNVM_IOC_RELEASE,
    DNVM_IOC_CONTROLLER_INIT,
    DNVM_IOC_SET_ARBITRATION,
    DNVM_IOC_GET_STATS,
    HDU_IOC_GET_INFO,
    HDU_IOC_RESET,
    HDU_IOC_GET_STATS,
];

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Fuzzer {
    fn new(seed: u64, regions: Vec<DnvmRegion>) -> Result<Fuzzer, String> {
        // SAFETY: a fresh private anonymous page, made inaccessible: the EFAULT argument.
        let guard = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        check(guard != libc::MAP_FAILED, "guard page")?;
        Ok(Fuzzer {
            rng: Rng(seed),
            fds: Vec::new(),
            maps: Vec::new(),
            buf: vec![0; BUF],
            guard: guard.cast(),
            regions,
            errnos: BTreeMap::new(),
            allow_init: std::env::var("FUZZ_CONTROLLER_INIT").is_ok_and(|v| v == "1"),
        })
    }

    fn note(&mut self, op: &'static str, r: i64) {
        let e = if r < 0 { last_errno() } else { 0 };
        *self.errnos.entry((op, e)).or_default() += 1;
    }

    fn node(&mut self) -> String {
        if self.rng.pct(45) {
            "/dev/directnvm".into()
        } else {
            format!("/dev/hdu{}", self.rng.below(5))
        }
    }

    fn open_one(&mut self) {
        let path = self.node();
        match open(&path) {
            Ok(fd) => {
                self.note("open", 0);
                self.fds.push((path, fd));
            }
            Err(_) => self.note("open", -1),
        }
    }

    fn pick_fd(&mut self) -> Option<i32> {
        if self.fds.is_empty() {
            return None;
        }
        let i = self.rng.below(self.fds.len() as u64) as usize;
        Some(self.fds[i].1.as_raw_fd())
    }

    fn cmd(&mut self) -> u32 {
        let c = match self.rng.below(10) {
            0..=3 => VALID[self.rng.below(VALID.len() as u64) as usize],
            4..=6 => {
                let ty = if self.rng.pct(50) { DNVM_IOC_MAGIC } else { HDU_IOC_MAGIC };
                let size = match self.rng.below(3) {
                    0 => self.rng.below(0x4000) as usize,
                    1 => [size_of::<DnvmInfo>(), size_of::<DnvmLayout>(), size_of::<DnvmClaim>(), size_of::<HduInfo>(), 8]
                        [self.rng.below(5) as usize]
                        .wrapping_add(self.rng.below(17) as usize)
                        .wrapping_sub(8),
                    _ => 0,
                };
                dnvm_ioc(self.rng.below(4) as u32, ty, self.rng.below(10) as u32, size)
            }
            _ => self.rng.next() as u32,
        };
        if (c == DNVM_IOC_CONTROLLER_INIT || c == HDU_IOC_RESET_QUEUES) && !self.allow_init {
            DNVM_IOC_GET_STATS
        } else {
            c
        }
    }

    fn ioctl(&mut self) {
        let Some(fd) = self.pick_fd() else { return self.open_one() };
        let cmd = self.cmd();
        // Argument: random bytes; claims mostly name real cores with flags 0.
        let n = self.rng.below(64) as usize;
        for i in 0..n * 8 {
            self.buf[i] = self.rng.next() as u8;
        }
        if self.rng.pct(70) {
            let core = if self.rng.pct(90) { self.rng.below(5) as u32 } else { self.rng.next() as u32 };
            self.buf[0..4].copy_from_slice(&core.to_le_bytes());
            if self.rng.pct(90) {
                self.buf[4..8].fill(0);
            }
        }
        if cmd == DNVM_IOC_SET_ARBITRATION && self.rng.pct(80) {
            for i in 0..4 {
                let v = self.rng.below(if i == 0 { 8 } else { 256 }) as u32;
                self.buf[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        let arg: usize = match self.rng.below(10) {
            0 => 0,
            1 => self.guard as usize,
            2 => self.guard as usize + 4096 - 8, // straddles into the next (unmapped?) page
            _ => self.buf.as_mut_ptr() as usize,
        };
        // SAFETY: the kernel writes at most the ioctl's size field (< 16 KiB) into `buf`
        // (16 KiB + 64 bytes long); the other arguments are invalid on purpose (EFAULT).
        let r = unsafe { libc::ioctl(fd, cmd as _, arg) };
        self.note("ioctl", r as i64);
    }

    fn mmap(&mut self) {
        let Some(fd) = self.pick_fd() else { return self.open_one() };
        let page = 4096u64;
        let offset = match self.rng.below(6) {
            0 | 1 if !self.regions.is_empty() => {
                let r = self.regions[self.rng.below(self.regions.len() as u64) as usize];
                r.offset + page * self.rng.below(r.size / page + 1)
            }
            2 => 0,
            3 => page * self.rng.below(4096),
            4 => self.rng.below(1 << 20),
            _ => self.rng.next() & !0xfff,
        };
        let len = match self.rng.below(5) {
            0 => 4096,
            1 => 4096 * (1 + self.rng.below(16)) as usize,
            2 => self.rng.below(1 << 24) as usize,
            3 => 0,
            _ => (self.rng.next() & 0xffff_ffff_f000) as usize,
        };
        let prot = [
            libc::PROT_READ | libc::PROT_WRITE,
            libc::PROT_READ,
            libc::PROT_WRITE,
            libc::PROT_NONE,
            libc::PROT_READ | libc::PROT_EXEC,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
        ][self.rng.below(6) as usize];
        let mut flags = if self.rng.pct(85) { libc::MAP_SHARED } else { libc::MAP_PRIVATE };
        if self.rng.pct(10) {
            flags |= libc::MAP_POPULATE;
        }
        if self.rng.pct(5) {
            flags |= libc::MAP_LOCKED;
        }
        if self.rng.pct(5) {
            flags |= libc::MAP_NORESERVE;
        }
        // SAFETY: never MAP_FIXED: the kernel picks an unused address range.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, offset as libc::off_t) };
        if p == libc::MAP_FAILED {
            self.note("mmap", -1);
            return;
        }
        self.note("mmap", 0);
        let is_hdu = self.fds.iter().any(|(n, f)| f.as_raw_fd() == fd && n.starts_with("/dev/hdu"));
        let a = p as usize;
        // Touch now (nothing can have zapped it yet): reads everywhere, writes only to
        // carve-out memory, never to HDU registers.
        if prot & libc::PROT_READ != 0 {
            for off in (0..len).step_by(4096).take(4) {
                // SAFETY: inside a readable mapping that was just created.
                unsafe { std::ptr::read_volatile((a + off) as *const u64) };
            }
        }
        if prot & libc::PROT_WRITE != 0 && prot & libc::PROT_READ != 0 && !is_hdu {
            let v = self.rng.next();
            // SAFETY: inside a writable mapping of carve-out memory that was just created.
            unsafe { std::ptr::write_volatile(a as *mut u64, v) };
        }
        self.maps.push(Mapping { addr: a, len });
    }

    fn munmap(&mut self) {
        if self.maps.is_empty() {
            return self.mmap();
        }
        let i = self.rng.below(self.maps.len() as u64) as usize;
        let m = self.maps.swap_remove(i);
        let pages = m.len.div_ceil(4096);
        if pages > 1 && self.rng.pct(50) {
            // Punch a hole: splits the VMA of a PFN mapping.
            let first = self.rng.below(pages as u64) as usize;
            let n = 1 + self.rng.below((pages - first) as u64) as usize;
            // SAFETY: a sub-range of a mapping this fuzzer created and still tracks.
            let r = unsafe { libc::munmap((m.addr + first * 4096) as *mut _, n * 4096) };
            self.note("munmap-part", r as i64);
            if first > 0 {
                self.maps.push(Mapping { addr: m.addr, len: first * 4096 });
            }
            if first + n < pages {
                self.maps.push(Mapping { addr: m.addr + (first + n) * 4096, len: (pages - first - n) * 4096 });
            }
        } else {
            // SAFETY: a whole mapping this fuzzer created.
            let r = unsafe { libc::munmap(m.addr as *mut _, m.len) };
            self.note("munmap", r as i64);
        }
    }

    fn mremap(&mut self) {
        if self.maps.is_empty() {
            return self.mmap();
        }
        let i = self.rng.below(self.maps.len() as u64) as usize;
        let (addr, len) = (self.maps[i].addr, self.maps[i].len);
        let new_len = if self.rng.pct(50) { len + 4096 } else { len.saturating_sub(4096).max(4096) };
        // SAFETY: remapping a mapping this fuzzer owns; MAYMOVE lets the kernel choose.
        let p = unsafe { libc::mremap(addr as *mut _, len, new_len, libc::MREMAP_MAYMOVE) };
        if p == libc::MAP_FAILED {
            self.note("mremap", -1);
        } else {
            self.note("mremap", 0);
            self.maps[i] = Mapping { addr: p as usize, len: new_len };
        }
    }

    fn file_ops(&mut self) {
        let Some(fd) = self.pick_fd() else { return self.open_one() };
        // SAFETY: buf is BUF bytes; the fd is ours.
        let r = unsafe {
            match self.rng.below(3) {
                0 => libc::read(fd, self.buf.as_mut_ptr().cast(), self.rng.below(BUF as u64) as usize) as i64,
                1 => libc::write(fd, self.buf.as_ptr().cast(), self.rng.below(64) as usize) as i64,
                _ => libc::lseek(fd, self.rng.below(1 << 20) as libc::off_t, libc::SEEK_SET) as i64,
            }
        };
        self.note("rw/lseek", r);
    }

    fn step(&mut self) {
        match self.rng.below(100) {
            0..=39 => self.ioctl(),
            40..=62 => self.mmap(),
            63..=74 => self.munmap(),
            75..=78 => self.mremap(),
            79..=86 => self.open_one(),
            87..=94 => {
                if !self.fds.is_empty() {
                    let i = self.rng.below(self.fds.len() as u64) as usize;
                    self.fds.swap_remove(i);
                }
            }
            _ => self.file_ops(),
        }
        // Keep resources bounded.
        if self.maps.len() > 64 {
            self.munmap();
        }
        if self.fds.len() > 12 {
            self.fds.swap_remove(0);
        }
    }

    fn teardown(&mut self) {
        for m in self.maps.drain(..) {
            // SAFETY: mappings this fuzzer created and still tracks.
            unsafe { libc::munmap(m.addr as *mut _, m.len) };
        }
        self.fds.clear();
    }
}

impl Drop for Fuzzer {
    fn drop(&mut self) {
        self.teardown();
        // SAFETY: the guard page mapped in new().
        unsafe { libc::munmap(self.guard.cast(), 4096) };
    }
}

/// Run `iters` iterations; then check the stack is healthy.
pub fn fuzz(iters: u64, seed: u64) -> Case {
    let d = dev()?;
    let l = d.layout().map_err(|e| e.to_string())?;
    let arb0 = d.info().arbitration;
    let regions = l.regions[..l.count as usize].to_vec();
    let t0 = Instant::now();
    let mut f = Fuzzer::new(seed, regions)?;
    for i in 0..iters {
        f.step();
        summary::add(&FUZZ_ITERS, 1);
        if i % 50_000 == 49_999 {
            println!("# fuzz: {} iterations, {:.0} s", i + 1, t0.elapsed().as_secs_f64());
        }
    }
    f.teardown();
    let secs = t0.elapsed().as_secs_f64();
    let hist: Vec<String> = f.errnos.iter().map(|((op, e), n)| format!("{op}:{e}={n}")).collect();
    println!("# fuzz: seed {seed:#x}, {iters} iterations in {secs:.1} s ({:.0}/s)", iters as f64 / secs);
    println!("# fuzz outcomes (op:errno=count): {}", hist.join(" "));
    drop(f);

    // Healthy afterwards.
    crate::fixtures::modules::all_free(d.cores())?;
    let mut d = d;
    let info = *d.refresh_info().map_err(|e| e.to_string())?;
    check(info.flags & DNVM_INFO_READY != 0, "controller not ready after fuzzing")?;
    if info.flags & DNVM_INFO_WRR != 0 && info.arbitration != arb0 {
        let a = DnvmArbitration { burst: arb0[0].into(), high: arb0[1].into(), medium: arb0[2].into(), low: arb0[3].into() };
        d.set_arbitration(a).map_err(|e| format!("restore arbitration: {e}"))?;
        eq(d.refresh_info().map_err(|e| e.to_string())?.arbitration, arb0, "arbitration restored")?;
    }
    for core in 0..d.cores() {
        let mut h = handle(&d, core, Duration::from_secs(5))?;
        let mut b = h.buf_alloc(4 * BLOCK).map_err(|e| e.to_string())?;
        let lba = crate::fixtures::data::scratch(d.info().capacity_lbas) + 0x2_0000 + u64::from(core) * 64;
        write_read(&mut h, &mut b, lba, 5 + core).map_err(|e| format!("core {core} after fuzzing: {e}"))?;
    }
    Ok(())
}

/// The fuzz group: `FUZZ_ITERS` iterations (default `default_iters`).
pub fn run(t: &mut Tap, default_iters: u64) {
    let seed = seed_from_env("FUZZ_SEED");
    let iters = env_u64("FUZZ_ITERS", default_iters);
    println!("# fuzz seed {seed:#x} (FUZZ_SEED={seed:#x} FUZZ_ITERS={iters} reproduces this run)");
    t.case(&format!("fuzz: {iters} random ioctl/mmap/munmap/mremap/open/close calls, stack healthy after"), || fuzz(iters, seed));
}
