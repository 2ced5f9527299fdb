// SPDX-License-Identifier: MIT OR Apache-2.0
//! The tiers' starvation guard through a real handle on a slow SSD model (docs/qos.md §2):
//! a strict top tier keeps the device saturated and a low tier must still be served within
//! the stated bound (`max_wait` + one poll step, rev 1 and rev 2), measured as
//! `TierStats::max_wait_ns`: with a steady low-tier backlog, and at the first backlog after
//! a quiet spell (the guard disarmed, the top tier's batches sized without it).
//!
//! "One poll step" is measured: the longest interval between two `poll` calls of the attempt
//! (a preempted test thread on a loaded host makes it a scheduler slice, ~4 ms), allowed up to
//! a quarter of the bound. Wall-clock timing on a shared host: stalls of the model thread are
//! not covered, so each case passes if one of four attempts holds the bound.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use directnvm_abi::*;
use nvmedl::qos::{TierConfig, TierStats, Tiered};
use nvmedl::*;
use nvmedl_inproc::{InProc, InProcConfig};

const BOUND: Duration = Duration::from_millis(20);
/// One case at a time: each runs a model thread beside its own, and four cases at once on a
/// 2-core host would measure the host's scheduler, not the guard.
static SERIAL: Mutex<()> = Mutex::new(());
/// Tag bit of the low tier's requests.
const LOW: u64 = 1 << 40;

/// A board whose SSD serves about 500 commands per second (a 2 ms serial controller stage).
fn slow_board(revision: u32) -> (Arc<InProc>, Device) {
    let ssd = fakehdu::timing::SsdParams { read_iops: 500, write_iops: 500, ..Default::default() };
    let cfg = InProcConfig { timing: fakehdu::TimingMode::WallClock, ssd: Some(ssd), ..InProcConfig::new(revision) };
    let ip = InProc::start(cfg).expect("in-process board");
    let dev = Device::from_platform(ip.clone()).expect("device");
    (ip, dev)
}

/// What one attempt measured.
struct Attempt {
    stats: TierStats,
    /// Completions of tier 0 and tier 3.
    done: [u64; 2],
    /// Longest interval between two `poll` calls.
    step: Duration,
}

/// The low tier's load.
#[derive(Clone, Copy)]
enum Low {
    /// This many requests kept outstanding.
    Steady(usize),
    /// One request at a time, each submitted a quiet spell of this long after the last one
    /// completed (longer than the bound: the guard disarms in between).
    Onsets(Duration),
}

/// One run: `top` requests of tier 0 kept outstanding and the low tier (tier 3) as `low`,
/// for `run`.
fn run(revision: u32, top: usize, low: Low, run: Duration) -> Attempt {
    let (_ip, dev) = slow_board(revision);
    let cfg = TierConfig { max_wait: BOUND, guard_batch: 2, ..TierConfig::default() };
    let sched = Box::new(Tiered::new(cfg).unwrap());
    let opts = HandleOptions { scheduler: sched, timeout: Duration::from_secs(5), ..HandleOptions::default() };
    let mut h = dev.handle_with(0, opts).unwrap();
    let buf = h.buf_alloc(4096).unwrap();
    let mut out = [Completion { tag: 0, result: Ok(()) }; 256];
    let (mut outstanding, mut done) = ([0usize; 2], [0u64; 2]);
    let mut next = 0u64;
    let t0 = Instant::now();
    let (mut last_poll, mut step) = (t0, Duration::ZERO);
    // Onsets: the first one after the top tier ran alone for a while.
    let mut next_low = t0 + Duration::from_millis(200);
    while t0.elapsed() < run {
        let want_low = match low {
            Low::Steady(n) => n,
            Low::Onsets(_) => usize::from(outstanding[1] > 0 || Instant::now() >= next_low),
        };
        for (k, (want, prio)) in [(top, 0u16), (want_low, 3)].into_iter().enumerate() {
            while outstanding[k] < want {
                next += 1;
                let tag = if k == 1 { next | LOW } else { next };
                h.submit(Request::read(&buf, (next % 1024) * 8).priority(prio).tag(tag)).unwrap();
                outstanding[k] += 1;
            }
        }
        let now = Instant::now();
        step = step.max(now - last_poll);
        last_poll = now;
        let n = h.poll(&mut out);
        for c in &out[..n] {
            assert!(c.result.is_ok(), "{c:?}");
            let k = usize::from(c.tag & LOW != 0);
            outstanding[k] -= 1;
            done[k] += 1;
            if let (1, Low::Onsets(quiet)) = (k, low) {
                next_low = Instant::now() + quiet;
            }
        }
        if n == 0 {
            std::thread::yield_now();
        }
    }
    h.drain().unwrap();
    Attempt { stats: h.tier_stats().unwrap(), done, step }
}

/// Up to four attempts; passes when one keeps the low tier's longest level-1 wait within
/// `stated` plus its longest poll step (at most a quarter of the bound). Every attempt must
/// show the guard at work (both tiers served; with a steady backlog, forced requests).
fn holds_within(revision: u32, low: Low, stated: Duration) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut seen = Vec::new();
    for attempt in 0..4 {
        // More top-tier requests than the 170 staging entries hold: level 1 always has a
        // backlog, and without the guard a full batch (170 x 2 ms) runs before the low tier.
        let a = run(revision, 200, low, Duration::from_millis(1500));
        let (st, wait) = (a.stats, Duration::from_nanos(a.stats.max_wait_ns[3]));
        let limit = stated + a.step.min(BOUND / 4);
        println!(
            "rev {revision} attempt {attempt}: max wait {wait:?} (limit {limit:?}, poll step {:?}), {st:?}, done {:?}",
            a.step, a.done
        );
        let forced_ok = matches!(low, Low::Onsets(_)) || st.forced > 0;
        assert!(forced_ok && a.done[0] > 0 && a.done[1] > 0, "the guard never acted: {st:?} {:?}", a.done);
        if wait <= limit {
            return;
        }
        seen.push((wait, a.step));
    }
    panic!("rev {revision}: low tier waited {seen:?} (wait, poll step) in all attempts, stated bound {stated:?} + one poll step");
}

#[test]
fn rev2_low_tier_waits_at_most_the_bound_plus_one_poll_step() {
    holds_within(HDU_REV2, Low::Steady(4), BOUND);
}

#[test]
fn rev1_low_tier_waits_at_most_the_bound_plus_one_poll_step() {
    holds_within(HDU_REV1, Low::Steady(4), BOUND);
}

/// Without the disarmed cap a top-tier batch holds 170 commands (340 ms on this device) when
/// the low tier's first request of a spell arrives.
#[test]
fn rev2_first_backlog_after_quiet_waits_at_most_the_bound_plus_one_poll_step() {
    holds_within(HDU_REV2, Low::Onsets(BOUND * 3), BOUND);
}

#[test]
fn rev1_first_backlog_after_quiet_waits_at_most_the_bound_plus_one_poll_step() {
    holds_within(HDU_REV1, Low::Onsets(BOUND * 3), BOUND);
}
