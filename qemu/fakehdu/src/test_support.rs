// SPDX-License-Identifier: MIT OR Apache-2.0
//! Host-side helpers for in-process tests: a minimal NVMe host driver that does the admin
//! bring-up the kernel's directnvm_drv does on the board (reset, admin queues, identify,
//! number of queues, arbitration, one I/O queue pair per engine at the queue-window addresses),
//! plus HDU helpers (program a rev 2 DMA window, write staging entries, run a batch).
//!
//! This is test support, not a driver: it uses the first 64 KiB of the carve-out for the admin
//! queues and identify buffer (the region the kernel layout reserves for admin use).

use std::time::{Duration, Instant};

use directnvm_abi::*;

use crate::board::Board;
use crate::mem::GuestMem;
use crate::nvme::spec::{self, cq_doorbell, feat, sq_doorbell, Cqe, Sqe};

/// Admin queue entries used by the bring-up.
const ADMIN_DEPTH: u32 = 32;

/// Bring-up parameters.
#[derive(Clone, Debug)]
pub struct BringUp {
    /// Enable WRR with urgent class (CC.AMS = 001b).
    pub wrr: bool,
    /// Arbitration feature value (AB | LPW << 8 | MPW << 16 | HPW << 24); `None` leaves it.
    pub arbitration: Option<u32>,
    /// Engines per HDU (I/O queue pairs per HDU).
    pub engines: u32,
    /// Number of HDUs whose queues to create.
    pub hdus: u32,
    /// Entries of each I/O queue.
    pub depth: u32,
    /// I/O queue pairs to ask for with Set Features Number of Queues (default: the engine
    /// queues; ask for more to create extra host queues in tests).
    pub num_queues: Option<u32>,
}

impl BringUp {
    /// The queues a board needs, with WRR enabled.
    pub fn for_board(board: &Board) -> Self {
        Self {
            wrr: true,
            arbitration: None,
            engines: board.engines_per_hdu,
            hdus: board.hdus.len() as u32,
            depth: board.io_queue_depth,
            num_queues: None,
        }
    }
}

/// What Identify reported.
#[derive(Clone, Debug)]
pub struct Identified {
    /// Model number (trimmed).
    pub model: String,
    /// Serial number (trimmed).
    pub serial: String,
    /// MDTS.
    pub mdts: u8,
    /// Namespace size in LBAs.
    pub nsze: u64,
    /// LBA data size (log2).
    pub lbads: u8,
    /// Number of queues granted (0-based NSQA, NCQA).
    pub queues: (u16, u16),
}

/// A minimal polled NVMe host on the admin queue.
pub struct HostNvme {
    mem: GuestMem,
    bar: u64,
    asq: u64,
    acq: u64,
    buf: u64,
    sq_tail: u32,
    cq_head: u32,
    phase: bool,
    cid: u16,
    timeout: Duration,
}

/// Called while waiting: step the device (deterministic tests) or sleep (polling thread).
pub type Pump<'a> = &'a mut dyn FnMut();

impl HostNvme {
    /// A host for the controller of `board`. Every method that waits takes a `pump`.
    pub fn new(mem: &GuestMem, board: &Board) -> Self {
        let c = board.carveout;
        Self {
            mem: mem.clone(),
            bar: board.nvme_bar,
            asq: c,
            acq: c + 0x4000,
            buf: c + 0x8000,
            sq_tail: 0,
            cq_head: 0,
            phase: true,
            cid: 0,
            timeout: Duration::from_secs(10),
        }
    }

    fn wait(&mut self, pump: Pump, what: &str, mut f: impl FnMut(&GuestMem) -> bool) -> crate::Result<()> {
        let t0 = Instant::now();
        while !f(&self.mem) {
            if t0.elapsed() > self.timeout {
                return Err(crate::Error::BringUp(format!("timeout waiting for {what}")));
            }
            pump();
        }
        Ok(())
    }

    fn reg32(&self, off: u64) -> u32 {
        self.mem.load32(self.bar + off).unwrap_or(0)
    }

