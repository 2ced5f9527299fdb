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
use crate::timing::{Ssd, SsdParams};

/// Controller configuration.
#[derive(Clone, Debug)]
pub struct NvmeConfig {
    /// I/O queue pairs supported (QIDs 1..=max_io_queues).
    pub max_io_queues: u16,
    /// Largest queue size in entries (CAP.MQES + 1).
    pub max_queue_entries: u32,
    /// MDTS: largest transfer is 2^mdts pages of 4 KiB.
    pub mdts: u8,
    /// Commands the controller works on at once (fetched but not completed).
    pub max_inflight: usize,
    /// Delay from CC.EN = 1 to CSTS.RDY = 1 (and for disable), ns; 0 when timing is off.
    pub enable_delay_ns: u64,
    /// CAP.TO in 500 ms units.
    pub timeout_500ms: u8,
    /// Serial number.
    pub serial: String,
    /// SSD timing parameters.
    pub ssd: SsdParams,
}

impl Default for NvmeConfig {
    fn default() -> Self {
        Self {
            max_io_queues: 64,
            max_queue_entries: 4096,
            mdts: 5,
            max_inflight: 128,
            enable_delay_ns: 1_000_000,
            timeout_500ms: 10,
            serial: "DNVM00000001".into(),
            ssd: SsdParams::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Disabled,
    Enabling(u64),
    Ready,
    Disabling(u64),
    Fatal,
}

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
    fn full(&self) -> bool {
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

    fn cq_has_room(&self, sqid: u16) -> bool {
        let Some(sq) = self.sqs.get(usize::from(sqid)).and_then(|q| q.as_ref()) else { return false };
        self.cqs.get(usize::from(sq.cqid)).and_then(|q| q.as_ref()).is_some_and(|cq| !cq.full())
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

    pub(crate) fn new_inflight(&mut self, sqid: u16, cid: u16, done_at: u64, status: u16, work: Work) -> InFlight {
        self.seq += 1;
        let generation = self.sqs.get(usize::from(sqid)).and_then(|q| q.as_ref()).map_or(0, |q| q.generation);
        InFlight { done_at, seq: self.seq, sqid, generation, cid, status, dw0: 0, work }
    }

    fn complete_due(&mut self, mem: &GuestMem, now: u64) -> bool {
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
    fn finish(&mut self, mem: &GuestMem, f: InFlight) -> bool {
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

    pub(crate) fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }
}
