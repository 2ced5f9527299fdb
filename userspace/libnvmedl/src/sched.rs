// SPDX-License-Identifier: MIT OR Apache-2.0
//! The software level of the two-level queue: the order in which staged requests go into the
//! next hardware batch. A `Scheduler` only orders request slot ids; the handle owns the
//! requests. Implementations must not allocate after `reserve` (the I/O path is
//! allocation-free).

use std::collections::VecDeque;

use directnvm_abi::DNVM_URGENCY_CLASSES;

/// What a scheduler may look at.
#[derive(Clone, Copy, Debug)]
pub struct SchedInfo {
    /// Urgency class 0 (urgent) .. 3 (low).
    pub priority: u16,
    /// Submission sequence number (monotonic per handle).
    pub seq: u64,
    /// Absolute deadline in nanoseconds of the handle's clock, or `u64::MAX` for none.
    pub deadline_ns: u64,
    /// Tenant id (`0 .. qos::MAX_TENANTS`; default 0).
    pub tenant: u32,
}

/// Orders staged requests.
pub trait Scheduler: Send {
    /// Pre-size for at most `capacity` queued ids (called once, at handle creation).
    fn reserve(&mut self, capacity: usize);
    /// Queue request `id`.
    fn push(&mut self, id: u32, info: SchedInfo);
    /// The next request to put into a batch, given the current time.
    fn pop(&mut self, now_ns: u64) -> Option<u32>;
    /// Give back the id `pop` just returned (it did not fit into the batch); it must come
    /// out first next time.
    fn unpop(&mut self, id: u32, info: SchedInfo);
    /// Number of queued ids.
    fn len(&self) -> usize;
    /// Whether `pop` looks at `now_ns` (false lets the handle skip reading the clock when it
    /// starts a batch; `now_ns` is then 0).
    fn uses_clock(&self) -> bool {
        true
    }
    /// True when nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The scheduler's tenant lanes, if it has them (`None`: it ignores tenants).
    fn tenant_lanes(&mut self) -> Option<&mut dyn TenantLanes> {
        None
    }
    /// Counters of a tiered scheduler (`None` for others).
    fn tier_stats(&self) -> Option<crate::qos::TierStats> {
        None
    }
    /// The scheduler's starvation guard, if it has one (`None`: no guard).
    fn guard(&self) -> Option<&dyn StarvationGuard> {
        None
    }
    /// The starvation guard, writable (`Some` exactly when `guard` is).
    fn guard_mut(&mut self) -> Option<&mut dyn StarvationGuard> {
        None
    }
}

/// A scheduler with a lane per tenant, weighted by the tenant boost (`qos::Tiered`).
pub trait TenantLanes {
    /// Weight multiplier of `tenant` (the tenant boost, 1 = none). Called once per
    /// accounting window, not per request.
    fn set_tenant_weight(&mut self, tenant: u32, weight: f64);
}

/// A starvation bound that the handle enforces between batches (docs/qos.md §2), for a
/// scheduler that has one (`qos::Tiered`; `Scheduler::guard`). With a bound (`guard_bound_ns` > 0)
/// the handle, while `guard_armed_until` lies ahead, checks `guard_due_in` at every progress step, caps
/// batches at half the bound of estimated device time and tells the scheduler how far the
/// next batch start is (`set_guard_horizon`); disarmed, batches hold at most one bound of device
/// time.
pub trait StarvationGuard {
    /// Starvation bound in ns (0: the guard is off).
    fn guard_bound_ns(&self) -> u64;
    /// Until when (ns of the `pop` clock) the guard is armed: `u64::MAX` while a guarded
    /// request is queued, else some time after the last guarded service (0: not armed).
    fn guard_armed_until(&self) -> u64;
    /// Whether the guard covers a request of `info` (the handle keeps the guard armed while
    /// one is in flight, and for one bound after the last one completed).
    fn guards(&self, info: &SchedInfo) -> bool;
    /// Nanoseconds from `now_ns` until a queued guarded request is overdue: 0 when one is
    /// (the next `pop` serves it first), `u64::MAX` when none is queued. Starts the wait of
    /// requests queued since the last call, so the handle calls it at every progress step
    /// while the guard is armed.
    fn guard_due_in(&mut self, now_ns: u64) -> u64;
    /// The handle's next chance to start a batch after the one it is filling is about `ns`
    /// away (the end of the batch the new one queues behind, plus one progress step): a
    /// guarded request that would be overdue by then is served in this batch, before it is
    /// overdue, instead of one batch late. The handle sets it before each batch's `pop`s
    /// (0 while the guard is disarmed).
    fn set_guard_horizon(&mut self, ns: u64);
}

/// cbindgen:ignore
/// The schedulers of the library, by number (the C ABI's `NVMEDL_SCHED_*`, the "scheduler"
/// key) and by name (`nvmedl_create_handle_with`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    /// [`Fifo`] (the default).
    #[default]
    Fifo,
    /// [`PriorityDeadline`].
    PriorityDeadline,
    /// [`crate::qos::Tiered`].
    Tiered,
}

impl SchedulerKind {
    /// cbindgen:ignore
    /// Every kind, in the order of their numbers (0, 1, 2).
    pub const ALL: [SchedulerKind; 3] = [SchedulerKind::Fifo, SchedulerKind::PriorityDeadline, SchedulerKind::Tiered];

