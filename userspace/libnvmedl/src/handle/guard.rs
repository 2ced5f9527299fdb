// SPDX-License-Identifier: MIT OR Apache-2.0
//! The handle's side of the starvation guard (`StarvationGuard`, docs/qos.md §2):
//! `GuardState` and the handle's calls into it.
//!
//! While the scheduler's guard is armed (a lower-tier request is queued or in flight, or was
//! served or completed less than one bound ago):
//! * every progress step reads the clock once, measures the step (the interval since the
//!   last one: a moving average, and the longest in `HandleStats::guard_max_step_ns`) and
//!   asks the scheduler how long until a tier is overdue (`StarvationGuard::guard_due_in`); a tier
//!   due within one average step gets a batch at once (rev 2: into the START queue slot);
//! * a batch holds at most half the bound of estimated device time (`DeviceTime`), so the
//!   batch an overdue request waits behind is short;
//! * before a batch's pops the scheduler learns the horizon, the time to the handle's next
//!   chance to start a batch (`StarvationGuard::set_guard_horizon`): the end of the running batch
//!   the new one queues behind (rev 2 START queue), or the end of the new batch itself
//!   (rev 1), plus one step. A tier that would be overdue by then goes into this batch, so it
//!   is served before its bound, not one batch after it, and both START slots stay in use.
//!
//! Disarmed (no lower tier around), a batch holds at most one bound of device time, so the
//! first backlog of a lower tier after a quiet spell waits behind at most that much.
//! Cost while armed: one clock read per progress step; per batch end one clock read and a few
//! integer operations. No allocation, no system call.

use super::flights::Flight;
use super::Handle;

/// Device time per staging entry, estimated from the batches that ended: a batch's time runs
/// from its START, or the end of the batch before it if that was later (a queued batch waits
/// behind the running one), to the progress step that saw it end. Late polls make the
/// estimate larger, which only makes batches smaller.
#[derive(Clone, Copy, Debug, Default)]
struct DeviceTime {
    /// Moving average (weight 1/4) of ns per entry; 0 until a batch was measured.
    ns_per_entry: u64,
    /// When the last measured batch ended.
    last_end_ns: u64,
}

impl DeviceTime {
    /// A batch of `entries` started at `start_ns` was seen ended at `now_ns`.
    fn ended(&mut self, start_ns: u64, now_ns: u64, entries: u32) {
        let from = start_ns.max(self.last_end_ns);
        self.last_end_ns = now_ns;
        if entries == 0 || now_ns <= from {
            return;
        }
        let per = (now_ns - from) / u64::from(entries);
        self.ns_per_entry = if self.ns_per_entry == 0 { per } else { (3 * self.ns_per_entry + per) / 4 };
    }

    /// When a batch of `entries` started at `start_ns` ends by the estimate (`None` before
    /// a batch was measured).
    fn end_of(&self, start_ns: u64, entries: u32) -> Option<u64> {
        (self.ns_per_entry > 0).then(|| start_ns.max(self.last_end_ns) + self.ns_per_entry * u64::from(entries))
    }

    /// The estimate in ns per entry (0: not measured yet).
    fn ns_per_entry(&self) -> u64 {
        self.ns_per_entry
    }

    /// Entries that fit into `budget_ns` of device time (at least 1; 1 while nothing was
    /// measured, so the first batches measure the device at a small size).
    fn entries_within(&self, budget_ns: u64) -> u32 {
        if self.ns_per_entry == 0 {
            return 1;
        }
        (budget_ns / self.ns_per_entry).clamp(1, u64::from(u32::MAX)) as u32
    }
}

/// The handle's side of the guard: the bound, the device-time estimate, guarded requests in
/// flight, and the progress-step measure.
pub(super) struct GuardState {
    /// The scheduler's starvation bound (`StarvationGuard::guard_bound_ns`; 0: no guard).
    bound_ns: u64,
    /// Device time per entry, for the batch cap.
    dev_time: DeviceTime,
    /// Guarded requests in flight, and the time the last one completed (0: none yet).
    inflight: u32,
    done_ns: u64,
    /// Clock of the last progress step seen while the guard was armed (0: none since the
    /// guard armed or the device went idle), and the moving average (weight 1/8) of steps.
    last_step_ns: u64,
    step_avg_ns: u64,
}

impl GuardState {
    /// A guard with bound `bound_ns` (0: none).
    pub(super) fn new(bound_ns: u64) -> Self {
        GuardState { bound_ns, dev_time: DeviceTime::default(), inflight: 0, done_ns: 0, last_step_ns: 0, step_avg_ns: 0 }
    }

    /// Whether a guard is configured.
    #[inline(always)]
    pub(super) fn on(&self) -> bool {
        self.bound_ns > 0
    }

    /// A new scheduler's bound (0: none); the measures stay.
    pub(super) fn set_bound(&mut self, bound_ns: u64) {
        self.bound_ns = bound_ns;
    }

