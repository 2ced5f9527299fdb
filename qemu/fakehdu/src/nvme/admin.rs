// SPDX-License-Identifier: MIT OR Apache-2.0
//! Admin command set: Identify, Get/Set Features, Create/Delete I/O queues, Get Log Page,
//! Abort, Asynchronous Event Request.

use super::controller::{Controller, Cq, Sq};
use super::identify;
use super::prp;
use super::spec::*;
use crate::mem::GuestMem;

fn dnr(status: u16) -> u16 {
    status | sc::DNR
}

impl Controller {
    /// Execute an admin command. `None` means no completion now (AER kept outstanding).
    pub(crate) fn admin(&mut self, mem: &GuestMem, _now: u64, sqe: &Sqe) -> Option<(u16, u32)> {
        if sqe.fuse != 0 || sqe.psdt != 0 {
            return Some((dnr(sc::INVALID_FIELD), 0));
        }
        let r = match sqe.opcode {
            admin::IDENTIFY => self.identify(mem, sqe),
            admin::SET_FEATURES => self.set_features(sqe),
            admin::GET_FEATURES => self.get_features(sqe),
            admin::CREATE_CQ => self.create_cq(mem, sqe),
            admin::CREATE_SQ => self.create_sq(mem, sqe),
            admin::DELETE_SQ => self.delete_sq(mem, sqe),
            admin::DELETE_CQ => self.delete_cq(mem, sqe),
            admin::GET_LOG_PAGE => self.get_log_page(mem, sqe),
            admin::ABORT => Ok(1), // DW0 bit 0 = 1: command not aborted
            admin::ASYNC_EVENT => {
                if self.aer_outstanding > 3 {
                    Err(sc::AER_LIMIT)
                } else {
                    // Held until reset: this controller reports no asynchronous events.
                    self.aer_outstanding += 1;
                    return None;
                }
            }
            _ => Err(dnr(sc::INVALID_OPCODE)),
        };
        Some(match r {
            Ok(dw0) => (sc::SUCCESS, dw0),
            Err(s) => (s, 0),
        })
    }

    fn to_host(&self, mem: &GuestMem, sqe: &Sqe, data: &[u8]) -> Result<u32, u16> {
        if !sqe.prp1.is_multiple_of(4) {
            return Err(dnr(sc::INVALID_PRP_OFFSET));
        }
        let segs = prp::segments(mem, sqe.prp1, sqe.prp2, data.len() as u64).map_err(dnr)?;
        let mut off = 0usize;
        for (addr, len) in segs {
            let len = len as usize;
            mem.write(addr, &data[off..off + len]).map_err(|_| sc::DATA_TRANSFER_ERROR)?;
            off += len;
        }
        Ok(0)
    }

    fn identify(&mut self, mem: &GuestMem, sqe: &Sqe) -> Result<u32, u16> {
        let cns = sqe.cdw10() & 0xff;
        let data = match cns {
            0x00 => {
                if sqe.nsid != 1 {
                    return Err(dnr(sc::INVALID_NAMESPACE));
                }
                identify::namespace(self.ns_blocks())
            }
            0x01 => identify::controller(&self.cfg.serial, self.cfg.mdts),
            0x02 => {
                if sqe.nsid >= 0xffff_fffe {
                    return Err(dnr(sc::INVALID_NAMESPACE));
                }
                identify::active_ns_list(sqe.nsid)
            }
            _ => return Err(dnr(sc::INVALID_FIELD)),
        };
        self.to_host(mem, sqe, &data)
    }

    fn set_features(&mut self, sqe: &Sqe) -> Result<u32, u16> {
        if sqe.cdw10() & (1 << 31) != 0 {
            return Err(dnr(sc::FEATURE_NOT_SAVEABLE));
        }
        let v = sqe.cdw11();
        match sqe.feature_id() {
            feat::ARBITRATION => {
                self.arbitration = v & 0xffff_ff07;
                Ok(0)
            }
            feat::VOLATILE_WC => {
                self.vwc = v & 1 != 0;
                Ok(0)
            }
            feat::NUM_QUEUES => {
                let (nsqr, ncqr) = (v & 0xffff, v >> 16);
                if nsqr == 0xffff || ncqr == 0xffff {
                    return Err(dnr(sc::INVALID_FIELD));
                }
                if self.sqs.iter().skip(1).any(|q| q.is_some()) || self.cqs.iter().skip(1).any(|q| q.is_some()) {
                    return Err(dnr(sc::COMMAND_SEQUENCE));
                }
                let max = u32::from(self.cfg.max_io_queues) - 1;
                self.nsq = (nsqr.min(max) + 1) as u16;
                self.ncq = (ncqr.min(max) + 1) as u16;
                Ok(self.num_queues_dw0())
            }
            _ => Err(dnr(sc::INVALID_FIELD)),
        }
    }

    fn num_queues_dw0(&self) -> u32 {
        num_queues(u32::from(self.nsq), u32::from(self.ncq))
    }

