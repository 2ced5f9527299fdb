// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Clock`: the handle's time on the I/O path. Reading the clock costs (~20 ns through the
//! vDSO), so the handle reads it only where it needs a time: once per progress step at most
//! (`step`), and every 32 polls for the batch timeout (`tick`). `last` is the latest reading,
//! the coarse time of the QoS stamps.

use std::time::Instant;

/// Time since the handle was created, read sparingly.
pub(super) struct Clock {
    epoch: Instant,
    /// Last reading (QoS stamps), ns since `epoch`.
    last_ns: u64,
    /// Reading of the current progress step (0: not read yet).
    step_ns: u64,
    /// Polls so far (every 32nd reads the clock for the timeout).
    polls: u32,
}

impl Clock {
    pub(super) fn new() -> Self {
        Clock { epoch: Instant::now(), last_ns: 0, step_ns: 0, polls: 0 }
    }

    /// Read the clock: ns since the handle was created.
    #[inline]
    pub(super) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The last reading kept by `set_last` or `step`.
    #[inline(always)]
    pub(super) fn last_ns(&self) -> u64 {
        self.last_ns
    }

    /// Keep `ns` as the last reading.
    #[inline(always)]
    pub(super) fn set_last(&mut self, ns: u64) {
        self.last_ns = ns;
    }

    /// A new progress step: its reading is not taken yet.
    #[inline(always)]
    pub(super) fn new_step(&mut self) {
        self.step_ns = 0;
    }

    /// The reading of this progress step (read at most once per step; at least 1).
    #[inline]
    pub(super) fn step(&mut self) -> u64 {
        if self.step_ns == 0 {
            self.step_ns = self.now_ns().max(1);
            self.last_ns = self.step_ns;
        }
        self.step_ns
    }

    /// Count a poll; true on every 32nd (that poll reads the clock for the timeout).
    #[inline(always)]
    pub(super) fn tick(&mut self) -> bool {
        self.polls = self.polls.wrapping_add(1);
        self.polls.is_multiple_of(32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_reading_per_step_and_a_timeout_check_every_32_polls() {
        let mut c = Clock::new();
        assert_eq!(c.last_ns(), 0);
        let s = c.step();
        assert!(s >= 1);
        assert_eq!((c.step(), c.last_ns()), (s, s), "the same reading within a step");
        std::thread::sleep(std::time::Duration::from_millis(1));
        c.new_step();
        assert!(c.step() > s);
        c.set_last(5);
        assert_eq!(c.last_ns(), 5);
        let ticks = (0..64).filter(|_| c.tick()).count();
        assert_eq!(ticks, 2);
    }
}