    /// Whether the guard is armed at `now_ns`: a guarded request is in flight, the scheduler
    /// is armed until after `now_ns` (`sched_until`, asked only if needed), or a guarded
    /// request completed less than one bound ago.
    #[inline]
    fn armed(&self, now_ns: u64, sched_until: impl FnOnce() -> u64) -> bool {
        self.bound_ns > 0 && (self.inflight > 0 || sched_until() > now_ns || (self.done_ns > 0 && self.done_ns + self.bound_ns > now_ns))
    }

    /// A guarded request was started.
    #[inline(always)]
    pub(super) fn launched(&mut self) {
        self.inflight += 1;
    }

    /// A guarded request completed at `now_ns`.
    fn completed(&mut self, now_ns: u64) {
        self.inflight = self.inflight.saturating_sub(1);
        self.done_ns = now_ns;
    }

    /// No step interval runs (the guard is disarmed, or the device went idle).
    #[inline(always)]
    pub(super) fn forget_step(&mut self) {
        self.last_step_ns = 0;
    }

    /// An armed progress step at `now_ns`: the interval since the last one, if there was one
    /// (it moves the average).
    fn step(&mut self, now_ns: u64) -> Option<u64> {
        let d = (self.last_step_ns > 0 && now_ns > self.last_step_ns).then(|| now_ns - self.last_step_ns);
        if let Some(d) = d {
            self.step_avg_ns = (7 * self.step_avg_ns + d) / 8;
        }
        self.last_step_ns = now_ns;
        d
    }

    /// A tier due within this many ns gets a batch now: one average step, at most a quarter
    /// of the bound.
    fn due_within(&self) -> u64 {
        self.step_avg_ns.min(self.bound_ns / 4)
    }

    /// Most entries of the next batch (no limit without a guard). Armed: half the bound of
    /// device time (with a quarter the top tier kept 8848–9883 IOPS in the guest's burst
    /// experiment, with half 11219, FIFO 11839–12663: two short batches in the device likely
    /// run dry between two polls of the application; docs/qos.md §7). Disarmed: one bound.
    fn batch_cap(&self, armed: bool) -> u32 {
        if self.bound_ns == 0 {
            u32::MAX
        } else if armed {
            self.dev_time.entries_within(self.bound_ns / 2)
        } else {
            self.dev_time.entries_within(self.bound_ns)
        }
    }

    /// The horizon of an armed guard for a batch of at most `cap` entries filled at `now`,
    /// with `running` the oldest batch in flight: with a batch running, the new one queues
    /// behind it and the slot frees when the running one ends; on an idle device with a START
    /// queue the slot is free at the next step; without a START queue the next batch starts
    /// when this one ends. Plus one average step to notice (counted up to a quarter of the
    /// bound).
    fn horizon(&self, now: u64, cap: u32, running: Option<Flight>, start_queue: bool) -> u64 {
        let step = self.step_avg_ns;
        let until = match running {
            Some(f) => self.dev_time.end_of(f.start_ns, f.hi - f.lo).map_or(0, |e| e.saturating_sub(now)),
            None if start_queue => 0,
            None => u64::from(cap).saturating_mul(self.dev_time.ns_per_entry()),
        };
        // The step counts up to a quarter of the bound: a horizon near the bound would
        // force the guarded tier at every pop, and late polls on a loaded host make steps
        // that long. The batch part is at most one bound (a batch sized while the guard
        // was disarmed; armed batches hold half).
        until.min(self.bound_ns) + step.min(self.bound_ns / 4)
    }

    /// Batch `f` (started with a clock reading) was seen ended at `now_ns`.
    fn batch_ended(&mut self, f: Flight, now_ns: u64) {
        self.dev_time.ended(f.start_ns, now_ns, f.hi - f.lo);
    }
}

impl Handle {
    /// Whether the scheduler's guard is armed at the last clock reading: a guarded request is
    /// queued or in flight, or one was served or completed less than one bound ago (a
    /// closed-loop stream resubmits and must not find an uncapped batch in flight).
    pub(super) fn guard_armed(&self) -> bool {
        self.guard.armed(self.clock.last_ns(), || self.sched.guard().map_or(0, |g| g.guard_armed_until()))
    }

    /// Guarded request `id` completed.
    pub(super) fn guard_completed(&mut self, id: u32) {
        self.slots[id].guarded = false;
        let now = self.clock.step();
        self.guard.completed(now);
    }

