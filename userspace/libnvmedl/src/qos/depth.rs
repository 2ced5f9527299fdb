// SPDX-License-Identifier: MIT OR Apache-2.0
//! Adaptive queue depth: a per-handle proportional-integral controller that moves the in-flight
//! limit so the measured queueing delay tracks a target (docs/qos.md §1).
//!
//! * **Measurement.** Each completed request reports its latency from submit to the poll that
//!   saw it finish, and its service class (`delay::class_of`). Its queueing delay is the
//!   latency minus the class's service floor (`delay::Floors`); the window statistic is a
//!   percentile of those delays (`percentile`, default the median), not a mean.
//! * **Floors.** Min-filtered per class; every `probe_every` windows the limit drops to
//!   `min_depth` for a short drain window (`window_ios / 4`, at least 8 completions, as BBR's
//!   PROBE_RTT) and the classes seen in it take its minima, so the floors follow a device
//!   that got slower. A window run at `min_depth` anyway counts as a drain window.
//! * **One decision per round trip.** After a decision the controller skips as many
//!   completions as the old limit (the queue that decision found, which measures the old
//!   limit), then counts `max(window_ios, limit)` completions: a window always spans at
//!   least one round trip of the whole in-flight population, so the loop does not act twice
//!   on the same queue, and it counts consecutive completions (counting only requests
//!   submitted after the decision would keep the fast ones and drop the slow).
//! * **Plant gain.** By Little's law a saturated device adds one slot's worth of latency per
//!   extra in-flight request: dW/dL = 1/X, X the window's completion rate. The error is
//!   divided by that gain, so it is in slots and the same gains fit a 10 µs and a 5 ms device.
//! * **PI in velocity form.** `u += kp·(e − e_prev) + ki·e`; the integral is the output itself,
//!   so clamping the output to `[min_depth, max_depth]` is the anti-windup. Raising is
//!   conditional: the limit only grows in windows where a submit found the queue full (the
//!   limit was the bottleneck), so an application-bound stream does not wind the limit up.
//!   While the delay is below half the target the device is under-used and the limit grows
//!   by at least one slot per window (additive increase). Each step is bounded: at most
//!   halve, at most +25 % + 1.
//! * **Start.** The handle starts the controller at `min_depth` (first window a drain window)
//!   and lets it grow; it never jumps to the upper bound. With `slow_start` (off by default)
//!   the limit doubles per decision while the delay is below half the target, as TCP's slow
//!   start, and the controller leaves slow start for good at the first window whose delay
//!   reaches half the target.
//!
//! The controller is plain data (no heap, no clock of its own, ~1.3 KiB): the handle feeds it
//! the time it read anyway when completing requests. Cost per completion: a compare, a min,
//! a subtraction and a histogram increment; per window: a scan of at most 241 counters and
//! about 20 floating-point operations.

use std::time::Duration;

use super::delay::{DelayHist, Floors};
use crate::error::{Error, Result};

/// Settings of the depth controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthConfig {
    /// Queueing delay to track (default 50 µs; 1 µs ..= 1 s).
    pub target: Duration,
    /// Smallest limit, also the depth of the drain windows (default 1).
    pub min_depth: usize,
    /// Largest limit; 0 = the handle's `iodepth` (default 0).
    pub max_depth: usize,
    /// Counted completions per decision (default 32; 8 ..= 65536).
    pub window_ios: u32,
    /// Proportional gain on the change of the error, in slots per slot (default 0.25).
    pub kp: f64,
    /// Integral gain, in slots per slot and window (default 0.5; 0 < ki ≤ 1).
    pub ki: f64,
    /// A drain window every this many windows (default 64; 0 = never probe).
    pub probe_every: u32,
    /// Percentile of the window's delays that tracks the target (default 50; 1 ..= 99).
    pub percentile: u8,
    /// Slow start (default off): from the start, while the window's delay stays below half
    /// the target, double the limit per decision instead of the bounded PI step; the first
    /// window at or above half the target ends it for good (until the controller restarts).
    pub slow_start: bool,
}

impl Default for DepthConfig {
    fn default() -> Self {
        Self {
            target: Duration::from_micros(50),
            min_depth: 1,
            max_depth: 0,
            window_ios: 32,
            kp: 0.25,
            ki: 0.5,
            probe_every: 64,
            percentile: 50,
            slow_start: false,
        }
    }
}

