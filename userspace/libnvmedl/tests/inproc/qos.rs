// SPDX-License-Identifier: MIT OR Apache-2.0
//! Host tests of the QoS mechanisms on the in-process device model. The
//! controller's convergence, the WRR ratios and the starvation bound are also checked in
//! virtual time in `qos::{depth, tiers}`; here they run through a real handle.

use std::time::Duration;

use directnvm_abi::*;

use crate::handle::{board, collect, opts, wallclock_board, FFI_LOCK};
use nvmedl::qos::{DepthConfig, TenantConfig, TierConfig, Tiered};
use nvmedl::*;

#[test]
fn tiered_scheduler_puts_the_top_tier_first_into_the_batch() {
    // Rev 1 completes a batch in the order its requests were staged.
    let (_ip, dev) = board(HDU_REV1, 1);
    let sched = Box::new(Tiered::new(TierConfig { max_wait: Duration::ZERO, ..TierConfig::default() }).unwrap());
    let mut h = dev.handle_with(0, HandleOptions { scheduler: sched, batch: 1000, ..opts() }).unwrap();
    let buf = h.buf_alloc(4096).unwrap();
    let mut want_first = Vec::new();
    for i in 0..10u64 {
        h.submit(Request::read(&buf, 0).priority(3).tag(300 + i)).unwrap();
        h.submit(Request::read(&buf, 0).priority(1).tag(100 + i)).unwrap();
        want_first.push(h.submit(Request::read(&buf, 0).priority(0).tag(i)).unwrap());
    }
    assert_eq!(h.stats().batches, 0, "batch threshold holds the requests");
    h.kick();
    let got: Vec<u64> = collect(&mut h, 30).iter().map(|c| c.tag).collect();
    assert_eq!(&got[..10], &want_first[..]);
    // Then tiers 1 and 3 by smooth WRR at 8:1: of the next 9 requests, 8 are tier 1.
    assert_eq!(got[10..19].iter().filter(|t| (100..110).contains(*t)).count(), 8, "{got:?}");
    assert_eq!(h.tier_stats().unwrap().served, [10, 10, 0, 10]);
}

#[test]
fn adaptive_depth_moves_the_limit_and_keeps_its_bounds() {
    let (_ip, dev) = wallclock_board();
    // A 1 µs target is far below what 32 requests in flight cost: the limit must come down.
    let cfg = DepthConfig { target: Duration::from_micros(1), min_depth: 2, window_ios: 16, probe_every: 8, ..DepthConfig::default() };
    let mut h = dev.handle_with(0, HandleOptions { iodepth: 32, depth_control: Some(cfg), ..opts() }).unwrap();
    assert_eq!(h.iodepth(), 2, "starts with a floor probe at min_depth");
    let bufs: Vec<Buffer> = (0..32).map(|_| h.buf_alloc(4096).unwrap()).collect();
    let mut out = [Completion { tag: 0, result: Ok(()) }; 64];
    let (mut next, mut done, mut limits) = (0usize, 0usize, Vec::new());
    let t0 = std::time::Instant::now();
    while done < 2000 {
        // Closed loop: keep the queue full (submit waits when it is).
        while h.pending() < 32 && next < done + 64 {
            h.submit(Request::read(&bufs[next % 32], (next as u64 % 512) * 8)).unwrap();
            next += 1;
        }
        let n = h.poll(&mut out);
        assert!(out[..n].iter().all(|c| c.result.is_ok()));
        done += n;
        limits.push(h.iodepth());
        assert!(t0.elapsed() < Duration::from_secs(60), "stuck at {done}");
    }
    assert!(limits.iter().all(|l| (2..=32).contains(l)), "limit out of bounds");
    let s = h.depth_sample().unwrap();
    assert!(s.windows >= 20, "{s:?}");
    assert!(s.floor_ns > 0, "{s:?}");
    // Off again: back to the configured depth.
    h.set_depth_control(None).unwrap();
    assert_eq!(h.iodepth(), 32);
    assert!(h.depth_sample().is_none());
    // The upper bound follows iodepth while on.
    h.set_depth_control(Some(DepthConfig { probe_every: 0, ..cfg })).unwrap();
    h.set_iodepth(8).unwrap();
    assert!(h.iodepth() <= 8);
    assert_eq!(
        h.set_depth_control(Some(DepthConfig { min_depth: 0, ..cfg })).unwrap_err(),
        Error::InvalidArgument,
        "bad settings are refused"
    );
}