    fn get_features(&mut self, sqe: &Sqe) -> Result<u32, u16> {
        let sel = (sqe.cdw10() >> 8) & 7;
        if sel == 3 {
            // Supported capabilities: not saveable, not namespace specific, changeable.
            return Ok(1 << 2);
        }
        if sel > 3 {
            return Err(dnr(sc::INVALID_FIELD));
        }
        let default = sel == 1;
        match sqe.feature_id() {
            feat::ARBITRATION => Ok(if default { 0 } else { self.arbitration }),
            feat::VOLATILE_WC => Ok(u32::from(default || self.vwc)),
            feat::NUM_QUEUES => Ok(if default {
                let m = u32::from(self.cfg.max_io_queues) - 1;
                m | (m << 16)
            } else {
                self.num_queues_dw0()
            }),
            _ => Err(dnr(sc::INVALID_FIELD)),
        }
    }

    fn queue_size(&self, sqe: &Sqe) -> Result<u32, u16> {
        let size = sqe.queue_entries();
        if size < 2 || size > self.cfg.max_queue_entries {
            return Err(dnr(sc::INVALID_QSIZE));
        }
        Ok(size)
    }

    fn create_cq(&mut self, mem: &GuestMem, sqe: &Sqe) -> Result<u32, u16> {
        let qid = sqe.queue_id();
        if qid == 0 || qid > self.ncq || self.cqs.get(usize::from(qid)).is_none_or(|q| q.is_some()) {
            return Err(dnr(sc::INVALID_QID));
        }
        let size = self.queue_size(sqe)?;
        if sqe.cdw11() & 1 == 0 {
            return Err(dnr(sc::INVALID_FIELD)); // CAP.CQR: physically contiguous only
        }
        if !sqe.prp1.is_multiple_of(4096) {
            return Err(dnr(sc::INVALID_PRP_OFFSET));
        }
        if cc_iocqes(self.cc_value()) != 4 || !mem.contains(sqe.prp1, u64::from(size) * 16) {
            return Err(dnr(sc::INVALID_FIELD));
        }
        self.cqs[usize::from(qid)] = Some(Cq { base: sqe.prp1, size, tail: 0, head: 0, phase: true });
        let _ = mem.store32(cq_doorbell(self.bar, qid), 0);
        Ok(0)
    }

    fn create_sq(&mut self, mem: &GuestMem, sqe: &Sqe) -> Result<u32, u16> {
        let qid = sqe.queue_id();
        let cdw11 = sqe.cdw11();
        let cqid = (cdw11 >> 16) as u16;
        if qid == 0 || qid > self.nsq || self.sqs.get(usize::from(qid)).is_none_or(|q| q.is_some()) {
            return Err(dnr(sc::INVALID_QID));
        }
        if cqid == 0 || self.cqs.get(usize::from(cqid)).is_none_or(|q| q.is_none()) {
            return Err(dnr(sc::CQ_INVALID));
        }
        let size = self.queue_size(sqe)?;
        if cdw11 & 1 == 0 {
            return Err(dnr(sc::INVALID_FIELD));
        }
        if !sqe.prp1.is_multiple_of(4096) {
            return Err(dnr(sc::INVALID_PRP_OFFSET));
        }
        if cc_iosqes(self.cc_value()) != 6 || !mem.contains(sqe.prp1, u64::from(size) * 64) {
            return Err(dnr(sc::INVALID_FIELD));
        }
        let qprio = ((cdw11 >> 1) & 3) as u8;
        let generation = self.next_generation();
        self.sqs[usize::from(qid)] = Some(Sq { base: sqe.prp1, size, cqid, qprio, head: 0, tail: 0, generation });
        let _ = mem.store32(sq_doorbell(self.bar, qid), 0);
        Ok(0)
    }

    fn delete_sq(&mut self, mem: &GuestMem, sqe: &Sqe) -> Result<u32, u16> {
        let qid = sqe.queue_id();
        if qid == 0 || self.sqs.get(usize::from(qid)).is_none_or(|q| q.is_none()) {
            return Err(dnr(sc::INVALID_QID));
        }
        self.abort_sq(mem, qid);
        self.sqs[usize::from(qid)] = None;
        Ok(0)
    }

    fn delete_cq(&mut self, _mem: &GuestMem, sqe: &Sqe) -> Result<u32, u16> {
        let qid = sqe.queue_id();
        if qid == 0 || self.cqs.get(usize::from(qid)).is_none_or(|q| q.is_none()) {
            return Err(dnr(sc::INVALID_QID));
        }
        if self.sqs.iter().skip(1).flatten().any(|s| s.cqid == qid) {
            return Err(dnr(sc::INVALID_QUEUE_DELETION));
        }
        self.cqs[usize::from(qid)] = None;
        Ok(0)
    }

    fn get_log_page(&mut self, mem: &GuestMem, sqe: &Sqe) -> Result<u32, u16> {
        let lid = sqe.cdw10() & 0xff;
        let numd = u64::from((sqe.cdw10() >> 16) & 0xfff) | (u64::from(sqe.cdw11() & 0xffff) << 12);
        let len = (numd + 1) * 4;
        if len > 16384 {
            return Err(dnr(sc::INVALID_FIELD));
        }
        let mut data = vec![0u8; len as usize];
        match lid {
            0x01 | 0x03 => {}
            0x02 => {
                // SMART / Health: composite temperature 313 K, available spare 100%.
                if data.len() >= 4 {
                    data[1..3].copy_from_slice(&313u16.to_le_bytes());
                    data[3] = 100;
                }
            }
            _ => return Err(dnr(sc::INVALID_LOG_PAGE)),
        }
        self.to_host(mem, sqe, &data)
    }
}
