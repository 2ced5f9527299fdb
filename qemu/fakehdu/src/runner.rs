// SPDX-License-Identifier: MIT OR Apache-2.0
//! The polling thread and the in-process handle (`FakeHdu`).
//!
//! Adaptive polling: after the last sign of activity the thread spins for `Config::idle_spin`
//! (default `SPIN_WINDOW`; short gaps between guest stores cost no latency), then sleeps with exponential backoff
//! from `SLEEP_MIN` to `SLEEP_MAX` (idle cost: one cheap pass per millisecond). While the SSD
//! model has a completion due soon (wall clock) it keeps spinning/yielding; in virtual time it
//! jumps to the event.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::board::Board;
use crate::clock::TimingMode;
use crate::control::ControlOp;
use crate::device::{Config, Device};
use crate::mem::GuestMem;
use crate::stats::Stats;

/// Default spin window after the last activity (`Config::idle_spin`).
pub const SPIN_WINDOW: Duration = Duration::from_micros(200);
const SLEEP_MIN: Duration = Duration::from_micros(20);
const SLEEP_MAX: Duration = Duration::from_millis(1);
const NEAR_EVENT_NS: u64 = 2_000_000;

struct Shared {
    dev: Mutex<Device>,
    stop: AtomicBool,
}

/// A running fake device (polling thread) with accessors for in-process users.
pub struct FakeHdu {
    shared: Arc<Shared>,
    mem: GuestMem,
    board: Board,
    thread: Option<JoinHandle<()>>,
}

impl FakeHdu {
    /// Build the device and start its polling thread.
    pub fn start(cfg: Config) -> crate::Result<Self> {
        Ok(Self::spawn(Device::new(cfg)?))
    }

    /// Start the polling thread on an already built device.
    pub fn spawn(dev: Device) -> Self {
        let mem = dev.mem.clone();
        let board = dev.board.clone();
        let shared = Arc::new(Shared { dev: Mutex::new(dev), stop: AtomicBool::new(false) });
        let s = shared.clone();
        let thread = std::thread::Builder::new().name("fake-hdu".into()).spawn(move || poll_loop(&s)).ok();
        Self { shared, mem, board, thread }
    }

    /// Guest memory (clone it freely).
    pub fn mem(&self) -> &GuestMem {
        &self.mem
    }

    /// The address map.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Host pointer for guest-physical `[gpa, gpa + len)`; `None` outside RAM. Valid while
    /// this handle (or a clone of `mem()`) lives; access it with volatile/atomic operations.
    pub fn host_ptr(&self, gpa: u64, len: u64) -> Option<*mut u8> {
        self.mem.host_ptr(gpa, len)
    }

    /// Host pointer to HDU `i`'s user register page (what /dev/hduN maps).
    pub fn hdu_regs(&self, i: usize) -> Option<*mut u8> {
        self.host_ptr(self.board.hdus.get(i)?.user, directnvm_abi::DNVM_PAGE_SIZE)
    }

    /// Host pointer to HDU `i`'s privileged page (what hdu_drv maps; rev 2).
    pub fn hdu_priv(&self, i: usize) -> Option<*mut u8> {
        self.host_ptr(self.board.hdus.get(i)?.privileged?, directnvm_abi::DNVM_PAGE_SIZE)
    }

    /// Host pointer to the whole carve-out.
    pub fn carveout(&self) -> Option<*mut u8> {
        self.host_ptr(self.board.carveout, self.board.carveout_size)
    }

    /// Lock the device (the polling thread pauses while the guard lives).
    pub fn device(&self) -> MutexGuard<'_, Device> {
        self.shared.dev.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counter snapshot.
    pub fn stats(&self) -> Stats {
        self.device().stats()
    }

    /// Execute a control operation (same as the socket).
    pub fn control(&self, op: ControlOp) -> crate::Result<String> {
        self.device().control(op)
    }

    /// True once a `shutdown` control operation was received.
    pub fn shutdown_requested(&self) -> bool {
        self.device().shutdown_requested
    }

    /// Stop the polling thread and flush the disk image.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.device().flush();
    }
}

impl Drop for FakeHdu {
    fn drop(&mut self) {
        self.stop();
    }
}

fn poll_loop(s: &Shared) {
    let spin_window = s.dev.lock().unwrap_or_else(|p| p.into_inner()).idle_spin();
    let mut last_activity = Instant::now();
    let mut sleep = SLEEP_MIN;
    while !s.stop.load(Ordering::Acquire) {
        let (progress, next, now, mode) = {
            let mut d = s.dev.lock().unwrap_or_else(|p| p.into_inner());
            let p = d.step();
            let next = d.next_event();
            if !p && d.clock.mode() == TimingMode::Virtual {
                if let Some(t) = next {
                    d.clock.advance_to(t);
                    continue;
                }
            }
            (p, next, d.clock.now(), d.clock.mode())
        };
        if progress {
            last_activity = Instant::now();
            sleep = SLEEP_MIN;
            continue;
        }
        let soon = mode == TimingMode::WallClock && next.is_some_and(|t| t.saturating_sub(now) < NEAR_EVENT_NS);
        if soon || last_activity.elapsed() < spin_window {
            if soon {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        std::thread::sleep(sleep);
        sleep = (sleep * 2).min(SLEEP_MAX);
    }
}
