// SPDX-License-Identifier: MIT OR Apache-2.0
//! The CPU cases: libnvmedl on the null HDU, io_uring NOP and 4 KiB read of /dev/null,
//! pread(2); each a closure that runs N I/Os, timed by [`measure`].

use std::os::fd::AsRawFd;
use std::time::Instant;

use std::sync::Arc;

use nvmedl::{Buffer, Completion, Handle, HandleOptions, HandleStats, Request};

use crate::nullhdu::{null_handle, NullHdu, PAGE};

/// The calling thread's CPU time in ns (`nvmedl-bench`'s `thread_cpu`, one definition).
pub fn thread_cpu_ns() -> u64 {
    nvmedl_tools::bench_report::thread_cpu().as_nanos() as u64
}

/// (wall ns per I/O, CPU ns per I/O) of the best of `reps` runs of `f(ios)`.
pub fn measure(reps: u32, ios: u64, mut f: impl FnMut(u64) -> Result<(), String>) -> Result<(f64, f64), String> {
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

/// libnvmedl on the null HDU: rounds of `qd` 4 KiB reads submitted, then polled (stepping the
/// device before every poll) until all completed; the library starts a hardware batch once
/// `batch` requests are staged (and whatever is staged when the engine goes idle).
pub struct LibCase {
    hdu: Arc<NullHdu>,
    h: Handle,
    bufs: Vec<Buffer>,
    done: Vec<Completion>,
    lba: u64,
}

impl LibCase {
    pub fn new(rev: u32, qd: usize, batch: usize) -> Result<LibCase, String> {
        let opts = HandleOptions { capacity: qd * 2, iodepth: qd, batch, ..HandleOptions::default() };
        let (hdu, mut h) = null_handle(rev, opts)?;
        let bufs: Vec<_> = (0..qd).map(|_| h.buf_alloc(PAGE)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        let done = vec![Completion { tag: 0, result: Ok(()) }; qd];
        Ok(LibCase { hdu, h, bufs, done, lba: 0 })
    }

    /// At least `ios` I/Os (whole rounds); any failed completion is an error.
    #[inline(always)]
    pub fn run(&mut self, ios: u64) -> Result<(), String> {
        let qd = self.bufs.len();
        let mut completed = 0u64;
        while completed < ios {
            for b in &self.bufs {
                self.lba = (self.lba + 8) % (1 << 20);
                self.h.submit(Request::read(b, self.lba)).map_err(|e| e.to_string())?;
            }
            let mut got = 0;
            while got < qd {
                self.hdu.step();
                let n = self.h.poll(&mut self.done);
                for c in &self.done[..n] {
                    c.result.map_err(|e| e.to_string())?;
                }
                got += n;
            }
            completed += qd as u64;
        }
        Ok(())
    }

    /// The handle's counters (batches started, entries, ...).
    pub fn stats(&self) -> HandleStats {
        self.h.stats()
    }
}

pub enum UringOp {
    Nop,
    ReadDevNull,
}

pub fn uring_run(op: UringOp, qd: usize) -> Result<impl FnMut(u64) -> Result<(), String>, String> {
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

pub fn pread_run() -> Result<impl FnMut(u64) -> Result<(), String>, String> {
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
