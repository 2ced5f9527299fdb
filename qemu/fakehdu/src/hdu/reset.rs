// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rev 2 reset through the privileged page: abort the running and the queued batch, drain
//! the commands at the SSD (at most `RESET_DRAIN`), then clear the HDU.

use std::time::{Duration, Instant};

use directnvm_abi::*;

use super::{batch_of, Hdu, State, GEN_BIT};
use crate::mem::GuestMem;

/// How long a rev 2 reset waits for commands already at the SSD before forgetting them.
const RESET_DRAIN: Duration = Duration::from_secs(1);

impl Hdu {
    pub(super) fn poll_ctrl(&mut self, mem: &GuestMem) -> bool {
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

    pub(super) fn step_reset(&mut self, mem: &GuestMem) -> bool {
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
