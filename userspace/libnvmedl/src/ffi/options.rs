// SPDX-License-Identifier: MIT OR Apache-2.0
//! Handle options by name: `nvmedl_set_handle` and `nvmedl_get_handle`, their constants, and
//! the keys of the wait policy (the QoS keys are in `qos_keys`, the read-only properties in
//! `info`).

use std::ffi::{c_char, c_int, CStr};
use std::time::Duration;

use super::boundary::{code, fail64, with, NvmedlHandle};
use super::info::property;
use super::qos_keys;
use crate::backoff::Backoff;
use crate::error::Error;
use crate::Result;

/// Urgency class 0 (`nvmedl_set_handle(h, "priority", NVMEDL_PRIO_URGENT)`): served first by
/// the controller's arbitration (rev 2 routes it to the urgent engine; rev 1 ignores classes).
pub const NVMEDL_PRIO_URGENT: u64 = 0;
/// Urgency class 1: high (WRR weight class high). The default of a new handle.
pub const NVMEDL_PRIO_HIGH: u64 = 1;
/// Urgency class 2: medium (WRR weight class medium).
pub const NVMEDL_PRIO_MEDIUM: u64 = 2;
/// Urgency class 3: low (WRR weight class low).
pub const NVMEDL_PRIO_LOW: u64 = 3;
// (Literals, because cbindgen cannot evaluate paths; a test ties them to directnvm-abi's
// DNVM_URGENCY_*.)

/// Largest `timeout_us` accepted by `nvmedl_set_handle` (one hour).
pub const NVMEDL_TIMEOUT_US_MAX: u64 = 3_600_000_000;

/// "scheduler" key: first in, first out (the default).
pub const NVMEDL_SCHED_FIFO: u64 = 0;
/// "scheduler" key: strict urgency class, FIFO within a class, overdue deadlines first.
pub const NVMEDL_SCHED_PRIORITY: u64 = 1;
/// "scheduler" key: the tiered scheduler ("tier_*" keys; docs/qos.md).
pub const NVMEDL_SCHED_TIERED: u64 = 2;
// (Literals for cbindgen; a test ties them to `SchedulerKind::code`.)

/// Set a handle option. Keys and their valid ranges (anything else: -1013, nothing changed):
/// - "iodepth": requests in flight, 1..=the staging queue's entries (1024 by default);
/// - "priority": `NVMEDL_PRIO_URGENT` (0) ..= `NVMEDL_PRIO_LOW` (3); routed to the engine of that
///   urgency class on rev 2, ignored by rev 1 hardware;
/// - "batch": staged requests that start a hardware batch, 1..=the staging queue's entries;
/// - "timeout_us": bound of every wait in µs, 1..=`NVMEDL_TIMEOUT_US_MAX` (0 is refused);
/// - "yield": spins between `sched_yield` calls in blocking waits, 0 (pure spin) ..= 2^32 - 1;
/// - "backoff": 0 (default: blocking waits spin) or 1 (spin, then yield, then sleep when
///   nothing completes: `nvmedl_wait_completions`, full-queue and sync waits);
///   "backoff_spin_us" (0..=1000000, default 50: spin after the last completion),
///   "backoff_yield_us" (0..=1000000, default 200), "backoff_max_sleep_us" (1..=100000,
///   default 1000: the bound of the wake-up cost); a threshold key turns the backoff on.
///
/// QoS keys (docs/qos.md):
/// * adaptive depth: "adaptive" (0 off, 1 on; "iodepth" is then the upper bound),
///   "target_delay_us" (1..=1000000, default 50), "min_depth" (1..=1024, default 1),
///   "depth_window" (counted completions per decision, at least the limit, 8..=65536,
///   default 32), "depth_percentile" (percentile of the window's queueing delays that tracks
///   the target, 1..=99, default 50), "depth_slow_start" (0 off (default), 1: double the limit
///   per decision while the delay is below half the target, from the start);
/// * scheduler: "scheduler" (`NVMEDL_SCHED_FIFO` (0, default), `NVMEDL_SCHED_PRIORITY` (1:
///   priority/deadline), `NVMEDL_SCHED_TIERED` (2); only while nothing is staged, else the
///   busy code), "tier_weight1", "tier_weight2", "tier_weight3"
///   (1..=1000, default 8, 4, 1), "tier_max_wait_us" (starvation bound, 0 = off,
///   ..=10000000, default 2000), "tier_guard_batch" (1..=1024, default 2); tier keys apply at
///   once when the tiered scheduler is in use (same busy rule);
/// * tenants: "tenant" (tenant of the following requests, 0..=15), "tenants" (accounting 0
///   off, 1 on; turning it on starts fresh counters), "tenant_window" (completions per
///   window, 16..=65536, default 256), "tenant_max_boost" (1..=30, default 4); the window and
///   boost keys restart the accounting when it is on.
///
/// # Safety
/// `h` is a live handle; `param` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_set_handle(h: *mut NvmedlHandle, param: *const c_char, value: u64) -> c_int {
    if param.is_null() {
        return Error::InvalidArgument.code();
    }
    // SAFETY: per the contract, a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(param) }.to_bytes();
    with(h, Error::InvalidArgument.code(), |h| {
        let r = match name {
            b"iodepth" => h.h.set_iodepth(value as usize),
            b"priority" => u16::try_from(value).map_err(|_| Error::InvalidArgument).and_then(|p| h.h.set_priority(p)),
            b"batch" => h.h.set_batch(value as usize),
            b"timeout_us" if (1..=NVMEDL_TIMEOUT_US_MAX).contains(&value) => {
                h.h.set_timeout(Duration::from_micros(value));
                Ok(())
            }
            b"yield" => u32::try_from(value).map_err(|_| Error::InvalidArgument).map(|n| h.h.set_yield_spins(n)),
            _ => match set_backoff_key(h, name, value) {
                Some(r) => r,
                None => qos_keys::set(h, name, value),
            },
        };
        code(r)
    })
}

