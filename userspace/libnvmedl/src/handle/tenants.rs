// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Tenants`: the handle's tenant state (docs/qos.md): the default tenant of requests and,
//! while accounting is on, the tenant table whose windows set the scheduler's tenant boosts.

use crate::error::{Error, Result};
use crate::qos::{TenantConfig, TenantStats, TenantTable, MAX_TENANTS};
use crate::sched::Scheduler;

/// Default tenant and tenant accounting.
pub(super) struct Tenants {
    table: Option<Box<TenantTable>>,
    /// The last settings given (also while accounting is off).
    cfg: TenantConfig,
    /// Default tenant of requests.
    default: u32,
}

impl Tenants {
    /// Tenant 0 by default; accounting on if `cfg` is given.
    pub(super) fn new(cfg: Option<TenantConfig>) -> Result<Self> {
        let table = match cfg {
            Some(c) => Some(Box::new(TenantTable::new(c)?)),
            None => None,
        };
        Ok(Tenants { table, cfg: cfg.unwrap_or_default(), default: 0 })
    }

    /// Whether accounting is on.
    #[inline(always)]
    pub(super) fn accounting(&self) -> bool {
        self.table.is_some()
    }

    /// The default tenant of requests.
    #[inline(always)]
    pub(super) fn default_tenant(&self) -> u32 {
        self.default
    }

    /// Set the default tenant (`0 .. MAX_TENANTS`).
    pub(super) fn set_default(&mut self, t: u32) -> Result<()> {
        if t as usize >= MAX_TENANTS {
            return Err(Error::InvalidArgument);
        }
        self.default = t;
        Ok(())
    }

    /// The last settings given.
    pub(super) fn config(&self) -> TenantConfig {
        self.cfg
    }

    /// Turn accounting on with `cfg` (a fresh table; the old one publishes first) or off, and
    /// put every tenant weight of `sched` back to 1.
    pub(super) fn set_accounting(&mut self, cfg: Option<TenantConfig>, sched: &mut dyn Scheduler) -> Result<()> {
        self.publish();
        self.table = match cfg {
            Some(c) => {
                self.cfg = c;
                Some(Box::new(TenantTable::new(c)?))
            }
            None => None,
        };
        if let Some(l) = sched.tenant_lanes() {
            for t in 0..MAX_TENANTS as u32 {
                l.set_tenant_weight(t, 1.0);
            }
        }
        Ok(())
    }

    /// Set the target share of `tenant`; `NotReady` while accounting is off.
    pub(super) fn set_target(&mut self, tenant: u32, share: f64) -> Result<()> {
        self.table.as_mut().ok_or(Error::NotReady)?.set_target(tenant, share)
    }

    /// The accounting of `tenant` (`None` while off or out of range).
    pub(super) fn stats(&self, tenant: u32) -> Option<TenantStats> {
        self.table.as_ref()?.stats(tenant)
    }

    /// Add the new samples to the process totals now.
    pub(super) fn publish(&mut self) {
        if let Some(t) = self.table.as_mut() {
            t.publish(true);
        }
    }

    /// A request of `tenant` moved `bytes` in `latency_ns` (accounting on). At the end of a
    /// window the boosts go to `sched`'s tenant lanes and the window is published.
    #[inline]
    pub(super) fn record(&mut self, tenant: u32, bytes: u64, latency_ns: u64, sched: &mut dyn Scheduler) {
        if let Some(t) = self.table.as_mut() {
            if t.record(tenant, bytes, latency_ns) {
                t.end_window();
                if let Some(l) = sched.tenant_lanes() {
                    for k in 0..MAX_TENANTS as u32 {
                        l.set_tenant_weight(k, t.boost(k));
                    }
                }
                t.publish(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::Fifo;

    #[test]
    fn default_tenant_and_accounting_switch() {
        let mut t = Tenants::new(None).unwrap();
        assert_eq!((t.default_tenant(), t.accounting()), (0, false));
        assert_eq!(t.set_default(MAX_TENANTS as u32), Err(Error::InvalidArgument));
        t.set_default(3).unwrap();
        assert_eq!(t.default_tenant(), 3);
        assert_eq!(t.set_target(1, 0.5), Err(Error::NotReady));
        assert!(t.stats(1).is_none());
        let mut fifo = Fifo::default();
        let cfg = TenantConfig { window_ios: 16, ..TenantConfig::default() };
        t.set_accounting(Some(cfg), &mut fifo).unwrap();
        assert!(t.accounting());
        t.set_target(1, 0.5).unwrap();
        for _ in 0..20 {
            t.record(1, 4096, 1000, &mut fifo);
        }
        assert_eq!(t.stats(1).map(|s| s.ios), Some(20));
        t.set_accounting(None, &mut fifo).unwrap();
        assert_eq!((t.accounting(), t.config().window_ios), (false, 16), "the settings stay");
    }
}
