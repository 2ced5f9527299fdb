// SPDX-License-Identifier: MIT OR Apache-2.0
//! The level-1 QoS experiments through the library (`make qos-evidence`): one handle on
//! core 0 serves several closed-loop *streams* (urgency class, tenant, request size, requests
//! kept outstanding, active seconds), so the handle's scheduler decides who is served.
//!
//! * `tiers`: a top-tier stream (class 0) that can fill the device alone and a class-3
//!   background burst in the middle third of the run; FIFO, then the tiered scheduler with its
//!   starvation guard (2 ms; default `guard_batch` 2, then `QOS_GUARD_BATCH_LARGE`, default
//!   8, the old default), then without the guard. Figures: per-stream share and latency
//!   solo / during the burst, the longest gap between two completions of the background
//!   stream while it is backlogged, the scheduler's per-tier counts and longest level-1 waits
//!   (the guard's bound), and the poll steps (the loop's longest interval between two `poll`
//!   calls, the handle's longest progress step while the guard was armed).
//! * `tenants`: two tenants in tier 2 with the same number of requests outstanding, tenant 1
//!   in 64 KiB requests and tenant 2 in 16 KiB ones, so tenant 2 gets a small share of the
//!   bytes; at a third of the run tenant 2's target becomes `QOS_TENANT_TARGET` (default 0.4)
//!   and the boost raises its lane weight.
//!
//! Each run prints one line `# qos-json <exp> <label> {..}` (per-100 ms series and a summary)
//! for `scripts/qos-plot.py`. A benchmark: it fails only when I/O fails.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use nvmedl::qos::{TenantConfig, TierConfig, Tiered};
use nvmedl::{Completion, Device, Fifo, Handle, HandleOptions, Request, Scheduler};
use serde_json::{json, Value};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One closed-loop stream of the handle.
struct Stream {
    name: &'static str,
    class: u16,
    tenant: u32,
    len: usize,
    outstanding: usize,
    /// Active from .. to (seconds since the start).
    from: f64,
    to: f64,
}

/// What a stream did.
struct Tally {
    out: usize,
    /// Whole phases: solo (stream active, no burst) and burst.
    lat: [Histogram<u64>; 2],
    ios: [u64; 2],
    bytes: [u64; 2],
    /// Per 100 ms sample.
    s_ios: Vec<u64>,
    s_bytes: Vec<u64>,
    s_lat: Histogram<u64>,
    s_p99: Vec<f64>,
    /// Longest time between two completions while the stream had requests outstanding
    /// (after its first completion; the guard's bound).
    last_done: Option<Instant>,
    max_gap: Duration,
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 2).unwrap_or_else(|e| panic!("histogram: {e}"))
}

fn lat_json(h: &Histogram<u64>, ios: u64, secs: f64) -> Value {
    let us = |q: f64| if h.is_empty() { 0.0 } else { (h.value_at_quantile(q) as f64 / 10.0).round() / 100.0 };
    json!({"iops": (ios as f64 / secs.max(1e-9)).round(), "p50_us": us(0.5), "p99_us": us(0.99), "max_us": us(1.0)})
}

/// The phase of time `s`: 1 during the burst window, else 0.
fn phase(s: f64, burst: (f64, f64)) -> usize {
    usize::from(s >= burst.0 && s < burst.1)
}

