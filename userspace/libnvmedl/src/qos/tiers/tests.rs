// SPDX-License-Identifier: MIT OR Apache-2.0
//! Unit tests of the tiered scheduler.

use super::*;

fn info(priority: u16, tenant: u32) -> SchedInfo {
    SchedInfo { priority, tenant, ..SchedInfo::default() }
}

fn sched(cfg: TierConfig) -> Tiered {
    let mut s = Tiered::new(cfg).unwrap();
    s.reserve(4096);
    s
}

#[test]
fn top_tier_is_strict() {
    let mut s = sched(TierConfig { max_wait: Duration::ZERO, ..TierConfig::default() });
    for i in 0..30 {
        s.push(100 + i, info(3, 0));
        s.push(200 + i, info(1, 0));
        s.push(i, info(0, 0));
    }
    // Every tier-0 request first, in FIFO order, whatever the weights.
    for i in 0..30 {
        assert_eq!(s.pop(0), Some(i));
    }
    assert_eq!(s.stats().served[0], 30);
    assert_eq!(s.len(), 60);
    // A new tier-0 arrival preempts the backlog at once.
    s.push(999, info(0, 0));
    assert_eq!(s.pop(0), Some(999));
}

#[test]
fn lower_tiers_share_by_weight() {
    let cfg = TierConfig { weights: [6, 3, 1], max_wait: Duration::ZERO, guard_batch: 8 };
    let mut s = sched(cfg);
    for i in 0..1000 {
        for t in 1..4 {
            s.push(i, info(t, 0));
        }
    }
    for _ in 0..1000 {
        s.pop(0).unwrap();
    }
    let st = s.stats();
    // 6:3:1 of 1000 requests, within ±2 % of the total.
    for (t, want) in [(1, 600), (2, 300), (3, 100)] {
        assert!(st.served[t].abs_diff(want) <= 20, "tier {t}: {} want {want}: {st:?}", st.served[t]);
    }
}

#[test]
fn guard_bounds_starvation_under_a_strict_backlog() {
    // Tier 0 is always backlogged; tier 3 waits. Virtual time: 1 µs per pop.
    let run = |max_wait: Duration| {
        let mut s = sched(TierConfig { max_wait, guard_batch: 2, ..TierConfig::default() });
        for i in 0..20 {
            s.push(10_000 + i, info(3, 0));
        }
        let mut gaps = Vec::new();
        let mut last = 0u64;
        for now in 0..5_000u64 {
            if s.tier_len[0] < 4 {
                s.push(now as u32, info(0, 0));
            }
            let id = s.pop(now * 1000).unwrap();
            if id >= 10_000 {
                gaps.push(now - last);
                last = now;
            }
        }
        (gaps, s.stats())
    };
    // Without the guard the low tier never runs (and nothing is timed).
    let (gaps, st) = run(Duration::ZERO);
    assert!(gaps.is_empty());
    assert_eq!(st.max_wait_ns, [0; TIERS]);
    let (gaps, st) = run(Duration::from_micros(100));
    assert!(gaps.len() >= 20, "{gaps:?}");
    // Between two services of the starved tier at most the bound plus one step passes.
    assert!(gaps.iter().all(|&g| g <= 101), "{gaps:?}");
    // The scheduler's own measure of that interval agrees.
    assert!(st.max_wait_ns[3] > 90_000 && st.max_wait_ns[3] <= 101_000, "{st:?}");
}

#[test]
fn guard_due_reports_an_overdue_tier_between_batches() {
    let mut s = sched(TierConfig { max_wait: Duration::from_micros(100), ..TierConfig::default() });
    assert_eq!(s.guard_bound_ns(), 100_000);
    // A top tier alone never arms the guard.
    s.push(1, info(0, 0));
    assert_eq!(s.guard_armed_until(), 0);
    assert_eq!(s.pop(5), Some(1));
    assert_eq!(s.guard_armed_until(), 0);
    // A queued lower tier arms it; its wait starts at the first check that sees it.
    s.push(2, info(3, 0));
    assert_eq!(s.guard_armed_until(), u64::MAX);
    assert_eq!(s.guard_due_in(1_000), 100_001, "a fresh wait: due after the bound");
    assert_eq!(s.guard_due_in(101_000), 1);
    assert!(s.guard_due_in(101_001) == 0);
    assert_eq!(s.pop(101_001), Some(2));
    let st = s.stats();
    assert_eq!((st.forced, st.max_wait_ns[3]), (1, 100_001));
    // Armed for one bound after its last service, then not.
    assert_eq!(s.guard_armed_until(), 201_001);
    assert_eq!(s.guard_due_in(300_000), u64::MAX, "nothing queued");
    let off = sched(TierConfig { max_wait: Duration::ZERO, ..TierConfig::default() });
    assert_eq!((off.guard_bound_ns(), off.guard_armed_until()), (0, 0));
    // The handle empties the queue with `pop(u64::MAX)` after a timeout: that does not arm
    // the guard for ever.
    let mut s = sched(TierConfig { max_wait: Duration::from_micros(100), ..TierConfig::default() });
    s.push(4, info(2, 0));
    assert_eq!(s.pop(u64::MAX), Some(4));
    assert_eq!(s.guard_armed_until(), 0);
}