impl DepthConfig {
    /// Check the ranges documented on the fields.
    pub fn validate(&self) -> Result<()> {
        let t = self.target.as_nanos();
        let ok = (1_000..=1_000_000_000).contains(&t)
            && self.min_depth >= 1
            && (self.max_depth == 0 || self.max_depth >= self.min_depth)
            && (8..=65536).contains(&self.window_ios)
            && self.kp.is_finite()
            && (0.0..=1.0).contains(&self.kp)
            && self.ki > 0.0
            && self.ki <= 1.0
            && (1..=99).contains(&self.percentile);
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidArgument)
        }
    }

    fn drain_ios(&self) -> u32 {
        (self.window_ios / 4).max(8)
    }
}

/// What the controller did in its last window (for stats and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DepthSample {
    /// Operating limit after the window (during a drain window the handle applies
    /// `min_depth` instead: see `draining`).
    pub limit: usize,
    /// Mean latency of the window's counted requests (ns).
    pub mean_ns: u64,
    /// Queueing-delay estimate of the window: the configured percentile (ns).
    pub delay_ns: u64,
    /// Smallest per-class service floor in use (ns).
    pub floor_ns: u64,
    /// The window was a drain (floor) probe.
    pub probe: bool,
    /// Windows decided so far.
    pub windows: u64,
    /// Completions per second over the window (all completions, counted or not).
    pub rate: f64,
    /// The next window is a drain window.
    pub draining: bool,
}

/// The controller state (see module docs).
#[derive(Clone, Debug)]
pub struct DepthController {
    cfg: DepthConfig,
    max: usize,
    limit: f64,
    prev_err: f64,
    windows: u64,
    probing: bool,
    /// Limit to restore after a probe.
    saved: f64,
    /// Time of the last decision (0: none yet).
    since_ns: u64,
    /// Completions still to skip after the last decision (the queue it found).
    skip: u32,
    /// Completions since the last decision (counted or not).
    all: u32,
    /// Counted completions in the window.
    n: u32,
    sum_ns: u64,
    limited: bool,
    /// In slow start (`DepthConfig::slow_start`, until the delay reaches half the target).
    slow: bool,
    floors: Floors,
    hist: DelayHist,
    last: DepthSample,
}

