// SPDX-License-Identifier: MIT OR Apache-2.0
//! NAE (NVMe access engine): owns one NVMe I/O queue pair in the queue window, writes SQEs,
//! rings the SQ tail doorbell, collects CQEs by phase tag and rings the CQ head doorbell.
//!
//! Rev 1 uses it batch-synchronously (CID = SQ slot, no status); rev 2 keeps the queue full
//! with command tags (CID = tag) and follows the SQ head reported in CQEs.

use std::collections::VecDeque;

use directnvm_abi::{DnvmEntry, DNVM_OP_FLUSH, DNVM_QWIN_CQ_OFFSET, DNVM_QWIN_PRP_OFFSET, DNVM_QWIN_PRP_SIZE, DNVM_QWIN_SQ_OFFSET};

use crate::mem::GuestMem;
use crate::nvme::spec::{cq_doorbell, cqe_phase, io, sq_doorbell, Cqe, Sqe, CQE_DW3, CQE_SIZE, SQE_SIZE};

/// One engine and its queue pair.
#[derive(Debug)]
pub struct Engine {
    /// NVMe queue id (SQ and CQ share it).
    pub qid: u16,
    bar: u64,
    sq: u64,
    cq: u64,
    prp: u64,
    prp_stride: u64,
    /// Queue depth in entries.
    pub depth: u32,
    tail: u32,
    head: u32,
    phase: bool,
    sq_head: u32,
    tags: Vec<Option<u32>>,
    free: Vec<u16>,
    /// Entries routed to this engine and not yet submitted: (index in batch, entry).
    pub pending: VecDeque<(u32, DnvmEntry)>,
    /// Completions whose CID matched no outstanding tag.
    pub stray_completions: u64,
}

/// Bytes of PRP list per command tag for a queue of `depth` entries.
pub fn prp_stride(depth: u32) -> u64 {
    let per = DNVM_QWIN_PRP_SIZE / u64::from(depth.max(2));
    let mut s = 8u64;
    while s * 2 <= per && s * 2 <= 4096 {
        s *= 2;
    }
    s
}

impl Engine {
    /// An engine using queue `qid` whose memory starts at `queue_base` in the queue window.
    pub fn new(qid: u16, bar: u64, queue_base: u64, depth: u32) -> Self {
        let ntags = depth.saturating_sub(1) as usize;
        Self {
            qid,
            bar,
            sq: queue_base + DNVM_QWIN_SQ_OFFSET,
            cq: queue_base + DNVM_QWIN_CQ_OFFSET,
            prp: queue_base + DNVM_QWIN_PRP_OFFSET,
            prp_stride: prp_stride(depth),
            depth,
            tail: 0,
            head: 0,
            phase: true,
            sq_head: 0,
            tags: vec![None; ntags],
            free: (0..ntags as u16).rev().collect(),
            pending: VecDeque::new(),
            stray_completions: 0,
        }
    }

    /// Return to the state of a freshly created queue pair and zero the CQ ring.
    pub fn reset_queues(&mut self, mem: &GuestMem) {
        let fresh = Engine::new(self.qid, self.bar, self.sq - DNVM_QWIN_SQ_OFFSET, self.depth);
        *self = fresh;
        let _ = mem.fill(self.cq, u64::from(self.depth) * 16, 0);
    }

    /// Drop all tags and pending entries (after an abort); returns the entries still in flight.
    pub fn forget(&mut self) -> Vec<u32> {
        let lost = self.tags.iter_mut().filter_map(|t| t.take()).collect();
        self.free = (0..self.tags.len() as u16).rev().collect();
        self.pending.clear();
        lost
    }

    /// Commands submitted and not yet completed (rev 2).
    pub fn in_flight(&self) -> usize {
        self.tags.len() - self.free.len()
    }

    /// Write an SQE into the slot at the tail and advance the tail (no doorbell).
    fn push_sqe(&mut self, mem: &GuestMem, sqe: &Sqe) {
        let _ = mem.write(self.sq + u64::from(self.tail) * SQE_SIZE as u64, &sqe.to_bytes());
        self.tail = (self.tail + 1) % self.depth;
    }

