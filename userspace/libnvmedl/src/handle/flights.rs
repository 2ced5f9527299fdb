// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Flights`: the hardware batches in flight (at most two: one running, one queued behind it
//! with the rev 2 START queue), their staging entries and the slot ids of their requests,
//! oldest batch first, with which of them already completed early (rev 2 status words).

use std::collections::VecDeque;
use std::ops::Range;

/// A batch the device holds: its staging entries `[lo, hi)` and its `reqs` requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Flight {
    pub(super) lo: u32,
    pub(super) hi: u32,
    pub(super) reqs: usize,
    /// Clock at START (0: not read).
    pub(super) start_ns: u64,
}

/// The batches in flight and their requests.
pub(super) struct Flights {
    /// Requests of the batches in flight, oldest batch first.
    ids: Vec<u32>,
    /// Per `ids` entry: already completed from its status words (rev 2 early completion).
    done: Vec<bool>,
    /// `ids[..scan_from]` are all completed (where the early-completion scan starts).
    scan_from: usize,
    batches: VecDeque<Flight>,
}

impl Flights {
    /// Room for batches of up to `batch_max` requests.
    pub(super) fn new(batch_max: u32) -> Self {
        Flights {
            ids: Vec::with_capacity(batch_max as usize),
            done: Vec::with_capacity(batch_max as usize),
            scan_from: 0,
            batches: VecDeque::with_capacity(2),
        }
    }

    /// Batches in flight.
    #[inline(always)]
    pub(super) fn batches(&self) -> usize {
        self.batches.len()
    }

    /// The oldest batch in flight.
    #[inline(always)]
    pub(super) fn oldest(&self) -> Option<Flight> {
        self.batches.front().copied()
    }

    /// Batch `k` in flight (0: the oldest).
    pub(super) fn batch(&self, k: usize) -> Flight {
        self.batches[k]
    }

    /// Staging entries free for the next batch among `batch_max`: all of them with nothing in
    /// flight, else the larger gap beside the batch in flight (the entries of a batch are
    /// contiguous).
    #[inline]
    pub(super) fn free_region(&self, batch_max: u32) -> (u32, u32) {
        match self.batches.front() {
            None => (0, batch_max),
            Some(f) if batch_max - f.hi >= f.lo => (f.hi, batch_max),
            Some(f) => (0, f.lo),
        }
    }

    /// A new batch is being filled: forget the requests of ended batches if none is in
    /// flight. Returns the number of requests in flight before it.
    #[inline]
    pub(super) fn begin(&mut self) -> usize {
        if self.batches.is_empty() {
            self.clear();
        }
        self.ids.len()
    }

    /// Request `id` goes into the batch being filled.
    #[inline(always)]
    pub(super) fn push_request(&mut self, id: u32) {
        self.ids.push(id);
        self.done.push(false);
    }

    /// The batch being filled was started on entries `[lo, hi)` at `start_ns`; `reqs0` is what
    /// `begin` returned.
    #[inline]
    pub(super) fn started(&mut self, lo: u32, hi: u32, reqs0: usize, start_ns: u64) {
        self.batches.push_back(Flight { lo, hi, reqs: self.ids.len() - reqs0, start_ns });
    }

    /// Positions of the requests that may still be open (from the first not completed).
    #[inline(always)]
    pub(super) fn open(&self) -> Range<usize> {
        self.scan_from..self.ids.len()
    }

    /// Slot id of the request at position `k`.
    #[inline(always)]
    pub(super) fn id(&self, k: usize) -> u32 {
        self.ids[k]
    }

    /// Whether the request at position `k` completed early.
    #[inline(always)]
    pub(super) fn is_done(&self, k: usize) -> bool {
        self.done[k]
    }

    /// The request at position `k` completed early.
    #[inline(always)]
    pub(super) fn mark_done(&mut self, k: usize) {
        self.done[k] = true;
    }

    /// Move the scan start past the requests completed at the front.
    #[inline]
    pub(super) fn advance(&mut self) {
        while self.scan_from < self.ids.len() && self.done[self.scan_from] {
            self.scan_from += 1;
        }
    }

    /// START queue: forget the oldest batch if its requests all completed (its staging
    /// entries are free again) and return it.
    #[inline]
    pub(super) fn retire_oldest(&mut self) -> Option<Flight> {
        let f = self.batches.front().copied()?;
        if f.reqs > self.scan_from {
            return None;
        }
        self.batches.pop_front();
        self.ids.drain(..f.reqs);
        self.done.drain(..f.reqs);
        self.scan_from -= f.reqs;
        Some(f)
    }

    /// Nothing in flight any more.
    pub(super) fn clear(&mut self) {
        self.ids.clear();
        self.done.clear();
        self.batches.clear();
        self.scan_from = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_batch_takes_the_larger_gap_and_the_first_retires_when_done() {
        let mut f = Flights::new(16);
        assert_eq!(f.free_region(16), (0, 16));
        let r0 = f.begin();
        for id in [5, 6] {
            f.push_request(id);
        }
        f.started(0, 6, r0, 100);
        assert_eq!(f.free_region(16), (6, 16));
        let r1 = f.begin();
        assert_eq!(r1, 2, "a batch in flight keeps its requests");
        f.push_request(7);
        f.started(6, 10, r1, 200);
        assert_eq!((f.batches(), f.oldest().map(|b| b.reqs)), (2, Some(2)));
        assert_eq!(f.open(), 0..3);
        // The second request of the first batch completes early: not retired yet.
        f.mark_done(1);
        f.advance();
        assert_eq!(f.open(), 0..3);
        assert_eq!(f.retire_oldest(), None);
        f.mark_done(0);
        f.advance();
        assert_eq!(f.open(), 2..3);
        assert_eq!(f.retire_oldest(), Some(Flight { lo: 0, hi: 6, reqs: 2, start_ns: 100 }));
        assert_eq!((f.open(), f.id(0), f.is_done(0)), (0..1, 7, false));
        assert_eq!(f.free_region(16), (10, 16), "the larger gap, after the running batch");
        assert_eq!(f.free_region(13), (0, 6), "the larger gap, before it");
        f.clear();
        assert_eq!((f.batches(), f.open()), (0, 0..0));
    }
}