#[test]
fn adaptive_depth_settles_below_the_static_depth() {
    let (_ip, dev) = wallclock_board();
    let cfg = DepthConfig { target: Duration::from_micros(1), window_ios: 16, probe_every: 0, ..DepthConfig::default() };
    let mut h = dev.handle_with(1, HandleOptions { iodepth: 64, depth_control: Some(cfg), ..opts() }).unwrap();
    let buf = h.buf_alloc(4096).unwrap();
    let mut out = [Completion { tag: 0, result: Ok(()) }; 64];
    let mut done = 0;
    let t0 = std::time::Instant::now();
    while done < 1500 && t0.elapsed() < Duration::from_secs(60) {
        while h.pending() < 64 {
            // try_submit tells the controller when the limit is what holds the stream back.
            if h.try_submit(Request::read(&buf, 0)).is_err() {
                break;
            }
        }
        done += h.poll(&mut out);
    }
    // Whatever the machine's load: queueing 64 requests costs more than 1 µs, so the PI
    // controller has pulled the limit well below the static 64.
    assert!(h.iodepth() < 48, "limit {} after {done} I/Os: {:?}", h.iodepth(), h.depth_sample());
}

#[test]
fn tenants_are_accounted_per_handle_and_aggregated_per_process() {
    // Tenant 13 is used by this test only (process totals are shared by all tests).
    let before = nvmedl::qos::process_stats(13).unwrap();
    let (_ip, dev) = board(HDU_REV2, 1);
    let topts = || HandleOptions { tenants: Some(TenantConfig::default()), ..opts() };
    let mut a = dev.handle_with(0, topts()).unwrap();
    let mut b = dev.handle_with(1, topts()).unwrap();
    for (h, n) in [(&mut a, 150usize), (&mut b, 250)] {
        let buf = h.buf_alloc(8192).unwrap();
        for _ in 0..n {
            h.submit(Request::read(&buf, 16).tenant(13)).unwrap();
        }
        collect(h, n);
        let s = h.tenant_stats(13).unwrap();
        assert_eq!((s.ios, s.bytes), (n as u64, 8192 * n as u64));
        assert!(s.p50_ns > 0 && s.p99_ns >= s.p50_ns && s.max_ns >= s.p99_ns, "{s:?}");
        assert_eq!(h.tenant_stats(0).unwrap().ios, 0);
    }
    let extra = a.buf_alloc(4096).unwrap();
    assert_eq!(a.submit(Request::read(&extra, 0).tenant(16)).unwrap_err(), Error::InvalidArgument);
    drop(a);
    drop(b);
    let after = nvmedl::qos::process_stats(13).unwrap();
    assert_eq!(after.ios - before.ios, 400);
    assert_eq!(after.bytes - before.bytes, 400 * 8192);
}

#[test]
fn under_served_tenant_is_boosted_then_the_boost_decays() {
    let (_ip, dev) = board(HDU_REV2, 1);
    let sched = Box::new(Tiered::new(TierConfig::default()).unwrap());
    let tcfg = TenantConfig { window_ios: 32, ..TenantConfig::default() };
    let mut h = dev.handle_with(0, HandleOptions { scheduler: sched, tenants: Some(tcfg), ..opts() }).unwrap();
    assert_eq!(h.set_tenant_target(16, 0.5).unwrap_err(), Error::InvalidArgument);
    h.set_tenant_target(1, 0.5).unwrap();
    let buf = h.buf_alloc(4096).unwrap();
    let round = |h: &mut Handle, n1: usize| {
        for i in 0..32 {
            let t = if i < n1 { 1 } else { 2 };
            h.submit(Request::read(&buf, 0).priority(2).tenant(t)).unwrap();
        }
        collect(h, 32);
    };
    for _ in 0..10 {
        round(&mut h, 4); // tenant 1: 1/8 of the I/O against a target of 1/2
    }
    let raised = h.tenant_stats(1).unwrap().boost;
    assert!(raised > 2.0 && raised <= 4.0, "boost {raised}");
    assert_eq!(h.tenant_stats(2).unwrap().boost, 1.0);
    for _ in 0..10 {
        round(&mut h, 32); // now at (above) target
    }
    let decayed = h.tenant_stats(1).unwrap().boost;
    assert!(decayed < 1.05, "boost {decayed} after {raised}");
}

