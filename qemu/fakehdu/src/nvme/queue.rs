// SPDX-License-Identifier: MIT OR Apache-2.0
//! The controller's queue state: submission and completion queues and the fetched commands
//! waiting for their completion time.

/// A submission queue.
#[derive(Clone, Debug)]
pub(crate) struct Sq {
    pub base: u64,
    pub size: u32,
    pub cqid: u16,
    pub qprio: u8,
    pub head: u32,
    pub tail: u32,
    pub generation: u64,
}

/// A completion queue.
#[derive(Clone, Debug)]
pub(crate) struct Cq {
    pub base: u64,
    pub size: u32,
    pub tail: u32,
    pub head: u32,
    pub phase: bool,
}

impl Cq {
    pub(crate) fn full(&self) -> bool {
        (self.tail + 1) % self.size == self.head
    }
}

/// What a fetched I/O command does when it completes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    None,
    Read { slba: u64, segs: Vec<(u64, u64)> },
    Write { slba: u64, segs: Vec<(u64, u64)> },
    Flush,
}

/// A fetched command waiting for its completion time.
#[derive(Clone, Debug)]
pub(crate) struct InFlight {
    pub done_at: u64,
    pub seq: u64,
    pub sqid: u16,
    pub generation: u64,
    pub cid: u16,
    pub status: u16,
    pub dw0: u32,
    pub work: Work,
}

impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.done_at, self.seq) == (o.done_at, o.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.done_at, self.seq).cmp(&(o.done_at, o.seq))
    }
}
