// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Tiered`: strict top tier, weighted lower tiers, max-service-interval guard (docs/qos.md).
//!
//! * Tier = the request's urgency class (0 .. 3). Tier 0 is served strictly while non-empty.
//! * Tiers 1 .. 3 share what is left by smooth weighted round robin (the nginx variant: every
//!   backlogged flow gains its weight, the largest credit is served and pays the sum), counted
//!   in requests. Inside a tier each tenant (`SchedInfo::tenant`, < `MAX_TENANTS`) has its own
//!   FIFO lane, weighted by the tier's weight times the tenant's boost
//!   (`TenantLanes::set_tenant_weight`), so an under-served tenant catches up inside its tier.
//! * Guard: a backlogged tier (1 .. 3) that has not been served for longer than `max_wait` is
//!   served next, for up to `guard_batch` requests, even over tier 0; every other backlogged
//!   lower tier that has waited more than half of `max_wait` is served with it. The interval
//!   counts from the last service of the tier, or from the first `pop` or `guard_due_in` that
//!   saw it backlogged (pushes carry no time). A request `unpop`ped (picked, then left out of
//!   the batch) keeps the wait start it had, and the WRR rounds of its pick are taken back.
//!   The handle asks `guard_due_in` at every progress step while the guard is armed and
//!   starts a batch for an overdue tier at once; before each batch it sets the horizon, the
//!   time to its next chance to start one (`set_guard_horizon`), and a tier that would be
//!   overdue by then is forced into this batch (docs/qos.md §2, `handle/guard.rs`).
//!
//! Allocation-free after `reserve`: every lane is pre-sized to the handle's capacity.

use std::collections::VecDeque;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::qos::tenant::MAX_TENANTS;
use crate::sched::{SchedInfo, Scheduler, StarvationGuard, TenantLanes};

/// Number of tiers (the urgency classes).
pub const TIERS: usize = 4;
const UNSET: u64 = u64::MAX;
/// Boost weights are kept in thousandths.
const MILLI: u64 = 1000;

/// Settings of the tiered scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TierConfig {
    /// WRR weights of tiers 1, 2, 3 (each 1 ..= 1000; default 8, 4, 1).
    pub weights: [u32; 3],
    /// Max service interval of a backlogged lower tier; `Duration::ZERO` turns the guard off
    /// (default 2 ms; at most 10 s).
    pub max_wait: Duration,
    /// Requests a guard-forced tier gets before the normal order resumes (1 ..= 1024; default
    /// 2). The guard is a floor against starvation, not a share: at the default bound it
    /// guarantees a lower tier 1000 requests per second (the share of the lower tiers comes
    /// from their weights when the top tier leaves room). The earlier default 8 (4000 per
    /// second) handed a background burst about what FIFO gives it (docs/qos.md §7).
    pub guard_batch: u32,
}

impl Default for TierConfig {
    fn default() -> Self {
        Self { weights: [8, 4, 1], max_wait: Duration::from_millis(2), guard_batch: 2 }
    }
}

impl TierConfig {
    /// Check the ranges documented on the fields.
    pub fn validate(&self) -> Result<()> {
        if self.weights.iter().all(|w| (1..=1000).contains(w))
            && self.max_wait <= Duration::from_secs(10)
            && (1..=1024).contains(&self.guard_batch)
        {
            Ok(())
        } else {
            Err(Error::InvalidArgument)
        }
    }
}

/// Counters of a `Tiered` scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Requests popped per tier.
    pub served: [u64; TIERS],
    /// Requests popped because the guard forced their tier.
    pub forced: u64,
    /// Longest level-1 service interval per tier (ns): from the tier's last service, or from
    /// the first scheduling pass that saw it backlogged, to its next service. Measured on the
    /// guard's clock, so only with the guard on (0 otherwise); the quantity the guard bounds.
    pub max_wait_ns: [u64; TIERS],
}