#[test]
fn c_abi_qos_keys() {
    use nvmedl::ffi::*;
    use std::ffi::CStr;
    let _g = FFI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (_ip, dev) = board(HDU_REV2, 1);
    nvmedl_admin_init_with(dev);
    let h = nvmedl_create_handle(2);
    assert!(!h.is_null());
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    let set = |k: &CStr, v: u64| unsafe { nvmedl_set_handle(h, k.as_ptr(), v) };
    // SAFETY: as for `set`.
    let get = |k: &CStr| unsafe { nvmedl_get_handle(h, k.as_ptr()) };
    let einval = Error::InvalidArgument.code();
    // Adaptive depth.
    assert_eq!(get(c"adaptive"), 0);
    for (k, bad) in [
        (c"target_delay_us", 0),
        (c"target_delay_us", 1_000_001),
        (c"min_depth", 0),
        (c"depth_window", 4),
        (c"adaptive", 2),
        (c"depth_percentile", 0),
        (c"depth_percentile", 100),
        (c"depth_slow_start", 2),
    ] {
        assert_eq!(set(k, bad), einval, "{k:?} = {bad}");
    }
    assert_eq!(set(c"depth_percentile", 90), 0);
    assert_eq!(get(c"depth_slow_start"), 0);
    assert_eq!(set(c"depth_slow_start", 1), 0);
    assert_eq!(get(c"depth_slow_start"), 1);
    assert_eq!(set(c"iodepth", 64), 0);
    assert_eq!(set(c"target_delay_us", 100), 0);
    assert_eq!(set(c"min_depth", 4), 0);
    assert_eq!(set(c"adaptive", 1), 0);
    assert_eq!(get(c"adaptive"), 1);
    assert_eq!(get(c"iodepth"), 4, "probe window at min_depth");
    assert_eq!(set(c"adaptive", 0), 0);
    assert_eq!(get(c"iodepth"), 64);
    // Scheduler and tiers.
    for (k, bad) in
        [(c"scheduler", 3), (c"tier_weight1", 0), (c"tier_weight3", 1001), (c"tier_max_wait_us", 10_000_001), (c"tier_guard_batch", 0)]
    {
        assert_eq!(set(k, bad), einval, "{k:?} = {bad}");
    }
    assert_eq!(set(c"tier_weight2", 7), 0);
    assert_eq!(set(c"scheduler", 2), 0);
    assert_eq!(get(c"scheduler"), 2);
    assert_eq!(set(c"tier_max_wait_us", 500), 0);
    // Tenants.
    let mut info = NvmedlTenantInfo::default();
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_tenant_stats(h, 0, &mut info) }, Error::NotReady.code());
    assert_eq!(set(c"tenant", 16), einval);
    assert_eq!(set(c"tenant", 12), 0);
    assert_eq!(set(c"tenants", 1), 0);
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_set_tenant_target(h, 12, 1_000_001) }, einval);
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_set_tenant_target(h, 12, 250_000) }, 0);
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    let buf = unsafe { nvmedl_buf_alloc(h, 4096) };
    for _ in 0..5 {
        // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
        assert!(unsafe { nvmedl_read_async(h, buf, 0, 4096) } >= 0);
    }
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_wait(h) }, 5);
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_tenant_stats(h, 12, &mut info) }, 0);
    assert_eq!((info.tenant, info.ios, info.bytes, info.target_ppm, info.boost_milli), (12, 5, 5 * 4096, 250_000, 1000));
    assert!(info.p50_ns > 0);
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_tenant_stats(h, 16, &mut info) }, einval);
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    let before = unsafe {
        nvmedl_tenant_stats(core::ptr::null_mut(), 12, &mut info);
        info.ios
    };
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    unsafe { nvmedl_destroy_handle(h) };
    // SAFETY: `h` is a live handle until `nvmedl_destroy_handle`; `info` and `buf` are valid for it.
    assert_eq!(unsafe { nvmedl_tenant_stats(core::ptr::null_mut(), 12, &mut info) }, 0);
    assert_eq!(info.ios - before, 5, "the destroyed handle published its samples");
}
