// SPDX-License-Identifier: MIT OR Apache-2.0
//! Tenants: per-tenant accounting (I/Os, bytes, latency percentiles, share against a target)
//! and a bounded, decaying weight boost for tenants below their target (docs/qos.md).
//!
//! * A request carries a tenant id `0 .. MAX_TENANTS` (default 0).
//! * Each handle keeps a `TenantTable`: counters and an HDR histogram per tenant, all
//!   allocated when accounting is switched on, so recording allocates nothing.
//! * Every `window_ios` completions the handle closes a window: each tenant's share of the
//!   window's cost (bytes, at least 4 KiB per request) is compared with its target. A tenant
//!   with I/O in the window and a share below target gains `gain · (target − share)/target` of
//!   boost, up to `max_boost`; otherwise its boost decays toward 1 by `decay` per window (the
//!   BFQ weight-raising idea, made proportional and self-cancelling). The boost multiplies the
//!   tenant's weight in schedulers that have tenant lanes (`Tiered`).
//! * Process totals: at each window end the handle adds its new samples to a process-wide
//!   table with `try_lock` (never waits; if a reader holds the lock, the samples stay pending
//!   until the next window), and with a blocking lock when the handle is dropped or on
//!   `Handle::publish_tenants`. So several handles of one process aggregate without double
//!   counting; `process_stats` reads the sum.

use std::sync::Mutex;

use hdrhistogram::Histogram;

use crate::error::{Error, Result};

/// Tenant ids are `0 .. MAX_TENANTS`.
pub const MAX_TENANTS: usize = 16;
/// Histogram range: 1 ns .. 60 s, 2 significant digits (1 % resolution).
const HIST_MAX_NS: u64 = 60_000_000_000;
const HIST_DIGITS: u8 = 2;
/// Smallest cost of one request in a share (a flush counts as one page).
const MIN_COST: u64 = 4096;

/// Settings of tenant accounting and boosting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TenantConfig {
    /// Completions per accounting window (default 256; 16 ..= 65536).
    pub window_ios: u32,
    /// Largest boost factor (default 4; 1 ..= 30, BFQ's weight-raising coefficient).
    pub max_boost: f64,
    /// Boost added per window at a share of 0 (default 1; 0 < gain ≤ 10).
    pub gain: f64,
    /// Fraction of the excess boost kept per window at or above target (default 0.5; 0 ..< 1).
    pub decay: f64,
}

impl Default for TenantConfig {
    fn default() -> Self {
        Self { window_ios: 256, max_boost: 4.0, gain: 1.0, decay: 0.5 }
    }
}

impl TenantConfig {
    /// Check the ranges documented on the fields.
    pub fn validate(&self) -> Result<()> {
        let ok = (16..=65536).contains(&self.window_ios)
            && (1.0..=30.0).contains(&self.max_boost)
            && self.gain > 0.0
            && self.gain <= 10.0
            && (0.0..1.0).contains(&self.decay);
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidArgument)
        }
    }
}

/// Accounting of one tenant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TenantStats {
    /// Tenant id.
    pub tenant: u32,
    /// Completed requests (successful).
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Latency percentiles (submit to completion, ns).
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest latency.
    pub max_ns: u64,
    /// Share of the last window (handle) or of all bytes so far (process).
    pub share: f64,
    /// Target share (0 = none).
    pub target: f64,
    /// Current boost factor (1 = none; process totals report 1).
    pub boost: f64,
}

fn histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_DIGITS).map_err(|_| Error::Internal)
}

struct Acct {
    ios: u64,
    bytes: u64,
    hist: Histogram<u64>,
    /// Samples not yet added to the process table.
    pending: Histogram<u64>,
    pending_ios: u64,
    pending_bytes: u64,
    win_ios: u64,
    win_cost: u64,
    target: f64,
    share: f64,
    boost: f64,
}

/// One handle's tenant accounting (module docs).
pub struct TenantTable {
    cfg: TenantConfig,
    acct: Vec<Acct>,
    win_n: u32,
    windows: u64,
}

struct ProcAcct {
    ios: u64,
    bytes: u64,
    hist: Histogram<u64>,
}

static PROCESS: Mutex<Vec<ProcAcct>> = Mutex::new(Vec::new());