    /// The number (`NVMEDL_SCHED_*`).
    pub fn code(self) -> u64 {
        match self {
            SchedulerKind::Fifo => 0,
            SchedulerKind::PriorityDeadline => 1,
            SchedulerKind::Tiered => 2,
        }
    }

    /// The kind numbered `code` (`None` if unknown).
    pub fn from_code(code: u64) -> Option<SchedulerKind> {
        SchedulerKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The name: "fifo", "priority" or "tiered".
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Fifo => "fifo",
            SchedulerKind::PriorityDeadline => "priority",
            SchedulerKind::Tiered => "tiered",
        }
    }

    /// The kind named `name` (`None` if unknown).
    pub fn from_name(name: &[u8]) -> Option<SchedulerKind> {
        SchedulerKind::ALL.into_iter().find(|k| k.name().as_bytes() == name)
    }

    /// A new scheduler of this kind (`tiers`: the settings of a tiered one, checked).
    pub fn build(self, tiers: crate::qos::TierConfig) -> crate::Result<Box<dyn Scheduler>> {
        Ok(match self {
            SchedulerKind::Fifo => Box::new(Fifo::default()),
            SchedulerKind::PriorityDeadline => Box::new(PriorityDeadline::default()),
            SchedulerKind::Tiered => Box::new(crate::qos::Tiered::new(tiers)?),
        })
    }
}

/// First in, first out (the default).
#[derive(Default)]
pub struct Fifo {
    q: VecDeque<u32>,
}

impl Scheduler for Fifo {
    fn reserve(&mut self, capacity: usize) {
        self.q.reserve(capacity);
    }
    fn push(&mut self, id: u32, _: SchedInfo) {
        self.q.push_back(id);
    }
    fn pop(&mut self, _: u64) -> Option<u32> {
        self.q.pop_front()
    }
    fn unpop(&mut self, id: u32, _: SchedInfo) {
        self.q.push_front(id);
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn uses_clock(&self) -> bool {
        false
    }
}

/// Strict priority by urgency class, FIFO within a class, except that a request whose
/// deadline has passed goes first (earliest deadline among the class heads). Requests without
/// a deadline never preempt by age.
#[derive(Default)]
pub struct PriorityDeadline {
    classes: [VecDeque<(u32, u64)>; DNVM_URGENCY_CLASSES as usize],
    len: usize,
}

impl PriorityDeadline {
    fn class(p: u16) -> usize {
        (p as usize).min(DNVM_URGENCY_CLASSES as usize - 1)
    }
}

impl Scheduler for PriorityDeadline {
    fn reserve(&mut self, capacity: usize) {
        for c in &mut self.classes {
            c.reserve(capacity);
        }
    }
    fn push(&mut self, id: u32, info: SchedInfo) {
        self.classes[Self::class(info.priority)].push_back((id, info.deadline_ns));
        self.len += 1;
    }
    fn pop(&mut self, now_ns: u64) -> Option<u32> {
        // An overdue head (earliest deadline first) beats strict priority.
        let overdue =
            self.classes.iter().enumerate().filter_map(|(i, c)| c.front().map(|&(_, d)| (d, i))).filter(|&(d, _)| d <= now_ns).min();
        let class = match overdue {
            Some((_, i)) => i,
            None => self.classes.iter().position(|c| !c.is_empty())?,
        };
        let (id, _) = self.classes[class].pop_front()?;
        self.len -= 1;
        Some(id)
    }
    fn unpop(&mut self, id: u32, info: SchedInfo) {
        self.classes[Self::class(info.priority)].push_front((id, info.deadline_ns));
        self.len += 1;
    }
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(priority: u16, deadline_ns: u64) -> SchedInfo {
        SchedInfo { priority, seq: 0, deadline_ns, tenant: 0 }
    }

    #[test]
    fn fifo_order() {
        let mut f = Fifo::default();
        f.reserve(4);
        for i in 0..3 {
            f.push(i, info(3 - i as u16, u64::MAX));
        }
        assert_eq!(f.pop(0), Some(0));
        f.unpop(0, info(3, u64::MAX));
        assert_eq!((f.pop(0), f.pop(0), f.pop(0), f.pop(0)), (Some(0), Some(1), Some(2), None));
    }

    #[test]
    fn scheduler_kinds_by_number_and_name() {
        for k in SchedulerKind::ALL {
            assert_eq!(SchedulerKind::from_code(k.code()), Some(k));
            assert_eq!(SchedulerKind::from_name(k.name().as_bytes()), Some(k));
            assert!(k.build(crate::qos::TierConfig::default()).is_ok());
        }
        assert_eq!((SchedulerKind::from_code(3), SchedulerKind::from_name(b"lifo")), (None, None));
        assert_eq!(SchedulerKind::default(), SchedulerKind::Fifo);
    }

    #[test]
    fn priority_then_deadline() {
        let mut s = PriorityDeadline::default();
        s.reserve(8);
        s.push(1, info(3, 100));
        s.push(2, info(0, u64::MAX));
        s.push(3, info(1, u64::MAX));
        s.push(4, info(3, u64::MAX));
        assert_eq!(s.pop(50), Some(2)); // urgent first
        assert_eq!(s.pop(150), Some(1)); // overdue low beats high
        assert_eq!(s.pop(150), Some(3));
        assert_eq!(s.pop(150), Some(4));
        assert_eq!(s.pop(150), None);
        assert!(s.is_empty());
    }
}
