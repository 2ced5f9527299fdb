// SPDX-License-Identifier: MIT OR Apache-2.0
//! The tenant part of the C ABI (docs/qos.md): targets and per-tenant accounting, of one
//! handle or of the whole process.

use std::ffi::c_int;

use super::boundary::{code, guard, with, NvmedlHandle};
use crate::error::Error;
use crate::qos::TenantStats;

/// Accounting of one tenant (`nvmedl_tenant_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NvmedlTenantInfo {
    /// Tenant id.
    pub tenant: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Completed requests.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Latency percentiles, submit to completion, nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest latency.
    pub max_ns: u64,
    /// Share in parts per million: of the last window (handle) or of all bytes (process).
    pub share_ppm: u32,
    /// Target share in parts per million (0 = none; process totals: 0).
    pub target_ppm: u32,
    /// Boost factor in thousandths (1000 = none).
    pub boost_milli: u32,
    /// Reserved, 0.
    pub reserved2: u32,
}

impl From<TenantStats> for NvmedlTenantInfo {
    fn from(s: TenantStats) -> Self {
        let ppm = |f: f64| (f * 1e6).round().clamp(0.0, 1e6) as u32;
        NvmedlTenantInfo {
            tenant: s.tenant,
            reserved: 0,
            ios: s.ios,
            bytes: s.bytes,
            p50_ns: s.p50_ns,
            p99_ns: s.p99_ns,
            p999_ns: s.p999_ns,
            max_ns: s.max_ns,
            share_ppm: ppm(s.share),
            target_ppm: ppm(s.target),
            boost_milli: (s.boost * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32,
            reserved2: 0,
        }
    }
}

/// Set the target share of `tenant` (0..=15) in parts per million (0..=1000000; 0 = none).
/// Tenant accounting must be on ("tenants" = 1). 0 or a negative code.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_set_tenant_target(h: *mut NvmedlHandle, tenant: u32, share_ppm: u32) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| {
        let r = if share_ppm > 1_000_000 { Err(Error::InvalidArgument) } else { h.h.set_tenant_target(tenant, f64::from(share_ppm) / 1e6) };
        code(r)
    })
}

/// Accounting of `tenant` (0..=15) into `out`: of handle `h`, or with `h` NULL the process
/// totals over every handle (each publishes once per window and when destroyed). 0 or a
/// negative code (accounting off on `h`: the not-ready code).
///
/// # Safety
/// `h` is NULL or a live handle; `out` points to writable memory for one struct.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_tenant_stats(h: *mut NvmedlHandle, tenant: u32, out: *mut NvmedlTenantInfo) -> c_int {
    if out.is_null() {
        return Error::InvalidArgument.code();
    }
    let put = |s: TenantStats| {
        // SAFETY: `out` is non-null and writable per the contract.
        unsafe { out.write(s.into()) };
        0
    };
    if h.is_null() {
        return guard(Error::Internal.code(), || match crate::qos::process_stats(tenant) {
            Some(s) => put(s),
            None => code(Err(Error::InvalidArgument)),
        });
    }
    with(h, Error::InvalidArgument.code(), |h| {
        if !h.h.tenant_accounting_on() {
            return code(Err(Error::NotReady));
        }
        match h.h.tenant_stats(tenant) {
            Some(s) => put(s),
            None => code(Err(Error::InvalidArgument)),
        }
    })
}