/// The tiered scheduler (module docs).
pub struct Tiered {
    cfg: TierConfig,
    top: VecDeque<u32>,
    lanes: [Vec<VecDeque<u32>>; TIERS - 1],
    credit: [[i64; MAX_TENANTS]; TIERS - 1],
    tcredit: [i64; TIERS],
    boost: [u64; MAX_TENANTS],
    tier_len: [usize; TIERS],
    len: usize,
    since: [u64; TIERS],
    forced_left: [u32; TIERS],
    /// Time of the last service of a lower tier (0: none yet).
    last_lower_ns: u64,
    /// The handle's lookahead (`StarvationGuard::set_guard_horizon`): a tier overdue within it is
    /// forced now.
    horizon_ns: u64,
    /// What the last `pop` changed, for `unpop`.
    undo: Option<Undo>,
    stats: TierStats,
}

/// One smooth-WRR round: who was picked and what the backlogged ones gained in total.
#[derive(Clone, Copy, Debug, Default)]
struct Credit {
    picked: usize,
    total: i64,
}

/// What the last `pop` changed, as it was before it: the guard state of its tier and the
/// WRR rounds among tenant lanes and among tiers (total 0: no round).
#[derive(Clone, Copy, Debug)]
struct Undo {
    tier: usize,
    since: u64,
    forced_left: u32,
    forced: bool,
    max_wait_ns: u64,
    lane: Credit,
    tier_round: Credit,
}