    /// Once per progress step with a batch in flight: whether a tier is due so soon (within
    /// one average step, at most a quarter of the bound) that a batch must be queued now,
    /// whatever the `batch` threshold.
    /// False while the guard is disarmed (reads the clock only while armed).
    pub(super) fn guard_step(&mut self) -> bool {
        if !self.guard.on() || !self.guard_armed() {
            self.guard.forget_step();
            return false;
        }
        let now = self.clock.step();
        if !self.guard_armed() {
            self.guard.forget_step();
            return false;
        }
        if let Some(d) = self.guard.step(now) {
            self.stats.guard_max_step_ns = self.stats.guard_max_step_ns.max(d);
        }
        let within = self.guard.due_within();
        self.sched.guard_mut().map_or(u64::MAX, |g| g.guard_due_in(now)) <= within
    }

    /// Most entries of the next batch while a guard is configured; no limit without one
    /// (`GuardState::batch_cap`).
    pub(super) fn batch_cap(&self) -> u32 {
        if !self.guard.on() {
            return u32::MAX;
        }
        self.guard.batch_cap(self.guard_armed())
    }

    /// Before a batch of at most `cap` entries is filled at `now`: tell the scheduler how far
    /// the handle's next chance to start a batch is (0 while disarmed; `GuardState::horizon`).
    pub(super) fn guard_horizon(&mut self, now: u64, cap: u32) {
        if !self.guard.on() {
            return;
        }
        let h = if self.guard_armed() { self.guard.horizon(now, cap, self.flights.oldest(), self.engine.start_queue()) } else { 0 };
        if let Some(g) = self.sched.guard_mut() {
            g.set_guard_horizon(h);
        }
    }

    /// Batch `f` ended (its requests all completed): measure it while the guard is on.
    pub(super) fn flight_ended(&mut self, f: Flight) {
        if !self.guard.on() || f.start_ns == 0 {
            return;
        }
        let now = self.clock.step();
        self.guard.batch_ended(f, now);
    }
}

#[cfg(test)]
mod tests {
    use super::DeviceTime;

    #[test]
    fn device_time_counts_queued_batches_from_the_end_of_the_one_before() {
        let mut d = DeviceTime::default();
        assert_eq!(d.entries_within(1_000_000), 1, "unmeasured: one entry");
        // 10 entries from 0 to 1 ms: 100 µs each.
        d.ended(0, 1_000_000, 10);
        assert_eq!(d.entries_within(500_000), 5);
        // A batch queued at 0.2 ms behind it runs from 1 ms to 2 ms: 100 µs per entry again,
        // not 180 µs.
        d.ended(200_000, 2_000_000, 10);
        assert_eq!(d.entries_within(1_000_000), 10);
        // Slower batches move the average by a quarter of the difference per batch.
        d.ended(2_000_000, 7_000_000, 10);
        assert_eq!(d.entries_within(1_000_000), 5, "(3*100+500)/4 = 200 µs per entry");
        assert_eq!(d.entries_within(0), 1, "at least one entry");
        // A batch started before the last one ended runs from that end.
        assert_eq!(d.end_of(6_000_000, 5), Some(7_000_000 + 5 * 200_000));
        assert_eq!(DeviceTime::default().end_of(0, 1), None, "unmeasured");
    }

    #[test]
    fn guard_state_arms_caps_and_measures_steps() {
        use super::{Flight, GuardState};
        let off = GuardState::new(0);
        assert!(!off.on());
        assert!(!off.armed(0, || u64::MAX), "no bound: never armed");
        assert_eq!(off.batch_cap(true), u32::MAX);
        let mut g = GuardState::new(1_000_000);
        assert!(!g.armed(10, || 0));
        assert!(g.armed(10, || 11), "the scheduler is armed until later");
        g.launched();
        assert!(g.armed(10, || panic!("not asked while a guarded request is in flight")));
        g.completed(500);
        assert!(g.armed(1_000_499, || 0) && !g.armed(1_000_500, || 0), "one bound after the last completion");
        // Unmeasured device: one entry per batch; then half the bound armed, one bound not.
        assert_eq!(g.batch_cap(true), 1);
        g.batch_ended(Flight { lo: 0, hi: 10, reqs: 10, start_ns: 1 }, 1_000_001);
        assert_eq!((g.batch_cap(true), g.batch_cap(false)), (5, 10));
        // Steps: the first only starts the interval; the average moves by 1/8.
        assert_eq!(g.step(2_000_000), None);
        assert_eq!(g.step(2_080_000), Some(80_000));
        assert_eq!(g.due_within(), 10_000);
        g.forget_step();
        assert_eq!(g.step(9_000_000), None, "a forgotten interval does not count");
        // Horizon: the running batch's end by the estimate, plus the average step.
        let running = Flight { lo: 0, hi: 2, reqs: 2, start_ns: 3_000_000 };
        assert_eq!(g.horizon(3_000_000, 4, Some(running), true), 200_000 + 10_000);
        assert_eq!(g.horizon(3_000_000, 4, None, true), 10_000, "START queue: the slot is free at the next step");
        assert_eq!(g.horizon(3_000_000, 4, None, false), 400_000 + 10_000, "rev 1: after this batch");
    }
}
