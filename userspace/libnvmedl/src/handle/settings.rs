// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Settings`: the handle options that only steer the I/O path (batch threshold, default
//! urgency, wait bound and wait policy), with their range checks.

use std::time::Duration;

use directnvm_abi::DNVM_URGENCY_CLASSES;

use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::request::HandleOptions;

/// The I/O-path options of a handle.
pub(super) struct Settings {
    /// Staged requests that start a batch (1 ..= capacity).
    pub(super) batch: usize,
    /// Default urgency class of requests (0 ..= 3).
    pub(super) priority: u16,
    /// Bound of every wait.
    pub(super) timeout: Duration,
    /// Spins between `sched_yield` calls in blocking waits (0: pure spin).
    pub(super) yield_spins: u32,
    /// Backoff of blocking waits (`None`: spin, with `yield_spins`).
    pub(super) backoff: Option<Backoff>,
}

impl Settings {
    /// The settings of `opts` (checked by the caller).
    pub(super) fn new(opts: &HandleOptions) -> Self {
        Settings { batch: opts.batch, priority: opts.priority, timeout: opts.timeout, yield_spins: opts.yield_spins, backoff: opts.backoff }
    }

    /// Set the default urgency class (0..=3).
    pub(super) fn set_priority(&mut self, p: u16) -> Result<()> {
        if p >= DNVM_URGENCY_CLASSES as u16 {
            return Err(Error::InvalidArgument);
        }
        self.priority = p;
        Ok(())
    }

    /// Set the batch threshold (1 ..= `capacity`).
    pub(super) fn set_batch(&mut self, v: usize, capacity: usize) -> Result<()> {
        if v == 0 || v > capacity {
            return Err(Error::InvalidArgument);
        }
        self.batch = v;
        Ok(())
    }

    /// Set the backoff of blocking waits (refused if invalid).
    pub(super) fn set_backoff(&mut self, b: Option<Backoff>) -> Result<()> {
        if let Some(b) = &b {
            b.validate()?;
        }
        self.backoff = b;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_check_their_ranges() {
        let mut s = Settings::new(&HandleOptions::default());
        assert_eq!((s.batch, s.priority, s.yield_spins, s.backoff.is_none()), (1, 1, 0, true));
        assert_eq!(s.set_priority(4), Err(Error::InvalidArgument));
        s.set_priority(3).unwrap();
        assert_eq!(s.priority, 3);
        assert_eq!(s.set_batch(0, 8), Err(Error::InvalidArgument));
        assert_eq!(s.set_batch(9, 8), Err(Error::InvalidArgument));
        s.set_batch(8, 8).unwrap();
        assert_eq!(s.batch, 8);
        let bad = Backoff { max_sleep: Duration::ZERO, ..Backoff::default() };
        assert!(s.set_backoff(Some(bad)).is_err());
        s.set_backoff(Some(Backoff::default())).unwrap();
        assert!(s.backoff.is_some());
    }
}