/// Run `streams` on one handle for `secs` seconds; `target` = (at second, tenant, share)
/// sets a tenant's target mid-run. Returns the JSON summary.
fn run(
    d: &Device,
    opts: HandleOptions,
    streams: &[Stream],
    secs: f64,
    burst: (f64, f64),
    target: Option<(f64, u32, f64)>,
) -> Result<Value, String> {
    let total: usize = streams.iter().map(|s| s.outstanding).sum();
    let mut h: Handle = d.handle_with(0, opts).map_err(|e| format!("handle: {e}"))?;
    let bufs: Vec<_> = streams
        .iter()
        .flat_map(|s| (0..s.outstanding).map(move |_| s.len))
        .map(|len| h.buf_alloc(len))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("buffers ({total} requests): {e}"))?;
    // Slot i belongs to stream owner[i]; free slots per stream.
    let mut owner = Vec::with_capacity(total);
    let mut free: Vec<Vec<usize>> = Vec::new();
    for (k, s) in streams.iter().enumerate() {
        free.push((owner.len()..owner.len() + s.outstanding).collect());
        owner.extend(std::iter::repeat_n(k, s.outstanding));
    }
    let samples = (secs * 10.0) as usize + 2;
    let mut tally: Vec<Tally> = streams
        .iter()
        .map(|_| Tally {
            out: 0,
            lat: [hist(), hist()],
            ios: [0; 2],
            bytes: [0; 2],
            s_ios: Vec::with_capacity(samples),
            s_bytes: Vec::with_capacity(samples),
            s_lat: hist(),
            s_p99: Vec::with_capacity(samples),
            last_done: None,
            max_gap: Duration::ZERO,
        })
        .collect();
    let mut started = vec![Instant::now(); total];
    let span = (h.capacity_lbas() / 8 / 2).min(1 << 18); // 4 KiB blocks of the first GiB at most
    let mut x = 0x9e37_79b9_u64;
    let mut out = [Completion { tag: 0, result: Ok(()) }; 64];
    let (mut t_ms, mut depth, mut boost, mut share) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let t0 = Instant::now();
    let mut next = t0 + Duration::from_millis(100);
    let mut target_set = target.is_none();
    let mut cur_ios = vec![0u64; streams.len()];
    let mut cur_bytes = vec![0u64; streams.len()];
    let mut rot = 0usize;
    // Longest interval between two `poll` calls of this loop (the application's poll step).
    let (mut last_poll, mut max_step): (Option<Instant>, Duration) = (None, Duration::ZERO);
    loop {
        let now = Instant::now();
        let s_now = (now - t0).as_secs_f64();
        if s_now >= secs {
            break;
        }
        if !target_set {
            if let Some((at, t, sh)) = target {
                if s_now >= at {
                    h.set_tenant_target(t, sh).map_err(|e| format!("tenant target: {e}"))?;
                    target_set = true;
                }
            }
        }
        // Refill every active stream, starting with a different one each pass.
        rot = (rot + 1) % streams.len();
        'fill: for i in 0..streams.len() {
            let k = (rot + i) % streams.len();
            let s = &streams[k];
            if s_now < s.from || s_now >= s.to {
                continue;
            }
            while let Some(&slot) = free[k].last() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let lba = (x % (span - 16)) * 8;
                let req = Request::read(&bufs[slot], lba).priority(s.class).tenant(s.tenant).tag(slot as u64);
                match h.try_submit(req) {
                    Ok(_) => {
                        free[k].pop();
                        started[slot] = Instant::now();
                        if tally[k].out == 0 {
                            // Backlogged from now: gaps count from this submit.
                            tally[k].last_done = Some(started[slot]);
                        }
                        tally[k].out += 1;
                    }
                    Err(nvmedl::Error::QueueFull) => break 'fill,
                    Err(e) => return Err(format!("{}: submit: {e}", s.name)),
                }
            }
        }
        let polled = Instant::now();
        if let Some(prev) = last_poll {
            max_step = max_step.max(polled - prev);
        }
        last_poll = Some(polled);
        let n = h.poll(&mut out);
        let done_at = Instant::now();
        for c in &out[..n] {
            let slot = c.tag as usize;
            let k = owner[slot];
            c.result.map_err(|e| format!("{}: read failed: {e}", streams[k].name))?;
            let ns = (done_at - started[slot]).as_nanos() as u64;
            let p = phase((started[slot] - t0).as_secs_f64(), burst);
            let t = &mut tally[k];
            t.lat[p].saturating_record(ns);
            t.ios[p] += 1;
            t.bytes[p] += streams[k].len as u64;
            t.s_lat.saturating_record(ns);
            cur_ios[k] += 1;
            cur_bytes[k] += streams[k].len as u64;
            if let Some(prev) = t.last_done {
                t.max_gap = t.max_gap.max(done_at - prev);
            }
            t.last_done = Some(done_at);
            t.out -= 1;
            free[k].push(slot);
        }
        if done_at >= next {
            next += Duration::from_millis(100);
            t_ms.push(((done_at - t0).as_secs_f64() * 1000.0).round());
            depth.push(h.pending());
            for (k, t) in tally.iter_mut().enumerate() {
                t.s_ios.push(cur_ios[k]);
                t.s_bytes.push(cur_bytes[k]);
                t.s_p99.push(if t.s_lat.is_empty() { 0.0 } else { t.s_lat.value_at_quantile(0.99) as f64 / 1000.0 });
                t.s_lat.reset();
                (cur_ios[k], cur_bytes[k]) = (0, 0);
            }
            let ts = |k: usize| h.tenant_stats(streams[k].tenant);
            boost.push(streams.iter().enumerate().map(|(k, _)| ts(k).map_or(1.0, |s| s.boost)).collect::<Vec<_>>());
            share.push(streams.iter().enumerate().map(|(k, _)| ts(k).map_or(0.0, |s| s.share)).collect::<Vec<_>>());
        }
    }
    // A stream still waiting at the end: its open gap counts too (a starved stream).
    let end = Instant::now();
    for t in tally.iter_mut().filter(|t| t.out > 0) {
        if let Some(prev) = t.last_done {
            t.max_gap = t.max_gap.max(end - prev);
        }
    }
    h.drain().map_err(|e| format!("drain: {e}"))?;
    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    let hs = h.stats();
    let steps = json!({"app_max_step_ms": ms(max_step), "guard_max_step_ms": ms(Duration::from_nanos(hs.guard_max_step_ns)),
                       "batches": hs.batches, "entries_per_batch": (hs.entries as f64 / hs.batches.max(1) as f64 * 10.0).round() / 10.0});
    let tiers = h.tier_stats().map(|s| {
        let max_wait_ms: Vec<f64> = s.max_wait_ns.iter().map(|&n| n as f64 / 1e6).collect();
        json!({"served": s.served, "forced": s.forced, "max_wait_ms": max_wait_ms})
    });
    let overlap = |a: (f64, f64), b: (f64, f64)| (a.1.min(b.1) - a.0.max(b.0)).max(0.0);
    let per: Vec<Value> = streams
        .iter()
        .zip(&tally)
        .map(|(s, t)| {
            let in_burst = overlap((s.from, s.to), burst);
            let solo = overlap((s.from, s.to), (0.0, secs)) - in_burst;
            json!({
                "name": s.name, "class": s.class, "tenant": s.tenant, "len": s.len, "outstanding": s.outstanding,
                "solo": lat_json(&t.lat[0], t.ios[0], solo),
                "burst": lat_json(&t.lat[1], t.ios[1], in_burst),
                "bytes": t.bytes, "ios": t.ios,
                "max_gap_ms": (t.max_gap.as_secs_f64() * 1e5).round() / 100.0,
                "s_ios": t.s_ios, "s_bytes": t.s_bytes, "s_p99_us": t.s_p99,
            })
        })
        .collect();
    Ok(json!({"secs": secs, "burst": [burst.0, burst.1], "target": target.map(|t| t.2), "t_ms": t_ms, "pending": depth,
              "tenant_boost": boost, "tenant_share": share, "tiers": tiers, "steps": steps, "streams": per}))
}

