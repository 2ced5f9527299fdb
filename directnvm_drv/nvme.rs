// SPDX-License-Identifier: GPL-2.0-only OR MIT
//! NVMe controller bring-up for the DirectNVM engines, in `core`-only Rust.
//!
//! The kernel module runs it against the controller's BAR window and the admin region of the
//! carve-out; the userspace in-process backend (host tests against the device model) includes
//! the same file, so there is one implementation of the admin protocol. Every wait is bounded
//! by CAP.TO; every failure returns an `NvmeError` naming the step and the NVMe status.

use crate::abi::{
    dnvm_engine_qprio, dnvm_qid, DnvmArbitration, DnvmInfo, DNVM_INFO_READY, DNVM_INFO_WRR, DNVM_LBA_SIZE, DNVM_QWIN_CQ_OFFSET,
    DNVM_QWIN_QUEUE_STRIDE, DNVM_QWIN_SQ_OFFSET,
};

// NVMe spec numbers: one copy, in the shared ABI (also used by the controller model).
use crate::abi::nvme::{
    admin as opc, feat as fid, reg, CAP_AMS_WRR, CC_AMS_SHIFT, CC_AMS_WRR, CC_EN, CC_IOQES, CC_SHN_NORMAL, CC_SHN_SHIFT, CQE_SIZE,
    CSTS_CFS, CSTS_RDY, CSTS_SHST_COMPLETE, CSTS_SHST_MASK, SQE_SIZE,
};

/// Entries in each admin queue (matches the admin region layout: one page each).
pub const ADMIN_ENTRIES: u16 = 64;
/// Arbitration programmed at bring-up: burst 8, weights high 128, medium 32, low 8.
pub const DEFAULT_ARBITRATION: DnvmArbitration = DnvmArbitration { burst: 3, high: 127, medium: 31, low: 7 };

/// What went wrong, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvmeError {
    /// CAP reads 0 or all ones: nothing answers in the BAR window.
    NoController,
    /// A register or admin-memory access failed (out of the mapped window, device gone).
    Bus,
    /// A wait ran out; the payload names the step.
    Timeout(&'static str),
    /// CSTS.CFS: the controller reported a fatal status.
    Fatal,
    /// CSTS.RDY = 0 on a controller the driver had enabled: it was reset or power-cycled
    /// behind the driver (queues and commands in flight are gone).
    Lost,
    /// An admin command completed with a non-zero status (SC | SCT << 8 | ...).
    Status {
        /// Opcode of the failed command.
        opcode: u8,
        /// Status field of the CQE (DW3 bits 31:17).
        status: u16,
    },
    /// A completion carried an unexpected command identifier.
    BadCompletion,
    /// Namespace 1 does not use a 512-byte LBA format without metadata.
    BadLbaFormat,
    /// The controller has fewer I/O queues than the engines need (payload: granted).
    TooFewQueues(u32),
    /// The configuration asks for something the controller or the DT cannot give.
    BadConfig(&'static str),
}

/// Access to the controller and to the admin region, provided by the caller.
pub trait NvmeHost {
    /// 32-bit register read at byte offset `off` of the BAR window.
    fn rd32(&self, off: usize) -> Result<u32, NvmeError>;
    /// 32-bit register write (ordered after every earlier memory write, like `writel`).
    fn wr32(&self, off: usize, val: u32) -> Result<(), NvmeError>;
    /// Read admin-region bytes at byte offset `off`.
    fn mem_read(&self, off: usize, buf: &mut [u8]) -> Result<(), NvmeError>;
    /// Write admin-region bytes at byte offset `off`.
    fn mem_write(&self, off: usize, buf: &[u8]) -> Result<(), NvmeError>;
    /// Bus address of admin-region offset 0, as the controller sees it.
    fn mem_bus(&self) -> u64;
    /// Order the load of a CQE's phase bit before the loads of its other fields (dma_rmb).
    fn read_barrier(&self);
    /// Sleep about `us` microseconds.
    fn sleep_us(&self, us: u32);
}

/// Engine and queue configuration from the device tree.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Number of HDUs.
    pub cores: u32,
    /// Engines per HDU.
    pub engines: u32,
    /// Entries of each I/O queue.
    pub io_queue_depth: u32,
    /// Bus address of the engines' queue memory.
    pub queue_window_base: u64,
    /// Size of the queue memory.
    pub queue_window_size: u64,
    /// Byte offsets of admin SQ, admin CQ and the identify page inside the admin region.
    pub admin_sq_off: usize,
    /// See `admin_sq_off`.
    pub admin_cq_off: usize,
    /// See `admin_sq_off`.
    pub admin_data_off: usize,
}

