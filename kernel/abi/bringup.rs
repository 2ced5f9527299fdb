// SPDX-License-Identifier: GPL-2.0-only OR MIT
//! NVMe controller bring-up (reset, admin queues, identify, the engines' I/O queue pairs,
//! arbitration, shutdown) for the DirectNVM engines, in `core`-only Rust, over an `NvmeHost`.
//!
//! directnvm.ko runs it against the controller's BAR window and the admin region of the
//! carve-out (its host is the kshim-backed `Host` of kernel/directnvm_drv/mod.rs); the test hosts
//! (the in-process backend and fakehdu's test_support, over the model's guest memory) run the
//! same code, so there is one NVMe host in the tree. Every wait is bounded by CAP.TO; every
//! failure returns an `NvmeError` naming the step and the NVMe status.

use super::entry::{dnvm_engine_qprio, dnvm_qid, DNVM_QWIN_CQ_OFFSET, DNVM_QWIN_QUEUE_STRIDE, DNVM_QWIN_SQ_OFFSET};
use super::ioctl::{DnvmArbitration, DnvmInfo, DNVM_INFO_READY, DNVM_INFO_WRR};
use super::sizes::{DNVM_LBA_SIZE, DNVM_MAX_CORES, DNVM_MAX_ENGINES};

// The NVMe encodings (SQE, CQE, Identify, register fields): one copy, the `nvme` module.
use super::nvme::{
    self as spec, admin as opc, feat as fid, id_ctrl, id_ns, reg, Cqe, Sqe, CAP_AMS_WRR, CC_EN, CC_SHN_NORMAL, CQE_DW3, CQE_SIZE, CSTS_CFS,
    CSTS_RDY, CSTS_SHST_COMPLETE, CSTS_SHST_MASK, IDENTIFY_SIZE, SQE_SIZE,
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
    /// Use weighted round robin with urgent class when CAP.AMS offers it (the drivers: true;
    /// false keeps round robin, for tests of the controller model).
    pub allow_wrr: bool,
    /// I/O queue pairs to ask for beyond the engines' `cores * engines` (the drivers: 0; tests
    /// create host queues of their own with them).
    pub extra_queues: u32,
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
pub const LOG_ENTRIES: usize = 4 + 2 * DNVM_MAX_CORES * DNVM_MAX_ENGINES + 12;

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
    /// Set Features Number of Queues reply (NSQA | NCQA << 16, both 0's based).
    pub num_queues: u32,
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
    let lo = u64::from(h.rd32(off)?);
    let hi = u64::from(h.rd32(off + 4)?);
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
        if waited_us >= u64::from(timeout_ms) * 1000 {
            return Err(NvmeError::Timeout(step));
        }
        h.sleep_us(1000);
        waited_us += 1000;
    }
}

impl Controller {
    fn doorbell(&self, qid: u16, cq: bool) -> usize {
        spec::doorbell(qid, cq, self.dstrd)
    }

    fn record(&mut self, e: LogEntry) {
        self.log[(self.commands % LOG_ENTRIES as u64) as usize] = e;
        self.commands += 1;
        if e.status != 0 {
            self.errors += 1;
        }
    }

