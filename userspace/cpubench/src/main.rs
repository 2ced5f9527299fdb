// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-cpubench`: host CPU per 4 KiB I/O on libnvmedl's software path vs io_uring, side by
//! side in one run on the same machine (DESIGN.md §6: "submit + complete, null device").
//!
//! ```text
//! nvmedl-cpubench [--ios N] [--reps R]
//! ```
//!
//! * **libnvmedl** runs its real I/O path (`Handle::submit` → staging entries, barrier, START
//!   store; `Handle::poll` → START/DONE reads, rev 2 status words, completions) against a *null
//!   HDU*: register page, staging, status and data regions in ordinary memory and a device step
//!   that completes a started batch at once (START → 0, DONE → 1, rev 2 status words → done).
//!   The step runs on the same thread between polls, so its cost is counted against the
//!   library (conservative), and no second thread or scheduler noise is involved.
//! * **io_uring** (the `io-uring` crate, no SQPOLL): `IORING_OP_NOP` (the cheapest possible
//!   io_uring request) and `IORING_OP_READ` of 4 KiB from `/dev/null`, submitted and reaped with
//!   `io_uring_enter`. `pread(2)` of 4 KiB from `/dev/null` is printed as the plain-syscall
//!   reference.
//!
//! Each case runs `--ios` I/Os, `--reps` times; the best repetition is printed as wall ns per
//! I/O and thread CPU ns per I/O (`CLOCK_THREAD_CPUTIME_ID`, user + kernel). Figures, not a test.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use directnvm_abi::*;
use nvmedl::platform::{CoreMapping, Platform, Region};
use nvmedl::{Completion, Device, Error, HandleOptions, Request};

const PAGE: usize = 4096;
const STAGING_ENTRIES: u32 = 256;
const DATA_BYTES: usize = 1 << 20;

/// Page-aligned zeroed memory.
struct Mem {
    ptr: *mut u8,
    layout: Layout,
}