/// One entry of the admin command log (debugfs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogEntry {
    /// Opcode.
    pub opcode: u8,
    /// Command identifier.
    pub cid: u16,
    /// CDW10.
    pub cdw10: u32,
    /// Status field (0 = success, 0xffff = timeout).
    pub status: u16,
}

/// Entries kept in the admin command log: the whole bring-up of the largest configuration
/// (2 Identify, Number of Queues, Arbitration, and a Create CQ + SQ for each of
/// `DNVM_MAX_CORES` x `DNVM_MAX_ENGINES` queue pairs), plus room for later commands.
pub const LOG_ENTRIES: usize = 4 + 2 * crate::abi::DNVM_MAX_CORES * crate::abi::DNVM_MAX_ENGINES + 12;

/// State of an enabled controller.
#[derive(Clone, Copy, Debug)]
pub struct Controller {
    /// CAP register.
    pub cap: u64,
    /// VS register.
    pub vs: u32,
    /// Arbitration is WRR with urgent class (else round robin).
    pub wrr: bool,
    /// Serial number (Identify).
    pub serial: [u8; 20],
    /// Model number.
    pub model: [u8; 40],
    /// Firmware revision.
    pub firmware: [u8; 8],
    /// Maximum data transfer size in bytes (0 = no limit).
    pub max_transfer: u32,
    /// Namespace 1 size in LBAs.
    pub capacity_lbas: u64,
    /// Namespace LBA size in bytes.
    pub lba_size: u32,
    /// Arbitration currently programmed.
    pub arbitration: DnvmArbitration,
    /// I/O queue pairs created.
    pub io_queues: u32,
    /// Admin commands issued / failed.
    pub commands: u64,
    /// Admin commands that failed.
    pub errors: u64,
    /// Recent admin commands, a ring indexed by `commands % LOG_ENTRIES`.
    pub log: [LogEntry; LOG_ENTRIES],
    dstrd: u32,
    timeout_ms: u32,
    sq_tail: u16,
    cq_head: u16,
    phase: bool,
    next_cid: u16,
    cfg: Config,
}

impl Controller {
    /// Add what bring-up learned to a `DNVM_IOC_GET_INFO` reply (`Layout::info`).
    pub fn describe(&self, info: &mut DnvmInfo) {
        info.flags |= DNVM_INFO_READY | if self.wrr { DNVM_INFO_WRR } else { 0 };
        info.capacity_lbas = self.capacity_lbas;
        info.lba_size = self.lba_size;
        info.nvme_version = self.vs;
        info.serial = self.serial;
        info.model = self.model;
        info.firmware = self.firmware;
        // MDTS 0 means no limit; report 1 MiB, the largest transfer software should build.
        info.max_transfer = if self.max_transfer != 0 { self.max_transfer } else { 1 << 20 };
        let a = self.arbitration;
        info.arbitration = [a.burst as u8, a.high as u8, a.medium as u8, a.low as u8];
    }
}

fn rd64<H: NvmeHost>(h: &H, off: usize) -> Result<u64, NvmeError> {
    let lo = h.rd32(off)? as u64;
    let hi = h.rd32(off + 4)? as u64;
    Ok(lo | (hi << 32))
}

fn wr64<H: NvmeHost>(h: &H, off: usize, v: u64) -> Result<(), NvmeError> {
    h.wr32(off, v as u32)?;
    h.wr32(off + 4, (v >> 32) as u32)
}

/// Poll CSTS until `(csts & mask) == want`, for at most `timeout_ms`.
fn wait_csts<H: NvmeHost>(h: &H, mask: u32, want: u32, timeout_ms: u32, step: &'static str) -> Result<(), NvmeError> {
    let mut waited_us: u64 = 0;
    loop {
        let csts = h.rd32(reg::CSTS)?;
        if csts == u32::MAX {
            return Err(NvmeError::NoController);
        }
        if csts & mask == want {
            return Ok(());
        }
        if csts & CSTS_CFS != 0 && want & CSTS_RDY != 0 {
            return Err(NvmeError::Fatal);
        }
        if waited_us >= timeout_ms as u64 * 1000 {
            return Err(NvmeError::Timeout(step));
        }
        h.sleep_us(1000);
        waited_us += 1000;
    }
}

/// A 64-byte admin command.
#[derive(Clone, Copy, Default)]
struct Sqe {
    opcode: u8,
    nsid: u32,
    prp1: u64,
    cdw10: u32,
    cdw11: u32,
}