    /// Disable, program the admin queues, enable with `wrr`, wait for RDY.
    pub fn enable(&mut self, pump: Pump, wrr: bool) -> crate::Result<()> {
        let m = &self.mem;
        m.store32(self.bar + spec::r(spec::reg::CC), 0).map_err(bu)?;
        let bar = self.bar;
        self.wait(pump, "CSTS.RDY = 0", |m| m.load32(bar + spec::r(spec::reg::CSTS)).unwrap_or(1) & spec::CSTS_RDY == 0)?;
        let m = &self.mem;
        m.fill(self.asq, u64::from(ADMIN_DEPTH) * 64, 0).map_err(bu)?;
        m.fill(self.acq, u64::from(ADMIN_DEPTH) * 16, 0).map_err(bu)?;
        m.store32(self.bar + spec::r(spec::reg::AQA), spec::aqa(ADMIN_DEPTH)).map_err(bu)?;
        m.store64(self.bar + spec::r(spec::reg::ASQ), self.asq).map_err(bu)?;
        m.store64(self.bar + spec::r(spec::reg::ACQ), self.acq).map_err(bu)?;
        m.store32(self.bar + spec::r(spec::reg::CC), spec::cc_enable(wrr)).map_err(bu)?;
        self.sq_tail = 0;
        self.cq_head = 0;
        self.phase = true;
        self.wait(pump, "CSTS.RDY = 1", |m| {
            m.load32(bar + spec::r(spec::reg::CSTS)).unwrap_or(0) & (spec::CSTS_RDY | spec::CSTS_CFS) != 0
        })?;
        if self.reg32(spec::r(spec::reg::CSTS)) & spec::CSTS_CFS != 0 {
            return Err(crate::Error::BringUp("controller fatal status after enable".into()));
        }
        Ok(())
    }

    /// Submit one admin command and wait for its completion.
    pub fn admin(&mut self, pump: Pump, mut sqe: Sqe) -> crate::Result<Cqe> {
        self.cid = self.cid.wrapping_add(1);
        sqe.cid = self.cid;
        let m = self.mem.clone();
        m.write(self.asq + u64::from(self.sq_tail) * 64, &sqe.to_bytes()).map_err(bu)?;
        self.sq_tail = (self.sq_tail + 1) % ADMIN_DEPTH;
        m.store32(sq_doorbell(self.bar, 0), self.sq_tail).map_err(bu)?;
        let addr = self.acq + u64::from(self.cq_head) * 16;
        let phase = self.phase;
        self.wait(pump, "admin completion", |m| m.load32(addr + spec::CQE_DW3 as u64).map(spec::cqe_phase) == Ok(phase))?;
        let mut b = [0u8; 16];
        m.read(addr, &mut b).map_err(bu)?;
        let (cqe, _) = Cqe::decode(&b);
        self.cq_head += 1;
        if self.cq_head == ADMIN_DEPTH {
            self.cq_head = 0;
            self.phase = !self.phase;
        }
        m.store32(cq_doorbell(self.bar, 0), self.cq_head).map_err(bu)?;
        Ok(cqe)
    }

    /// Admin command that must succeed.
    pub fn admin_ok(&mut self, pump: Pump, sqe: Sqe) -> crate::Result<Cqe> {
        let op = sqe.opcode;
        let c = self.admin(pump, sqe)?;
        if c.status != 0 {
            return Err(crate::Error::BringUp(format!("admin opcode {op:#x} failed with status {:#x}", c.status)));
        }
        Ok(c)
    }

    /// Guest address of the 4 KiB identify/scratch buffer.
    pub fn buffer(&self) -> u64 {
        self.buf
    }

    /// Identify controller and namespace 1.
    pub fn identify(&mut self, pump: Pump) -> crate::Result<Identified> {
        let mut b = [0u8; 4096];
        self.admin_ok(pump, Sqe::identify(1, 0, self.buf))?;
        self.mem.read(self.buf, &mut b).map_err(bu)?;
        let s = |r: std::ops::Range<usize>| String::from_utf8_lossy(&b[r]).trim().to_string();
        let (model, serial, mdts) = (s(24..64), s(4..24), b[77]);
        self.admin_ok(pump, Sqe::identify(0, 1, self.buf))?;
        self.mem.read(self.buf, &mut b).map_err(bu)?;
        let nsze = u64::from_le_bytes(b[0..8].try_into().map_err(|_| crate::Error::BringUp("short identify".into()))?);
        Ok(Identified { model, serial, mdts, nsze, lbads: b[130], queues: (0, 0) })
    }

    /// Create I/O CQ + SQ `qid` of `depth` entries at `sq`/`cq` with `qprio`.
    pub fn create_queue_pair(&mut self, pump: Pump, qid: u16, sq: u64, cq: u64, depth: u32, qprio: u32) -> crate::Result<()> {
        self.mem.fill(cq, u64::from(depth) * 16, 0).map_err(bu)?;
        self.admin_ok(pump, Sqe::create_io_cq(qid, depth, cq))?;
        self.admin_ok(pump, Sqe::create_io_sq(qid, depth, qprio, sq))?;
        Ok(())
    }

