// SPDX-License-Identifier: MIT OR Apache-2.0
//! Handle accessors and option setters (depth, scheduler, tenants, priority, batch, timeout).

use std::time::Duration;

use directnvm_abi::{dnvm_engine_for_urgency, HduCaps, Revision};

use super::Handle;
use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::qos::{DepthConfig, DepthSample, TenantConfig, TenantStats};
use crate::request::HandleStats;
use crate::sched::Scheduler;

impl Handle {
    /// Core index.
    pub fn core(&self) -> u32 {
        self.engine.core()
    }
    /// HDU revision (its capabilities are methods of [`Revision`]).
    pub fn revision(&self) -> Revision {
        self.engine.revision()
    }
    /// HDU capabilities.
    pub fn caps(&self) -> HduCaps {
        self.engine.caps()
    }
    /// Most entries per hardware batch.
    pub fn batch_max(&self) -> u32 {
        self.engine.batch_max()
    }
    /// Largest transfer of one staging entry in bytes.
    pub fn entry_bytes(&self) -> u32 {
        self.engine.entry_bytes()
    }
    /// Largest request length in bytes.
    pub fn max_request(&self) -> u64 {
        u64::from(self.engine.batch_max()) * u64::from(self.engine.entry_bytes())
    }
    /// Namespace capacity in 512-byte LBAs.
    pub fn capacity_lbas(&self) -> u64 {
        self.engine.capacity_lbas()
    }
    /// Size of the data slice in bytes.
    pub fn data_size(&self) -> usize {
        self.bufs.len()
    }
    /// Free bytes in the data slice.
    pub fn data_free(&self) -> usize {
        self.bufs.free_bytes()
    }
    /// Counters.
    pub fn stats(&self) -> HandleStats {
        self.stats
    }
    /// Requests staged, in flight, or completed but not yet polled (at most `capacity`).
    #[inline(always)]
    pub fn outstanding(&self) -> usize {
        self.slots.pending() + self.done.len()
    }
    /// Requests not yet completed (staged or in flight).
    #[inline(always)]
    pub fn pending(&self) -> usize {
        self.slots.pending()
    }
    /// The engine that serves urgency `priority` (rev 2 routing; 0 on rev 1).
    pub fn engine_for(&self, priority: u16) -> u32 {
        if self.engine.revision().has_sized_entries() {
            dnvm_engine_for_urgency(priority, self.engine.caps().engines)
        } else {
            0
        }
    }
    /// Set the queue depth (1..=capacity); with adaptive depth on, its upper bound.
    pub fn set_iodepth(&mut self, v: usize) -> Result<()> {
        if v == 0 || v > self.slots.capacity() {
            return Err(Error::InvalidArgument);
        }
        self.depth.set_max(v);
        Ok(())
    }
    /// The in-flight limit in force now (the adaptive controller's, or `iodepth`).
    pub fn iodepth(&self) -> usize {
        self.depth.limit()
    }
    /// Turn adaptive depth on with `cfg` (from `min_depth`, or restarting a running controller
    /// from the current limit) or off (`None`: back to the configured `iodepth`).
    pub fn set_depth_control(&mut self, cfg: Option<DepthConfig>) -> Result<()> {
        self.depth.set_control(cfg)
    }
    /// The adaptive-depth settings (the last ones given, also while off).
    pub fn depth_config(&self) -> DepthConfig {
        self.depth.config()
    }
    /// Whether adaptive depth is on.
    pub fn depth_control_on(&self) -> bool {
        self.depth.adaptive()
    }
    /// The controller's last decision (`None` while adaptive depth is off).
    pub fn depth_sample(&self) -> Option<DepthSample> {
        self.depth.sample()
    }
    /// Replace the level-1 scheduler; `Busy` while requests are staged in the old one.
    pub fn set_scheduler(&mut self, mut s: Box<dyn Scheduler>) -> Result<()> {
        if !self.sched.is_empty() {
            return Err(Error::Busy);
        }
        s.reserve(self.slots.capacity());
        self.guard.set_bound(s.guard().map_or(0, |g| g.guard_bound_ns()));
        self.sched = s;
        Ok(())
    }
    /// Counters of the scheduler if it is tiered (`qos::Tiered`).
    pub fn tier_stats(&self) -> Option<crate::qos::TierStats> {
        self.sched.tier_stats()
    }
    /// Turn tenant accounting on with `cfg` (allocates the histograms; keeps nothing of an
    /// earlier table except what it published to the process) or off (`None`).
    pub fn set_tenant_accounting(&mut self, cfg: Option<TenantConfig>) -> Result<()> {
        self.tenants.set_accounting(cfg, &mut *self.sched)
    }
    /// The tenant settings (the last ones given, also while off).
    pub fn tenant_config(&self) -> TenantConfig {
        self.tenants.config()
    }
    /// Whether tenant accounting is on.
    pub fn tenant_accounting_on(&self) -> bool {
        self.tenants.accounting()
    }
    /// Set the target share (0 ..= 1) of `tenant`; accounting must be on (`NotReady`).
    pub fn set_tenant_target(&mut self, tenant: u32, share: f64) -> Result<()> {
        self.tenants.set_target(tenant, share)
    }
    /// This handle's accounting of `tenant` (`None` while accounting is off or out of range).
    pub fn tenant_stats(&self, tenant: u32) -> Option<TenantStats> {
        self.tenants.stats(tenant)
    }
    /// Add this handle's new samples to the process totals (`qos::process_stats`) now.
    pub fn publish_tenants(&mut self) {
        self.tenants.publish();
    }
    /// The default tenant of requests.
    pub fn tenant(&self) -> u32 {
        self.tenants.default_tenant()
    }
    /// Set the default tenant of requests (`0 .. qos::MAX_TENANTS`).
    pub fn set_tenant(&mut self, t: u32) -> Result<()> {
        self.tenants.set_default(t)
    }
    /// Set the default urgency class (0..=3).
    pub fn set_priority(&mut self, p: u16) -> Result<()> {
        self.cfg.set_priority(p)
    }
    /// Set the staged-request threshold that starts a batch (1..=capacity).
    pub fn set_batch(&mut self, v: usize) -> Result<()> {
        self.cfg.set_batch(v, self.slots.capacity())
    }
    /// Set the wait bound (zero makes every blocking wait time out at once; the C key
    /// `timeout_us` refuses 0).
    pub fn set_timeout(&mut self, t: Duration) {
        self.cfg.timeout = t;
    }
    /// Set the blocking-wait yield policy (0 = pure spin).
    pub fn set_yield_spins(&mut self, n: u32) {
        self.cfg.yield_spins = n;
    }
    /// Backoff of blocking waits (`crate::Backoff`; `None`: spin). Refused if invalid.
    pub fn set_backoff(&mut self, b: Option<Backoff>) -> Result<()> {
        self.cfg.set_backoff(b)
    }
    /// The backoff of blocking waits in force.
    pub fn backoff(&self) -> Option<Backoff> {
        self.cfg.backoff
    }
}