impl Sqe {
    fn bytes(&self, cid: u16) -> [u8; SQE_SIZE] {
        let mut b = [0u8; SQE_SIZE];
        b[0] = self.opcode;
        b[2..4].copy_from_slice(&cid.to_le_bytes());
        b[4..8].copy_from_slice(&self.nsid.to_le_bytes());
        b[24..32].copy_from_slice(&self.prp1.to_le_bytes());
        b[40..44].copy_from_slice(&self.cdw10.to_le_bytes());
        b[44..48].copy_from_slice(&self.cdw11.to_le_bytes());
        b
    }
}

impl Controller {
    fn doorbell(&self, qid: u16, cq: bool) -> usize {
        reg::DOORBELL + ((2 * qid as usize + cq as usize) * (4usize << self.dstrd))
    }

    fn record(&mut self, e: LogEntry) {
        self.log[(self.commands % LOG_ENTRIES as u64) as usize] = e;
        self.commands += 1;
        if e.status != 0 {
            self.errors += 1;
        }
    }

    /// Submit one admin command and wait for its completion; returns CQE DW0.
    fn admin<H: NvmeHost>(&mut self, h: &H, cmd: Sqe) -> Result<u32, NvmeError> {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        let slot = self.cfg.admin_sq_off + self.sq_tail as usize * SQE_SIZE;
        h.mem_write(slot, &cmd.bytes(cid))?;
        self.sq_tail = (self.sq_tail + 1) % ADMIN_ENTRIES;
        h.wr32(self.doorbell(0, false), self.sq_tail as u32)?;

        let cqe_off = self.cfg.admin_cq_off + self.cq_head as usize * CQE_SIZE;
        let mut waited_us: u64 = 0;
        let mut cqe = [0u8; CQE_SIZE];
        loop {
            let mut dw3 = [0u8; 4];
            h.mem_read(cqe_off + 12, &mut dw3)?;
            if (u32::from_le_bytes(dw3) >> 16) & 1 == self.phase as u32 {
                h.read_barrier();
                h.mem_read(cqe_off, &mut cqe)?;
                break;
            }
            if waited_us >= self.timeout_ms as u64 * 1000 {
                self.record(LogEntry { opcode: cmd.opcode, cid, cdw10: cmd.cdw10, status: 0xffff });
                return Err(NvmeError::Timeout("admin command"));
            }
            // Admin commands are rare: poll quickly at first, then back off.
            let step = if waited_us < 1000 { 10 } else { 1000 };
            h.sleep_us(step);
            waited_us += step as u64;
        }
        self.cq_head = (self.cq_head + 1) % ADMIN_ENTRIES;
        if self.cq_head == 0 {
            self.phase = !self.phase;
        }
        h.wr32(self.doorbell(0, true), self.cq_head as u32)?;
        let dw0 = u32::from_le_bytes([cqe[0], cqe[1], cqe[2], cqe[3]]);
        let dw3 = u32::from_le_bytes([cqe[12], cqe[13], cqe[14], cqe[15]]);
        let status = (dw3 >> 17) as u16;
        self.record(LogEntry { opcode: cmd.opcode, cid, cdw10: cmd.cdw10, status });
        if dw3 as u16 != cid {
            return Err(NvmeError::BadCompletion);
        }
        if status != 0 {
            return Err(NvmeError::Status { opcode: cmd.opcode, status });
        }
        Ok(dw0)
    }

    fn identify<H: NvmeHost>(&mut self, h: &H, cns: u32, nsid: u32) -> Result<(), NvmeError> {
        let prp1 = h.mem_bus() + self.cfg.admin_data_off as u64;
        h.mem_write(self.cfg.admin_data_off, &[0u8; 4096])?;
        self.admin(h, Sqe { opcode: opc::IDENTIFY, nsid, prp1, cdw10: cns, cdw11: 0 })?;
        Ok(())
    }

    fn data<H: NvmeHost>(&self, h: &H, off: usize, buf: &mut [u8]) -> Result<(), NvmeError> {
        h.mem_read(self.cfg.admin_data_off + off, buf)
    }

    /// Program Set Features Arbitration (burst log2 0..7, weights 0..255 meaning weight-1).
    pub fn set_arbitration<H: NvmeHost>(&mut self, h: &H, a: DnvmArbitration) -> Result<(), NvmeError> {
        if !arbitration_valid(&a) {
            return Err(NvmeError::BadConfig("arbitration burst 0..7, weights 0..255"));
        }
        let cdw11 = a.burst | (a.low << 8) | (a.medium << 16) | (a.high << 24);
        self.admin(h, Sqe { opcode: opc::SET_FEATURES, cdw10: fid::ARBITRATION as u32, cdw11, ..Sqe::default() })?;
        self.arbitration = a;
        Ok(())
    }

