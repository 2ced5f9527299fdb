// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rev 1 batches: batch-synchronous, sub-batches of <= 31, exactly like the RTL's SQM/CQM.

use directnvm_abi::*;

use super::{fetch, Batch, Hdu, State};
use crate::faults::Faults;
use crate::mem::GuestMem;

impl Hdu {
    pub(super) fn step_rev1(&mut self, mem: &GuestMem, faults: &mut Faults) -> bool {
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

    pub(super) fn fetch_rev1(&mut self, mem: &GuestMem, b: &mut Batch) {
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
}
