// SPDX-License-Identifier: MIT OR Apache-2.0
//! The HDU (hardware dispatch unit): the register page software writes, the batch state
//! machine behind START/DONE, and (rev 2) the privileged page, status words and urgency
//! routing. The registers live in guest memory; the model polls START and CTRL.

pub mod engine;
pub mod fetch;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use directnvm_abi::*;

use crate::faults::Faults;
use crate::mem::GuestMem;
use crate::stats::HduStats;
use engine::Engine;

/// How long a rev 2 reset waits for commands already at the SSD before forgetting them.
const RESET_DRAIN: Duration = Duration::from_secs(1);

/// Rev 2: the bit of an engine tag's entry key that tells the running batch from the one
/// queued behind it (keys are `entry index | generation`; NREQS < 2^16).
const GEN_BIT: u32 = 1 << 31;

/// Batch in progress.
#[derive(Debug)]
struct Batch {
    nreqs: u32,
    reqbuf: u64,
    statusbuf: u64,
    fetched: u32,
    completed: u32,
    /// Rev 1: dispatch FIFO between fetch and SQM.
    fifo: VecDeque<DnvmEntry>,
    /// Rev 1: entries written to the SQ so far.
    pushed: u32,
    /// Rev 1: entries of the current sub-batch.
    outstanding: u32,
    /// Rev 1: completions seen of the current sub-batch.
    seen: u32,
    /// Rev 1: sub-batch submitted, waiting for its completions.
    waiting: bool,
    /// Rev 2: DMA window latched at START.
    window: (u64, u64),
    /// Rev 2: generation bit of this batch's entry keys (0 or `GEN_BIT`).
    key: u32,
}

#[derive(Debug)]
enum State {
    Idle,
    Busy(Batch),
    /// The batch finished but the stuck fault holds DONE back.
    Stuck,
    /// Rev 2 reset: waiting for in-flight commands to drain (the running and the queued batch).
    Resetting {
        batch: Option<Batch>,
        queued: Option<Batch>,
        qreset: bool,
        since: Instant,
    },
}

/// One HDU with its engines.
pub struct Hdu {
    /// Instance index.
    pub index: usize,
    rev: Revision,
    user: u64,
    privileged: Option<u64>,
    caps: HduCaps,
    engines: Vec<Engine>,
    state: State,
    /// Rev 2: the batch whose START was accepted while another ran (`HduCaps::start_queue`).
    queued: Option<Batch>,
    /// Generation bit of the next accepted batch.
    next_key: u32,
    done: bool,
    errors: u64,
    pstatus: u64,
    /// Counters.
    pub stats: HduStats,
}

impl Hdu {
    /// An HDU at `user` (and `privileged`) driving `engines`.
    pub fn new(index: usize, rev: Revision, user: u64, privileged: Option<u64>, caps: HduCaps, engines: Vec<Engine>) -> Self {
        Self {
            index,
            rev,
            user,
            privileged,
            caps,
            engines,
            state: State::Idle,
            queued: None,
            next_key: 0,
            done: false,
            errors: 0,
            pstatus: 0,
            stats: HduStats::default(),
        }
    }

    /// The capabilities (rev 2 CAPS register; rev 1 synthesis constants).
    pub fn caps(&self) -> HduCaps {
        self.caps
    }

    /// The engines.
    pub fn engines(&self) -> &[Engine] {
        &self.engines
    }