    /// Delete the I/O queues and shut the controller down (CC.SHN normal, bounded wait).
    ///
    /// A controller that is no longer enabled (`Lost`) or failed (`Fatal`) cannot run admin
    /// commands: it is only disabled, without waiting for each command's timeout.
    pub fn shutdown<H: NvmeHost>(&mut self, h: &H) -> Result<(), NvmeError> {
        let csts = h.rd32(reg::CSTS)?;
        if csts & CSTS_RDY == 0 || csts & CSTS_CFS != 0 {
            self.io_queues = 0;
            h.wr32(reg::CC, 0)?;
            return Err(if csts & CSTS_CFS != 0 { NvmeError::Fatal } else { NvmeError::Lost });
        }
        let mut first_err = None;
        for q in (1..=self.io_queues as u16).rev() {
            for op in [opc::DELETE_SQ, opc::DELETE_CQ] {
                if let Err(e) = self.admin(h, Sqe { opcode: op, cdw10: q as u32, ..Sqe::default() }) {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.io_queues = 0;
        let cc = h.rd32(reg::CC)?;
        h.wr32(reg::CC, (cc & !(3 << CC_SHN_SHIFT)) | (CC_SHN_NORMAL << CC_SHN_SHIFT))?;
        wait_csts(h, CSTS_SHST_MASK, CSTS_SHST_COMPLETE, self.timeout_ms, "shutdown")?;
        h.wr32(reg::CC, 0)?;
        wait_csts(h, CSTS_RDY, 0, self.timeout_ms, "disable after shutdown")?;
        first_err.map_or(Ok(()), Err)
    }
}

/// Whether `a` fits Set Features Arbitration: burst log2 0..7, weights (minus one) 0..255.
pub fn arbitration_valid(a: &DnvmArbitration) -> bool {
    a.burst <= 7 && a.high <= 255 && a.medium <= 255 && a.low <= 255
}

fn trim_ascii(b: &mut [u8]) {
    for c in b.iter_mut() {
        if !(0x20..0x7f).contains(c) {
            *c = b' ';
        }
    }
}

/// Reset the controller, set up the admin queues, identify it, create one I/O queue pair per
/// engine (QID `dnvm_qid`, QPRIO `dnvm_engine_qprio`) and program the default arbitration.
pub fn bring_up<H: NvmeHost>(h: &H, cfg: Config) -> Result<Controller, NvmeError> {
    let cap = rd64(h, reg::CAP)?;
    if cap == 0 || cap == u64::MAX {
        return Err(NvmeError::NoController);
    }
    let timeout_ms = (((cap >> 24) & 0xff) as u32).max(1) * 500;
    let mqes = (cap & 0xffff) as u32 + 1;
    let dstrd = ((cap >> 32) & 0xf) as u32;
    let mpsmin = (cap >> 48) & 0xf;
    if mpsmin != 0 {
        return Err(NvmeError::BadConfig("controller does not support 4 KiB pages"));
    }
    if cfg.io_queue_depth < 2 || cfg.io_queue_depth > mqes {
        return Err(NvmeError::BadConfig("io-queue-depth outside 2..=CAP.MQES+1"));
    }
    let nqueues = cfg.cores * cfg.engines;
    if (nqueues as u64) * DNVM_QWIN_QUEUE_STRIDE > cfg.queue_window_size {
        return Err(NvmeError::BadConfig("queue-window too small for cores x engines queue pairs"));
    }
    let wrr = cap & CAP_AMS_WRR != 0;

    // Disable and wait for RDY = 0.
    let cc = h.rd32(reg::CC)?;
    if cc & CC_EN != 0 {
        h.wr32(reg::CC, cc & !CC_EN)?;
    }
    wait_csts(h, CSTS_RDY, 0, timeout_ms, "disable (CSTS.RDY=0)")?;

    h.mem_write(cfg.admin_sq_off, &[0u8; 4096])?;
    h.mem_write(cfg.admin_cq_off, &[0u8; 4096])?;
    let aq = (ADMIN_ENTRIES - 1) as u32;
    h.wr32(reg::AQA, aq | (aq << 16))?;
    wr64(h, reg::ASQ, h.mem_bus() + cfg.admin_sq_off as u64)?;
    wr64(h, reg::ACQ, h.mem_bus() + cfg.admin_cq_off as u64)?;
    h.wr32(reg::INTMS, u32::MAX)?;
    // 64 B SQEs, 16 B CQEs, MPS = 0 (4 KiB), CSS = NVM, EN.
    let ams = if wrr { CC_AMS_WRR << CC_AMS_SHIFT } else { 0 };
    h.wr32(reg::CC, CC_IOQES | ams | CC_EN)?;
    wait_csts(h, CSTS_RDY, CSTS_RDY, timeout_ms, "enable (CSTS.RDY=1)")?;

    let mut c = Controller {
        cap,
        vs: h.rd32(reg::VS)?,
        wrr,
        serial: [0; 20],
        model: [0; 40],
        firmware: [0; 8],
        max_transfer: 0,
        capacity_lbas: 0,
        lba_size: 0,
        arbitration: DnvmArbitration::default(),
        io_queues: 0,
        commands: 0,
        errors: 0,
        log: [LogEntry::default(); LOG_ENTRIES],
        dstrd,
        timeout_ms,
        sq_tail: 0,
        cq_head: 0,
        phase: true,
        next_cid: 0,
        cfg,
    };

    // Identify controller.
    c.identify(h, 1, 0)?;
    let mut serial = [0u8; 20];
    c.data(h, 4, &mut serial)?;
    let mut model = [0u8; 40];
    c.data(h, 24, &mut model)?;
    let mut fw = [0u8; 8];
    c.data(h, 64, &mut fw)?;
    trim_ascii(&mut serial);
    trim_ascii(&mut model);
    trim_ascii(&mut fw);
    c.serial = serial;
    c.model = model;
    c.firmware = fw;
    let mut mdts = [0u8; 1];
    c.data(h, 77, &mut mdts)?;
    c.max_transfer = if mdts[0] == 0 || mdts[0] > 20 { 0 } else { 4096u32 << mdts[0] };

    // Identify namespace 1: the engines address 512-byte LBAs without metadata.
    c.identify(h, 0, 1)?;
    let mut nsze = [0u8; 8];
    c.data(h, 0, &mut nsze)?;
    let mut flbas = [0u8; 1];
    c.data(h, 26, &mut flbas)?;
    let mut lbaf = [0u8; 4];
    c.data(h, 128 + 4 * (flbas[0] & 0xf) as usize, &mut lbaf)?;
    let lbaf = u32::from_le_bytes(lbaf);
    let lbads = (lbaf >> 16) & 0xff;
    let ms = lbaf & 0xffff;
    if lbads != 9 || ms != 0 || 1u32 << lbads != DNVM_LBA_SIZE {
        return Err(NvmeError::BadLbaFormat);
    }
    c.capacity_lbas = u64::from_le_bytes(nsze);
    c.lba_size = DNVM_LBA_SIZE;

    // Number of queues (0-based in both halves).
    let want = nqueues - 1;
    let got = c.admin(h, Sqe { opcode: opc::SET_FEATURES, cdw10: fid::NUM_QUEUES as u32, cdw11: want | (want << 16), ..Sqe::default() })?;
    let granted = ((got & 0xffff).min(got >> 16)) + 1;
    if granted < nqueues {
        return Err(NvmeError::TooFewQueues(granted));
    }
    if wrr {
        c.set_arbitration(h, DEFAULT_ARBITRATION)?;
    }

    let qsize = cfg.io_queue_depth - 1;
    for hdu in 0..cfg.cores {
        for e in 0..cfg.engines {
            let qid = dnvm_qid(hdu, e, cfg.engines);
            let slot = cfg.queue_window_base + (qid as u64 - 1) * DNVM_QWIN_QUEUE_STRIDE;
            let cdw10 = (qsize << 16) | qid as u32;
            // CQ: physically contiguous, interrupts off (the engines poll).
            c.admin(h, Sqe { opcode: opc::CREATE_CQ, prp1: slot + DNVM_QWIN_CQ_OFFSET, cdw10, cdw11: 1, ..Sqe::default() })?;
            let qprio = if wrr { dnvm_engine_qprio(e, cfg.engines) } else { 0 };
            let cdw11 = ((qid as u32) << 16) | (qprio << 1) | 1;
            c.admin(h, Sqe { opcode: opc::CREATE_SQ, prp1: slot + DNVM_QWIN_SQ_OFFSET, cdw10, cdw11, ..Sqe::default() })?;
            c.io_queues += 1;
        }
    }
    Ok(c)
}
