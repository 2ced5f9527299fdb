// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rev 2 batches: pipelined engines, urgency routing, status words, DMA window.

use directnvm_abi::*;

use super::{batch_of, fetch, in_window, Batch, Hdu, State, GEN_BIT};
use crate::faults::Faults;
use crate::mem::GuestMem;

impl Hdu {
    pub(super) fn step_rev2(&mut self, mem: &GuestMem, faults: &mut Faults) -> bool {
        let State::Busy(mut b) = std::mem::replace(&mut self.state, State::Idle) else { return false };
        let mut q = self.queued.take();
        let mut progress = false;
        let dispatch = self.caps.dispatch_depth as usize;
        // Fetch in START order: the queued batch once the running one is fully fetched.
        while self.engines.iter().map(|e| e.pending.len()).sum::<usize>() < dispatch {
            let target = if b.fetched < b.nreqs {
                &mut b
            } else if let Some(nb) = q.as_mut().filter(|nb| nb.fetched < nb.nreqs) {
                nb
            } else {
                break;
            };
            self.fetch_rev2(mem, target, faults);
            progress = true;
        }
        for i in 0..self.engines.len() {
            let mut consumed = false;
            while let Some(cqe) = self.engines[i].pop_cqe(mem) {
                consumed = true;
                if let Some(key) = self.engines[i].complete_rev2(&cqe) {
                    if let Some(t) = batch_of(key, &mut b, &mut q) {
                        self.complete_entry(mem, t, key & !GEN_BIT, dnvm_status(cqe.status, DNVM_HDU_ERR_NONE));
                    }
                }
            }
            if consumed {
                self.engines[i].ring_cq(mem);
                self.stats.cq_doorbells += 1;
                progress = true;
            }
            if self.engines[i].submit_rev2(mem) > 0 {
                self.engines[i].ring_sq(mem);
                self.stats.sq_doorbells += 1;
                progress = true;
            }
        }
        if b.fetched == b.nreqs && b.completed == b.nreqs {
            match q {
                // The queued batch becomes the running one; DONE stays 0.
                Some(next) => {
                    self.stats.batches += 1;
                    self.state = State::Busy(next);
                }
                None => self.end_batch(faults),
            }
            progress = true;
        } else {
            self.state = State::Busy(b);
            self.queued = q;
        }
        progress
    }

    /// Fetch one entry of `b` and hand it to its engine (or complete it with an HDU error).
    pub(super) fn fetch_rev2(&mut self, mem: &GuestMem, b: &mut Batch, faults: &mut Faults) {
        let idx = b.fetched;
        b.fetched += 1;
        match fetch::rev2_entry(mem, b.reqbuf, idx) {
            None => self.complete_entry(mem, b, idx, dnvm_status(0, DNVM_HDU_ERR_INVALID)),
            Some(e) => match self.route(b, &e, faults) {
                Ok(engine) => self.engines[engine].pending.push_back((idx | b.key, e)),
                Err(err) => self.complete_entry(mem, b, idx, dnvm_status(0, err)),
            },
        }
    }

    /// Check an entry and pick its engine, or the HDU error code.
    pub(super) fn route(&mut self, b: &Batch, e: &DnvmEntry, faults: &mut Faults) -> Result<usize, u32> {
        if e.op > DNVM_OP_FLUSH {
            return Err(DNVM_HDU_ERR_INVALID);
        }
        if e.op != DNVM_OP_FLUSH {
            let bytes = if e.block_size == 0 { 4096 } else { u64::from(e.block_size) };
            let max = u64::from(self.caps.max_xfer_pages) * 4096;
            if bytes % 4096 != 0 || bytes > max || !e.data_addr.is_multiple_of(4096) {
                return Err(DNVM_HDU_ERR_INVALID);
            }
            if faults.take_window(self.index) || !in_window(b.window, e.data_addr, bytes) {
                self.pstatus |= HDU_PSTATUS_WINDOW_FAULT;
                self.stats.window_faults += 1;
                return Err(DNVM_HDU_ERR_WINDOW);
            }
        }
        Ok(dnvm_engine_for_urgency(e.urgency, self.engines.len() as u32) as usize)
    }

    pub(super) fn complete_entry(&mut self, mem: &GuestMem, b: &mut Batch, idx: u32, word: u32) {
        if b.statusbuf != 0 {
            let _ = mem.store32(b.statusbuf + 4 * u64::from(idx), word);
        }
        if word != DNVM_STATUS_DONE {
            self.errors += 1;
            self.stats.errors += 1;
        }
        if dnvm_status_hdu(word) == DNVM_HDU_ERR_ABORTED {
            self.stats.aborted += 1;
        }
        self.stats.entries += 1;
        b.completed += 1;
    }
}
