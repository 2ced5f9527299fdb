// SPDX-License-Identifier: MIT OR Apache-2.0
//! Level 2: hardware batches (staging entries, START, the rev 2 START queue).

use directnvm_abi::*;

use super::{Handle, Hw};

impl Handle {
    /// Start a batch of whatever is staged. The caller checked that the device takes a START
    /// now: it is idle, or (START queue) it runs one batch and none is queued.
    pub(super) fn launch(&mut self) {
        let qos = self.depth.adaptive() || self.tenants.accounting();
        let now = if self.sched.uses_clock() || qos { self.clock.now_ns().max(1) } else { 0 };
        if qos || self.guard.on() {
            self.clock.set_last(now);
        }
        let cap = self.batch_cap();
        self.guard_horizon(now, cap);
        let stamp = if qos { now } else { 0 };
        let reqs0 = self.flights.begin();
        let (base, limit) = self.flights.free_region(self.engine.batch_max());
        let mut n = 0u32;
        while let Some(id) = self.sched.pop(now) {
            // Only the fields the entries need (a whole-slot copy costs on the hot path).
            let s = &mut self.slots[id];
            let entries = s.entries;
            if base + n + entries > limit || (n > 0 && n + entries > cap) {
                let info = s.info;
                self.sched.unpop(id, info);
                break;
            }
            s.first_entry = base + n;
            s.launch_ns = stamp;
            if self.guard.on() && self.sched.guard().is_some_and(|g| g.guards(&s.info)) {
                s.guarded = true;
                self.guard.launched();
            }
            let (op, urgency, len, bus, lba) = (s.op, s.urgency, s.len, s.bus, s.lba);
            let mut done = 0u32;
            for i in 0..entries {
                let bytes = if op == DNVM_OP_FLUSH { 0 } else { (len - done).min(self.engine.entry_bytes()) };
                let e = DnvmEntry {
                    op,
                    urgency,
                    block_size: bytes,
                    data_addr: if op == DNVM_OP_FLUSH { 0 } else { bus + u64::from(done) },
                    lba: if op == DNVM_OP_FLUSH { 0 } else { lba + u64::from(done / DNVM_LBA_SIZE) },
                };
                // base + n + i < limit <= batch_max.
                self.engine.write_entry(base + n + i, e);
                done += bytes;
            }
            n += entries;
            self.flights.push_request(id);
        }
        if n == 0 {
            return;
        }
        self.engine.program_base(base);
        self.engine.start(n);
        self.stats.batches += 1;
        self.stats.entries += u64::from(n);
        self.stats.max_batch = self.stats.max_batch.max(n);
        self.hw = match self.hw {
            // Queued behind a running batch: the timeout keeps counting from the older one.
            Hw::InFlight { started_ns, .. } => {
                self.stats.queued += 1;
                Hw::InFlight { started_ns, seen: false }
            }
            _ => Hw::InFlight { started_ns: 0, seen: false },
        };
        self.flights.started(base, base + n, reqs0, now);
    }

    /// START queue: the device takes another START now (the last one was consumed, fewer than
    /// two batches are in flight, and DONE.QUEUED reads 0, which only the device clears).
    /// `due` is this step's `guard_step`: a tier about to be overdue goes at once, whatever
    /// the batch threshold.
    pub(super) fn can_queue(&self, seen: bool, due: bool) -> bool {
        if !self.engine.start_queue() || !seen || self.flights.batches() >= 2 {
            return false;
        }
        let wanted = due || self.sched.len() >= self.cfg.batch;
        if !wanted {
            return false;
        }
        let (base, limit) = self.flights.free_region(self.engine.batch_max());
        if base >= limit {
            return false;
        }
        self.engine.queue_slot_free()
    }

    /// START queue: forget the oldest batches whose requests all completed from their status
    /// words (their staging entries are free again). True if any was.
    pub(super) fn retire(&mut self) -> bool {
        let mut any = false;
        while self.engine.start_queue() {
            let Some(f) = self.flights.retire_oldest() else { break };
            self.flight_ended(f);
            any = true;
        }
        any
    }
}
