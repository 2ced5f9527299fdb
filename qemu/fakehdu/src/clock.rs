// SPDX-License-Identifier: MIT OR Apache-2.0
//! Time source of the model: wall clock, deterministic virtual time, or none (instantaneous).

use std::time::Instant;

/// How time passes for the SSD timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingMode {
    /// No timing: every command completes at the next step.
    None,
    /// Real time (nanoseconds since the model started).
    WallClock,
    /// Virtual time: advances only when the model is idle, to the next pending event.
    Virtual,
}

/// The model's clock. All times are nanoseconds.
#[derive(Debug)]
pub struct Clock {
    mode: TimingMode,
    start: Instant,
    virt: u64,
}

impl Clock {
    /// A clock of the given mode starting at 0.
    pub fn new(mode: TimingMode) -> Self {
        Self { mode, start: Instant::now(), virt: 0 }
    }

    /// The mode.
    pub fn mode(&self) -> TimingMode {
        self.mode
    }

    /// True unless the mode is `None`.
    pub fn timed(&self) -> bool {
        self.mode != TimingMode::None
    }

    /// Current time in nanoseconds.
    pub fn now(&self) -> u64 {
        match self.mode {
            TimingMode::None => 0,
            TimingMode::WallClock => self.start.elapsed().as_nanos() as u64,
            TimingMode::Virtual => self.virt,
        }
    }

    /// Advance virtual time to `t` (no effect in the other modes or if `t` is in the past).
    pub fn advance_to(&mut self, t: u64) {
        if self.mode == TimingMode::Virtual && t > self.virt {
            self.virt = t;
        }
    }

    /// `ns` if timing is enabled, else 0 (used for controller delays).
    pub fn delay(&self, ns: u64) -> u64 {
        if self.timed() {
            ns
        } else {
            0
        }
    }
}
