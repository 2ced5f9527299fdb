// SPDX-License-Identifier: MIT OR Apache-2.0
//! The handle's side of the starvation guard (`Scheduler::guard_bound_ns`, docs/qos.md §2).
//!
//! While the scheduler's guard is armed (a lower-tier request is queued or in flight, or was
//! served or completed less than one bound ago):
//! * every progress step reads the clock once, measures the step (the interval since the
//!   last one: a moving average, and the longest in `HandleStats::guard_max_step_ns`) and
//!   asks the scheduler how long until a tier is overdue (`Scheduler::guard_due_in`); a tier
//!   due within one average step gets a batch at once (rev 2: into the START queue slot);
//! * a batch holds at most half the bound of estimated device time (`DeviceTime`), so the
//!   batch an overdue request waits behind is short;
//! * before a batch's pops the scheduler learns the horizon, the time to the handle's next
//!   chance to start a batch (`Scheduler::set_guard_horizon`): the end of the running batch
//!   the new one queues behind (rev 2 START queue), or the end of the new batch itself
//!   (rev 1), plus one step. A tier that would be overdue by then goes into this batch, so it
//!   is served before its bound, not one batch after it, and both START slots stay in use.
//!
//! Disarmed (no lower tier around), a batch holds at most one bound of device time, so the
//! first backlog of a lower tier after a quiet spell waits behind at most that much.
//! Cost while armed: one clock read per progress step; per batch end one clock read and a few
//! integer operations. No allocation, no system call.

use super::*;

/// Device time per staging entry, estimated from the batches that ended: a batch's time runs
/// from its START, or the end of the batch before it if that was later (a queued batch waits
/// behind the running one), to the progress step that saw it end. Late polls make the
/// estimate larger, which only makes batches smaller.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DeviceTime {
    /// Moving average (weight 1/4) of ns per entry; 0 until a batch was measured.
    ns_per_entry: u64,
    /// When the last measured batch ended.
    last_end_ns: u64,
}

impl DeviceTime {
    /// A batch of `entries` started at `start_ns` was seen ended at `now_ns`.
    pub(super) fn ended(&mut self, start_ns: u64, now_ns: u64, entries: u32) {
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
    pub(super) fn end_of(&self, start_ns: u64, entries: u32) -> Option<u64> {
        (self.ns_per_entry > 0).then(|| start_ns.max(self.last_end_ns) + self.ns_per_entry * u64::from(entries))
    }

    /// The estimate in ns per entry (0: not measured yet).
    pub(super) fn ns_per_entry(&self) -> u64 {
        self.ns_per_entry
    }

    /// Entries that fit into `budget_ns` of device time (at least 1; 1 while nothing was
    /// measured, so the first batches measure the device at a small size).
    pub(super) fn entries_within(&self, budget_ns: u64) -> u32 {
        if self.ns_per_entry == 0 {
            return 1;
        }
        (budget_ns / self.ns_per_entry).clamp(1, u64::from(u32::MAX)) as u32
    }
}

impl Handle {
    /// Whether the scheduler's guard is armed at the last clock reading: a guarded request is
    /// queued or in flight, or one was served or completed less than one bound ago (a
    /// closed-loop stream resubmits and must not find an uncapped batch in flight).
    pub(super) fn guard_armed(&self) -> bool {
        self.guard_ns > 0
            && (self.guard_inflight > 0
                || self.sched.guard_armed_until() > self.clock_ns
                || (self.guard_done_ns > 0 && self.guard_done_ns + self.guard_ns > self.clock_ns))
    }

    /// Guarded request `id` completed.
    pub(super) fn guard_completed(&mut self, id: u32) {
        self.slots[id as usize].guarded = false;
        self.guard_inflight = self.guard_inflight.saturating_sub(1);
        self.guard_done_ns = self.step_clock();
    }

    /// Once per progress step with a batch in flight: whether a tier is due so soon (within
    /// one average step, at most a quarter of the bound) that a batch must be queued now,
    /// whatever the `batch` threshold.
    /// False while the guard is disarmed (reads the clock only while armed).
    pub(super) fn guard_step(&mut self) -> bool {
        if self.guard_ns == 0 || !self.guard_armed() {
            self.guard_last_step_ns = 0;
            return false;
        }
        let now = self.step_clock();
        if !self.guard_armed() {
            self.guard_last_step_ns = 0;
            return false;
        }
        if self.guard_last_step_ns > 0 && now > self.guard_last_step_ns {
            let d = now - self.guard_last_step_ns;
            self.stats.guard_max_step_ns = self.stats.guard_max_step_ns.max(d);
            self.guard_step_avg_ns = (7 * self.guard_step_avg_ns + d) / 8;
        }
        self.guard_last_step_ns = now;
        self.sched.guard_due_in(now) <= self.guard_step_avg_ns.min(self.guard_ns / 4)
    }

    /// The device went idle with nothing staged: the next step interval starts afresh (time
    /// without I/O is no step).
    pub(super) fn guard_idle(&mut self) {
        self.guard_last_step_ns = 0;
    }

    /// Most entries of the next batch while a guard is configured; no limit without one.
    /// Armed: half the bound of device time (with a quarter the top tier kept 8848–9883 IOPS
    /// in the guest's burst experiment, with half 11219, FIFO 11839–12663: two short batches
    /// in the device likely run dry between two polls of the application; docs/qos.md §7).
    /// Disarmed: one bound.
    pub(super) fn batch_cap(&self) -> u32 {
        if self.guard_ns == 0 {
            u32::MAX
        } else if self.guard_armed() {
            self.dev_time.entries_within(self.guard_ns / 2)
        } else {
            self.dev_time.entries_within(self.guard_ns)
        }
    }

    /// Before a batch of at most `cap` entries is filled at `now`: tell the scheduler how far
    /// the handle's next chance to start a batch is (0 while disarmed). With a batch running,
    /// the new one queues behind it and the slot frees when the running one ends; on an idle
    /// device with a START queue the slot is free at the next step; without a START queue
    /// the next batch starts when this one ends. Plus one average step to notice (counted up
    /// to a quarter of the bound).
    pub(super) fn guard_horizon(&mut self, now: u64, cap: u32) {
        if self.guard_ns == 0 {
            return;
        }
        let h = if !self.guard_armed() {
            0
        } else {
            let step = self.guard_step_avg_ns;
            let until = match self.flights.front().copied() {
                Some(f) => self.dev_time.end_of(f.start_ns, f.hi - f.lo).map_or(0, |e| e.saturating_sub(now)),
                None if self.start_queue => 0,
                None => u64::from(cap).saturating_mul(self.dev_time.ns_per_entry()),
            };
            // The step counts up to a quarter of the bound: a horizon near the bound would
            // force the guarded tier at every pop, and late polls on a loaded host make steps
            // that long. The batch part is at most one bound (a batch sized while the guard
            // was disarmed; armed batches hold half).
            until.min(self.guard_ns) + step.min(self.guard_ns / 4)
        };
        self.sched.set_guard_horizon(h);
    }

    /// Batch `f` ended (its requests all completed): measure it while the guard is on.
    pub(super) fn flight_ended(&mut self, f: Flight) {
        if self.guard_ns == 0 || f.start_ns == 0 {
            return;
        }
        let now = self.step_clock();
        self.dev_time.ended(f.start_ns, now, f.hi - f.lo);
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
}
