// SPDX-License-Identifier: MIT OR Apache-2.0
//! Completion: a request's result from the status words, early completion (rev 2), DONE.

use super::{Handle, Slot};
use crate::error::{status_result, Error, Result};
use crate::mmio;

use directnvm_abi::DNVM_STATUS_DONE;

impl Handle {
    pub(super) fn complete(&mut self, id: u32, result: Result<()>) {
        // Only what is needed is read from the slot (a whole-slot copy costs on the hot path).
        if self.depth.adaptive() || self.tenants.accounting() {
            let s = self.slots[id];
            self.account(&s, result.is_ok());
        }
        if self.slots[id].guarded {
            self.guard_completed(id);
        }
        let s = &self.slots[id];
        let (sync, seq, tag) = (s.sync, s.info.seq, s.tag);
        self.slots.release(id);
        self.stats.completed += 1;
        if result.is_err() {
            self.stats.errors += 1;
        }
        self.done.deliver(sync, seq, tag, result);
    }

    /// The result of request `s` from its status words (rev 2): the first failing entry's
    /// error, else `Ok`. With `need_done`, `None` while any entry lacks the done bit (the words
    /// were zeroed before START, so a done bit belongs to this batch).
    #[inline(always)]
    fn status_of(&self, s: &Slot, need_done: bool) -> Option<Result<()>> {
        let mut r = Ok(());
        for e in s.first_entry..s.first_entry + s.entries {
            let w = self.engine.status_word(e);
            if need_done && w & DNVM_STATUS_DONE == 0 {
                return None;
            }
            if r.is_ok() {
                r = status_result(w);
                if r.is_err() && !need_done {
                    break;
                }
            }
        }
        Some(r)
    }

    /// The batch's DONE is set: complete every request of it not completed yet (rev 1: all
    /// succeed, it reports nothing else).
    pub(super) fn harvest(&mut self) {
        mmio::after_done();
        let has_status = self.engine.revision().has_status();
        for k in self.flights.open() {
            if self.flights.is_done(k) {
                continue;
            }
            let id = self.flights.id(k);
            let r = if has_status { self.status_of(&self.slots[id], false).unwrap_or(Ok(())) } else { Ok(()) };
            self.complete(id, r);
        }
        for k in 0..self.flights.batches() {
            let f = self.flights.batch(k);
            self.flight_ended(f);
        }
        self.flights.clear();
    }

    /// Rev 2 early completion: complete every in-flight request whose status words all have
    /// the done bit, before the batch's DONE. The words were zeroed before START, so a done
    /// bit belongs to this batch.
    pub(super) fn complete_early(&mut self) {
        if !self.engine.revision().has_status() {
            return;
        }
        let mut found = false;
        for k in self.flights.open() {
            if self.flights.is_done(k) {
                continue;
            }
            let id = self.flights.id(k);
            let Some(r) = self.status_of(&self.slots[id], true) else {
                continue;
            };
            if !found {
                // The request's data and status words are read after its done bit.
                mmio::after_done();
                found = true;
            }
            self.flights.mark_done(k);
            self.stats.early += 1;
            self.complete(id, r);
        }
        self.flights.advance();
    }

    /// Complete every in-flight request not completed yet with `err`.
    pub(super) fn fail_inflight(&mut self, err: Error) {
        for k in self.flights.open() {
            if !self.flights.is_done(k) {
                self.complete(self.flights.id(k), Err(err));
            }
        }
        self.flights.clear();
    }
}
