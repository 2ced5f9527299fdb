// SPDX-License-Identifier: MIT OR Apache-2.0
//! Completion side of the controller: posting CQEs, commands whose time has come, SQ deletion.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::super::queue::{InFlight, Work};
use super::super::spec::*;
use super::Controller;
use crate::mem::GuestMem;

impl Controller {
    /// Post a completion to CQ `cqid`; false if the CQ is full or missing.
    pub(crate) fn post(&mut self, mem: &GuestMem, sqid: u16, cid: u16, status: u16, dw0: u32) -> bool {
        let Some(sq) = self.sqs.get(usize::from(sqid)).and_then(|q| q.as_ref()) else { return true };
        let (cqid, sqhd) = (sq.cqid, sq.head as u16);
        let Some(cq) = self.cqs.get_mut(usize::from(cqid)).and_then(|q| q.as_mut()) else { return true };
        if cq.full() {
            return false;
        }
        let cqe = Cqe { dw0, sqhd, sqid, cid, status };
        let (bytes, dw3) = cqe.encode(cq.phase);
        let addr = cq.base + u64::from(cq.tail) * 16;
        if mem.write(addr, &bytes).is_err() || mem.store32(addr + 12, dw3).is_err() {
            self.fatal();
            return true;
        }
        cq.tail += 1;
        if cq.tail == cq.size {
            cq.tail = 0;
            cq.phase = !cq.phase;
        }
        true
    }

    pub(super) fn cq_has_room(&self, sqid: u16) -> bool {
        let Some(sq) = self.sqs.get(usize::from(sqid)).and_then(|q| q.as_ref()) else { return false };
        self.cqs.get(usize::from(sq.cqid)).and_then(|q| q.as_ref()).is_some_and(|cq| !cq.full())
    }

    pub(crate) fn new_inflight(&mut self, sqid: u16, cid: u16, done_at: u64, status: u16, work: Work) -> InFlight {
        self.seq += 1;
        let generation = self.sqs.get(usize::from(sqid)).and_then(|q| q.as_ref()).map_or(0, |q| q.generation);
        InFlight { done_at, seq: self.seq, sqid, generation, cid, status, dw0: 0, work }
    }

    pub(super) fn complete_due(&mut self, mem: &GuestMem, now: u64) -> bool {
        let mut progress = false;
        // Completions that found their CQ full earlier go first.
        let blocked = std::mem::take(&mut self.blocked);
        for f in blocked {
            if !self.finish(mem, f.clone()) {
                self.blocked.push(f);
            } else {
                progress = true;
            }
        }
        while let Some(Reverse(top)) = self.inflight.peek() {
            if top.done_at > now {
                break;
            }
            let Some(Reverse(mut f)) = self.inflight.pop() else { break };
            let live = self.sqs.get(usize::from(f.sqid)).and_then(|q| q.as_ref()).is_some_and(|q| q.generation == f.generation);
            if !live {
                continue;
            }
            if f.status == 0 {
                f.status = self.transfer(mem, &f.work);
            }
            f.work = Work::None;
            if !self.finish(mem, f.clone()) {
                self.blocked.push(f);
            }
            progress = true;
        }
        progress
    }

    /// Post the completion of an I/O command; false if its CQ is full.
    pub(super) fn finish(&mut self, mem: &GuestMem, f: InFlight) -> bool {
        if !self.cq_has_room(f.sqid) {
            return !self.sqs.get(usize::from(f.sqid)).is_some_and(|q| q.is_some());
        }
        self.post(mem, f.sqid, f.cid, f.status, f.dw0);
        self.stats.io_commands += 1;
        if f.status != 0 {
            self.stats.io_errors += 1;
        }
        if let Some(c) = self.stats.completions_per_sq.get_mut(usize::from(f.sqid)) {
            *c += 1;
        }
        true
    }

    /// Drop the in-flight commands of SQ `qid`, completing them as aborted (SQ deletion).
    pub(crate) fn abort_sq(&mut self, mem: &GuestMem, qid: u16) {
        let all: Vec<InFlight> = std::mem::take(&mut self.inflight).into_iter().map(|Reverse(f)| f).collect();
        let mut keep = BinaryHeap::new();
        for f in all.into_iter().chain(std::mem::take(&mut self.blocked)) {
            if f.sqid == qid {
                self.post(mem, qid, f.cid, sc::ABORTED_SQ_DELETION, 0);
            } else {
                keep.push(Reverse(f));
            }
        }
        self.inflight = keep;
    }
}
