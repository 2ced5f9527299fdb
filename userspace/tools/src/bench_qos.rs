// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`'s QoS flags (docs/qos.md): adaptive depth, the tiered scheduler, tenants;
//! and the per-job QoS summary the report prints.

use std::time::Duration;

use clap::{Args, ValueEnum};
use nvmedl::qos::{DepthConfig, TenantConfig, TierConfig, Tiered};
use nvmedl::{Fifo, Handle, HandleOptions, PriorityDeadline, Scheduler};
use serde::Serialize;

use crate::parse_size;

/// The level-1 scheduler of every job.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum SchedKind {
    /// First in, first out (the library's default).
    Fifo,
    /// Strict priority with deadlines.
    Priority,
    /// Strict tier 0, weighted tiers 1..3, starvation guard.
    Tiered,
}

/// QoS flags of `nvmedl-bench`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct QosArgs {
    /// Adaptive depth: a PI controller moves the in-flight limit (at most --iodepth) so the
    /// queueing delay tracks --target-delay-us.
    #[arg(long)]
    pub adaptive: bool,
    /// Queueing-delay target of --adaptive in microseconds (1..=1000000).
    #[arg(long, default_value = "50", value_parser = parse_size, value_name = "US")]
    pub target_delay_us: u64,
    /// Smallest limit of --adaptive (and its floor-probe depth).
    #[arg(long, default_value = "1", value_parser = parse_size, value_name = "N")]
    pub min_depth: u64,
    /// Percentile of each window's queueing delays that --adaptive holds at the target (1..=99).
    #[arg(long, default_value = "50", value_parser = parse_size, value_name = "P")]
    pub depth_percentile: u64,
    /// Slow start of --adaptive: double the limit per decision while the queueing delay is
    /// below half the target, until the first window that reaches half the target.
    #[arg(long)]
    pub slow_start: bool,
    /// Level-1 scheduler of every job.
    #[arg(long, value_enum, default_value = "fifo")]
    pub scheduler: SchedKind,
    /// WRR weights of tiers 1, 2, 3 for --scheduler tiered (each 1..=1000).
    #[arg(long, default_value = "8,4,1", value_delimiter = ',', value_parser = parse_size, value_name = "W1,W2,W3")]
    pub tier_weights: Vec<u64>,
    /// Starvation bound of --scheduler tiered in microseconds (0 = off).
    #[arg(long, default_value = "2000", value_parser = parse_size, value_name = "US")]
    pub tier_max_wait_us: u64,
    /// Tenant of each job's requests, one per core in --cores order (the last repeats);
    /// turns tenant accounting on and prints each job's tenant figures.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, value_name = "T[,T..]")]
    pub tenant: Vec<u64>,
    /// Target share (0..=1) of each job's tenant, in --tenant order (the last repeats).
    #[arg(long, value_delimiter = ',', value_name = "SHARE[,..]")]
    pub tenant_target: Vec<f64>,
}