    /// Rev 1: the SQE the RTL's SQM builds from an entry (CID = slot, NLB = 7, PRP1 only).
    pub fn push_rev1(&mut self, mem: &GuestMem, e: &DnvmEntry) {
        let sqe = Sqe {
            opcode: if e.op & 1 == 0 { io::READ } else { io::WRITE },
            cid: self.tail as u16,
            nsid: 1,
            prp1: e.data_addr,
            cdw: [e.lba as u32, (e.lba >> 32) as u32, 7, 0, 0, 0],
            ..Default::default()
        };
        self.push_sqe(mem, &sqe);
    }

    /// Write the SQ tail doorbell.
    pub fn ring_sq(&self, mem: &GuestMem) {
        let _ = mem.store32(sq_doorbell(self.bar, self.qid), self.tail);
    }

    /// Write the CQ head doorbell.
    pub fn ring_cq(&self, mem: &GuestMem) {
        let _ = mem.store32(cq_doorbell(self.bar, self.qid), self.head);
    }

    /// Take the CQE at the head if its phase tag is current.
    pub fn pop_cqe(&mut self, mem: &GuestMem) -> Option<Cqe> {
        let addr = self.cq + u64::from(self.head) * CQE_SIZE as u64;
        let dw3 = mem.load32(addr + CQE_DW3 as u64).ok()?;
        if cqe_phase(dw3) != self.phase {
            return None;
        }
        let mut b = [0u8; CQE_SIZE];
        mem.read(addr, &mut b).ok()?;
        b[CQE_DW3..].copy_from_slice(&dw3.to_le_bytes());
        let (cqe, _) = Cqe::decode(&b);
        self.head += 1;
        if self.head == self.depth {
            self.head = 0;
            self.phase = !self.phase;
        }
        Some(cqe)
    }

    /// Rev 2: submit pending entries while tags and SQ slots are free. Returns the number
    /// submitted (the caller rings the doorbell once if non-zero).
    pub fn submit_rev2(&mut self, mem: &GuestMem) -> u32 {
        let mut n = 0;
        while !self.pending.is_empty() {
            let used = (self.tail + self.depth - self.sq_head) % self.depth;
            if used + 1 >= self.depth {
                break;
            }
            let Some(tag) = self.free.pop() else { break };
            let Some((idx, e)) = self.pending.pop_front() else { break };
            self.tags[usize::from(tag)] = Some(idx);
            let sqe = self.build_rev2(mem, tag, &e);
            self.push_sqe(mem, &sqe);
            n += 1;
        }
        n
    }

    fn build_rev2(&self, mem: &GuestMem, tag: u16, e: &DnvmEntry) -> Sqe {
        if e.op == DNVM_OP_FLUSH {
            return Sqe { opcode: io::FLUSH, cid: tag, nsid: 1, ..Default::default() };
        }
        let bytes = if e.block_size == 0 { 4096 } else { u64::from(e.block_size) };
        let pages = bytes / 4096;
        let prp2 = match pages {
            0 | 1 => 0,
            2 => e.data_addr + 4096,
            _ => {
                let list = self.prp + u64::from(tag) * self.prp_stride;
                for k in 1..pages {
                    let _ = mem.store64(list + 8 * (k - 1), e.data_addr + 4096 * k);
                }
                list
            }
        };
        let nlb = (bytes / 512 - 1) as u32;
        Sqe {
            opcode: if e.op == 0 { io::READ } else { io::WRITE },
            cid: tag,
            nsid: 1,
            prp1: e.data_addr,
            prp2,
            cdw: [e.lba as u32, (e.lba >> 32) as u32, nlb & 0xffff, 0, 0, 0],
            ..Default::default()
        }
    }

    /// Rev 2: account a CQE; returns the batch index of the entry it completes.
    pub fn complete_rev2(&mut self, cqe: &Cqe) -> Option<u32> {
        self.sq_head = u32::from(cqe.sqhd) % self.depth;
        let idx = self.tags.get_mut(usize::from(cqe.cid)).and_then(|t| t.take());
        match idx {
            Some(i) => {
                self.free.push(cqe.cid);
                Some(i)
            }
            None => {
                self.stray_completions += 1;
                None
            }
        }
    }

    /// Largest transfer (4 KiB pages) the PRP list slots allow.
    pub fn max_pages(&self) -> u32 {
        (1 + self.prp_stride / 8) as u32
    }
}