#[test]
fn the_horizon_forces_a_tier_that_would_be_overdue_by_the_next_batch() {
    let mut s = sched(TierConfig { max_wait: Duration::from_micros(100), guard_batch: 1, ..TierConfig::default() });
    s.push(1, info(3, 0));
    s.guard_due_in(0);
    for i in 0..4 {
        s.push(10 + i, info(0, 0));
    }
    // At 70 µs, with the next batch start close by, the top tier goes first.
    assert_eq!(s.pop(70_000), Some(10));
    // The next batch starts 40 µs from now: tier 3 would have waited 110 µs by then.
    s.set_guard_horizon(40_000);
    assert_eq!(s.pop(70_000), Some(1));
    let st = s.stats();
    assert_eq!(st.forced, 1);
    assert_eq!(st.max_wait_ns[3], 70_000, "the wait it had, not the horizon");
    s.set_guard_horizon(0);
    assert_eq!(s.pop(70_000), Some(11));
    // A horizon that does not reach the bound changes nothing.
    s.push(2, info(3, 0));
    s.guard_due_in(80_000);
    s.set_guard_horizon(50_000);
    assert_eq!(s.pop(120_000), Some(12), "waited 40 µs + 50 µs horizon < 100 µs");
    assert_eq!(s.pop(140_000), Some(2), "waited 60 µs + 50 µs horizon: past the bound");
}

#[test]
fn a_request_put_back_keeps_its_wait_start() {
    let mut s = sched(TierConfig { max_wait: Duration::from_micros(100), ..TierConfig::default() });
    s.push(1, info(3, 0));
    s.push(2, info(3, 0));
    assert!(s.guard_due_in(0) > 0);
    // Picked at 50 µs (nothing else queued), then left out of the batch.
    assert_eq!(s.pop(50_000), Some(1));
    s.unpop(1, info(3, 0));
    // The wait still counts from 0, not from the pick.
    assert!(s.guard_due_in(100_001) == 0);
    assert_eq!(s.pop(100_001), Some(1));
    assert_eq!(s.stats().forced, 1);
    // A forced pick put back is not counted, and the forced turn stays.
    s.unpop(1, info(3, 0));
    assert_eq!(s.stats().forced, 0);
    assert_eq!(s.stats().max_wait_ns[3], 0);
    s.push(3, info(0, 0));
    assert_eq!(s.pop(100_002), Some(1), "still forced over the top tier");
    assert_eq!(s.stats().max_wait_ns[3], 100_002);
}

#[test]
fn put_back_requests_do_not_skew_the_weights() {
    // A batch cap of one request: every batch picks a second request and puts it back.
    let mut s = sched(TierConfig { weights: [3, 1, 1], max_wait: Duration::ZERO, guard_batch: 8 });
    for i in 0..1000 {
        s.push(i, info(2, 1));
        s.push(1000 + i, info(2, 2));
        s.push(2000 + i, info(1, 0));
    }
    let (mut tenant2, mut tier1) = (0, 0);
    for _ in 0..400 {
        let id = s.pop(0).unwrap();
        tenant2 += usize::from((1000..2000).contains(&id));
        tier1 += usize::from(id >= 2000);
        let back = s.pop(0).unwrap();
        let p = if back >= 2000 { 1 } else { 2 };
        s.unpop(back, info(p, if (1000..2000).contains(&back) { 2 } else { 1 }));
    }
    // Tier 1 : tier 2 = 3 : 1, and tier 2's 100 split evenly between its tenants.
    assert!((295..=305).contains(&tier1), "tier 1 got {tier1} of 400");
    assert!((45..=55).contains(&tenant2), "tenant 2 got {tenant2} of tier 2's {}", 400 - tier1);
}

#[test]
fn an_overdue_tier_takes_the_tiers_past_half_the_bound_with_it() {
    let mut s = sched(TierConfig { max_wait: Duration::from_micros(100), guard_batch: 2, ..TierConfig::default() });
    for i in 0..3 {
        s.push(300 + i, info(3, 0));
    }
    s.guard_due_in(0);
    for i in 0..3 {
        s.push(200 + i, info(2, 0));
    }
    s.guard_due_in(40_000);
    for i in 0..3 {
        s.push(100 + i, info(1, 0));
    }
    s.guard_due_in(80_000);
    for i in 0..10 {
        s.push(i, info(0, 0));
    }
    // At 101 µs tier 3 is overdue; tier 2 waited 61 µs (past half), tier 1 21 µs.
    let mut got: Vec<u32> = (0..5).map(|_| s.pop(101_000).unwrap()).collect();
    assert_eq!(got[0], 300, "the overdue tier first");
    got[..4].sort_unstable();
    assert_eq!(got, [200, 201, 300, 301, 0], "then the forced turns, then tier 0");
    assert_eq!(s.stats().forced, 4);
}

#[test]
fn boosted_tenant_gets_more_of_its_tier() {
    let mut s = sched(TierConfig { max_wait: Duration::ZERO, ..TierConfig::default() });
    for i in 0..1000 {
        s.push(i, info(2, 1));
        s.push(5000 + i, info(2, 2));
    }
    s.set_tenant_weight(1, 3.0);
    let mut n1 = 0;
    for _ in 0..800 {
        if s.pop(0).unwrap() < 5000 {
            n1 += 1;
        }
    }
    assert!((580..=620).contains(&n1), "tenant 1 got {n1} of 800 at boost 3");
}

#[test]
fn unpop_restores_the_order_and_bad_config_is_refused() {
    let mut s = sched(TierConfig::default());
    s.push(1, info(2, 0));
    s.push(2, info(2, 0));
    assert_eq!(s.pop(0), Some(1));
    s.unpop(1, info(2, 0));
    assert_eq!((s.pop(0), s.pop(0), s.pop(0)), (Some(1), Some(2), None));
    assert!(Tiered::new(TierConfig { weights: [0, 1, 1], ..TierConfig::default() }).is_err());
    assert!(Tiered::new(TierConfig { guard_batch: 0, ..TierConfig::default() }).is_err());
}