/// Read a handle option: "iodepth" (the limit in force now, adaptive or fixed), "adaptive",
/// "scheduler", "tenant", "tenants", "depth_windows" (decisions of the depth controller so
/// far), "depth_slow_start"; or a property: "max_request" (largest request in bytes),
/// "data_size" and "data_free" (bytes of the data slice), "capacity_lbas" (512-byte LBAs), "revision", "core",
/// "engines" (urgency engines behind the HDU), "capacity" (requests the handle can hold).
/// The value (≥ 0) or a negative code (an unknown name: invalid argument).
///
/// # Safety
/// `h` is a live handle; `param` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_get_handle(h: *mut NvmedlHandle, param: *const c_char) -> i64 {
    if param.is_null() {
        return i64::from(Error::InvalidArgument.code());
    }
    // SAFETY: per the contract, a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(param) }.to_bytes();
    with(h, i64::from(Error::InvalidArgument.code()), |h| match qos_keys::get(h, name).or_else(|| property(h, name)) {
        Some(v) => v.min(i64::MAX as u64) as i64,
        None => fail64(Error::InvalidArgument),
    })
}

/// The "backoff*" keys of `nvmedl_set_handle` (ranges in its docs); `None` for another key.
fn set_backoff_key(h: &mut NvmedlHandle, name: &[u8], value: u64) -> Option<Result<()>> {
    let us = |lo: u64, hi: u64| {
        if (lo..=hi).contains(&value) {
            Ok(std::time::Duration::from_micros(value))
        } else {
            Err(Error::InvalidArgument)
        }
    };
    let cur = h.h.backoff().unwrap_or_default();
    let next = match name {
        b"backoff" => match value {
            0 => return Some(h.h.set_backoff(None)),
            1 => Ok(cur),
            _ => Err(Error::InvalidArgument),
        },
        b"backoff_spin_us" => us(0, 1_000_000).map(|d| Backoff { spin: d, ..cur }),
        b"backoff_yield_us" => us(0, 1_000_000).map(|d| Backoff { yield_for: d, ..cur }),
        b"backoff_max_sleep_us" => us(1, 100_000).map(|d| Backoff { max_sleep: d, min_sleep: cur.min_sleep.min(d), ..cur }),
        _ => return None,
    };
    Some(next.and_then(|b| h.h.set_backoff(Some(b))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::SchedulerKind;

    #[test]
    fn scheduler_numbers_are_the_kinds() {
        assert_eq!(NVMEDL_SCHED_FIFO, SchedulerKind::Fifo.code());
        assert_eq!(NVMEDL_SCHED_PRIORITY, SchedulerKind::PriorityDeadline.code());
        assert_eq!(NVMEDL_SCHED_TIERED, SchedulerKind::Tiered.code());
    }
}