impl Tiered {
    /// A scheduler with `cfg` (checked).
    pub fn new(cfg: TierConfig) -> Result<Self> {
        cfg.validate()?;
        let lanes = || (0..MAX_TENANTS).map(|_| VecDeque::new()).collect::<Vec<_>>();
        Ok(Self {
            cfg,
            top: VecDeque::new(),
            lanes: [lanes(), lanes(), lanes()],
            credit: [[0; MAX_TENANTS]; TIERS - 1],
            tcredit: [0; TIERS],
            boost: [MILLI; MAX_TENANTS],
            tier_len: [0; TIERS],
            len: 0,
            since: [UNSET; TIERS],
            forced_left: [0; TIERS],
            last_lower_ns: 0,
            horizon_ns: 0,
            undo: None,
            stats: TierStats::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> TierConfig {
        self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> TierStats {
        self.stats
    }

    fn tier(p: u16) -> usize {
        (p as usize).min(TIERS - 1)
    }

    fn lane(tenant: u32) -> usize {
        (tenant as usize).min(MAX_TENANTS - 1)
    }

    /// Pop from tier `t` (1 ..= 3) by WRR among its backlogged tenant lanes.
    fn pop_lane(&mut self, t: usize) -> Option<(u32, Credit)> {
        let lanes = &mut self.lanes[t - 1];
        let credit = &mut self.credit[t - 1];
        let mut total = 0i64;
        let mut best: Option<usize> = None;
        for (l, q) in lanes.iter().enumerate() {
            if q.is_empty() {
                continue;
            }
            let w = self.boost[l] as i64;
            credit[l] += w;
            total += w;
            if best.is_none_or(|b| credit[l] > credit[b]) {
                best = Some(l);
            }
        }
        let b = best?;
        credit[b] -= total;
        Some((lanes[b].pop_front()?, Credit { picked: b, total }))
    }

    /// Pick a lower tier by smooth WRR among the backlogged ones.
    fn pick_weighted(&mut self) -> Option<(usize, Credit)> {
        let mut total = 0i64;
        let mut best: Option<usize> = None;
        for t in 1..TIERS {
            if self.tier_len[t] == 0 {
                continue;
            }
            let w = i64::from(self.cfg.weights[t - 1]);
            self.tcredit[t] += w;
            total += w;
            if best.is_none_or(|b| self.tcredit[t] > self.tcredit[b]) {
                best = Some(t);
            }
        }
        let b = best?;
        self.tcredit[b] -= total;
        Some((b, Credit { picked: b, total }))
    }

    /// Take back a smooth-WRR round (`unpop`): the picked one gets its payment back and every
    /// backlogged one gives back its weight (the backlogged set is the one of the round again,
    /// as the request is queued again).
    fn undo_round(&mut self, t: usize, lane: Credit, tier: Credit) {
        if t > 0 && lane.total > 0 {
            let credit = &mut self.credit[t - 1];
            credit[lane.picked] += lane.total;
            for (l, q) in self.lanes[t - 1].iter().enumerate() {
                if !q.is_empty() {
                    credit[l] -= self.boost[l] as i64;
                }
            }
        }
        if tier.total > 0 {
            self.tcredit[tier.picked] += tier.total;
            for u in 1..TIERS {
                if self.tier_len[u] > 0 {
                    self.tcredit[u] -= i64::from(self.cfg.weights[u - 1]);
                }
            }
        }
    }

    fn bound_ns(&self) -> u64 {
        self.cfg.max_wait.as_nanos() as u64
    }

    /// How long backlogged lower tier `t` has waited at `now_ns` (`None`: not backlogged, or
    /// its wait starts now: stamped here).
    fn waited(&mut self, t: usize, now_ns: u64) -> Option<u64> {
        if self.tier_len[t] == 0 {
            return None;
        }
        if self.since[t] == UNSET {
            self.since[t] = now_ns;
            return None;
        }
        Some(now_ns.saturating_sub(self.since[t]))
    }

    /// The lower tier to force now, if any: one already being forced, else the one that waited
    /// longest past `max_wait`, counting the wait up to the handle's next batch start (the
    /// horizon); the other lower tiers past half of `max_wait` are forced with it. Stamps the
    /// wait start of tiers seen backlogged for the first time.
    fn overdue(&mut self, now_ns: u64) -> Option<usize> {
        let bound = self.bound_ns();
        if bound == 0 {
            return None;
        }
        if let Some(t) = (1..TIERS).find(|&t| self.tier_len[t] > 0 && self.forced_left[t] > 0) {
            return Some(t);
        }
        // Waits as they will be at the handle's next chance to start a batch.
        let h = self.horizon_ns;
        let waits: [Option<u64>; TIERS] =
            std::array::from_fn(|t| if t == 0 { None } else { self.waited(t, now_ns).map(|w| w.saturating_add(h)) });
        let (_, t) = (1..TIERS).filter_map(|t| waits[t].filter(|&w| w > bound).map(|w| (w, t))).max()?;
        for (u, w) in waits.iter().enumerate() {
            if w.is_some_and(|w| w > bound / 2) {
                self.forced_left[u] = self.cfg.guard_batch;
            }
        }
        Some(t)
    }

    fn served(&mut self, t: usize, now_ns: u64, forced: bool, lane: Credit, tier_round: Credit) {
        self.undo = Some(Undo {
            tier: t,
            since: self.since[t],
            forced_left: self.forced_left[t],
            forced,
            max_wait_ns: self.stats.max_wait_ns[t],
            lane,
            tier_round,
        });
        if forced {
            self.forced_left[t] = self.forced_left[t].saturating_sub(1);
            self.stats.forced += 1;
        }
        self.tier_len[t] -= 1;
        self.len -= 1;
        self.stats.served[t] += 1;
        if self.since[t] != UNSET {
            let w = &mut self.stats.max_wait_ns[t];
            *w = (*w).max(now_ns.saturating_sub(self.since[t]));
        }
        self.since[t] = if self.tier_len[t] == 0 { UNSET } else { now_ns };
        if self.tier_len[t] == 0 {
            self.forced_left[t] = 0;
        }
        // `pop(u64::MAX)` empties the queue after a timeout: not a service that arms the guard.
        if t > 0 && self.bound_ns() > 0 && now_ns != u64::MAX {
            self.last_lower_ns = now_ns.max(1);
        }
    }
}

impl Scheduler for Tiered {
    fn reserve(&mut self, capacity: usize) {
        self.top.reserve(capacity);
        for tier in &mut self.lanes {
            for q in tier.iter_mut() {
                q.reserve(capacity);
            }
        }
    }

    fn push(&mut self, id: u32, info: SchedInfo) {
        let t = Self::tier(info.priority);
        if t == 0 {
            self.top.push_back(id);
        } else {
            self.lanes[t - 1][Self::lane(info.tenant)].push_back(id);
        }
        self.tier_len[t] += 1;
        self.len += 1;
    }

    fn pop(&mut self, now_ns: u64) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        if let Some(t) = self.overdue(now_ns) {
            let (id, lane) = self.pop_lane(t)?;
            self.served(t, now_ns, true, lane, Credit::default());
            return Some(id);
        }
        if let Some(id) = self.top.pop_front() {
            self.served(0, now_ns, false, Credit::default(), Credit::default());
            return Some(id);
        }
        let (t, round) = self.pick_weighted()?;
        let (id, lane) = self.pop_lane(t)?;
        self.served(t, now_ns, false, lane, round);
        Some(id)
    }

    fn unpop(&mut self, id: u32, info: SchedInfo) {
        let t = Self::tier(info.priority);
        if t == 0 {
            self.top.push_front(id);
        } else {
            self.lanes[t - 1][Self::lane(info.tenant)].push_front(id);
        }
        self.tier_len[t] += 1;
        self.len += 1;
        self.stats.served[t] = self.stats.served[t].saturating_sub(1);
        // Not served after all: the tier keeps the wait start (and forced turn) it had, and
        // the WRR rounds are taken back (a batch cap puts a request back at every batch; a
        // round kept each time would starve the lane it picked).
        if let Some(u) = self.undo.take().filter(|u| u.tier == t) {
            self.undo_round(t, u.lane, u.tier_round);
            self.since[t] = u.since;
            self.forced_left[t] = u.forced_left;
            self.stats.max_wait_ns[t] = u.max_wait_ns;
            if u.forced {
                self.stats.forced = self.stats.forced.saturating_sub(1);
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn uses_clock(&self) -> bool {
        !self.cfg.max_wait.is_zero()
    }

    fn tier_stats(&self) -> Option<TierStats> {
        Some(self.stats)
    }

    fn tenant_lanes(&mut self) -> Option<&mut dyn TenantLanes> {
        Some(self)
    }

    fn guard(&self) -> Option<&dyn StarvationGuard> {
        Some(self)
    }

    fn guard_mut(&mut self) -> Option<&mut dyn StarvationGuard> {
        Some(self)
    }
}

impl StarvationGuard for Tiered {
    fn guard_bound_ns(&self) -> u64 {
        self.bound_ns()
    }

    /// Armed while a lower tier is backlogged and for one bound after its last service: a
    /// closed-loop background stream resubmits within that time and must not find an uncapped
    /// batch in flight.
    fn guard_armed_until(&self) -> u64 {
        let bound = self.bound_ns();
        if bound == 0 {
            0
        } else if self.tier_len[1..].iter().any(|&n| n > 0) {
            u64::MAX
        } else if self.last_lower_ns == 0 {
            0
        } else {
            self.last_lower_ns.saturating_add(bound)
        }
    }

    fn guards(&self, info: &SchedInfo) -> bool {
        self.bound_ns() > 0 && Self::tier(info.priority) > 0
    }

    fn guard_due_in(&mut self, now_ns: u64) -> u64 {
        let bound = self.bound_ns();
        let mut due_in = u64::MAX;
        if bound == 0 {
            return due_in;
        }
        for t in 1..TIERS {
            if self.tier_len[t] > 0 && self.forced_left[t] > 0 {
                return 0;
            }
            if self.tier_len[t] > 0 {
                // Overdue once it waited more than the bound (a fresh wait starts now).
                let waited = self.waited(t, now_ns).unwrap_or(0);
                due_in = due_in.min((bound + 1).saturating_sub(waited));
            }
        }
        due_in
    }

    fn set_guard_horizon(&mut self, ns: u64) {
        self.horizon_ns = ns;
    }
}

impl TenantLanes for Tiered {
    fn set_tenant_weight(&mut self, tenant: u32, weight: f64) {
        if (tenant as usize) < MAX_TENANTS && weight.is_finite() && weight > 0.0 {
            self.boost[tenant as usize] = ((weight * MILLI as f64) as u64).clamp(1, 1000 * MILLI);
        }
    }
}

#[cfg(test)]
mod tests;