impl DepthController {
    /// A controller whose limit after its first drain window is `initial`, bounded by
    /// `cfg.max_depth` or else `max`. (The handle passes `min_depth` when it switches the
    /// controller on, and the limit in force when it restarts a running one.)
    pub fn new(cfg: DepthConfig, initial: usize, max: usize) -> Result<Self> {
        cfg.validate()?;
        let max = if cfg.max_depth == 0 { max } else { cfg.max_depth.min(max) };
        if max < cfg.min_depth {
            return Err(Error::InvalidArgument);
        }
        let limit = initial.clamp(cfg.min_depth, max) as f64;
        Ok(Self {
            cfg,
            max,
            limit,
            prev_err: 0.0,
            windows: 0,
            // Start with a drain window: the floors are unknown.
            probing: cfg.probe_every > 0,
            saved: limit,
            since_ns: 0,
            skip: 0,
            all: 0,
            n: 0,
            sum_ns: 0,
            limited: false,
            slow: cfg.slow_start,
            floors: Floors::default(),
            hist: DelayHist::default(),
            last: DepthSample::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> DepthConfig {
        self.cfg
    }

    /// Change the upper bound (the handle's `iodepth` changed).
    pub fn set_max(&mut self, max: usize) {
        self.max = if self.cfg.max_depth == 0 { max } else { self.cfg.max_depth.min(max) }.max(self.cfg.min_depth);
        self.limit = self.limit.min(self.max as f64);
        self.saved = self.saved.min(self.max as f64);
    }

    /// The in-flight limit to apply now.
    pub fn limit(&self) -> usize {
        if self.probing {
            self.cfg.min_depth
        } else {
            self.limit as usize
        }
    }

    /// The last decision.
    pub fn last(&self) -> DepthSample {
        self.last
    }

    /// A submit found the queue full (demand exceeds the limit in this window).
    #[inline]
    pub fn note_limited(&mut self) {
        self.limited = true;
    }

    /// One completed request of service class `class` (`qos::delay::class_of`), submitted
    /// `latency_ns` before `now_ns`. Returns the new limit when this completion closed a
    /// window.
    #[inline]
    pub fn record(&mut self, now_ns: u64, latency_ns: u64, class: u8) -> Option<usize> {
        if self.since_ns == 0 {
            self.since_ns = now_ns.saturating_sub(latency_ns).max(1);
        }
        self.all += 1;
        if self.skip > 0 {
            // The queue the last decision found: measures the old limit.
            self.skip -= 1;
            return None;
        }
        self.n += 1;
        self.sum_ns = self.sum_ns.saturating_add(latency_ns);
        let delay = self.floors.sample(class, latency_ns);
        self.hist.add(delay);
        let need = if self.probing { self.cfg.drain_ios() } else { self.cfg.window_ios.max(self.limit as u32) };
        if self.n < need {
            return None;
        }
        Some(self.decide(now_ns))
    }

    fn decide(&mut self, now_ns: u64) -> usize {
        let before = self.limit();
        let mean = self.sum_ns / u64::from(self.n.max(1));
        let delay = self.hist.percentile(self.cfg.percentile);
        let span = now_ns.saturating_sub(self.since_ns).max(1) as f64;
        // Nanoseconds of latency per in-flight slot (Little: W = L/X, dW/dL = 1/X).
        let per_slot = span / f64::from(self.all.max(1));
        let was_probe = self.probing;
        self.windows += 1;
        if was_probe || self.limit() <= self.cfg.min_depth {
            // A drain window: its minima are the service times.
            self.floors.refresh();
        } else {
            self.floors.end_window();
        }
        if was_probe {
            self.probing = false;
            self.limit = self.saved;
        } else {
            let target = self.cfg.target.as_nanos() as f64;
            let err = (target - delay as f64) / per_slot;
            let mut du = self.cfg.kp * (err - self.prev_err) + self.cfg.ki * err;
            self.prev_err = err;
            let under_used = (delay as f64) < target / 2.0;
            self.slow &= under_used;
            if under_used {
                // Under-used: additive increase, or doubling in slow start.
                du = if self.slow { self.limit } else { du.max(1.0) };
            }
            if du > 0.0 && !self.limited {
                du = 0.0;
            }
            let up = if self.slow { self.limit } else { self.limit / 4.0 + 1.0 };
            let du = du.clamp(-self.limit / 2.0, up);
            self.limit = (self.limit + du).clamp(self.cfg.min_depth as f64, self.max as f64);
            if self.cfg.probe_every > 0 && self.windows.is_multiple_of(u64::from(self.cfg.probe_every)) {
                self.probing = true;
                self.saved = self.limit;
            }
        }
        self.last = DepthSample {
            limit: self.limit as usize,
            mean_ns: mean,
            delay_ns: delay,
            floor_ns: self.floors.min(),
            probe: was_probe,
            windows: self.windows,
            rate: 1e9 / per_slot,
            draining: self.probing,
        };
        self.since_ns = now_ns.max(1);
        self.skip = before as u32;
        self.all = 0;
        self.n = 0;
        self.sum_ns = 0;
        self.hist.clear();
        self.limited = false;
        self.limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed-loop device in virtual time: `units` parallel servers, service time `service`
    /// ± jitter, FIFO; the application keeps `limit` requests in flight.
    struct Sim {
        now: u64,
        servers: Vec<u64>,
        inflight: Vec<(u64, u64)>, // (submit, finish), sorted by finish
        rng: u64,
    }

    impl Sim {
        fn new(units: usize) -> Self {
            Sim { now: 0, servers: vec![0; units], inflight: Vec::new(), rng: 0x9e37_79b9_7f4a_7c15 }
        }
        fn jitter(&mut self, service: u64) -> u64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            // ±20 %
            service * (80 + self.rng % 41) / 100
        }
        fn submit(&mut self, service: u64) {
            let s = self.jitter(service);
            let (i, free) = self.servers.iter().copied().enumerate().min_by_key(|&(_, f)| f).unwrap();
            let finish = free.max(self.now) + s;
            self.servers[i] = finish;
            let at = self.inflight.partition_point(|&(_, f)| f <= finish);
            self.inflight.insert(at, (self.now, finish));
        }
        /// Run `ios` completions; returns the decisions.
        fn run(&mut self, c: &mut DepthController, service: u64, ios: usize) -> Vec<DepthSample> {
            let mut out = Vec::new();
            for _ in 0..ios {
                while self.inflight.len() < c.limit() {
                    self.submit(service);
                    if self.inflight.len() >= c.limit() {
                        c.note_limited();
                    }
                }
                let (sub, fin) = self.inflight.remove(0);
                self.now = fin;
                if c.record(fin, fin - sub, 0).is_some() {
                    out.push(c.last());
                }
            }
            out
        }
    }

    fn settled(s: &[DepthSample]) -> Vec<DepthSample> {
        s.iter().rev().filter(|d| !d.probe).take(20).copied().collect()
    }

    fn check_phase(s: &[DepthSample], target_ns: u64, want_limit: f64) {
        let tail = settled(s);
        let mean_delay = tail.iter().map(|d| d.delay_ns).sum::<u64>() / tail.len() as u64;
        assert!(
            mean_delay > target_ns * 6 / 10 && mean_delay < target_ns * 14 / 10,
            "mean delay {mean_delay} ns vs target {target_ns} ns: {tail:?}"
        );
        let lo = tail.iter().map(|d| d.limit).min().unwrap() as f64;
        let hi = tail.iter().map(|d| d.limit).max().unwrap() as f64;
        // No oscillation past a bound: the settled limit stays within ±30 % (+2) of the depth
        // that gives the target delay.
        let band = want_limit * 0.3 + 2.0;
        assert!(lo >= want_limit - band && hi <= want_limit + band, "limit {lo}..{hi} vs {want_limit}: {tail:?}");
    }

    #[test]
    fn converges_after_a_step_change_of_load() {
        let cfg = DepthConfig::default();
        let mut c = DepthController::new(cfg, 128, 256).unwrap();
        let mut sim = Sim::new(8);
        // Phase 1: 20 µs per command, 8 units: delay(L) ≈ 2.5 µs·L − 20 µs → L* ≈ 28.
        let p1 = sim.run(&mut c, 20_000, 64 * 120);
        check_phase(&p1, 50_000, 28.0);
        // Step: commands get 3x slower (larger I/Os, a write burst): L* ≈ 14.7.
        let p2 = sim.run(&mut c, 60_000, 64 * 120);
        check_phase(&p2, 50_000, 14.7);
        // Within 15 windows of the step the limit has left the old operating point.
        assert!(p2.iter().take(15).any(|d| d.limit <= 20), "{:?}", &p2[..15]);
        // Floor probes happened and measured the service time (60 µs ± 20 %).
        let probe = p2.iter().rev().find(|d| d.probe).unwrap();
        assert!(probe.floor_ns >= 48_000 && probe.floor_ns <= 72_000, "{probe:?}");
    }

    #[test]
    fn limit_stays_in_bounds_and_does_not_wind_up() {
        let cfg = DepthConfig { min_depth: 4, max_depth: 16, ..DepthConfig::default() };
        let mut c = DepthController::new(cfg, 1000, 1024).unwrap();
        assert_eq!(c.limit(), 4); // first window is a probe at min_depth
                                  // Far below target: wants to grow past the bound.
        let mut sim = Sim::new(64);
        let s = sim.run(&mut c, 5_000, 64 * 50);
        assert!(s.iter().all(|d| (4..=16).contains(&d.limit)));
        assert_eq!(settled(&s)[0].limit, 16);
        // Now overloaded: must come down at once (no integral wound up at the top).
        let mut slow = Sim::new(1);
        slow.now = sim.now;
        let s = slow.run(&mut c, 200_000, 64 * 6);
        assert!(s.iter().filter(|d| !d.probe).take(2).any(|d| d.limit < 16), "{s:?}");
        assert!(s.iter().all(|d| d.limit >= 4));
    }

    #[test]
    fn does_not_grow_when_the_application_is_the_bottleneck() {
        let mut c = DepthController::new(DepthConfig { probe_every: 0, ..DepthConfig::default() }, 8, 256).unwrap();
        // Low delay, but never limited: the limit must not move up.
        for i in 0..64 * 20u64 {
            c.record(i * 10_000, 10_000, 0);
        }
        assert_eq!(c.limit(), 8);
    }

    #[test]
    fn bad_settings_are_refused() {
        let bad = [
            DepthConfig { target: Duration::ZERO, ..DepthConfig::default() },
            DepthConfig { min_depth: 0, ..DepthConfig::default() },
            DepthConfig { min_depth: 8, max_depth: 4, ..DepthConfig::default() },
            DepthConfig { window_ios: 2, ..DepthConfig::default() },
            DepthConfig { ki: 0.0, ..DepthConfig::default() },
            DepthConfig { kp: f64::NAN, ..DepthConfig::default() },
        ];
        for b in bad {
            assert_eq!(DepthController::new(b, 8, 64).unwrap_err(), Error::InvalidArgument, "{b:?}");
        }
    }
}
