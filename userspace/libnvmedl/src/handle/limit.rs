// SPDX-License-Identifier: MIT OR Apache-2.0
//! `DepthLimit`: the in-flight limit of a handle, fixed (`iodepth`) or set by the adaptive
//! depth controller (docs/qos.md), with the configured depth as its upper bound.

use crate::error::Result;
use crate::qos::{DepthConfig, DepthController, DepthSample};

/// The in-flight limit and its controller.
pub(super) struct DepthLimit {
    /// The limit in force now.
    limit: usize,
    /// The configured depth (the controller's upper bound).
    max: usize,
    ctl: Option<DepthController>,
    /// The last settings given (also while the controller is off).
    cfg: DepthConfig,
}

impl DepthLimit {
    /// A limit of `iodepth`, with the controller on if `cfg` is given (it starts at
    /// `min_depth`).
    pub(super) fn new(iodepth: usize, cfg: Option<DepthConfig>) -> Result<Self> {
        let ctl = match cfg {
            Some(c) => Some(DepthController::new(c, c.min_depth, iodepth)?),
            None => None,
        };
        Ok(DepthLimit { limit: ctl.as_ref().map_or(iodepth, |c| c.limit()), max: iodepth, ctl, cfg: cfg.unwrap_or_default() })
    }

    /// The limit in force now.
    #[inline(always)]
    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether the controller is on.
    #[inline(always)]
    pub(super) fn adaptive(&self) -> bool {
        self.ctl.is_some()
    }

    /// Set the configured depth (the caller checked its range); with the controller on, its
    /// upper bound.
    pub(super) fn set_max(&mut self, v: usize) {
        self.max = v;
        self.limit = match self.ctl.as_mut() {
            Some(c) => {
                c.set_max(v);
                c.limit()
            }
            None => v,
        };
    }

    /// Turn the controller on with `cfg` (a running one restarts from its limit, a new one
    /// starts at `min_depth`) or off (back to the configured depth).
    pub(super) fn set_control(&mut self, cfg: Option<DepthConfig>) -> Result<()> {
        match cfg {
            Some(c) => {
                let initial = if self.ctl.is_some() { self.limit } else { c.min_depth };
                let ctl = DepthController::new(c, initial, self.max)?;
                self.cfg = c;
                self.limit = ctl.limit();
                self.ctl = Some(ctl);
            }
            None => {
                self.ctl = None;
                self.limit = self.max;
            }
        }
        Ok(())
    }

    /// The last settings given.
    pub(super) fn config(&self) -> DepthConfig {
        self.cfg
    }

    /// The controller's last decision (`None` while it is off).
    pub(super) fn sample(&self) -> Option<DepthSample> {
        self.ctl.as_ref().map(|c| c.last())
    }

    /// A submit found the queue full at the limit.
    pub(super) fn note_limited(&mut self) {
        if let Some(c) = self.ctl.as_mut() {
            c.note_limited();
        }
    }

    /// A request of size class `class` completed at `now_ns` after `latency_ns` since its
    /// submit: the controller may set a new limit.
    #[inline]
    pub(super) fn record(&mut self, now_ns: u64, latency_ns: u64, class: u8) {
        if let Some(limit) = self.ctl.as_mut().and_then(|c| c.record(now_ns, latency_ns, class)) {
            self.limit = limit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_adaptive_limits() {
        let mut d = DepthLimit::new(32, None).unwrap();
        assert_eq!((d.limit(), d.adaptive(), d.sample().is_none()), (32, false, true));
        d.set_max(8);
        assert_eq!(d.limit(), 8);
        let cfg = DepthConfig { min_depth: 2, ..DepthConfig::default() };
        d.set_control(Some(cfg)).unwrap();
        assert_eq!((d.limit(), d.adaptive(), d.config().min_depth), (2, true, 2), "a new controller starts low");
        d.set_control(Some(cfg)).unwrap();
        assert_eq!(d.limit(), 2, "a running one restarts from its limit");
        d.set_control(None).unwrap();
        assert_eq!((d.limit(), d.adaptive(), d.config().min_depth), (8, false, 2), "off: the configured depth");
        let d = DepthLimit::new(16, Some(cfg)).unwrap();
        assert_eq!((d.limit(), d.adaptive()), (2, true));
    }
}