impl Mem {
    fn new(len: usize) -> Mem {
        let layout = Layout::from_size_align(len.div_ceil(PAGE) * PAGE, PAGE).expect("layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        Mem { ptr, layout }
    }
    fn region(&self) -> Region {
        Region { ptr: self.ptr, bus: self.ptr as u64, len: self.layout.size() }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

/// The null HDU's memory: register page, staging, status, data.
struct NullHdu {
    regs: Mem,
    staging: Mem,
    status: Mem,
    data: Mem,
    revision: u32,
}

// SAFETY: plain heap memory; one thread drives it at a time (the bench thread).
unsafe impl Send for NullHdu {}
// SAFETY: as above.
unsafe impl Sync for NullHdu {}

impl NullHdu {
    fn reg(&self, r: HduReg) -> *mut u64 {
        // SAFETY: a register slot (offset < 0x40) inside the 4 KiB page.
        unsafe { self.regs.ptr.cast::<u64>().add(r.slot()) }
    }

    /// The device: complete a started batch at once.
    #[inline]
    fn step(&self) {
        // SAFETY: register slots and status words inside the allocations; volatile like MMIO.
        unsafe {
            if self.reg(HduReg::Start).read_volatile() == 0 {
                return;
            }
            if Revision::from_number(self.revision).is_some_and(Revision::has_status) {
                let n = self.reg(HduReg::Nreqs).read_volatile() as usize;
                let words = self.status.ptr.cast::<u32>();
                for i in 0..n.min(STAGING_ENTRIES as usize) {
                    words.add(i).write_volatile(DNVM_STATUS_DONE);
                }
            }
            self.reg(HduReg::Start).write_volatile(0);
            self.reg(HduReg::Done).write_volatile(HDU_DONE_BIT);
        }
    }
}

struct NullPlatform(Arc<NullHdu>);
struct NullCore(Arc<NullHdu>);

fn caps(rev: u32) -> HduCaps {
    if Revision::from_number(rev).is_some_and(Revision::has_caps) {
        HduCaps { engines: 1, queue_depth_log2: 10, max_nreqs: STAGING_ENTRIES, dispatch_depth: 64, max_xfer_pages: 32, start_queue: 0 }
    } else {
        HduCaps::REV1
    }
}

impl CoreMapping for NullCore {
    fn regs(&self) -> *mut u64 {
        self.0.regs.ptr.cast()
    }
    fn hdu_info(&self) -> HduInfo {
        HduInfo {
            abi_version: DNVM_ABI_VERSION,
            revision: self.0.revision,
            engines: 1,
            caps: caps(self.0.revision).to_reg(),
            ..HduInfo::default()
        }
    }
    fn staging(&self) -> Region {
        self.0.staging.region()
    }
    fn status(&self) -> Region {
        self.0.status.region()
    }
    fn data(&self) -> Region {
        self.0.data.region()
    }
    fn reset(&self) -> nvmedl::Result<()> {
        Err(Error::Revision)
    }
}

impl Platform for NullPlatform {
    fn info(&self) -> nvmedl::Result<DnvmInfo> {
        Ok(DnvmInfo {
            abi_version: DNVM_ABI_VERSION,
            reserved: 0,
            cores: 1,
            engines: 1,
            staging_entries: STAGING_ENTRIES,
            io_queue_depth: 1024,
            lba_size: DNVM_LBA_SIZE,
            max_transfer: 128 << 10,
            capacity_lbas: 1 << 30,
            carveout_phys: 0,
            carveout_size: 0,
            flags: DNVM_INFO_READY,
            nvme_version: 0,
            serial: [0; 20],
            model: [0; 40],
            firmware: [0; 8],
            arbitration: [0; 4],
        })
    }
    fn layout(&self) -> nvmedl::Result<DnvmLayout> {
        Err(Error::Revision)
    }
    fn open_core(&self, core: u32) -> nvmedl::Result<Box<dyn CoreMapping>> {
        if core != 0 {
            return Err(Error::InvalidArgument);
        }
        Ok(Box::new(NullCore(self.0.clone())))
    }
    fn hdu_info(&self, _core: u32) -> nvmedl::Result<HduInfo> {
        Ok(NullCore(self.0.clone()).hdu_info())
    }
    fn reset_hdu(&self, _core: u32) -> nvmedl::Result<()> {
        Err(Error::Revision)
    }
    fn set_arbitration(&self, _a: DnvmArbitration) -> nvmedl::Result<()> {
        Err(Error::Revision)
    }
    fn controller_init(&self) -> nvmedl::Result<()> {
        Ok(())
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (wall ns per I/O, CPU ns per I/O) of the best of `reps` runs of `f(ios)`.
fn measure(reps: u32, ios: u64, mut f: impl FnMut(u64) -> Result<(), String>) -> Result<(f64, f64), String> {
    let mut best = (f64::MAX, f64::MAX);
    f(ios / 10 + 1)?; // warm-up
    for _ in 0..reps {
        let (w0, c0) = (Instant::now(), thread_cpu_ns());
        f(ios)?;
        let (wall, cpu) = (w0.elapsed().as_nanos() as f64, (thread_cpu_ns() - c0) as f64);
        if cpu < best.1 {
            best = (wall / ios as f64, cpu / ios as f64);
        }
    }
    Ok(best)
}

/// libnvmedl on the null HDU: `qd` 4 KiB reads per hardware batch, until `ios` completed.
fn nvmedl_run(rev: u32, qd: usize) -> Result<impl FnMut(u64) -> Result<(), String>, String> {
    let hdu = Arc::new(NullHdu {
        regs: Mem::new(PAGE),
        staging: Mem::new(STAGING_ENTRIES as usize * DNVM_ENTRY_SIZE),
        status: Mem::new(PAGE),
        data: Mem::new(DATA_BYTES),
        revision: rev,
    });
    let dev = Device::from_platform(Arc::new(NullPlatform(hdu.clone()))).map_err(|e| e.to_string())?;
    let opts = HandleOptions { capacity: qd * 2, iodepth: qd, batch: qd, ..HandleOptions::default() };
    let mut h = dev.handle_with(0, opts).map_err(|e| e.to_string())?;
    let bufs: Vec<_> = (0..qd).map(|_| h.buf_alloc(PAGE)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    let mut done = vec![Completion { tag: 0, result: Ok(()) }; qd];
    let mut lba = 0u64;
    Ok(move |ios: u64| {
        let mut completed = 0u64;
        while completed < ios {
            for b in &bufs {
                lba = (lba + 8) % (1 << 20);
                h.submit(Request::read(b, lba)).map_err(|e| e.to_string())?;
            }
            let mut got = 0;
            while got < qd {
                hdu.step();
                let n = h.poll(&mut done);
                for c in &done[..n] {
                    c.result.map_err(|e| e.to_string())?;
                }
                got += n;
            }
            completed += qd as u64;
        }
        Ok(())
    })
}

enum UringOp {
    Nop,
    ReadDevNull,
}

fn uring_run(op: UringOp, qd: usize) -> Result<impl FnMut(u64) -> Result<(), String>, String> {
    use io_uring::{opcode, types, IoUring};
    let mut ring = IoUring::new((qd as u32).next_power_of_two().max(8)).map_err(|e| format!("io_uring_setup: {e}"))?;
    let file = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
    let mut bufs = vec![0u8; qd * PAGE];
    Ok(move |ios: u64| {
        let fd = types::Fd(file.as_raw_fd());
        let mut completed = 0u64;
        while completed < ios {
            for i in 0..qd {
                let sqe = match op {
                    UringOp::Nop => opcode::Nop::new().build(),
                    UringOp::ReadDevNull => opcode::Read::new(fd, bufs[i * PAGE..].as_mut_ptr(), PAGE as u32).offset(0).build(),
                }
                .user_data(i as u64);
                // SAFETY: the buffer outlives the request (reaped below before it is reused).
                unsafe { ring.submission().push(&sqe).map_err(|_| "submission queue full".to_string())? };
            }
            ring.submit_and_wait(qd).map_err(|e| format!("io_uring_enter: {e}"))?;
            let mut got = 0;
            for cqe in ring.completion() {
                if cqe.result() < 0 {
                    return Err(format!("io_uring completion error {}", cqe.result()));
                }
                got += 1;
            }
            if got != qd {
                return Err(format!("io_uring: {got} of {qd} completions"));
            }
            completed += qd as u64;
        }
        Ok(())
    })
}

fn pread_run() -> Result<impl FnMut(u64) -> Result<(), String>, String> {
    let file = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; PAGE];
    Ok(move |ios: u64| {
        for _ in 0..ios {
            // SAFETY: valid fd and buffer.
            let r = unsafe { libc::pread(file.as_raw_fd(), buf.as_mut_ptr().cast(), PAGE, 0) };
            if r < 0 {
                return Err(format!("pread: {}", std::io::Error::last_os_error()));
            }
        }
        Ok(())
    })
}

/// Host CPU per 4 KiB I/O: libnvmedl's submit+complete path on a null HDU vs io_uring, side
/// by side (figures, not a test).
#[derive(clap::Parser, Debug)]
#[command(name = "nvmedl-cpubench", version, after_help = "Exit status: 0 every case ran, 1 a case was unavailable, 2 usage error.")]
struct Cli {
    /// I/Os per case and repetition.
    #[arg(long, default_value = "1000000", value_parser = clap::value_parser!(u64).range(1..))]
    ios: u64,
    /// Repetitions per case; the best one is printed.
    #[arg(long, default_value = "3", value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
}

fn main() -> std::process::ExitCode {
    let Cli { ios, reps } = <Cli as clap::Parser>::parse();
    println!("# host CPU per 4 KiB I/O, submit + complete, best of {reps} x {ios} I/Os (thread CPU = user + kernel)");
    println!("{:<44} {:>10} {:>10}", "case", "wall ns/IO", "CPU ns/IO");
    let mut failed = false;
    let mut row = |name: &str, r: Result<(f64, f64), String>| -> Option<f64> {
        match r {
            Ok((w, c)) => {
                println!("{name:<44} {w:>10.1} {c:>10.1}");
                Some(c)
            }
            Err(e) => {
                println!("{name:<44} {:>21}", format!("unavailable: {e}"));
                failed = true;
                None
            }
        }
    };
    let mut lib = Vec::new();
    let mut uring = Vec::new();
    let mut uring_read = Vec::new();
    for qd in [1usize, 32] {
        for rev in [HDU_REV1, HDU_REV2] {
            let r = nvmedl_run(rev, qd).and_then(|f| measure(reps, ios, f));
            if let Some(c) = row(&format!("libnvmedl rev {rev} null HDU, QD{qd}"), r) {
                lib.push((qd, c));
            }
        }
        let r = uring_run(UringOp::Nop, qd).and_then(|f| measure(reps, ios, f));
        if let Some(c) = row(&format!("io_uring NOP, QD{qd}"), r) {
            uring.push((qd, c));
        }
        let r = uring_run(UringOp::ReadDevNull, qd).and_then(|f| measure(reps, ios, f));
        if let Some(c) = row(&format!("io_uring 4 KiB read /dev/null, QD{qd}"), r) {
            uring_read.push((qd, c));
        }
    }
    row("pread(2) 4 KiB /dev/null (syscall reference)", pread_run().and_then(|f| measure(reps, ios, f)));
    for qd in [1usize, 32] {
        let worst_lib = lib.iter().filter(|(q, _)| *q == qd).map(|(_, c)| *c).fold(0.0, f64::max);
        for (what, list) in [("NOP", &uring), ("4 KiB read /dev/null", &uring_read)] {
            if let Some((_, u)) = list.iter().find(|(q, _)| *q == qd) {
                if worst_lib > 0.0 {
                    println!("ratio QD{qd}: io_uring {what} CPU / libnvmedl CPU (slower revision) = {:.1}x", u / worst_lib);
                }
            }
        }
    }
    if failed {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
