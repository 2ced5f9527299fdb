// SPDX-License-Identifier: MIT OR Apache-2.0
//! Level 2: hardware batches (staging entries, START, the rev 2 START queue, DONE).

use super::*;

impl Handle {
    /// Staging entries free for the next batch: all of them with nothing in flight, else the
    /// larger gap beside the batch in flight (the entries of a batch are contiguous).
    pub(super) fn free_region(&self) -> (u32, u32) {
        match self.flights.front() {
            None => (0, self.batch_max),
            Some(f) if self.batch_max - f.hi >= f.lo => (f.hi, self.batch_max),
            Some(f) => (0, f.lo),
        }
    }

    /// Start a batch of whatever is staged. The caller checked that the device takes a START
    /// now: it is idle, or (START queue) it runs one batch and none is queued.
    pub(super) fn launch(&mut self) {
        let qos = self.depth_ctl.is_some() || self.tenants.is_some();
        let now = if self.sched.uses_clock() || qos { self.now_ns().max(1) } else { 0 };
        if qos || self.guard_ns > 0 {
            self.clock_ns = now;
        }
        let cap = self.batch_cap();
        self.guard_horizon(now, cap);
        let stamp = if qos { now } else { 0 };
        if self.flights.is_empty() {
            self.inflight.clear();
            self.inflight_done.clear();
            self.scan_from = 0;
        }
        let (base, limit) = self.free_region();
        let reqs0 = self.inflight.len();
        let mut n = 0u32;
        while let Some(id) = self.sched.pop(now) {
            // Only the fields the entries need (a whole-slot copy costs on the hot path).
            let s = &mut self.slots[id as usize];
            let entries = s.entries;
            if base + n + entries > limit || (n > 0 && n + entries > cap) {
                let info = s.info;
                self.sched.unpop(id, info);
                break;
            }
            s.first_entry = base + n;
            s.launch_ns = stamp;
            if self.guard_ns > 0 && self.sched.guards(&s.info) {
                s.guarded = true;
                self.guard_inflight += 1;
            }
            let (op, urgency, len, bus, lba) = (s.op, s.urgency, s.len, s.bus, s.lba);
            let mut done = 0u32;
            for i in 0..entries {
                let bytes = if op == DNVM_OP_FLUSH { 0 } else { (len - done).min(self.entry_bytes) };
                let e = DnvmEntry {
                    op,
                    urgency,
                    block_size: bytes,
                    data_addr: if op == DNVM_OP_FLUSH { 0 } else { bus + u64::from(done) },
                    lba: if op == DNVM_OP_FLUSH { 0 } else { lba + u64::from(done / DNVM_LBA_SIZE) },
                };
                let at = (base + n + i) as usize;
                // SAFETY: at < limit <= batch_max <= entries of the mapped staging region. Plain
                // stores to the write-combining mapping; `before_start` publishes them.
                unsafe { self.staging.add(at).write(e) };
                if self.revision.has_status() {
                    // SAFETY: batch_max <= status words of the mapped status region.
                    unsafe { self.status.add(at).write(0) };
                }
                done += bytes;
            }
            n += entries;
            self.inflight.push(id);
            self.inflight_done.push(false);
        }
        if n == 0 {
            return;
        }
        self.program_base(base);
        // SAFETY: `regs` is the mapped HDU page.
        unsafe {
            if self.nreqs_reg != u64::from(n) {
                mmio::wr(self.regs, HduReg::Nreqs, u64::from(n));
                self.nreqs_reg = u64::from(n);
            }
            mmio::before_start();
            mmio::wr(self.regs, HduReg::Start, HDU_START_GO);
        }
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
        self.flights.push_back(Flight { lo: base, hi: base + n, reqs: self.inflight.len() - reqs0, start_ns: now });
    }

    /// START queue: the device takes another START now (the last one was consumed, fewer than
    /// two batches are in flight, and DONE.QUEUED reads 0, which only the device clears).
    /// `due` is this step's `guard_step`: a tier about to be overdue goes at once, whatever
    /// the batch threshold.
    pub(super) fn can_queue(&self, seen: bool, due: bool) -> bool {
        if !self.start_queue || !seen || self.flights.len() >= 2 {
            return false;
        }
        let wanted = due || self.sched.len() >= self.batch;
        if !wanted {
            return false;
        }
        let (base, limit) = self.free_region();
        if base >= limit {
            return false;
        }
        // SAFETY: `regs` is the mapped HDU page.
        unsafe { mmio::rd(self.regs, HduReg::Done) & HDU_QUEUED_BIT == 0 }
    }

    /// START queue: forget the oldest batches whose requests all completed from their status
    /// words (their staging entries are free again). True if any was.
    pub(super) fn retire(&mut self) -> bool {
        let mut any = false;
        while let Some(f) = self.flights.front().copied() {
            if !self.start_queue || f.reqs > self.scan_from {
                break;
            }
            self.flights.pop_front();
            self.flight_ended(f);
            self.inflight.drain(..f.reqs);
            self.inflight_done.drain(..f.reqs);
            self.scan_from -= f.reqs;
            any = true;
        }
        any
    }

    /// True once DONE of the current batch is visible (handles the stale-DONE hazard).
    pub(super) fn batch_done(&mut self, seen: &mut bool) -> bool {
        // SAFETY: `regs` is the mapped HDU page.
        unsafe {
            if !*seen {
                // The model clears DONE before START; the RTL's START always reads 0 and DONE
                // clears 2 cycles after the write (docs/hardware.md §7.3).
                if mmio::rd(self.regs, HduReg::Start) != 0 {
                    return false;
                }
                *seen = true;
            }
            mmio::rd(self.regs, HduReg::Done) & HDU_DONE_BIT != 0
        }
    }
}