/// A handle for the experiments: room for every stream's requests outstanding at once.
fn opts(sched: Box<dyn Scheduler>, tenants: Option<TenantConfig>) -> HandleOptions {
    HandleOptions { capacity: 1024, iodepth: 512, scheduler: sched, tenants, ..HandleOptions::default() }
}

fn print(exp: &str, label: &str, v: Result<Value, String>) -> bool {
    match v {
        Ok(v) => {
            println!("# qos-json {exp} {label} {v}");
            true
        }
        Err(e) => {
            println!("qos: {exp} {label}: {e}");
            false
        }
    }
}

/// Two tiers under a background burst: FIFO, tiered with the guard, tiered without it.
pub fn tiers(d: &Device) -> bool {
    let secs = env("QOS_TIER_SECS", 6) as f64;
    let burst = (secs / 3.0, 2.0 * secs / 3.0);
    let fg = env("QOS_FG_QD", 192) as usize;
    let bg = env("QOS_BG_QD", 64) as usize;
    let wait = Duration::from_micros(env("QOS_MAX_WAIT_US", 2000));
    let streams = [
        Stream { name: "top", class: 0, tenant: 0, len: 16384, outstanding: fg, from: 0.0, to: secs },
        Stream { name: "background", class: 3, tenant: 0, len: 16384, outstanding: bg, from: burst.0, to: burst.1 },
    ];
    let mut ok = true;
    let large = env("QOS_GUARD_BATCH_LARGE", 8) as u32;
    let tiered = |max_wait, guard_batch| -> Box<dyn Scheduler> {
        Box::new(Tiered::new(TierConfig { max_wait, guard_batch, ..TierConfig::default() }).unwrap_or_else(|e| panic!("tiers: {e}")))
    };
    let dflt = TierConfig::default().guard_batch;
    ok &= print("tiers", "fifo", run(d, opts(Box::new(Fifo::default()), None), &streams, secs, burst, None));
    ok &= print("tiers", "tiered-guard", run(d, opts(tiered(wait, dflt), None), &streams, secs, burst, None));
    // The guard's price is what it hands the background: `guard_batch` requests per bound.
    ok &= print("tiers", &format!("tiered-guard-batch{large}"), run(d, opts(tiered(wait, large), None), &streams, secs, burst, None));
    ok &= print("tiers", "tiered-noguard", run(d, opts(tiered(Duration::ZERO, dflt), None), &streams, secs, burst, None));
    ok
}

/// An under-served tenant before and after its target (and so its boost) is set.
pub fn tenants(d: &Device) -> bool {
    let secs = env("QOS_TENANT_SECS", 6) as f64;
    let qd = env("QOS_TENANT_QD", 128) as usize;
    let share = env("QOS_TENANT_TARGET_PCT", 40) as f64 / 100.0;
    let streams = [
        Stream { name: "tenant1-64k", class: 2, tenant: 1, len: 65536, outstanding: qd, from: 0.0, to: secs },
        Stream { name: "tenant2-16k", class: 2, tenant: 2, len: 16384, outstanding: qd, from: 0.0, to: secs },
    ];
    let sched = || -> Box<dyn Scheduler> { Box::new(Tiered::new(TierConfig::default()).unwrap_or_else(|e| panic!("tiers: {e}"))) };
    // No burst window here: phase 1 = after the target is set.
    let at = secs / 3.0;
    print("tenants", "boost", run(d, opts(sched(), Some(TenantConfig::default())), &streams, secs, (at, secs), Some((at, 2, share))))
}
