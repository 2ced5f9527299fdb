// SPDX-License-Identifier: MIT OR Apache-2.0
//! The NVMe controller: registers in the BAR window (guest memory), enable/disable/shutdown,
//! queues and doorbells, the command fetch loop and completion posting.
//!
//! The BAR window is plain RAM shared with the guest, so the controller polls it: CC and the
//! doorbells are read every step; CAP, VS and CSTS are (re)written by the controller.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::arbiter::{Arbiter, Candidate};
use super::spec::*;
use crate::disk::Disk;
use crate::faults::Faults;
use crate::mem::GuestMem;
use crate::stats::NvmeStats;
use crate::timing::Ssd;

mod completion;

pub use super::config::NvmeConfig;
pub(crate) use super::queue::{Cq, InFlight, Sq, Work};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Disabled,
    Enabling(u64),
    Ready,
    Disabling(u64),
    Fatal,
}

/// The controller model.
pub struct Controller {
    pub(crate) cfg: NvmeConfig,
    pub(crate) bar: u64,
    state: State,
    cc: u32,
    csts: u32,
    pub(crate) sqs: Vec<Option<Sq>>,
    pub(crate) cqs: Vec<Option<Cq>>,
    /// Number of I/O SQs / CQs granted by Set Features Number of Queues.
    pub(crate) nsq: u16,
    pub(crate) ncq: u16,
    pub(crate) arbitration: u32,
    pub(crate) vwc: bool,
    pub(crate) aer_outstanding: u32,
    wrr: bool,
    arbiter: Arbiter,
    inflight: BinaryHeap<Reverse<InFlight>>,
    blocked: Vec<InFlight>,
    seq: u64,
    generation: u64,
    pub(crate) ssd: Ssd,
    pub(crate) disk: Disk,
    pub(crate) timed: bool,
    /// Counters.
    pub stats: NvmeStats,
}

impl Controller {
    /// A controller whose BAR window starts at guest-physical `bar`, with namespace 1 on `disk`.
    pub fn new(cfg: NvmeConfig, bar: u64, disk: Disk, timed: bool) -> Self {
        let n = usize::from(cfg.max_io_queues) + 1;
        let ssd = Ssd::new(cfg.ssd.clone());
        let stats = NvmeStats { completions_per_sq: vec![0; n], ..Default::default() };
        Self {
            nsq: cfg.max_io_queues,
            ncq: cfg.max_io_queues,
            cfg,
            bar,
            state: State::Disabled,
            cc: 0,
            csts: 0,
            sqs: vec![None; n],
            cqs: vec![None; n],
            arbitration: 0,
            vwc: true,
            aer_outstanding: 0,
            wrr: false,
            arbiter: Arbiter::default(),
            inflight: BinaryHeap::new(),
            blocked: Vec::new(),
            seq: 0,
            generation: 0,
            ssd,
            disk,
            timed,
            stats,
        }
    }

    /// CAP register value.
    pub fn cap(&self) -> u64 {
        // Contiguous queues required, WRR with urgent class, NVM command set; DSTRD = 0, 4 KiB pages.
        cap_encode(self.cfg.max_queue_entries, self.cfg.timeout_500ms, CAP_CQR | CAP_AMS_WRR | CAP_CSS_NVM)
    }

    pub(crate) fn cc_value(&self) -> u32 {
        self.cc
    }

    /// True once CSTS.RDY is set.
    pub fn ready(&self) -> bool {
        self.state == State::Ready
    }

    /// Number of namespace blocks (512 bytes).
    pub fn ns_blocks(&self) -> u64 {
        self.disk.size() / 512
    }

    /// Largest transfer in bytes (MDTS).
    pub fn max_transfer(&self) -> u64 {
        4096u64 << self.cfg.mdts
    }

