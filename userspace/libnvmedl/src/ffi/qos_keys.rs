// SPDX-License-Identifier: MIT OR Apache-2.0
//! The QoS keys of `nvmedl_set_handle` / `nvmedl_get_handle` (ranges in the docs of
//! `nvmedl_set_handle` and docs/qos.md). Control path: these may allocate (new scheduler,
//! tenant histograms).

use std::time::Duration;

use super::boundary::NvmedlHandle;
use crate::error::{Error, Result};
use crate::qos::{TierConfig, MAX_TENANTS};
use crate::sched::SchedulerKind;

fn range(v: u64, lo: u64, hi: u64) -> Result<u64> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(Error::InvalidArgument)
    }
}

/// Apply a tier setting: checked, and installed at once if the tiered scheduler is in use.
fn set_tiers(h: &mut NvmedlHandle, t: TierConfig) -> Result<()> {
    t.validate()?;
    if h.sched == SchedulerKind::Tiered {
        h.h.set_scheduler(SchedulerKind::Tiered.build(t)?)?;
    }
    h.tiers = t;
    Ok(())
}

/// Re-create the tenant table with new settings if accounting is on.
fn set_tenant_cfg(h: &mut NvmedlHandle, c: crate::qos::TenantConfig) -> Result<()> {
    c.validate()?;
    if h.h.tenant_accounting_on() {
        h.h.set_tenant_accounting(Some(c))
    } else {
        // Remembered for "tenants" = 1.
        h.h.set_tenant_accounting(Some(c))?;
        h.h.set_tenant_accounting(None)
    }
}

/// Set QoS key `name` (invalid argument for another key).
pub(crate) fn set(h: &mut NvmedlHandle, name: &[u8], v: u64) -> Result<()> {
    match name {
        b"adaptive" => match v {
            0 => h.h.set_depth_control(None),
            1 => h.h.set_depth_control(Some(h.h.depth_config())),
            _ => Err(Error::InvalidArgument),
        },
        b"target_delay_us" | b"min_depth" | b"depth_window" | b"depth_percentile" | b"depth_slow_start" => {
            let mut c = h.h.depth_config();
            match name {
                b"target_delay_us" => c.target = Duration::from_micros(range(v, 1, 1_000_000)?),
                b"min_depth" => c.min_depth = range(v, 1, 1024)? as usize,
                b"depth_percentile" => c.percentile = range(v, 1, 99)? as u8,
                b"depth_slow_start" => c.slow_start = range(v, 0, 1)? == 1,
                _ => c.window_ios = range(v, 8, 65536)? as u32,
            }
            c.validate()?;
            if h.h.depth_control_on() {
                h.h.set_depth_control(Some(c))
            } else {
                h.h.set_depth_control(Some(c))?;
                h.h.set_depth_control(None)
            }
        }
        b"scheduler" => {
            let kind = SchedulerKind::from_code(v).ok_or(Error::InvalidArgument)?;
            h.h.set_scheduler(kind.build(h.tiers)?)?;
            h.sched = kind;
            Ok(())
        }
        b"tier_weight1" | b"tier_weight2" | b"tier_weight3" => {
            let mut t = h.tiers;
            t.weights[usize::from(name[11] - b'1')] = range(v, 1, 1000)? as u32;
            set_tiers(h, t)
        }
        b"tier_max_wait_us" => {
            let mut t = h.tiers;
            t.max_wait = Duration::from_micros(range(v, 0, 10_000_000)?);
            set_tiers(h, t)
        }
        b"tier_guard_batch" => {
            let mut t = h.tiers;
            t.guard_batch = range(v, 1, 1024)? as u32;
            set_tiers(h, t)
        }
        b"tenant" => h.h.set_tenant(range(v, 0, MAX_TENANTS as u64 - 1)? as u32),
        b"tenants" => match v {
            0 => h.h.set_tenant_accounting(None),
            1 => h.h.set_tenant_accounting(Some(h.h.tenant_config())),
            _ => Err(Error::InvalidArgument),
        },
        b"tenant_window" => {
            let c = crate::qos::TenantConfig { window_ios: range(v, 16, 65536)? as u32, ..h.h.tenant_config() };
            set_tenant_cfg(h, c)
        }
        b"tenant_max_boost" => {
            let c = crate::qos::TenantConfig { max_boost: range(v, 1, 30)? as f64, ..h.h.tenant_config() };
            set_tenant_cfg(h, c)
        }
        _ => Err(Error::InvalidArgument),
    }
}

/// The value of QoS key `name` (`None` for another key).
pub(crate) fn get(h: &NvmedlHandle, name: &[u8]) -> Option<u64> {
    Some(match name {
        b"iodepth" => h.h.iodepth() as u64,
        b"adaptive" => u64::from(h.h.depth_control_on()),
        b"scheduler" => h.sched.code(),
        b"tenant" => u64::from(h.h.tenant()),
        b"tenants" => u64::from(h.h.tenant_accounting_on()),
        b"depth_windows" => h.h.depth_sample().map_or(0, |s| s.windows),
        b"depth_slow_start" => u64::from(h.h.depth_config().slow_start),
        _ => return None,
    })
}
