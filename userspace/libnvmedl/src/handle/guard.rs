// SPDX-License-Identifier: MIT OR Apache-2.0
//! The handle's side of the starvation guard (`Scheduler::guard_bound_ns`, docs/qos.md §2).
//!
//! While the scheduler's guard is armed (a lower-tier request is queued or in flight, or was
//! served or completed less than one bound ago):
//! * every progress step reads the clock once and asks the scheduler how long until a tier
//!   is overdue (`Scheduler::guard_due_in`);
//! * a batch holds at most a quarter of the bound of estimated device time (`DeviceTime`),
//!   so the batch an overdue request waits behind is short;
//! * on rev 2 the START queue slot is kept free for the guard: an overdue tier is queued
//!   behind the running batch at once (the next `pop` serves it first); another batch is
//!   queued there only if, by the estimate, both it and the running batch end before the
//!   next tier is due (so the slot is free again by then). Without a START queue (rev 1)
//!   the overdue tier goes into the next batch.
//!
//! Nothing of this runs while the guard is disarmed: a top tier alone keeps full batches and
//! both START slots. Cost while armed: one clock read per progress step; per batch end one
//! clock read and a few integer operations. No allocation, no system call.

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

    /// Once per progress step: `None` while the guard is disarmed, else whether the START
    /// queue slot may take a batch now (reads the clock): at once for an overdue tier, else
    /// only a batch that, by the estimate, ends with the running one before the next tier is
    /// due.
    pub(super) fn guard_step(&mut self) -> Option<bool> {
        if self.guard_ns == 0 || !self.guard_armed() {
            return None;
        }
        let now = self.step_clock();
        if !self.guard_armed() {
            return None;
        }
        let due_in = self.sched.guard_due_in(now);
        if due_in == 0 {
            return Some(true);
        }
        let Some(f) = self.flights.front().copied() else {
            return Some(false);
        };
        let fits = self.dev_time.end_of(f.start_ns, f.hi - f.lo).is_some_and(|end| {
            let queued = u64::from(self.batch_cap()) * self.dev_time.ns_per_entry();
            end.saturating_add(queued) < now.saturating_add(due_in)
        });
        Some(fits && self.sched.len() >= self.batch)
    }

    /// Most entries of the next batch: a quarter of the bound of device time while the guard
    /// is armed, else no limit.
    pub(super) fn batch_cap(&self) -> u32 {
        if self.guard_armed() {
            self.dev_time.entries_within(self.guard_ns / 4)
        } else {
            u32::MAX
        }
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