    /// Submit one admin command and wait for its completion; returns CQE DW0, or
    /// `NvmeError::Status` with the completion's status field.
    pub fn admin<H: NvmeHost>(&mut self, h: &H, mut cmd: Sqe) -> Result<u32, NvmeError> {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        cmd.cid = cid;
        let slot = self.cfg.admin_sq_off + self.sq_tail as usize * SQE_SIZE;
        h.mem_write(slot, &cmd.to_bytes())?;
        self.sq_tail = (self.sq_tail + 1) % ADMIN_ENTRIES;
        h.wr32(self.doorbell(0, false), u32::from(self.sq_tail))?;

        let cqe_off = self.cfg.admin_cq_off + self.cq_head as usize * CQE_SIZE;
        let mut waited_us: u64 = 0;
        let mut cqe = [0u8; CQE_SIZE];
        loop {
            let mut dw3 = [0u8; 4];
            h.mem_read(cqe_off + CQE_DW3, &mut dw3)?;
            if spec::cqe_phase(u32::from_le_bytes(dw3)) == self.phase {
                h.read_barrier();
                h.mem_read(cqe_off, &mut cqe)?;
                break;
            }
            if waited_us >= u64::from(self.timeout_ms) * 1000 {
                self.record(LogEntry { opcode: cmd.opcode, cid, cdw10: cmd.cdw10(), status: 0xffff });
                return Err(NvmeError::Timeout("admin command"));
            }
            // Admin commands are rare: poll quickly at first, then back off.
            let step = if waited_us < 1000 { 10 } else { 1000 };
            h.sleep_us(step);
            waited_us += u64::from(step);
        }
        self.cq_head = (self.cq_head + 1) % ADMIN_ENTRIES;
        if self.cq_head == 0 {
            self.phase = !self.phase;
        }
        h.wr32(self.doorbell(0, true), u32::from(self.cq_head))?;
        let (cqe, _) = Cqe::decode(&cqe);
        self.record(LogEntry { opcode: cmd.opcode, cid, cdw10: cmd.cdw10(), status: cqe.status });
        if cqe.cid != cid {
            return Err(NvmeError::BadCompletion);
        }
        if cqe.status != 0 {
            return Err(NvmeError::Status { opcode: cmd.opcode, status: cqe.status });
        }
        Ok(cqe.dw0)
    }

