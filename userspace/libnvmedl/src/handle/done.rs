// SPDX-License-Identifier: MIT OR Apache-2.0
//! `DoneQueue`: where finished requests go. Async requests become `Completion`s in a ring
//! sized once (what `poll` hands out); the one request a sync call waits for answers that
//! call instead, and only that call (a request a timed-out sync call gave up on completes
//! into nothing).

use std::collections::VecDeque;

use crate::error::Result;
use crate::request::Completion;

/// Finished requests not yet handed out.
pub(super) struct DoneQueue {
    ready: VecDeque<Completion>,
    sync_result: Option<Result<()>>,
    /// Sequence number of the request the running sync call waits for (0: none).
    sync_seq: u64,
}

impl DoneQueue {
    /// Room for `capacity` completions.
    pub(super) fn new(capacity: usize) -> Self {
        DoneQueue { ready: VecDeque::with_capacity(capacity), sync_result: None, sync_seq: 0 }
    }

    /// Completions not handed out yet.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.ready.len()
    }

    /// Completions the ring holds without growing.
    #[inline(always)]
    pub(super) fn capacity(&self) -> usize {
        self.ready.capacity()
    }

    /// The oldest completion.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Completion> {
        self.ready.pop_front()
    }

    /// Request `seq` (tag `tag`) finished with `result`: into the ring, or to the sync call
    /// waiting for it.
    #[inline(always)]
    pub(super) fn deliver(&mut self, sync: bool, seq: u64, tag: u64, result: Result<()>) {
        if sync {
            if seq == self.sync_seq {
                self.sync_result = Some(result);
            }
        } else {
            self.ready.push_back(Completion { tag, result });
        }
    }

    /// A sync call starts: no answer yet.
    pub(super) fn begin_sync(&mut self) {
        self.sync_result = None;
    }

    /// The sync call waits for request `seq`.
    pub(super) fn wait_for(&mut self, seq: u64) {
        self.sync_seq = seq;
    }

    /// The sync call's answer, if it came.
    #[inline(always)]
    pub(super) fn take_sync(&mut self) -> Option<Result<()>> {
        self.sync_result.take()
    }

    /// The sync call ended: a late completion of its request answers nobody.
    pub(super) fn end_sync(&mut self) {
        self.sync_seq = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn async_completions_queue_and_sync_ones_answer_their_call_only() {
        let mut d = DoneQueue::new(4);
        assert!(d.capacity() >= 4);
        d.deliver(false, 1, 10, Ok(()));
        d.deliver(false, 2, 20, Err(Error::Timeout));
        assert_eq!(d.len(), 2);
        assert_eq!(d.pop(), Some(Completion { tag: 10, result: Ok(()) }));
        d.begin_sync();
        d.wait_for(3);
        d.deliver(true, 2, 0, Ok(()));
        assert_eq!(d.take_sync(), None, "another sync request");
        d.deliver(true, 3, 0, Err(Error::NotReady));
        assert_eq!(d.take_sync(), Some(Err(Error::NotReady)));
        d.end_sync();
        d.deliver(true, 3, 0, Ok(()));
        assert_eq!((d.take_sync(), d.len()), (None, 1), "late: answers nobody");
    }
}