fn lock_process() -> std::sync::MutexGuard<'static, Vec<ProcAcct>> {
    PROCESS.lock().unwrap_or_else(|e| e.into_inner())
}

impl TenantTable {
    /// A table with every tenant's histograms allocated (control path).
    pub fn new(cfg: TenantConfig) -> Result<Self> {
        cfg.validate()?;
        {
            let mut p = lock_process();
            while p.len() < MAX_TENANTS {
                p.push(ProcAcct { ios: 0, bytes: 0, hist: histogram()? });
            }
        }
        let mut acct = Vec::with_capacity(MAX_TENANTS);
        for _ in 0..MAX_TENANTS {
            acct.push(Acct {
                ios: 0,
                bytes: 0,
                hist: histogram()?,
                pending: histogram()?,
                pending_ios: 0,
                pending_bytes: 0,
                win_ios: 0,
                win_cost: 0,
                target: 0.0,
                share: 0.0,
                boost: 1.0,
            });
        }
        Ok(Self { cfg, acct, win_n: 0, windows: 0 })
    }

    /// The settings.
    pub fn config(&self) -> TenantConfig {
        self.cfg
    }

    /// Windows closed so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Set `tenant`'s target share (0 ..= 1; 0 = no target, no boost).
    pub fn set_target(&mut self, tenant: u32, share: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&share) {
            return Err(Error::InvalidArgument);
        }
        self.acct.get_mut(tenant as usize).ok_or(Error::InvalidArgument)?.target = share;
        Ok(())
    }

    /// One successful request of `tenant` (`bytes` moved, `latency_ns` from submit). True when
    /// it closed a window (call `end_window`).
    #[inline]
    pub fn record(&mut self, tenant: u32, bytes: u64, latency_ns: u64) -> bool {
        let Some(a) = self.acct.get_mut(tenant as usize) else {
            return false;
        };
        a.ios += 1;
        a.bytes += bytes;
        a.pending_ios += 1;
        a.pending_bytes += bytes;
        a.win_ios += 1;
        a.win_cost += bytes.max(MIN_COST);
        a.hist.saturating_record(latency_ns);
        a.pending.saturating_record(latency_ns);
        self.win_n += 1;
        self.win_n >= self.cfg.window_ios
    }

    /// Close the window: shares and boosts.
    pub fn end_window(&mut self) {
        let total: u64 = self.acct.iter().map(|a| a.win_cost).sum();
        for a in &mut self.acct {
            a.share = if total == 0 { 0.0 } else { a.win_cost as f64 / total as f64 };
            if a.target > 0.0 && a.win_ios > 0 && a.share < a.target {
                a.boost = (a.boost + self.cfg.gain * (a.target - a.share) / a.target).min(self.cfg.max_boost);
            } else {
                a.boost = 1.0 + (a.boost - 1.0) * self.cfg.decay;
            }
            a.win_ios = 0;
            a.win_cost = 0;
        }
        self.win_n = 0;
        self.windows += 1;
    }

    /// Boost factor of `tenant` (1 when out of range).
    pub fn boost(&self, tenant: u32) -> f64 {
        self.acct.get(tenant as usize).map_or(1.0, |a| a.boost)
    }

    /// This handle's accounting of `tenant`.
    pub fn stats(&self, tenant: u32) -> Option<TenantStats> {
        let a = self.acct.get(tenant as usize)?;
        Some(TenantStats {
            tenant,
            ios: a.ios,
            bytes: a.bytes,
            p50_ns: a.hist.value_at_quantile(0.5),
            p99_ns: a.hist.value_at_quantile(0.99),
            p999_ns: a.hist.value_at_quantile(0.999),
            max_ns: a.hist.max(),
            share: a.share,
            target: a.target,
            boost: a.boost,
        })
    }

    /// Add the samples not yet published to the process table. With `wait` false this never
    /// blocks (and publishes nothing if a reader holds the table).
    pub fn publish(&mut self, wait: bool) {
        let mut p = if wait {
            lock_process()
        } else {
            match PROCESS.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return,
            }
        };
        for (a, g) in self.acct.iter_mut().zip(p.iter_mut()) {
            if a.pending_ios == 0 {
                continue;
            }
            g.ios += a.pending_ios;
            g.bytes += a.pending_bytes;
            // Same bounds on both sides: the addition cannot fail or resize.
            let _ = g.hist.add(&a.pending);
            a.pending.reset();
            a.pending_ios = 0;
            a.pending_bytes = 0;
        }
    }
}

