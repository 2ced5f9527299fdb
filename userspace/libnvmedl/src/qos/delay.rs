// SPDX-License-Identifier: MIT OR Apache-2.0
//! The queueing-delay estimator of the depth controller (docs/qos.md §1).
//!
//! A request's latency is its service time plus the time it waited behind others. Service
//! time depends on the request (a 64 KiB write on a bandwidth-bound SSD takes four times as
//! long as a 4 KiB read), so one floor for all requests counts size differences as queueing.
//! Here every request falls in a *service class* (read or write, size in powers of two of
//! 4 KiB pages, 16 classes) and each class has its own floor, the smallest latency seen for
//! it (min-filtered as TCP Vegas' base RTT and BBR's min RTT, refreshed by the controller's
//! drain windows). A request's queueing delay is its latency minus its class's floor.
//!
//! The window statistic is a percentile of those delays, from a fixed log-linear histogram
//! (8 buckets per octave: ±6 % resolution, 1 µs to ~18 min), not the mean: one slow request
//! moves a mean of 64 samples by 1/64 of its size, a median not at all.
//!
//! Everything is fixed-size plain data (about 1.1 KiB): no allocation, no clock. Why not
//! `hdrhistogram` (the tenant accounting uses it, bounded): the window is cleared every 32-ish
//! completions, and a bounded hdrhistogram over this range at even 2 significant digits holds
//! thousands of 64-bit counters (tens of KiB) to clear and scan per window on the I/O path;
//! ±6 % resolution is all a median for a PI step needs.

/// Service classes: reads 0..8 and writes 8..16, by size (1, 2, 3–4, 5–8, …, >64 pages).
pub const CLASSES: usize = 16;
/// Sub-buckets per octave (a power of two).
const SUB: u32 = 8;
const SUB_BITS: u32 = SUB.trailing_zeros();
/// Delays below 2^LOW ns (~1 µs) share bucket 0 (no queueing to speak of).
const LOW: u32 = 10;
/// Octaves above 2^LOW ns; larger delays go to the last bucket.
const OCTAVES: u32 = 30;
const BUCKETS: usize = 1 + (OCTAVES * SUB) as usize;

/// The service class of a request of `bytes` bytes (flushes count as 1-page writes).
#[inline]
pub fn class_of(write: bool, bytes: u32) -> u8 {
    let pages = bytes.div_ceil(4096).max(1);
    let size = (u32::BITS - (pages - 1).leading_zeros()).min(7);
    (u8::from(write) << 3) | size as u8
}

#[inline]
fn bucket(d: u64) -> usize {
    if d < 1 << LOW {
        return 0;
    }
    let k = u64::BITS - 1 - d.leading_zeros();
    if k >= LOW + OCTAVES {
        return BUCKETS - 1;
    }
    let sub = ((d >> (k - SUB_BITS)) & u64::from(SUB - 1)) as u32;
    1 + ((k - LOW) * SUB + sub) as usize
}

/// The middle of bucket `b` (0 for bucket 0).
fn value(b: usize) -> u64 {
    if b == 0 {
        return 0;
    }
    let i = (b - 1) as u32;
    let k = LOW + i / SUB;
    let width = 1u64 << (k - SUB_BITS);
    (1u64 << k) + u64::from(i % SUB) * width + width / 2
}

/// Per-class service-time floors.
#[derive(Clone, Copy, Debug)]
pub struct Floors {
    floor: [u64; CLASSES],
    /// Smallest latency per class in the current drain window.
    drain: [u64; CLASSES],
}

impl Default for Floors {
    fn default() -> Self {
        Self { floor: [u64::MAX; CLASSES], drain: [u64::MAX; CLASSES] }
    }
}

impl Floors {
    /// Take one latency of class `c`; returns its queueing delay (latency − floor).
    #[inline]
    pub fn sample(&mut self, c: u8, latency_ns: u64) -> u64 {
        let c = usize::from(c) % CLASSES;
        self.drain[c] = self.drain[c].min(latency_ns);
        self.floor[c] = self.floor[c].min(latency_ns);
        latency_ns - self.floor[c]
    }

    /// End of a drain window (the queue was at its smallest): each class seen in it takes the
    /// window's minimum as its floor, so a device that got slower is not measured against
    /// its old speed for longer than one probe period.
    pub fn refresh(&mut self) {
        for c in 0..CLASSES {
            if self.drain[c] != u64::MAX {
                self.floor[c] = self.drain[c];
            }
        }
        self.end_window();
    }

