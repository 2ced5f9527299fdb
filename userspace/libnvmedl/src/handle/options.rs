// SPDX-License-Identifier: MIT OR Apache-2.0
//! Handle accessors and option setters (depth, scheduler, tenants, priority, batch, timeout).

use super::*;

impl Handle {
    /// Core index.
    pub fn core(&self) -> u32 {
        self.core
    }
    /// HDU revision (its capabilities are methods of [`Revision`]).
    pub fn revision(&self) -> Revision {
        self.revision
    }
    /// HDU capabilities.
    pub fn caps(&self) -> HduCaps {
        self.caps
    }
    /// Most entries per hardware batch.
    pub fn batch_max(&self) -> u32 {
        self.batch_max
    }
    /// Largest transfer of one staging entry in bytes.
    pub fn entry_bytes(&self) -> u32 {
        self.entry_bytes
    }
    /// Largest request length in bytes.
    pub fn max_request(&self) -> u64 {
        u64::from(self.batch_max) * u64::from(self.entry_bytes)
    }
    /// Namespace capacity in 512-byte LBAs.
    pub fn capacity_lbas(&self) -> u64 {
        self.capacity_lbas
    }
    /// Size of the data slice in bytes.
    pub fn data_size(&self) -> usize {
        self.data.len
    }
    /// Free bytes in the data slice.
    pub fn data_free(&self) -> usize {
        self.alloc.free_pages() * PAGE
    }
    /// Counters.
    pub fn stats(&self) -> HandleStats {
        self.stats
    }
    /// Requests staged, in flight, or completed but not yet polled (at most `capacity`).
    pub fn outstanding(&self) -> usize {
        self.slots.len() - self.free.len() + self.done.len()
    }
    /// Requests not yet completed (staged or in flight).
    pub fn pending(&self) -> usize {
        self.slots.len() - self.free.len()
    }
    /// The engine that serves urgency `priority` (rev 2 routing; 0 on rev 1).
    pub fn engine_for(&self, priority: u16) -> u32 {
        if self.revision.has_sized_entries() {
            dnvm_engine_for_urgency(priority, self.caps.engines)
        } else {
            0
        }
    }
    /// Set the queue depth (1..=capacity); with adaptive depth on, its upper bound.
    pub fn set_iodepth(&mut self, v: usize) -> Result<()> {
        if v == 0 || v > self.slots.len() {
            return Err(Error::InvalidArgument);
        }
        self.iodepth_max = v;
        self.iodepth = match self.depth_ctl.as_mut() {
            Some(c) => {
                c.set_max(v);
                c.limit()
            }
            None => v,
        };
        Ok(())
    }
    /// The in-flight limit in force now (the adaptive controller's, or `iodepth`).
    pub fn iodepth(&self) -> usize {
        self.iodepth
    }
    /// Turn adaptive depth on with `cfg` (from `min_depth`, or restarting a running controller
    /// from the current limit) or off (`None`: back to the configured `iodepth`).
    pub fn set_depth_control(&mut self, cfg: Option<DepthConfig>) -> Result<()> {
        match cfg {
            Some(c) => {
                // A running controller restarts from its limit; a new one starts low.
                let initial = if self.depth_ctl.is_some() { self.iodepth } else { c.min_depth };
                let ctl = DepthController::new(c, initial, self.iodepth_max)?;
                self.depth_cfg = c;
                self.iodepth = ctl.limit();
                self.depth_ctl = Some(ctl);
            }
            None => {
                self.depth_ctl = None;
                self.iodepth = self.iodepth_max;
            }
        }
        Ok(())
    }
    /// The adaptive-depth settings (the last ones given, also while off).
    pub fn depth_config(&self) -> DepthConfig {
        self.depth_cfg
    }
    /// Whether adaptive depth is on.
    pub fn depth_control_on(&self) -> bool {
        self.depth_ctl.is_some()
    }
    /// The controller's last decision (`None` while adaptive depth is off).
    pub fn depth_sample(&self) -> Option<DepthSample> {
        self.depth_ctl.as_ref().map(|c| c.last())
    }
    /// Replace the level-1 scheduler; `Busy` while requests are staged in the old one.
    pub fn set_scheduler(&mut self, mut s: Box<dyn Scheduler>) -> Result<()> {
        if !self.sched.is_empty() {
            return Err(Error::Busy);
        }
        s.reserve(self.slots.len());
        self.guard_ns = s.guard_bound_ns();
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
        if let Some(t) = self.tenants.as_mut() {
            t.publish(true);
        }
        self.tenants = match cfg {
            Some(c) => {
                self.tenant_cfg = c;
                Some(Box::new(TenantTable::new(c)?))
            }
            None => None,
        };
        for t in 0..MAX_TENANTS as u32 {
            self.sched.set_tenant_weight(t, 1.0);
        }
        Ok(())
    }
    /// The tenant settings (the last ones given, also while off).
    pub fn tenant_config(&self) -> TenantConfig {
        self.tenant_cfg
    }
    /// Whether tenant accounting is on.
    pub fn tenant_accounting_on(&self) -> bool {
        self.tenants.is_some()
    }
    /// Set the target share (0 ..= 1) of `tenant`; accounting must be on (`NotReady`).
    pub fn set_tenant_target(&mut self, tenant: u32, share: f64) -> Result<()> {
        self.tenants.as_mut().ok_or(Error::NotReady)?.set_target(tenant, share)
    }
    /// This handle's accounting of `tenant` (`None` while accounting is off or out of range).
    pub fn tenant_stats(&self, tenant: u32) -> Option<TenantStats> {
        self.tenants.as_ref()?.stats(tenant)
    }
    /// Add this handle's new samples to the process totals (`qos::process_stats`) now.
    pub fn publish_tenants(&mut self) {
        if let Some(t) = self.tenants.as_mut() {
            t.publish(true);
        }
    }
    /// The default tenant of requests.
    pub fn tenant(&self) -> u32 {
        self.tenant
    }
    /// Set the default tenant of requests (`0 .. qos::MAX_TENANTS`).
    pub fn set_tenant(&mut self, t: u32) -> Result<()> {
        if t as usize >= MAX_TENANTS {
            return Err(Error::InvalidArgument);
        }
        self.tenant = t;
        Ok(())
    }
    /// Set the default urgency class (0..=3).
    pub fn set_priority(&mut self, p: u16) -> Result<()> {
        if p >= DNVM_URGENCY_CLASSES as u16 {
            return Err(Error::InvalidArgument);
        }
        self.priority = p;
        Ok(())
    }
    /// Set the staged-request threshold that starts a batch (1..=capacity).
    pub fn set_batch(&mut self, v: usize) -> Result<()> {
        if v == 0 || v > self.slots.len() {
            return Err(Error::InvalidArgument);
        }
        self.batch = v;
        Ok(())
    }
    /// Set the wait bound (zero makes every blocking wait time out at once; the C key
    /// `timeout_us` refuses 0).
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }
    /// Set the blocking-wait yield policy (0 = pure spin).
    pub fn set_yield_spins(&mut self, n: u32) {
        self.yield_spins = n;
    }
    /// Backoff of blocking waits (`crate::Backoff`; `None`: spin). Refused if invalid.
    pub fn set_backoff(&mut self, b: Option<Backoff>) -> Result<()> {
        if let Some(b) = &b {
            b.validate()?;
        }
        self.backoff = b;
        Ok(())
    }
    /// The backoff of blocking waits in force.
    pub fn backoff(&self) -> Option<Backoff> {
        self.backoff
    }
}
