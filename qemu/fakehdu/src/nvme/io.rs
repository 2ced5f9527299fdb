// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVM command set: Read, Write, Flush (validation at fetch, data movement at completion).

use super::controller::{Controller, InFlight, Work};
use super::prp;
use super::spec::*;
use crate::faults::Faults;
use crate::mem::GuestMem;
use crate::timing::MediaOp;

impl Controller {
    /// Validate a fetched I/O command and schedule it.
    pub(crate) fn start_io(&mut self, mem: &GuestMem, now: u64, sqid: u16, sqe: &Sqe, faults: &mut Faults) -> InFlight {
        match self.check_io(mem, sqe) {
            Err(status) => self.new_inflight(sqid, sqe.cid, now, status, Work::None),
            Ok(work) => {
                let (op, slba, bytes) = match &work {
                    Work::Read { slba, segs } => (MediaOp::Read, *slba, segs.iter().map(|s| s.1).sum()),
                    Work::Write { slba, segs } => (MediaOp::Write, *slba, segs.iter().map(|s| s.1).sum()),
                    _ => (MediaOp::Flush, 0, 0),
                };
                let done = if self.timed { self.ssd.schedule(now, op, slba, bytes) } else { now };
                let injected = if matches!(work, Work::Flush) {
                    faults.io_status(sqe.opcode, 0, u64::MAX)
                } else {
                    faults.io_status(sqe.opcode, slba, bytes / 512)
                };
                match injected {
                    Some(status) => self.new_inflight(sqid, sqe.cid, done, status, Work::None),
                    None => self.new_inflight(sqid, sqe.cid, done, 0, work),
                }
            }
        }
    }

    fn check_io(&self, mem: &GuestMem, sqe: &Sqe) -> Result<Work, u16> {
        let dnr = |s: u16| s | sc::DNR;
        if sqe.fuse != 0 || sqe.psdt != 0 {
            return Err(dnr(sc::INVALID_FIELD));
        }
        match sqe.opcode {
            io::FLUSH => {
                if sqe.nsid != 1 && sqe.nsid != 0xffff_ffff {
                    return Err(dnr(sc::INVALID_NAMESPACE));
                }
                Ok(Work::Flush)
            }
            io::READ | io::WRITE => {
                if sqe.nsid != 1 {
                    return Err(dnr(sc::INVALID_NAMESPACE));
                }
                let slba = sqe.slba();
                let n = u64::from(sqe.nblocks());
                if slba.checked_add(n).is_none_or(|end| end > self.ns_blocks()) {
                    return Err(dnr(sc::LBA_OUT_OF_RANGE));
                }
                let bytes = n * 512;
                if bytes > self.max_transfer() {
                    return Err(dnr(sc::INVALID_FIELD));
                }
                if !sqe.prp1.is_multiple_of(4) {
                    return Err(dnr(sc::INVALID_PRP_OFFSET));
                }
                let segs = prp::segments(mem, sqe.prp1, sqe.prp2, bytes).map_err(dnr)?;
                Ok(if sqe.opcode == io::READ { Work::Read { slba, segs } } else { Work::Write { slba, segs } })
            }
            _ => Err(dnr(sc::INVALID_OPCODE)),
        }
    }

    /// Move the data of a completed command; returns its status.
    pub(crate) fn transfer(&mut self, mem: &GuestMem, work: &Work) -> u16 {
        match work {
            Work::None => sc::SUCCESS,
            Work::Flush => {
                self.stats.flushes += 1;
                match self.disk.flush() {
                    Ok(()) => sc::SUCCESS,
                    Err(_) => sc::INTERNAL_ERROR,
                }
            }
            Work::Read { slba, segs } => {
                self.stats.reads += 1;
                let total: u64 = segs.iter().map(|s| s.1).sum();
                let mut buf = vec![0u8; total as usize];
                if self.disk.read_at(slba * 512, &mut buf).is_err() {
                    return sc::UNRECOVERED_READ;
                }
                let mut off = 0usize;
                for &(addr, len) in segs {
                    if mem.write(addr, &buf[off..off + len as usize]).is_err() {
                        return sc::DATA_TRANSFER_ERROR;
                    }
                    off += len as usize;
                }
                self.stats.bytes_read += total;
                sc::SUCCESS
            }
            Work::Write { slba, segs } => {
                self.stats.writes += 1;
                let total: u64 = segs.iter().map(|s| s.1).sum();
                let mut buf = vec![0u8; total as usize];
                let mut off = 0usize;
                for &(addr, len) in segs {
                    if mem.read(addr, &mut buf[off..off + len as usize]).is_err() {
                        return sc::DATA_TRANSFER_ERROR;
                    }
                    off += len as usize;
                }
                if self.disk.write_at(slba * 512, &buf).is_err() {
                    return sc::WRITE_FAULT;
                }
                self.stats.bytes_written += total;
                sc::SUCCESS
            }
        }
    }
}