    /// Forget the current window's minima (not a drain window).
    pub fn end_window(&mut self) {
        self.drain = [u64::MAX; CLASSES];
    }

    /// The floor of class `c` (0 if never seen).
    pub fn get(&self, c: u8) -> u64 {
        let f = self.floor[usize::from(c) % CLASSES];
        if f == u64::MAX {
            0
        } else {
            f
        }
    }

    /// The smallest floor over all classes (0 if none seen).
    pub fn min(&self) -> u64 {
        let f = self.floor.iter().copied().min().unwrap_or(u64::MAX);
        if f == u64::MAX {
            0
        } else {
            f
        }
    }
}

/// A window's delays as a log-linear histogram.
#[derive(Clone, Copy, Debug)]
pub struct DelayHist {
    counts: [u32; BUCKETS],
    /// One past the highest bucket used (scan and clear stop there).
    top: usize,
    n: u32,
}

impl Default for DelayHist {
    fn default() -> Self {
        Self { counts: [0; BUCKETS], top: 0, n: 0 }
    }
}

impl DelayHist {
    /// Add one delay.
    #[inline]
    pub fn add(&mut self, delay_ns: u64) {
        let b = bucket(delay_ns);
        self.counts[b] = self.counts[b].saturating_add(1);
        self.top = self.top.max(b + 1);
        self.n += 1;
    }

    /// Samples in the window.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// True without samples.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `pct` percentile (1..=99) of the window (middle of its bucket; 0 if empty).
    pub fn percentile(&self, pct: u8) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = (u64::from(self.n) * u64::from(pct)).div_ceil(100).max(1);
        let mut seen = 0u64;
        for (b, &k) in self.counts[..self.top].iter().enumerate() {
            seen += u64::from(k);
            if seen >= rank {
                return value(b);
            }
        }
        value(self.top.saturating_sub(1))
    }

    /// Empty the window.
    pub fn clear(&mut self) {
        self.counts[..self.top].fill(0);
        self.top = 0;
        self.n = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_split_reads_writes_and_sizes() {
        assert_eq!(class_of(false, 512), 0);
        assert_eq!(class_of(false, 4096), 0);
        assert_eq!(class_of(false, 8192), 1);
        assert_eq!(class_of(false, 12288), 2);
        assert_eq!(class_of(false, 16384), 2);
        assert_eq!(class_of(false, 65536), 4);
        assert_eq!(class_of(false, 1 << 30), 7);
        assert_eq!(class_of(true, 0), 8);
        assert_eq!(class_of(true, 65536), 12);
    }

    #[test]
    fn buckets_are_monotonic_and_within_six_percent() {
        let mut last = 0;
        for d in (1_024u64..(1 << 40)).step_by(7_919_777).chain([1_024, 1_100, 50_000, 5_000_000]) {
            let b = bucket(d);
            let v = value(b);
            assert!((v as f64 - d as f64).abs() <= d as f64 * 0.0625, "{d} -> {b} -> {v}");
            if d >= last {
                assert!(b >= bucket(last));
                last = d;
            }
        }
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_ignore_outliers() {
        let mut h = DelayHist::default();
        for i in 0..63 {
            h.add(40_000 + i * 100);
        }
        h.add(1_000_000_000);
        let p50 = h.percentile(50);
        assert!((41_000..=45_000).contains(&p50), "{p50}");
        assert!(h.percentile(99) > 900_000_000);
        h.clear();
        assert!(h.is_empty());
        assert_eq!(h.percentile(50), 0);
    }

    #[test]
    fn floors_are_per_class_and_refresh_on_drain() {
        let mut f = Floors::default();
        assert_eq!(f.sample(0, 3_000), 0);
        assert_eq!(f.sample(12, 11_000), 0, "a large write is not queueing behind small reads");
        assert_eq!(f.sample(0, 5_000), 2_000);
        assert_eq!(f.sample(12, 12_000), 1_000);
        assert_eq!(f.min(), 3_000);
        // The device got slower: a drain window re-measures the floors of the classes seen.
        f.end_window();
        f.sample(0, 9_000);
        f.refresh();
        assert_eq!((f.get(0), f.get(12)), (9_000, 11_000));
    }
}
