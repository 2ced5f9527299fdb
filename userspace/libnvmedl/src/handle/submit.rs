// SPDX-License-Identifier: MIT OR Apache-2.0
//! Submit: checking a request, staging it in level 1, and the full-queue rules.

use directnvm_abi::*;

use super::{Handle, Hw, Slot};
use crate::alloc::PAGE;
use crate::error::{Error, Result};
use crate::qos::MAX_TENANTS;
use crate::request::{Op, Request};
use crate::sched::SchedInfo;

impl Handle {
    /// Check a request and build its slot (no side effects).
    #[inline(always)]
    pub(super) fn prepare(&self, r: &Request) -> Result<Slot> {
        let urgency = r.priority.unwrap_or(self.cfg.priority);
        if urgency >= DNVM_URGENCY_CLASSES as u16 {
            return Err(Error::InvalidArgument);
        }
        let tenant = r.tenant.unwrap_or(self.tenants.default_tenant());
        if tenant as usize >= MAX_TENANTS {
            return Err(Error::InvalidArgument);
        }
        let mut s = Slot { urgency, ..Slot::default() };
        s.info.tenant = tenant;
        match r.op {
            Op::Flush => {
                if !self.engine.revision().has_flush() {
                    return Err(Error::Revision);
                }
                s.op = DNVM_OP_FLUSH;
                s.entries = 1;
                return Ok(s);
            }
            Op::Read => s.op = DNVM_OP_READ,
            Op::Write => s.op = DNVM_OP_WRITE,
        }
        if r.owner != self.bufs.uid() {
            return Err(Error::NotFromSlice);
        }
        if r.len == 0 || !(r.len as usize).is_multiple_of(PAGE) || r.len as usize > r.buf_len {
            return Err(Error::BadLength);
        }
        // One entry in the common case, without a division.
        let entry_bytes = self.engine.entry_bytes();
        let entries = if r.len <= entry_bytes { 1 } else { r.len.div_ceil(entry_bytes) };
        if entries > self.engine.batch_max() {
            return Err(Error::BadLength);
        }
        if !r.lba.is_multiple_of(PAGE as u64 / u64::from(DNVM_LBA_SIZE)) || !r.data_off.is_multiple_of(PAGE) {
            return Err(Error::Misaligned);
        }
        let nlb = u64::from(r.len) / u64::from(DNVM_LBA_SIZE);
        if r.lba.checked_add(nlb).is_none_or(|end| end > self.engine.capacity_lbas()) {
            return Err(Error::InvalidLba);
        }
        s.lba = r.lba;
        s.len = r.len;
        s.bus = self.bufs.bus() + r.data_off as u64;
        s.entries = entries;
        Ok(s)
    }

    /// `prepare`, and `NotReady` while the engine is wedged (looking once for the late DONE
    /// that ends a wedge first).
    #[inline(always)]
    pub(super) fn admit(&mut self, r: &Request) -> Result<Slot> {
        let s = self.prepare(r)?;
        if self.still_wedged() {
            return Err(Error::NotReady);
        }
        Ok(s)
    }

    #[inline(always)]
    pub(super) fn enqueue(&mut self, s: Slot, r: &Request, sync: bool) -> u64 {
        self.seq += 1;
        let tag = r.tag.unwrap_or(self.seq);
        let info = SchedInfo {
            priority: s.urgency,
            seq: self.seq,
            // The clock is read only for requests with a deadline (it costs ~20 ns).
            deadline_ns: r.deadline.map_or(u64::MAX, |d| self.clock.now_ns().saturating_add(d.as_nanos() as u64)),
            tenant: s.info.tenant,
        };
        let mut submit_ns = s.submit_ns;
        if self.tenants.accounting() || self.depth.adaptive() {
            // Tenant and depth-controller latency count from submit on the coarse clock; the first request of a
            // busy period reads the clock (one read per busy period), later ones reuse the
            // last reading (taken at every batch START and completing poll).
            if self.pending() == 0 {
                let now = self.clock.now_ns().max(1);
                self.clock.set_last(now);
            }
            submit_ns = self.clock.last_ns();
        }
        // The caller checked that a slot is free.
        let id = self.slots.take();
        // Field by field into the table (hot path): copying the whole `s` after changing a few
        // narrow fields of it stalls on store forwarding (perf, docs/performance.md). The
        // pattern names every field, so a new one cannot be forgotten here.
        let Slot { op, urgency, lba, len, bus, tag: _, entries, first_entry, sync: _, info: _, launch_ns, submit_ns: _, guarded: _ } = s;
        let d = &mut self.slots[id];
        d.op = op;
        d.urgency = urgency;
        d.lba = lba;
        d.len = len;
        d.bus = bus;
        d.tag = tag;
        d.entries = entries;
        d.first_entry = first_entry;
        d.sync = sync;
        d.guarded = false;
        let SchedInfo { priority, seq, deadline_ns, tenant } = info;
        d.info.priority = priority;
        d.info.seq = seq;
        d.info.deadline_ns = deadline_ns;
        d.info.tenant = tenant;
        d.launch_ns = launch_ns;
        d.submit_ns = submit_ns;
        self.sched.push(id, info);
        self.stats.submitted += 1;
        if self.hw == Hw::Idle && self.sched.len() >= self.cfg.batch {
            self.launch();
        }
        tag
    }

    /// `iodepth` requests are staged or in flight.
    pub(super) fn full(&self) -> bool {
        self.pending() >= self.depth.limit() || self.no_room()
    }

    /// Every slot or completion-ring entry is taken (completions nobody polled count).
    pub(super) fn no_room(&self) -> bool {
        self.slots.is_full() || self.outstanding() >= self.done.capacity().min(self.slots.capacity())
    }

    /// Queue a request; returns its tag. On a full queue, start what is staged and wait for
    /// completions (bounded by the timeout); `QueueFull` if the queue is full of completions
    /// nobody polled.
    pub fn submit(&mut self, r: Request) -> Result<u64> {
        let s = self.admit(&r)?;
        if self.full() {
            self.note_full();
            let mut w = self.begin_wait();
            while self.full() && self.pending() > 0 {
                self.wait_step(true, &mut w)?;
            }
            if self.full() {
                return Err(Error::QueueFull);
            }
        }
        Ok(self.enqueue(s, &r, false))
    }

    /// Queue a request, or `QueueFull` at once if the queue is full.
    pub fn try_submit(&mut self, r: Request) -> Result<u64> {
        let s = self.admit(&r)?;
        if self.full() {
            self.note_full();
            return Err(Error::QueueFull);
        }
        Ok(self.enqueue(s, &r, false))
    }

    /// Start whatever is staged if the HDU is idle (ignores the `batch` threshold).
    pub fn kick(&mut self) {
        self.progress(true);
    }
}