/// Process-wide accounting of `tenant`: the sum over every handle's published samples
/// (handles publish once per window and when dropped). `share` is the tenant's part of all
/// bytes moved by tenants so far. `None` for an id out of range.
pub fn process_stats(tenant: u32) -> Option<TenantStats> {
    if tenant as usize >= MAX_TENANTS {
        return None;
    }
    let p = lock_process();
    let total: u64 = p.iter().map(|g| g.bytes).sum();
    Some(match p.get(tenant as usize) {
        None => TenantStats { tenant, boost: 1.0, ..TenantStats::default() },
        Some(g) => TenantStats {
            tenant,
            ios: g.ios,
            bytes: g.bytes,
            p50_ns: g.hist.value_at_quantile(0.5),
            p99_ns: g.hist.value_at_quantile(0.99),
            p999_ns: g.hist.value_at_quantile(0.999),
            max_ns: g.hist.max(),
            share: if total == 0 { 0.0 } else { g.bytes as f64 / total as f64 },
            target: 0.0,
            boost: 1.0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window in which tenant 1 moves `n1` and tenant 2 moves `n2` 4 KiB requests.
    fn window(t: &mut TenantTable, n1: u32, n2: u32) {
        let mut closed = false;
        for i in 0..n1.max(n2) {
            if i < n1 {
                closed |= t.record(1, 4096, 10_000);
            }
            if i < n2 {
                closed |= t.record(2, 4096, 20_000);
            }
        }
        assert!(closed, "window did not close");
        t.end_window();
    }

    #[test]
    fn boost_raises_while_under_target_then_decays() {
        let mut t = TenantTable::new(TenantConfig { window_ios: 100, ..TenantConfig::default() }).unwrap();
        t.set_target(1, 0.5).unwrap();
        let mut last = 1.0;
        for _ in 0..6 {
            window(&mut t, 10, 90); // tenant 1 gets 10 % against a 50 % target
            let b = t.boost(1);
            assert!(b >= last && b <= 4.0, "boost {b} after {last}");
            last = b;
        }
        assert_eq!(last, 4.0, "bounded by max_boost");
        assert!((t.stats(1).unwrap().share - 0.1).abs() < 1e-9);
        for _ in 0..12 {
            window(&mut t, 60, 40); // at target now
            let b = t.boost(1);
            assert!(b < last || b == 1.0, "boost {b} did not decay from {last}");
            last = b;
        }
        assert!(last < 1.01, "decayed to {last}");
        // A tenant without a target is never boosted.
        assert_eq!(t.boost(2), 1.0);
    }

    #[test]
    fn percentiles_and_counters() {
        let mut t = TenantTable::new(TenantConfig::default()).unwrap();
        for i in 1..=1000u64 {
            t.record(3, 8192, i * 1000);
        }
        let s = t.stats(3).unwrap();
        assert_eq!((s.ios, s.bytes), (1000, 8192 * 1000));
        assert!(s.p50_ns.abs_diff(500_000) <= 5_000, "{s:?}");
        assert!(s.p99_ns.abs_diff(990_000) <= 10_000, "{s:?}");
        assert!(t.stats(MAX_TENANTS as u32).is_none());
        assert!(!t.record(MAX_TENANTS as u32, 1, 1));
        assert!(t.set_target(0, 1.5).is_err());
        assert!(TenantTable::new(TenantConfig { decay: 1.0, ..TenantConfig::default() }).is_err());
    }

    #[test]
    fn several_tables_aggregate_in_the_process() {
        // Tenant 14 is used by this test only (the process table is shared by all tests).
        let before = process_stats(14).unwrap().ios;
        let mut a = TenantTable::new(TenantConfig::default()).unwrap();
        let mut b = TenantTable::new(TenantConfig::default()).unwrap();
        for _ in 0..300 {
            a.record(14, 4096, 1_000);
        }
        for _ in 0..200 {
            b.record(14, 4096, 1_000_000);
        }
        a.publish(true);
        b.publish(true);
        a.publish(true); // nothing new: no double counting
        let p = process_stats(14).unwrap();
        assert_eq!(p.ios - before, 500);
        assert!(p.max_ns >= 990_000);
    }
}
