// SPDX-License-Identifier: MIT OR Apache-2.0
//! How a blocking wait spends the time until the device answers.
//!
//! Without a [`Backoff`] (the default) a blocking wait spins, with an optional `sched_yield`
//! every `yield_spins` polls: the lowest latency, one busy CPU per waiting handle. With one, a
//! wait that sees no request complete for a while steps down: it spins for `spin` after the
//! last completion (no system call while completions keep coming faster than that), then
//! yields to other threads until `spin + yield_for`, then sleeps, starting at `min_sleep` and
//! doubling per empty poll up to `max_sleep`. Any completion starts the spin phase again.
//! `max_sleep` bounds the wake-up cost: a request that completes while the waiter sleeps is
//! seen at most `max_sleep` late.
//!
//! The clock is read once every 64 spins in the spin phase (as the timeout check always did)
//! and once per step in the yield and sleep phases.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Thresholds of the backoff of blocking waits (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Spin this long after the last completion (no system call).
    pub spin: Duration,
    /// Then `sched_yield` between polls for this long.
    pub yield_for: Duration,
    /// First sleep of the sleep phase.
    pub min_sleep: Duration,
    /// Longest sleep: the bound of the wake-up cost.
    pub max_sleep: Duration,
}

impl Default for Backoff {
    /// 50 µs spin, 200 µs yield, sleeps from 10 µs up to 1 ms.
    fn default() -> Self {
        Backoff {
            spin: Duration::from_micros(50),
            yield_for: Duration::from_micros(200),
            min_sleep: Duration::from_micros(10),
            max_sleep: Duration::from_millis(1),
        }
    }
}

/// Largest accepted `max_sleep` (a wait must stay responsive to its timeout).
pub const MAX_SLEEP_LIMIT: Duration = Duration::from_millis(100);

impl Backoff {
    /// `InvalidArgument` unless 0 < min_sleep ≤ max_sleep ≤ [`MAX_SLEEP_LIMIT`] and the spin
    /// and yield phases are at most one second each.
    pub fn validate(&self) -> Result<()> {
        let second = Duration::from_secs(1);
        if self.min_sleep.is_zero()
            || self.min_sleep > self.max_sleep
            || self.max_sleep > MAX_SLEEP_LIMIT
            || self.spin > second
            || self.yield_for > second
        {
            return Err(Error::InvalidArgument);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Spin,
    Yield,
    Sleep,
}

/// The state of one blocking wait: its start (for the timeout) and its backoff phase.
pub(crate) struct Wait {
    t0: Instant,
    pub(crate) spins: u32,
    /// Completions counted when the last completion was seen.
    mark: u64,
    /// When the last completion was seen (or the wait began).
    idle_since: Instant,
    phase: Phase,
    sleep: Duration,
}

impl Wait {
    /// A wait starting now; `completed` is the handle's completion counter.
    pub(crate) fn new(completed: u64) -> Wait {
        let t0 = Instant::now();
        Wait { t0, spins: 0, mark: completed, idle_since: t0, phase: Phase::Spin, sleep: Duration::ZERO }
    }

    /// One empty step: `Timeout` once the wait is older than `deadline`; else spin, yield or
    /// sleep as `backoff` (or the plain spin/`yield_spins` policy without one) says.
    pub(crate) fn relax(&mut self, deadline: Duration, yield_spins: u32, backoff: Option<&Backoff>, completed: u64) -> Result<()> {
        self.spins = self.spins.wrapping_add(1);
        if self.phase != Phase::Spin || self.spins.is_multiple_of(64) {
            let now = Instant::now();
            if now.duration_since(self.t0) > deadline {
                return Err(Error::Timeout);
            }
            if let Some(b) = backoff {
                self.step_phase(b, now, completed);
            }
        }
        match self.phase {
            Phase::Spin if yield_spins != 0 && self.spins.is_multiple_of(yield_spins) => std::thread::yield_now(),
            Phase::Spin => core::hint::spin_loop(),
            Phase::Yield => std::thread::yield_now(),
            Phase::Sleep => {
                std::thread::sleep(self.sleep);
                if let Some(b) = backoff {
                    self.sleep = (self.sleep * 2).min(b.max_sleep);
                }
            }
        }
        Ok(())
    }

    fn step_phase(&mut self, b: &Backoff, now: Instant, completed: u64) {
        if completed != self.mark {
            self.mark = completed;
            self.idle_since = now;
        }
        let idle = now.duration_since(self.idle_since);
        let next = if idle < b.spin {
            Phase::Spin
        } else if idle < b.spin + b.yield_for {
            Phase::Yield
        } else {
            Phase::Sleep
        };
        if next == Phase::Sleep && self.phase != Phase::Sleep {
            self.sleep = b.min_sleep;
        }
        self.phase = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_thresholds_are_refused() {
        assert!(Backoff::default().validate().is_ok());
        let zero = Backoff { min_sleep: Duration::ZERO, ..Backoff::default() };
        assert_eq!(zero.validate(), Err(Error::InvalidArgument));
        let inverted = Backoff { min_sleep: Duration::from_millis(2), ..Backoff::default() };
        assert_eq!(inverted.validate(), Err(Error::InvalidArgument));
        let long = Backoff { max_sleep: Duration::from_millis(101), ..Backoff::default() };
        assert_eq!(long.validate(), Err(Error::InvalidArgument));
    }

    #[test]
    fn phases_step_down_and_a_completion_restarts_the_spin() {
        let b = Backoff { spin: Duration::from_micros(100), yield_for: Duration::from_micros(100), ..Backoff::default() };
        let mut w = Wait::new(0);
        let t = w.t0;
        w.step_phase(&b, t + Duration::from_micros(50), 0);
        assert_eq!(w.phase, Phase::Spin);
        w.step_phase(&b, t + Duration::from_micros(150), 0);
        assert_eq!(w.phase, Phase::Yield);
        w.step_phase(&b, t + Duration::from_micros(250), 0);
        assert_eq!((w.phase, w.sleep), (Phase::Sleep, b.min_sleep));
        // A completion: spinning again, measured from then.
        w.step_phase(&b, t + Duration::from_micros(300), 1);
        assert_eq!(w.phase, Phase::Spin);
        w.step_phase(&b, t + Duration::from_micros(450), 1);
        assert_eq!(w.phase, Phase::Yield);
    }

    #[test]
    fn sleeps_double_up_to_the_bound_and_the_deadline_holds() {
        let b = Backoff {
            spin: Duration::ZERO,
            yield_for: Duration::ZERO,
            min_sleep: Duration::from_micros(10),
            max_sleep: Duration::from_micros(40),
        };
        let mut w = Wait::new(0);
        // The phase is looked at every 64 spins: the 64th step enters the sleep phase.
        for _ in 0..64 {
            w.relax(Duration::from_secs(5), 0, Some(&b), 0).unwrap();
        }
        let us = |n| Duration::from_micros(n);
        assert_eq!((w.phase, w.sleep), (Phase::Sleep, us(20)), "slept 10 µs, next 20 µs");
        let mut seen = Vec::new();
        for _ in 0..3 {
            w.relax(Duration::from_secs(5), 0, Some(&b), 0).unwrap();
            seen.push(w.sleep);
        }
        assert_eq!(seen, vec![us(40), us(40), us(40)]);
        assert_eq!(w.relax(Duration::ZERO, 0, Some(&b), 0), Err(Error::Timeout));
    }
}
