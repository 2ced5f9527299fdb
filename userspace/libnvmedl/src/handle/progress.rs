// SPDX-License-Identifier: MIT OR Apache-2.0
//! The hardware state machine step, its timeout, and the bounded waits built on it (poll,
//! drain).

use super::{Handle, Hw};
use crate::backoff::Wait;
use crate::error::{Error, Result};
use crate::request::Completion;

impl Handle {
    /// Fail the in-flight batch (Timeout) and everything staged (NotReady). Cold: kept out
    /// of `progress`, the hot path's code.
    #[cold]
    #[inline(never)]
    pub(super) fn wedge(&mut self, seen: bool) {
        self.stats.timeouts += 1;
        self.fail_inflight(Error::Timeout);
        while let Some(id) = self.sched.pop(u64::MAX) {
            self.complete(id, Err(Error::NotReady));
        }
        self.hw = Hw::Wedged { seen };
    }

    /// Advance the hardware state machine once; `check_time` reads the clock.
    pub(super) fn progress(&mut self, check_time: bool) {
        self.clock.new_step();
        match self.hw {
            Hw::InFlight { mut started_ns, mut seen } => {
                if self.engine.batch_done(&mut seen) {
                    self.harvest();
                    self.hw = Hw::Idle;
                } else {
                    self.complete_early();
                    if self.retire() {
                        // The oldest batch ended: the timeout restarts for the next one.
                        started_ns = 0;
                    }
                    if check_time {
                        let now = self.clock.now_ns().max(1);
                        if started_ns == 0 {
                            started_ns = now;
                        } else if now.saturating_sub(started_ns) > self.cfg.timeout.as_nanos() as u64 {
                            self.wedge(seen);
                            return;
                        }
                    }
                    self.hw = Hw::InFlight { started_ns, seen };
                    let due = self.guard_step();
                    if self.can_queue(seen, due) {
                        self.launch();
                    }
                    return;
                }
            }
            Hw::Wedged { mut seen } => {
                // A late DONE ends the wedge (the failed batch finished after all).
                if self.engine.batch_done(&mut seen) {
                    self.hw = Hw::Idle;
                } else {
                    self.hw = Hw::Wedged { seen };
                }
                return;
            }
            Hw::Idle => {}
        }
        if !self.sched.is_empty() {
            self.launch();
        } else if self.guard.on() {
            // The device went idle with nothing staged: the next step interval starts afresh
            // (time without I/O is no step).
            self.guard.forget_step();
        }
    }

    /// One step of a blocking wait for the device: advance it, `Timeout` if the batch timed
    /// out (the engine is wedged) or the wait passed its deadline, else spin or yield.
    pub(super) fn wait_step(&mut self, check_time: bool, w: &mut Wait) -> Result<()> {
        self.progress(check_time);
        if matches!(self.hw, Hw::Wedged { .. }) {
            return Err(Error::Timeout);
        }
        self.relax(w)
    }

    /// A blocking wait starting now.
    pub(super) fn begin_wait(&self) -> Wait {
        Wait::new(self.stats.completed)
    }

    /// Spin/yield step of a blocking wait; `Timeout` past the deadline.
    pub(super) fn relax(&self, w: &mut Wait) -> Result<()> {
        w.relax(self.cfg.timeout + self.cfg.timeout, self.cfg.yield_spins, self.cfg.backoff.as_ref(), self.stats.completed)
    }

    /// Drive the device and move finished requests into `out`; returns how many. Never
    /// blocks; with nothing pending it returns 0.
    pub fn poll(&mut self, out: &mut [Completion]) -> usize {
        let check_time = self.clock.tick();
        self.progress(check_time);
        let mut n = 0;
        while n < out.len() {
            match self.done.pop() {
                Some(c) => {
                    out[n] = c;
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    /// As `poll`, but wait (bounded by the timeout) until at least one request finished; 0 at
    /// once when nothing is staged, in flight or completed, or `out` is empty. The wait backs
    /// off as the handle's [`Backoff`] says (spins without one).
    pub fn wait(&mut self, out: &mut [Completion]) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut w = self.begin_wait();
        loop {
            let n = self.poll(out);
            if n > 0 || self.pending() == 0 {
                return Ok(n);
            }
            self.relax(&mut w)?;
        }
    }

    /// One completion, if any (drives the device once).
    pub fn poll_one(&mut self) -> Option<Completion> {
        let check_time = self.clock.tick();
        self.progress(check_time);
        self.done.pop()
    }

    /// Wait until nothing is staged or in flight (completions stay queued for `poll`).
    pub fn drain(&mut self) -> Result<()> {
        let mut w = self.begin_wait();
        while self.pending() > 0 {
            self.wait_step(w.spins.is_multiple_of(32), &mut w)?;
        }
        Ok(())
    }
}
