// SPDX-License-Identifier: MIT OR Apache-2.0
//! Completion: a request's result from the status words, early completion (rev 2), DONE.

use super::*;

impl Handle {
    pub(super) fn complete(&mut self, id: u32, result: Result<()>) {
        // Only what is needed is read from the slot (a whole-slot copy costs on the hot path).
        if self.depth_ctl.is_some() || self.tenants.is_some() {
            let s = self.slots[id as usize];
            self.account(&s, result.is_ok());
        }
        if self.slots[id as usize].guarded {
            self.guard_completed(id);
        }
        let s = &self.slots[id as usize];
        let (sync, seq, tag) = (s.sync, s.info.seq, s.tag);
        self.free.push(id);
        self.stats.completed += 1;
        if result.is_err() {
            self.stats.errors += 1;
        }
        if sync {
            if seq == self.sync_seq {
                self.sync_result = Some(result);
            }
        } else {
            self.done.push_back(Completion { tag, result });
        }
    }

    /// The result of request `s` from its status words (rev 2): the first failing entry's
    /// error, else `Ok`. With `need_done`, `None` while any entry lacks the done bit (the words
    /// were zeroed before START, so a done bit belongs to this batch).
    #[inline(always)]
    fn status_of(&self, s: &Slot, need_done: bool) -> Option<Result<()>> {
        let mut r = Ok(());
        for e in s.first_entry..s.first_entry + s.entries {
            // SAFETY: e < batch_max <= status words of the mapped status region.
            let w = unsafe { self.status.add(e as usize).read_volatile() };
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
        for k in self.scan_from..self.inflight.len() {
            if self.inflight_done[k] {
                continue;
            }
            let id = self.inflight[k];
            let r = if self.revision.has_status() { self.status_of(&self.slots[id as usize], false).unwrap_or(Ok(())) } else { Ok(()) };
            self.complete(id, r);
        }
        for k in 0..self.flights.len() {
            let f = self.flights[k];
            self.flight_ended(f);
        }
        self.clear_inflight();
    }

    pub(super) fn clear_inflight(&mut self) {
        self.inflight.clear();
        self.inflight_done.clear();
        self.flights.clear();
        self.scan_from = 0;
    }

    /// Rev 2 early completion: complete every in-flight request whose status words all have
    /// the done bit, before the batch's DONE. The words were zeroed before START, so a done
    /// bit belongs to this batch.
    pub(super) fn complete_early(&mut self) {
        if !self.revision.has_status() {
            return;
        }
        let mut found = false;
        for k in self.scan_from..self.inflight.len() {
            if self.inflight_done[k] {
                continue;
            }
            let Some(r) = self.status_of(&self.slots[self.inflight[k] as usize], true) else {
                continue;
            };
            if !found {
                // The request's data and status words are read after its done bit.
                mmio::after_done();
                found = true;
            }
            self.inflight_done[k] = true;
            self.stats.early += 1;
            self.complete(self.inflight[k], r);
        }
        while self.scan_from < self.inflight.len() && self.inflight_done[self.scan_from] {
            self.scan_from += 1;
        }
    }

    /// Complete every in-flight request not completed yet with `err`.
    pub(super) fn fail_inflight(&mut self, err: Error) {
        for k in self.scan_from..self.inflight.len() {
            if !self.inflight_done[k] {
                self.complete(self.inflight[k], Err(err));
            }
        }
        self.clear_inflight();
    }
}