    /// Earliest time something is scheduled to happen.
    pub fn next_event(&self) -> Option<u64> {
        let t = self.inflight.peek().map(|Reverse(f)| f.done_at);
        let s = match self.state {
            State::Enabling(at) | State::Disabling(at) => Some(at),
            _ => None,
        };
        match (t, s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Commands fetched and not yet completed.
    pub fn inflight(&self) -> usize {
        self.inflight.len() + self.blocked.len()
    }

    /// One polling pass. Returns true if anything happened.
    pub fn step(&mut self, mem: &GuestMem, now: u64, faults: &mut Faults) -> bool {
        self.ssd.slow_permille = faults.slow_permille;
        let mut progress = self.poll_cc(mem, now);
        self.assert_registers(mem);
        if self.state != State::Ready {
            return progress;
        }
        progress |= self.poll_doorbells(mem);
        progress |= self.process_admin(mem, now);
        progress |= self.complete_due(mem, now);
        progress |= self.fetch_io(mem, now, faults);
        progress
    }

    fn assert_registers(&self, mem: &GuestMem) {
        let b = self.bar;
        let cap = self.cap();
        if mem.load64(b + r(reg::CAP)).ok() != Some(cap) {
            let _ = mem.store64(b + r(reg::CAP), cap);
        }
        if mem.load32(b + r(reg::VS)).ok() != Some(VS_1_3) {
            let _ = mem.store32(b + r(reg::VS), VS_1_3);
        }
        if mem.load32(b + r(reg::CSTS)).ok() != Some(self.csts) {
            let _ = mem.store32(b + r(reg::CSTS), self.csts);
        }
    }

    fn poll_cc(&mut self, mem: &GuestMem, now: u64) -> bool {
        let Ok(cc) = mem.load32(self.bar + r(reg::CC)) else { return false };
        let old = self.cc;
        self.cc = cc;
        let delay = if self.timed { self.cfg.enable_delay_ns } else { 0 };
        let mut progress = false;
        if old & CC_EN == 0 && cc & CC_EN != 0 && matches!(self.state, State::Disabled | State::Disabling(_)) {
            self.state = State::Enabling(now + delay);
            progress = true;
        } else if old & CC_EN != 0 && cc & CC_EN == 0 {
            self.reset(mem, now);
            self.state = State::Disabling(now + delay / 10);
            progress = true;
        }
        if cc_shn(cc) != 0 && cc_shn(old) == 0 && cc & CC_EN != 0 {
            let _ = self.disk.flush();
            self.csts = (self.csts & !(3 << 2)) | CSTS_SHST_COMPLETE;
            progress = true;
        } else if cc_shn(cc) == 0 && cc_shn(old) != 0 {
            self.csts &= !(3 << 2);
        }
        match self.state {
            State::Enabling(at) if now >= at => {
                if self.cc & CC_EN == 0 {
                    self.state = State::Disabled;
                } else if self.enable(mem) {
                    self.state = State::Ready;
                    self.csts |= CSTS_RDY;
                    self.stats.enables += 1;
                } else {
                    self.state = State::Fatal;
                    self.csts |= CSTS_CFS;
                    self.stats.fatal += 1;
                }
                progress = true;
            }
            State::Disabling(at) if now >= at => {
                self.state = State::Disabled;
                self.csts &= !(CSTS_RDY | CSTS_CFS | (3 << 2));
                progress = true;
            }
            _ => {}
        }
        progress
    }

    /// Validate the admin queue registers and CC; create the admin queue pair.
    fn enable(&mut self, mem: &GuestMem) -> bool {
        let cc = self.cc;
        if cc_css(cc) != 0 || cc_mps(cc) != 0 || !matches!(cc_ams(cc), 0 | CC_AMS_WRR) {
            return false;
        }
        let (Ok(aqa), Ok(asq), Ok(acq)) =
            (mem.load32(self.bar + r(reg::AQA)), mem.load64(self.bar + r(reg::ASQ)), mem.load64(self.bar + r(reg::ACQ)))
        else {
            return false;
        };
        let sqs = (aqa & 0xfff) + 1;
        let cqs = ((aqa >> 16) & 0xfff) + 1;
        if sqs < 2 || cqs < 2 || asq % 4096 != 0 || acq % 4096 != 0 {
            return false;
        }
        if !mem.contains(asq, u64::from(sqs) * 64) || !mem.contains(acq, u64::from(cqs) * 16) {
            return false;
        }
        self.wrr = cc_ams(cc) == CC_AMS_WRR;
        self.generation += 1;
        self.sqs[0] = Some(Sq { base: asq, size: sqs, cqid: 0, qprio: 0, head: 0, tail: 0, generation: self.generation });
        self.cqs[0] = Some(Cq { base: acq, size: cqs, tail: 0, head: 0, phase: true });
        let _ = mem.store32(sq_doorbell(self.bar, 0), 0);
        let _ = mem.store32(cq_doorbell(self.bar, 0), 0);
        true
    }

    /// Controller reset (CC.EN 1 → 0): all queues and in-flight commands are dropped and the
    /// features return to their defaults.
    fn reset(&mut self, mem: &GuestMem, now: u64) {
        for q in 0..self.sqs.len() {
            if self.sqs[q].is_some() || self.cqs[q].is_some() {
                let _ = mem.store32(sq_doorbell(self.bar, q as u16), 0);
                let _ = mem.store32(cq_doorbell(self.bar, q as u16), 0);
            }
        }
        self.sqs.iter_mut().for_each(|q| *q = None);
        self.cqs.iter_mut().for_each(|q| *q = None);
        self.inflight.clear();
        self.blocked.clear();
        self.nsq = self.cfg.max_io_queues;
        self.ncq = self.cfg.max_io_queues;
        self.arbitration = 0;
        self.vwc = true;
        self.aer_outstanding = 0;
        self.arbiter.reset();
        self.ssd.reset(now);
    }

    fn poll_doorbells(&mut self, mem: &GuestMem) -> bool {
        let mut progress = false;
        for qid in 0..self.sqs.len() {
            if let Some(sq) = self.sqs[qid].as_mut() {
                if let Ok(v) = mem.load32(sq_doorbell(self.bar, qid as u16)) {
                    if v != sq.tail {
                        if v < sq.size {
                            sq.tail = v;
                            progress = true;
                        } else {
                            // Out-of-range doorbell value: ignored (an asynchronous event on
                            // real controllers; no interrupts here).
                            self.stats.invalid_doorbells += 1;
                            let _ = mem.store32(sq_doorbell(self.bar, qid as u16), sq.tail);
                        }
                    }
                }
            }
            if let Some(cq) = self.cqs[qid].as_mut() {
                if let Ok(v) = mem.load32(cq_doorbell(self.bar, qid as u16)) {
                    if v != cq.head {
                        if v < cq.size {
                            cq.head = v;
                            progress = true;
                        } else {
                            self.stats.invalid_doorbells += 1;
                            let _ = mem.store32(cq_doorbell(self.bar, qid as u16), cq.head);
                        }
                    }
                }
            }
        }
        progress
    }

    fn fatal(&mut self) {
        self.state = State::Fatal;
        self.csts |= CSTS_CFS;
        self.stats.fatal += 1;
    }

    fn read_sqe(&mut self, mem: &GuestMem, qid: u16) -> Option<Sqe> {
        let sq = self.sqs.get_mut(usize::from(qid))?.as_mut()?;
        let mut b = [0u8; 64];
        let addr = sq.base + u64::from(sq.head) * 64;
        sq.head = (sq.head + 1) % sq.size;
        match mem.read(addr, &mut b) {
            Ok(()) => Some(Sqe::from_bytes(&b)),
            Err(_) => {
                self.fatal();
                None
            }
        }
    }

    fn process_admin(&mut self, mem: &GuestMem, now: u64) -> bool {
        let mut progress = false;
        while self.state == State::Ready {
            let Some(sq) = self.sqs[0].as_ref() else { break };
            if sq.head == sq.tail || !self.cq_has_room(0) {
                break;
            }
            let Some(sqe) = self.read_sqe(mem, 0) else { break };
            progress = true;
            if let Some((status, dw0)) = self.admin(mem, now, &sqe) {
                self.stats.admin_commands += 1;
                if status != 0 {
                    self.stats.admin_errors += 1;
                }
                self.post(mem, 0, sqe.cid, status, dw0);
            }
        }
        progress
    }

    fn fetch_io(&mut self, mem: &GuestMem, now: u64, faults: &mut Faults) -> bool {
        let mut progress = false;
        loop {
            let room = self.cfg.max_inflight.saturating_sub(self.inflight());
            if room == 0 || self.state != State::Ready {
                break;
            }
            let cands: Vec<Candidate> = self
                .sqs
                .iter()
                .enumerate()
                .skip(1)
                .filter_map(|(qid, q)| {
                    let q = q.as_ref()?;
                    let avail = (q.tail + q.size - q.head) % q.size;
                    (avail > 0).then_some(Candidate { qid: qid as u16, qprio: q.qprio, available: avail })
                })
                .collect();
            let Some((qid, n)) = self.arbiter.pick(&cands, self.wrr, self.arbitration) else { break };
            let n = n.min(room as u32);
            let qprio = self.sqs[usize::from(qid)].as_ref().map_or(0, |q| q.qprio);
            self.arbiter.charge(qprio, n);
            for _ in 0..n {
                let Some(sqe) = self.read_sqe(mem, qid) else { return true };
                let f = self.start_io(mem, now, qid, &sqe, faults);
                self.inflight.push(Reverse(f));
            }
            progress = true;
        }
        progress
    }

    pub(crate) fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }
}
