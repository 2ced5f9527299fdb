// SPDX-License-Identifier: MIT OR Apache-2.0
//! The HDU (hardware dispatch unit): the register page software writes, the batch state
//! machine behind START/DONE, and (rev 2) the privileged page, status words and urgency
//! routing. The registers live in guest memory; the model polls START and CTRL.

pub mod engine;
pub mod fetch;
mod reset;
mod rev1;
mod rev2;

use std::collections::VecDeque;
use std::time::Instant;

use directnvm_abi::*;

use crate::faults::Faults;
use crate::mem::GuestMem;
use crate::stats::HduStats;
use engine::Engine;

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