    /// True while a batch runs (or is stuck or resetting).
    pub fn busy(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    fn busy_bit(&self) -> bool {
        matches!(self.state, State::Busy(_) | State::Stuck)
    }

    fn done_reg(&self) -> u64 {
        let mut v = if self.done { HDU_DONE_BIT } else { 0 };
        if self.rev.has_status() && self.busy_bit() {
            v |= HDU_BUSY_BIT;
        }
        if self.queued.is_some() {
            v |= HDU_QUEUED_BIT;
        }
        v
    }

    fn reg(&self, r: HduReg) -> u64 {
        self.user + r.offset() as u64
    }

    /// Write the device-owned registers (DONE, and ID/CAPS/ERRORS or the rev 1 zeros) if the
    /// guest or a state change made them differ.
    fn assert_registers(&self, mem: &GuestMem) {
        let want = |r: HduReg, v: u64| {
            if mem.load64(self.reg(r)).ok() != Some(v) {
                let _ = mem.store64(self.reg(r), v);
            }
        };
        want(HduReg::Done, self.done_reg());
        if self.rev.has_caps() {
            want(HduReg::Id, hdu_id(self.rev.number()));
            want(HduReg::Caps, self.caps.to_reg());
            want(HduReg::Errors, self.errors);
            if let Some(p) = self.privileged {
                if mem.load64(p + HduPrivReg::Status.offset() as u64).ok() != Some(self.pstatus) {
                    let _ = mem.store64(p + HduPrivReg::Status.offset() as u64, self.pstatus);
                }
            }
        } else {
            want(HduReg::Id, 0);
            want(HduReg::Caps, 0);
            want(HduReg::Errors, 0);
        }
    }

    /// One polling pass; true if anything happened.
    pub fn step(&mut self, mem: &GuestMem, faults: &mut Faults) -> bool {
        let mut progress = false;
        if self.rev.has_privileged_page() {
            progress |= self.poll_ctrl(mem);
        }
        progress |= self.poll_start(mem, faults);
        progress |= match self.state {
            State::Busy(_) if self.rev.has_status() => self.step_rev2(mem, faults),
            State::Busy(_) => self.step_rev1(mem, faults),
            State::Stuck if !faults.is_stuck(self.index) => {
                // The held batch ends; one queued behind it runs now.
                match self.queued.take() {
                    Some(next) => {
                        self.stats.batches += 1;
                        self.state = State::Busy(next);
                    }
                    None => self.finish(),
                }
                true
            }
            State::Resetting { .. } => self.step_reset(mem),
            _ => false,
        };
        self.assert_registers(mem);
        progress
    }

    fn poll_start(&mut self, mem: &GuestMem, faults: &mut Faults) -> bool {
        let Ok(start) = mem.load64(self.reg(HduReg::Start)) else { return false };
        if start == 0 {
            return false;
        }
        if start & HDU_START_GO == 0 {
            let _ = mem.store64(self.reg(HduReg::Start), 0);
            return true;
        }
        // Rev 2 with a START queue: a START while a batch runs waits behind it (one slot).
        let queue =
            self.busy() && self.caps.start_queue > 0 && self.queued.is_none() && matches!(self.state, State::Busy(_) | State::Stuck);
        if (self.busy() && !queue) || faults.take_drop_start(self.index) {
            self.stats.dropped_starts += 1;
        } else {
            self.accept(mem, queue);
            // DONE is cleared before START reads 0, so software that waits for START == 0
            // never sees the previous batch's DONE.
            self.assert_registers(mem);
        }
        let _ = mem.store64(self.reg(HduReg::Start), 0);
        true
    }

    /// Take a START: run the batch, or (`queue`) keep it behind the running one.
    fn accept(&mut self, mem: &GuestMem, queue: bool) {
        self.stats.starts += 1;
        if queue {
            self.stats.queued_starts += 1;
        } else {
            self.done = false;
        }
        // The generation bit flips only for a batch that passes the checks below: a rejected
        // START must not give the next queued batch the running batch's key.
        let key = self.next_key;
        let nreqs = mem.load64(self.reg(HduReg::Nreqs)).unwrap_or(0) as u32;
        let reqbuf = mem.load64(self.reg(HduReg::Reqbuf)).unwrap_or(0);
        let mut b = Batch {
            nreqs,
            reqbuf,
            statusbuf: 0,
            fetched: 0,
            completed: 0,
            fifo: VecDeque::new(),
            pushed: 0,
            outstanding: 0,
            seen: 0,
            waiting: false,
            window: (0, u64::MAX),
            key,
        };
        if self.rev.has_status() {
            b.statusbuf = mem.load64(self.reg(HduReg::Statusbuf)).unwrap_or(0);
            if let Some(p) = self.privileged {
                b.window = (
                    mem.load64(p + HduPrivReg::DmaBase.offset() as u64).unwrap_or(0),
                    mem.load64(p + HduPrivReg::DmaLimit.offset() as u64).unwrap_or(0),
                );
            }
            if let Err(window) = self.check_batch(mem, &b) {
                self.errors += 1;
                self.stats.errors += 1;
                self.pstatus |= HDU_PSTATUS_BAD_BATCH;
                if window {
                    self.pstatus |= HDU_PSTATUS_WINDOW_FAULT;
                    self.stats.window_faults += 1;
                }
                // A rejected queued batch is dropped; DONE comes with the running one.
                if !queue {
                    self.finish();
                }
                return;
            }
        }
        self.next_key ^= GEN_BIT;
        if queue {
            self.queued = Some(b);
        } else {
            self.state = State::Busy(b);
        }
    }

    /// Rev 2 whole-batch checks; `Err(true)` for a window violation.
    fn check_batch(&self, mem: &GuestMem, b: &Batch) -> Result<(), bool> {
        if b.nreqs > self.caps.max_nreqs {
            return Err(false);
        }
        if b.nreqs == 0 {
            return Ok(());
        }
        let staging = u64::from(b.nreqs) * DNVM_ENTRY_SIZE as u64;
        if !b.reqbuf.is_multiple_of(8) || (b.statusbuf != 0 && !b.statusbuf.is_multiple_of(4)) {
            return Err(false);
        }
        if !in_window(b.window, b.reqbuf, staging) || !mem.contains(b.reqbuf, staging) {
            return Err(true);
        }
        let status = u64::from(b.nreqs) * 4;
        if b.statusbuf != 0 && (!in_window(b.window, b.statusbuf, status) || !mem.contains(b.statusbuf, status)) {
            return Err(true);
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.done = true;
        self.stats.batches += 1;
        self.state = State::Idle;
    }

    fn end_batch(&mut self, faults: &Faults) {
        if faults.is_stuck(self.index) {
            self.state = State::Stuck;
        } else {
            self.finish();
        }
    }

    // ------------------------------------------------------------------------------------
    // Rev 1: batch-synchronous, sub-batches of <= 31, exactly like the RTL's SQM/CQM.
    // ------------------------------------------------------------------------------------

    fn step_rev1(&mut self, mem: &GuestMem, faults: &mut Faults) -> bool {
        let State::Busy(mut b) = std::mem::replace(&mut self.state, State::Idle) else { return false };
        let mut progress = false;
        let mut finished = false;
        loop {
            if !b.waiting {
                while b.outstanding < DNVM_REV1_SUBBATCH && b.pushed < b.nreqs {
                    if b.fifo.is_empty() {
                        self.fetch_rev1(mem, &mut b);
                    }
                    let Some(e) = b.fifo.pop_front() else { break };
                    self.engines[0].push_rev1(mem, &e);
                    b.outstanding += 1;
                    b.pushed += 1;
                    progress = true;
                }
                if b.outstanding == DNVM_REV1_SUBBATCH || b.pushed == b.nreqs {
                    self.engines[0].ring_sq(mem);
                    self.stats.sq_doorbells += 1;
                    b.waiting = true;
                    b.seen = 0;
                    progress = true;
                } else {
                    break;
                }
            }
            while b.seen < b.outstanding && self.engines[0].pop_cqe(mem).is_some() {
                // The RTL counts completions by phase only: CID and status are ignored.
                b.seen += 1;
                progress = true;
            }
            if b.seen < b.outstanding {
                break;
            }
            self.engines[0].ring_cq(mem);
            self.stats.cq_doorbells += 1;
            self.stats.entries += u64::from(b.outstanding);
            b.completed += b.outstanding;
            b.outstanding = 0;
            b.waiting = false;
            progress = true;
            if b.pushed == b.nreqs {
                finished = true;
                break;
            }
        }
        if finished {
            self.end_batch(faults);
        } else {
            self.state = State::Busy(b);
        }
        progress
    }

    fn fetch_rev1(&mut self, mem: &GuestMem, b: &mut Batch) {
        // The fetch engine refills while the FIFO holds <= 32 entries (prog_empty).
        while b.fetched < b.nreqs && b.fifo.len() <= 32 {
            let n = fetch::REV1_BURST_ENTRIES.min(b.nreqs - b.fetched);
            let addr = b.reqbuf.wrapping_add(u64::from(b.fetched) * DNVM_ENTRY_SIZE as u64);
            let burst = fetch::rev1_burst(mem, addr, n);
            if burst.crossed {
                self.stats.protocol_violations += 1;
            }
            self.stats.fetch_errors += u64::from(burst.bad_beats);
            b.fifo.extend(burst.entries);
            b.fetched += n;
        }
    }

    // ------------------------------------------------------------------------------------
    // Rev 2: pipelined engines, urgency routing, status words, DMA window.
    // ------------------------------------------------------------------------------------

    fn step_rev2(&mut self, mem: &GuestMem, faults: &mut Faults) -> bool {
        let State::Busy(mut b) = std::mem::replace(&mut self.state, State::Idle) else { return false };
        let mut q = self.queued.take();
        let mut progress = false;
        let dispatch = self.caps.dispatch_depth as usize;
        // Fetch in START order: the queued batch once the running one is fully fetched.
        while self.engines.iter().map(|e| e.pending.len()).sum::<usize>() < dispatch {
            let target = if b.fetched < b.nreqs {
                &mut b
            } else if let Some(nb) = q.as_mut().filter(|nb| nb.fetched < nb.nreqs) {
                nb
            } else {
                break;
            };
            self.fetch_rev2(mem, target, faults);
            progress = true;
        }
        for i in 0..self.engines.len() {
            let mut consumed = false;
            while let Some(cqe) = self.engines[i].pop_cqe(mem) {
                consumed = true;
                if let Some(key) = self.engines[i].complete_rev2(&cqe) {
                    if let Some(t) = batch_of(key, &mut b, &mut q) {
                        self.complete_entry(mem, t, key & !GEN_BIT, dnvm_status(cqe.status, DNVM_HDU_ERR_NONE));
                    }
                }
            }
            if consumed {
                self.engines[i].ring_cq(mem);
                self.stats.cq_doorbells += 1;
                progress = true;
            }
            if self.engines[i].submit_rev2(mem) > 0 {
                self.engines[i].ring_sq(mem);
                self.stats.sq_doorbells += 1;
                progress = true;
            }
        }
        if b.fetched == b.nreqs && b.completed == b.nreqs {
            match q {
                // The queued batch becomes the running one; DONE stays 0.
                Some(next) => {
                    self.stats.batches += 1;
                    self.state = State::Busy(next);
                }
                None => self.end_batch(faults),
            }
            progress = true;
        } else {
            self.state = State::Busy(b);
            self.queued = q;
        }
        progress
    }

    /// Fetch one entry of `b` and hand it to its engine (or complete it with an HDU error).
    fn fetch_rev2(&mut self, mem: &GuestMem, b: &mut Batch, faults: &mut Faults) {
        let idx = b.fetched;
        b.fetched += 1;
        match fetch::rev2_entry(mem, b.reqbuf, idx) {
            None => self.complete_entry(mem, b, idx, dnvm_status(0, DNVM_HDU_ERR_INVALID)),
            Some(e) => match self.route(b, &e, faults) {
                Ok(engine) => self.engines[engine].pending.push_back((idx | b.key, e)),
                Err(err) => self.complete_entry(mem, b, idx, dnvm_status(0, err)),
            },
        }
    }

    /// Check an entry and pick its engine, or the HDU error code.
    fn route(&mut self, b: &Batch, e: &DnvmEntry, faults: &mut Faults) -> Result<usize, u32> {
        if e.op > DNVM_OP_FLUSH {
            return Err(DNVM_HDU_ERR_INVALID);
        }
        if e.op != DNVM_OP_FLUSH {
            let bytes = if e.block_size == 0 { 4096 } else { u64::from(e.block_size) };
            let max = u64::from(self.caps.max_xfer_pages) * 4096;
            if bytes % 4096 != 0 || bytes > max || !e.data_addr.is_multiple_of(4096) {
                return Err(DNVM_HDU_ERR_INVALID);
            }
            if faults.take_window(self.index) || !in_window(b.window, e.data_addr, bytes) {
                self.pstatus |= HDU_PSTATUS_WINDOW_FAULT;
                self.stats.window_faults += 1;
                return Err(DNVM_HDU_ERR_WINDOW);
            }
        }
        Ok(dnvm_engine_for_urgency(e.urgency, self.engines.len() as u32) as usize)
    }

    fn complete_entry(&mut self, mem: &GuestMem, b: &mut Batch, idx: u32, word: u32) {
        if b.statusbuf != 0 {
            let _ = mem.store32(b.statusbuf + 4 * u64::from(idx), word);
        }
        if word != DNVM_STATUS_DONE {
            self.errors += 1;
            self.stats.errors += 1;
        }
        if dnvm_status_hdu(word) == DNVM_HDU_ERR_ABORTED {
            self.stats.aborted += 1;
        }
        self.stats.entries += 1;
        b.completed += 1;
    }

    fn poll_ctrl(&mut self, mem: &GuestMem) -> bool {
        let Some(p) = self.privileged else { return false };
        let Ok(ctrl) = mem.load64(p + HduPrivReg::Ctrl.offset() as u64) else { return false };
        if ctrl & HDU_CTRL_RESET == 0 || matches!(self.state, State::Resetting { .. }) {
            return false;
        }
        let batch = match std::mem::replace(&mut self.state, State::Idle) {
            State::Busy(b) => Some(b),
            _ => None,
        };
        let mut queued = self.queued.take();
        // Held (stuck) batch: the queued one is all that is left to abort.
        let batch = batch.or_else(|| queued.take());
        self.pstatus |= HDU_PSTATUS_RESETTING;
        self.done = false;
        self.state = State::Resetting { batch, queued, qreset: ctrl & HDU_CTRL_QRESET != 0, since: Instant::now() };
        true
    }

    fn step_reset(&mut self, mem: &GuestMem) -> bool {
        let State::Resetting { mut batch, mut queued, qreset, since } = std::mem::replace(&mut self.state, State::Idle) else {
            return false;
        };
        let aborted = dnvm_status(0, DNVM_HDU_ERR_ABORTED);
        if let Some(b) = batch.as_mut() {
            // Entries not yet at the SSD are aborted now; unfetched ones too.
            let pending: Vec<u32> = self.engines.iter_mut().flat_map(|e| e.pending.drain(..).map(|(k, _)| k)).collect();
            for key in pending {
                if let Some(t) = batch_of(key, b, &mut queued) {
                    self.complete_entry(mem, t, key & !GEN_BIT, aborted);
                }
            }
            for t in std::iter::once(&mut *b).chain(queued.as_mut()) {
                while t.fetched < t.nreqs {
                    let idx = t.fetched;
                    t.fetched += 1;
                    self.complete_entry(mem, t, idx, aborted);
                }
            }
            // Commands at the SSD: wait for their CQEs, report them aborted.
            for i in 0..self.engines.len() {
                let mut consumed = false;
                while let Some(cqe) = self.engines[i].pop_cqe(mem) {
                    consumed = true;
                    if let Some(key) = self.engines[i].complete_rev2(&cqe) {
                        if let Some(t) = batch_of(key, b, &mut queued) {
                            self.complete_entry(mem, t, key & !GEN_BIT, aborted);
                        }
                    }
                }
                if consumed {
                    self.engines[i].ring_cq(mem);
                    self.stats.cq_doorbells += 1;
                }
            }
        }
        let in_flight: usize = self.engines.iter().map(|e| e.in_flight()).sum();
        if in_flight > 0 && since.elapsed() < RESET_DRAIN {
            self.state = State::Resetting { batch, queued, qreset, since };
            return false;
        }
        for e in self.engines.iter_mut() {
            e.forget();
            if qreset {
                e.reset_queues(mem);
            }
        }
        self.done = false;
        self.errors = 0;
        self.pstatus = 0;
        self.stats.resets += 1;
        if let Some(p) = self.privileged {
            let _ = mem.store64(p + HduPrivReg::Ctrl.offset() as u64, 0);
        }
        true
    }
}

/// The batch an entry key belongs to: the running one or the one queued behind it.
fn batch_of<'a>(key: u32, b: &'a mut Batch, q: &'a mut Option<Batch>) -> Option<&'a mut Batch> {
    if key & GEN_BIT == b.key {
        Some(b)
    } else {
        q.as_mut().filter(|q| key & GEN_BIT == q.key)
    }
}

fn in_window(w: (u64, u64), addr: u64, len: u64) -> bool {
    addr >= w.0 && addr.checked_add(len).is_some_and(|end| end <= w.1)
}