impl QosArgs {
    /// Check the ranges clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        self.depth().validate().map_err(|_| {
            format!(
                "--target-delay-us {} / --min-depth {} / --depth-percentile {} out of range",
                self.target_delay_us, self.min_depth, self.depth_percentile
            )
        })?;
        if self.slow_start && !self.adaptive {
            return Err("--slow-start needs --adaptive".into());
        }
        self.tiers()?.validate().map_err(|_| "--tier-weights need three values in 1..=1000, --tier-max-wait-us <= 10 s".to_string())?;
        if self.tenant.iter().any(|&t| t >= nvmedl::qos::MAX_TENANTS as u64) {
            return Err(format!("--tenant ids are 0..{}", nvmedl::qos::MAX_TENANTS));
        }
        if self.tenant_target.iter().any(|s| !(0.0..=1.0).contains(s)) {
            return Err("--tenant-target shares are 0..=1".into());
        }
        if !self.tenant_target.is_empty() && self.tenant.is_empty() {
            return Err("--tenant-target needs --tenant".into());
        }
        Ok(())
    }

    fn depth(&self) -> DepthConfig {
        DepthConfig {
            target: Duration::from_micros(self.target_delay_us),
            min_depth: self.min_depth.min(usize::MAX as u64) as usize,
            percentile: self.depth_percentile.min(255) as u8,
            slow_start: self.slow_start,
            ..DepthConfig::default()
        }
    }

    fn tiers(&self) -> Result<TierConfig, String> {
        let w: [u64; 3] = self.tier_weights.as_slice().try_into().map_err(|_| "--tier-weights takes three values".to_string())?;
        Ok(TierConfig {
            weights: w.map(|v| v.min(u64::from(u32::MAX)) as u32),
            max_wait: Duration::from_micros(self.tier_max_wait_us),
            ..TierConfig::default()
        })
    }

    /// Job `idx`'s tenant, if tenants are on.
    pub fn tenant_of(&self, idx: usize) -> Option<u32> {
        self.tenant.get(idx).or(self.tenant.last()).map(|&t| t as u32)
    }

    /// Set job `idx`'s handle options.
    pub fn apply(&self, o: &mut HandleOptions) -> Result<(), String> {
        if self.adaptive {
            o.depth_control = Some(self.depth());
        }
        o.scheduler = match self.scheduler {
            SchedKind::Fifo => Box::new(Fifo::default()) as Box<dyn Scheduler>,
            SchedKind::Priority => Box::new(PriorityDeadline::default()),
            SchedKind::Tiered => Box::new(Tiered::new(self.tiers()?).map_err(|e| e.to_string())?),
        };
        if !self.tenant.is_empty() {
            o.tenants = Some(TenantConfig::default());
        }
        Ok(())
    }

    /// After the handle exists: its tenant and the tenant's target.
    pub fn setup(&self, h: &mut Handle, idx: usize) -> Result<(), String> {
        if let Some(t) = self.tenant_of(idx) {
            h.set_tenant(t).map_err(|e| e.to_string())?;
            let pos = self.tenant.iter().position(|&x| x as u32 == t).unwrap_or(idx);
            if let Some(&share) = self.tenant_target.get(pos).or(self.tenant_target.last()) {
                h.set_tenant_target(t, share).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}

/// What a job's QoS did (text and JSON report).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct QosReport {
    /// In-flight limit at the end of the run.
    pub final_iodepth: usize,
    /// Adaptive depth: decisions taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth_windows: Option<u64>,
    /// Adaptive depth: last window's queueing delay (µs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_us: Option<f64>,
    /// Tiered: requests served per tier, and guard-forced ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_served: Option<[u64; 4]>,
    /// Tiered: guard-forced requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_forced: Option<u64>,
    /// Tenant id of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<u32>,
    /// Tenant p99 (µs), share of the last window, boost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_p99_us: Option<f64>,
    /// Tenant share of the last window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_share: Option<f64>,
    /// Tenant boost at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_boost: Option<f64>,
}

impl QosReport {
    /// Read the handle at the end of a job.
    pub fn of(h: &Handle, tenant: Option<u32>) -> Self {
        let d = h.depth_sample();
        let t = tenant.and_then(|t| h.tenant_stats(t));
        QosReport {
            final_iodepth: h.iodepth(),
            depth_windows: d.map(|d| d.windows),
            delay_us: d.map(|d| d.delay_ns as f64 / 1000.0),
            tier_served: h.tier_stats().map(|s| s.served),
            tier_forced: h.tier_stats().map(|s| s.forced),
            tenant,
            tenant_p99_us: t.map(|t| t.p99_ns as f64 / 1000.0),
            tenant_share: t.map(|t| t.share),
            tenant_boost: t.map(|t| t.boost),
        }
    }

    /// One text line.
    pub fn line(&self) -> String {
        let mut s = format!("qos: iodepth {}", self.final_iodepth);
        if let (Some(w), Some(d)) = (self.depth_windows, self.delay_us) {
            s += &format!(" (adaptive: {w} windows, last delay {d:.1} us)");
        }
        if let (Some(t), Some(f)) = (self.tier_served, self.tier_forced) {
            s += &format!(" tiers served {t:?} forced {f}");
        }
        if let (Some(t), Some(p), Some(sh), Some(b)) = (self.tenant, self.tenant_p99_us, self.tenant_share, self.tenant_boost) {
            s += &format!(" tenant {t}: p99 {p:.1} us share {sh:.3} boost {b:.2}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        q: QosArgs,
    }

    fn parse(line: &str) -> Result<QosArgs, clap::Error> {
        T::try_parse_from(std::iter::once("t").chain(line.split_whitespace())).map(|t| t.q)
    }

    #[test]
    fn flags_parse_and_apply() {
        let q = parse("").unwrap();
        assert!(!q.adaptive && q.scheduler == SchedKind::Fifo && q.tenant.is_empty());
        q.validate().unwrap();
        let mut o = HandleOptions::default();
        q.apply(&mut o).unwrap();
        assert!(o.depth_control.is_none() && o.tenants.is_none());
        let q = parse("--adaptive --target-delay-us 80 --scheduler tiered --tier-weights 16,2,1 --tenant 1,2 --tenant-target 0.5").unwrap();
        q.validate().unwrap();
        q.apply(&mut o).unwrap();
        assert_eq!(o.depth_control.unwrap().target, Duration::from_micros(80));
        assert!(!o.depth_control.unwrap().slow_start, "slow start is off unless asked for");
        assert!(o.tenants.is_some());
        assert_eq!((q.tenant_of(0), q.tenant_of(1), q.tenant_of(5)), (Some(1), Some(2), Some(2)));
    }

    #[test]
    fn slow_start_reaches_the_depth_config() {
        let q = parse("--adaptive --target-delay-us 20000 --slow-start").unwrap();
        q.validate().unwrap();
        let mut o = HandleOptions::default();
        q.apply(&mut o).unwrap();
        let d = o.depth_control.unwrap();
        assert!(d.slow_start);
        assert_eq!(d.target, Duration::from_millis(20));
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            "--slow-start",
            "--target-delay-us 0",
            "--tier-weights 1,2",
            "--tier-weights 0,1,1",
            "--tenant 16",
            "--tenant-target 0.5",
            "--tenant 1 --tenant-target 2",
        ] {
            assert!(parse(bad).unwrap().validate().is_err(), "{bad}");
        }
        assert!(parse("--scheduler nope").is_err());
    }
}