    /// The full bring-up of the board's engine queues.
    pub fn bring_up(&mut self, pump: Pump, board: &Board, p: &BringUp) -> crate::Result<Identified> {
        self.enable(pump, p.wrr)?;
        let mut id = self.identify(pump)?;
        if id.lbads != 9 {
            return Err(crate::Error::BringUp(format!("namespace LBA size 2^{} is not 512", id.lbads)));
        }
        let n = p.num_queues.unwrap_or(p.hdus * p.engines).max(1);
        let c = self.admin_ok(pump, Sqe::set_features(feat::NUM_QUEUES, spec::num_queues(n, n)))?;
        id.queues = (c.dw0 as u16, (c.dw0 >> 16) as u16);
        if let Some(a) = p.arbitration {
            self.admin_ok(pump, Sqe::set_features(feat::ARBITRATION, a))?;
        }
        for h in 0..p.hdus {
            for e in 0..p.engines {
                let qid = dnvm_qid(h, e, p.engines);
                let base = board.queue_base(qid).ok_or_else(|| crate::Error::BringUp("queue window too small".into()))?;
                let qprio = dnvm_engine_qprio(e, p.engines);
                self.create_queue_pair(pump, qid, base + DNVM_QWIN_SQ_OFFSET, base + DNVM_QWIN_CQ_OFFSET, p.depth, qprio)?;
            }
        }
        Ok(id)
    }
}

/// Program a rev 2 HDU's DMA window (what hdu_drv does at probe).
pub fn program_window(mem: &GuestMem, board: &Board, hdu: usize, base: u64, limit: u64) -> crate::Result<()> {
    let p = board.hdus.get(hdu).and_then(|h| h.privileged).ok_or_else(|| crate::Error::BringUp("HDU has no privileged page".into()))?;
    mem.store64(p + HDU_PRIV_DMA_BASE as u64, base).map_err(bu)?;
    mem.store64(p + HDU_PRIV_DMA_LIMIT as u64, limit).map_err(bu)
}

/// Write staging entries at `addr`.
pub fn write_entries(mem: &GuestMem, addr: u64, entries: &[DnvmEntry]) -> crate::Result<()> {
    for (i, e) in entries.iter().enumerate() {
        let mut b = [0u8; DNVM_ENTRY_SIZE];
        b[0..2].copy_from_slice(&e.op.to_le_bytes());
        b[2..4].copy_from_slice(&e.urgency.to_le_bytes());
        b[4..8].copy_from_slice(&e.block_size.to_le_bytes());
        b[8..16].copy_from_slice(&e.data_addr.to_le_bytes());
        b[16..24].copy_from_slice(&e.lba.to_le_bytes());
        mem.write(addr + (i * DNVM_ENTRY_SIZE) as u64, &b).map_err(bu)?;
    }
    Ok(())
}

/// Program REQBUF / NREQS (/ STATUSBUF if given) of HDU `hdu` and store START, the way
/// software must: 64-bit REQBUF store, then NREQS, then START.
pub fn start_batch(mem: &GuestMem, board: &Board, hdu: usize, reqbuf: u64, nreqs: u32, statusbuf: Option<u64>) -> crate::Result<()> {
    let u = board.hdus.get(hdu).ok_or_else(|| crate::Error::BringUp("no such HDU".into()))?.user;
    let e = |r: Result<(), crate::mem::MemFault>| r.map_err(bu);
    e(mem.store64(u + HDU_REG_REQBUF as u64, reqbuf))?;
    e(mem.store64(u + HDU_REG_NREQS as u64, u64::from(nreqs)))?;
    if let Some(s) = statusbuf {
        e(mem.store64(u + HDU_REG_STATUSBUF as u64, s))?;
    }
    e(mem.store64(u + HDU_REG_START as u64, HDU_START_GO))
}

/// Read HDU `hdu`'s DONE register.
pub fn done_reg(mem: &GuestMem, board: &Board, hdu: usize) -> u64 {
    board.hdus.get(hdu).and_then(|h| mem.load64(h.user + HDU_REG_DONE as u64).ok()).unwrap_or(0)
}

/// Read HDU `hdu`'s START register (the model clears it when it takes the pulse).
pub fn start_reg(mem: &GuestMem, board: &Board, hdu: usize) -> u64 {
    board.hdus.get(hdu).and_then(|h| mem.load64(h.user + HDU_REG_START as u64).ok()).unwrap_or(1)
}

/// A guest-memory access of the bring-up failed.
fn bu(e: impl std::fmt::Debug) -> crate::Error {
    crate::Error::BringUp(format!("guest memory: {e:?}"))
}
