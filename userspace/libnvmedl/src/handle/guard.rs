// SPDX-License-Identifier: MIT OR Apache-2.0
//! The handle's side of the starvation guard (`Scheduler::guard_bound_ns`, docs/qos.md §2).
//!
//! While the scheduler's guard is armed (a lower tier is queued, or was served less than one
//! bound ago):
//! * every progress step reads the clock once and asks the scheduler whether a tier is
//!   overdue (`Scheduler::guard_due`);
//! * on rev 2 the START queue slot is kept for the guard: a second batch is queued behind the
//!   running one only when a tier is overdue, and then at once (the next `pop` serves the
//!   overdue tier first). Without a START queue (rev 1) the overdue tier goes into the next
//!   batch;
//! * a batch holds at most a quarter of the bound of estimated device time
//!   (`DeviceTime`), so the batch an overdue request waits behind is short.
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
    /// Whether the scheduler's guard is armed at the last clock reading.
    pub(super) fn guard_armed(&self) -> bool {
        self.guard_ns > 0 && self.sched.guard_armed_until() > self.clock_ns
    }

    /// Once per progress step: `None` while the guard is disarmed, else whether a tier is
    /// overdue now (reads the clock).
    pub(super) fn guard_step(&mut self) -> Option<bool> {
        if self.guard_ns == 0 || !self.guard_armed() {
            return None;
        }
        let now = self.step_clock();
        if !self.guard_armed() {
            return None;
        }
        Some(self.sched.guard_due(now))
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
    }
}