    fn identify<H: NvmeHost>(&mut self, h: &H, cns: u32, nsid: u32) -> Result<(), NvmeError> {
        let prp1 = h.mem_bus() + self.cfg.admin_data_off as u64;
        h.mem_write(self.cfg.admin_data_off, &[0u8; IDENTIFY_SIZE])?;
        self.admin(h, Sqe::identify(cns, nsid, prp1))?;
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
        self.admin(h, Sqe::set_features(fid::ARBITRATION, spec::arbitration(a.burst, a.low, a.medium, a.high)))?;
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
                if let Err(e) = self.admin(h, Sqe::new(op, u32::from(q), 0)) {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.io_queues = 0;
        let cc = h.rd32(reg::CC)?;
        h.wr32(reg::CC, spec::cc_with_shn(cc, CC_SHN_NORMAL))?;
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

/// Reset the controller (disable, wait for CSTS.RDY = 0), set up the admin queues and enable
/// it (arbitration WRR if CAP.AMS offers it and `cfg.allow_wrr`): a controller ready for admin
/// commands, with no I/O queues and features at their defaults.
pub fn enable<H: NvmeHost>(h: &H, cfg: Config) -> Result<Controller, NvmeError> {
    let cap = rd64(h, reg::CAP)?;
    if cap == 0 || cap == u64::MAX {
        return Err(NvmeError::NoController);
    }
    let timeout_ms = spec::cap_timeout_ms(cap);
    let mqes = spec::cap_max_entries(cap);
    let dstrd = spec::cap_dstrd(cap);
    if spec::cap_mpsmin(cap) != 0 {
        return Err(NvmeError::BadConfig("controller does not support 4 KiB pages"));
    }
    if cfg.io_queue_depth < 2 || cfg.io_queue_depth > mqes {
        return Err(NvmeError::BadConfig("io-queue-depth outside 2..=CAP.MQES+1"));
    }
    if u64::from(cfg.cores * cfg.engines) * DNVM_QWIN_QUEUE_STRIDE > cfg.queue_window_size {
        return Err(NvmeError::BadConfig("queue-window too small for cores x engines queue pairs"));
    }
    let wrr = cfg.allow_wrr && cap & CAP_AMS_WRR != 0;

    // Disable and wait for RDY = 0.
    let cc = h.rd32(reg::CC)?;
    if cc & CC_EN != 0 {
        h.wr32(reg::CC, cc & !CC_EN)?;
    }
    wait_csts(h, CSTS_RDY, 0, timeout_ms, "disable (CSTS.RDY=0)")?;

    h.mem_write(cfg.admin_sq_off, &[0u8; ADMIN_ENTRIES as usize * SQE_SIZE])?;
    h.mem_write(cfg.admin_cq_off, &[0u8; ADMIN_ENTRIES as usize * CQE_SIZE])?;
    h.wr32(reg::AQA, spec::aqa(u32::from(ADMIN_ENTRIES)))?;
    wr64(h, reg::ASQ, h.mem_bus() + cfg.admin_sq_off as u64)?;
    wr64(h, reg::ACQ, h.mem_bus() + cfg.admin_cq_off as u64)?;
    h.wr32(reg::INTMS, u32::MAX)?;
    // 64 B SQEs, 16 B CQEs, MPS = 0 (4 KiB), CSS = NVM, EN.
    h.wr32(reg::CC, spec::cc_enable(wrr))?;
    wait_csts(h, CSTS_RDY, CSTS_RDY, timeout_ms, "enable (CSTS.RDY=1)")?;

    Ok(Controller {
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
        num_queues: 0,
        cfg,
    })
}

/// Reset the controller, set up the admin queues, identify it, create one I/O queue pair per
/// engine (QID `dnvm_qid`, QPRIO `dnvm_engine_qprio`) and program the default arbitration.
pub fn bring_up<H: NvmeHost>(h: &H, cfg: Config) -> Result<Controller, NvmeError> {
    let mut c = enable(h, cfg)?;
    let nqueues = cfg.cores * cfg.engines;
    let wrr = c.wrr;

    // Identify controller.
    c.identify(h, 1, 0)?;
    let mut serial = [0u8; id_ctrl::SN_LEN];
    c.data(h, id_ctrl::SN, &mut serial)?;
    let mut model = [0u8; id_ctrl::MN_LEN];
    c.data(h, id_ctrl::MN, &mut model)?;
    let mut fw = [0u8; id_ctrl::FR_LEN];
    c.data(h, id_ctrl::FR, &mut fw)?;
    spec::ascii_clean(&mut serial);
    spec::ascii_clean(&mut model);
    spec::ascii_clean(&mut fw);
    c.serial = serial;
    c.model = model;
    c.firmware = fw;
    let mut mdts = [0u8; 1];
    c.data(h, id_ctrl::MDTS, &mut mdts)?;
    c.max_transfer = spec::mdts_bytes(mdts[0]);

    // Identify namespace 1: the engines address 512-byte LBAs without metadata.
    c.identify(h, 0, 1)?;
    let mut nsze = [0u8; 8];
    c.data(h, id_ns::NSZE, &mut nsze)?;
    let mut flbas = [0u8; 1];
    c.data(h, id_ns::FLBAS, &mut flbas)?;
    let mut lbaf = [0u8; 4];
    c.data(h, spec::id_ns_lbaf(flbas[0]), &mut lbaf)?;
    let lbaf = u32::from_le_bytes(lbaf);
    let lbads = spec::lbaf_lbads(lbaf);
    let ms = spec::lbaf_ms(lbaf);
    if lbads != 9 || ms != 0 || 1u32 << lbads != DNVM_LBA_SIZE {
        return Err(NvmeError::BadLbaFormat);
    }
    c.capacity_lbas = u64::from_le_bytes(nsze);
    c.lba_size = DNVM_LBA_SIZE;

    // Number of queues (0-based in both halves).
    let want = nqueues + cfg.extra_queues;
    c.num_queues = c.admin(h, Sqe::set_features(fid::NUM_QUEUES, spec::num_queues(want, want)))?;
    let granted = spec::num_queues_granted(c.num_queues);
    if granted < nqueues {
        return Err(NvmeError::TooFewQueues(granted));
    }
    if wrr {
        c.set_arbitration(h, DEFAULT_ARBITRATION)?;
    }

    for hdu in 0..cfg.cores {
        for e in 0..cfg.engines {
            let qid = dnvm_qid(hdu, e, cfg.engines);
            let slot = cfg.queue_window_base + (u64::from(qid) - 1) * DNVM_QWIN_QUEUE_STRIDE;
            // CQ: physically contiguous, interrupts off (the engines poll).
            c.admin(h, Sqe::create_io_cq(qid, cfg.io_queue_depth, slot + DNVM_QWIN_CQ_OFFSET))?;
            let qprio = if wrr { dnvm_engine_qprio(e, cfg.engines) } else { 0 };
            c.admin(h, Sqe::create_io_sq(qid, cfg.io_queue_depth, qprio, slot + DNVM_QWIN_SQ_OFFSET))?;
            c.io_queues += 1;
        }
    }
    Ok(c)
}
