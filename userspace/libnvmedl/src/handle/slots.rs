// SPDX-License-Identifier: MIT OR Apache-2.0
//! `SlotTable`: the requests a handle holds (staged or in flight), in a table sized once at
//! handle creation, and the stack of free slot ids. A scheduler orders slot ids; the slot
//! keeps what the batch and the completion need.

use std::ops::{Index, IndexMut};

use crate::sched::SchedInfo;

/// One request held by the handle.
#[derive(Clone, Copy, Default)]
pub(super) struct Slot {
    pub(super) op: u16,
    pub(super) urgency: u16,
    pub(super) lba: u64,
    pub(super) len: u32,
    pub(super) bus: u64,
    pub(super) tag: u64,
    pub(super) entries: u32,
    pub(super) first_entry: u32,
    pub(super) sync: bool,
    pub(super) info: SchedInfo,
    /// Time of the batch START (0: not started or no QoS clock).
    pub(super) launch_ns: u64,
    /// Submit time on the handle's coarse clock (adaptive depth, tenant accounting).
    pub(super) submit_ns: u64,
    /// In flight and guarded by the scheduler's starvation guard (`StarvationGuard::guards`).
    pub(super) guarded: bool,
}

impl Default for SchedInfo {
    fn default() -> Self {
        SchedInfo { priority: 0, seq: 0, deadline_ns: u64::MAX, tenant: 0 }
    }
}

/// The slot table and its free ids.
pub(super) struct SlotTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl SlotTable {
    /// `capacity` free slots (taken lowest id first).
    pub(super) fn new(capacity: usize) -> Self {
        SlotTable { slots: vec![Slot::default(); capacity], free: (0..capacity as u32).rev().collect() }
    }

    /// Slots in the table.
    #[inline(always)]
    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Slots taken (requests staged or in flight).
    #[inline(always)]
    pub(super) fn pending(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// True when every slot is taken.
    #[inline(always)]
    pub(super) fn is_full(&self) -> bool {
        self.free.is_empty()
    }

    /// Take a free slot id (the caller checked that one is free).
    #[inline(always)]
    pub(super) fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_default()
    }

    /// Give slot `id` back.
    #[inline(always)]
    pub(super) fn release(&mut self, id: u32) {
        self.free.push(id);
    }
}

impl Index<u32> for SlotTable {
    type Output = Slot;
    #[inline(always)]
    fn index(&self, id: u32) -> &Slot {
        &self.slots[id as usize]
    }
}

impl IndexMut<u32> for SlotTable {
    #[inline(always)]
    fn index_mut(&mut self, id: u32) -> &mut Slot {
        &mut self.slots[id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_taken_lowest_first_and_given_back() {
        let mut t = SlotTable::new(3);
        assert_eq!((t.capacity(), t.pending(), t.is_full()), (3, 0, false));
        let (a, b, c) = (t.take(), t.take(), t.take());
        assert_eq!((a, b, c), (0, 1, 2));
        assert!(t.is_full());
        t[b].tag = 42;
        assert_eq!(t[1].tag, 42);
        t.release(b);
        assert_eq!((t.pending(), t.is_full()), (2, false));
        assert_eq!(t.take(), 1, "the id given back is taken next");
        assert_eq!(Slot::default().info.deadline_ns, u64::MAX, "no deadline");
    }
}
