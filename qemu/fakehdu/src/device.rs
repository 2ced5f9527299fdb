// SPDX-License-Identifier: MIT OR Apache-2.0
//! The whole fake board behind the PL window: HDUs + engines + NVMe controller + SSD, the test
//! mailbox, fault state and clock. `Device::step` is one polling pass; the runner calls it in a
//! loop, deterministic tests call it directly.

use std::path::PathBuf;

use directnvm_abi::*;

use crate::board::Board;
use crate::clock::{Clock, TimingMode};
use crate::control::ControlOp;
use crate::disk::Disk;
use crate::faults::Faults;
use crate::hdu::engine::Engine;
use crate::hdu::Hdu;
use crate::mailbox::{Mailbox, Request};
use crate::mem::GuestMem;
use crate::nvme::{Controller, NvmeConfig};
use crate::stats::Stats;

/// Where guest memory comes from.
#[derive(Clone, Debug)]
pub enum MemorySource {
    /// Anonymous memory of `board.ram_size` bytes at `board.ram_base` (in-process use).
    Anonymous,
    /// A shared memory file (QEMU `memory-backend-file,share=on`); `offset` in the file is
    /// guest-physical `board.ram_base`.
    File {
        /// Path, e.g. /dev/shm/dnvm-ram.
        path: PathBuf,
        /// File offset of RAM base.
        offset: u64,
    },
}

/// Where namespace data lives.
#[derive(Clone, Debug)]
pub enum DiskSource {
    /// An unlinked temporary sparse file.
    Temp,
    /// A sparse image file that survives restarts.
    File(PathBuf),
}

/// Everything needed to build a device.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address map.
    pub board: Board,
    /// HDU revision (1 = published RTL, 2 = DirectNVM-rs extensions).
    pub revision: u32,
    /// Engines per HDU (overrides the board's `engines-per-hdu` when set).
    pub engines: Option<u32>,
    /// Time source.
    pub timing: TimingMode,
    /// Controller and SSD parameters.
    pub nvme: NvmeConfig,
    /// Guest memory.
    pub memory: MemorySource,
    /// Namespace image.
    pub disk: DiskSource,
    /// Namespace capacity in bytes.
    pub disk_size: u64,
    /// Rev 2 largest NREQS per START.
    pub max_nreqs: u32,
    /// Rev 2 largest transfer per entry in 4 KiB pages (capped by MDTS and PRP-list space).
    pub max_xfer_pages: u32,
    /// Rev 2 STARTs held behind the running batch (0 or 1; `HduCaps::start_queue`).
    pub start_queue: u32,
    /// How long the polling thread keeps spinning after the last activity before it sleeps
    /// (`runner.rs`). The FPGA never sleeps; a device process with a host CPU of its own
    /// (`run.sh --pin-device`) spins for ever with `Duration::MAX`.
    pub idle_spin: std::time::Duration,
}

impl Config {
    /// In-process defaults: QEMU board map, anonymous memory, temporary 64 MiB disk, no timing.
    pub fn in_process(revision: u32) -> Self {
        Self {
            board: Board::qemu_default(),
            revision,
            engines: None,
            timing: TimingMode::None,
            nvme: NvmeConfig::default(),
            memory: MemorySource::Anonymous,
            disk: DiskSource::Temp,
            disk_size: 64 << 20,
            max_nreqs: 4096,
            max_xfer_pages: 32,
            start_queue: 1,
            idle_spin: crate::runner::SPIN_WINDOW,
        }
    }
}

/// The device model.
pub struct Device {
    /// Guest memory.
    pub mem: GuestMem,
    /// Address map in use.
    pub board: Board,
    /// Clock.
    pub clock: Clock,
    /// HDUs in index order.
    pub hdus: Vec<Hdu>,
    /// NVMe controller.
    pub nvme: Controller,
    /// Injected faults.
    pub faults: Faults,
    mailbox: Mailbox,
    /// What the device was built from (a restart builds it again).
    cfg: Config,
    /// Restarts since the process started (survives restarts).
    pub restarts: u64,
    /// Servicing stopped (mailbox still live).
    pub quiesced: bool,
    /// A shutdown was requested (socket `shutdown`).
    pub shutdown_requested: bool,
}

impl Device {
    /// The polling thread's spin window after the last activity (`Config::idle_spin`).
    pub fn idle_spin(&self) -> std::time::Duration {
        self.cfg.idle_spin
    }

    /// Build a device from `cfg`.
    pub fn new(cfg: Config) -> crate::Result<Self> {
        let board = cfg.board.clone();
        let mem = match &cfg.memory {
            MemorySource::Anonymous => GuestMem::anonymous(board.ram_base, board.ram_size)?,
            MemorySource::File { path, offset } => GuestMem::from_file(path, board.ram_base, board.ram_size, *offset)?,
        };
        Self::with_memory(cfg, mem)
    }

    /// Build a device on existing guest memory.
    pub fn with_memory(cfg: Config, mem: GuestMem) -> crate::Result<Self> {
        let board = cfg.board.clone();
        let Some(rev) = Revision::from_number(cfg.revision) else {
            return Err(crate::Error::Config(format!("unsupported revision {}", cfg.revision)));
        };
        let engines = cfg.engines.unwrap_or(board.engines_per_hdu);
        if ![1, 2, 4].contains(&engines) {
            return Err(crate::Error::Config(format!("engines per HDU must be 1, 2 or 4, not {engines}")));
        }
        let depth = board.io_queue_depth;
        if !rev.has_caps() && (engines != 1 || depth != 32) {
            return Err(crate::Error::Config("revision 1 has exactly one engine per HDU with a 32-entry queue".into()));
        }
        if !depth.is_power_of_two() || !(4..=4096).contains(&depth) {
            return Err(crate::Error::Config(format!("I/O queue depth {depth} must be a power of two in 4..=4096")));
        }
        for (what, addr, len) in [
            ("NVMe BAR", board.nvme_bar, board.nvme_bar_size),
            ("queue window", board.queue_window, board.queue_window_size),
            ("mailbox", board.mailbox, DNVM_PAGE_SIZE),
        ] {
            if !mem.contains(addr, len) {
                return Err(crate::Error::Config(format!("{what} {addr:#x}+{len:#x} is outside guest RAM")));
            }
        }
        // Device-owned ranges must not overlap (a restart clears them; the mailbox must survive).
        let mut ranges = vec![
            ("NVMe BAR", board.nvme_bar, board.nvme_bar_size),
            ("queue window", board.queue_window, board.queue_window_size),
            ("mailbox", board.mailbox, DNVM_PAGE_SIZE),
        ];
        for h in &board.hdus {
            ranges.push(("HDU page", h.user, DNVM_PAGE_SIZE));
            ranges.extend(h.privileged.map(|p| ("HDU privileged page", p, DNVM_PAGE_SIZE)));
        }
        for (i, (wa, a, al)) in ranges.iter().enumerate() {
            for (wb, b, bl) in &ranges[i + 1..] {
                if a < &(b + bl) && b < &(a + al) {
                    return Err(crate::Error::Config(format!("{wa} {a:#x}+{al:#x} overlaps {wb} {b:#x}+{bl:#x}")));
                }
            }
        }
        let disk = match &cfg.disk {
            DiskSource::Temp => Disk::temp(cfg.disk_size)?,
            DiskSource::File(p) => Disk::open(p, cfg.disk_size)?,
        };
        let mailbox = Mailbox::new(&mem, board.mailbox);
        let mut dev = Self::assemble(cfg, mem, disk, mailbox)?;
        dev.step();
        Ok(dev)
    }

    /// Build the HDUs, engines and controller on `mem` and `disk` (shared by `with_memory` and
    /// `restart`; the configuration was checked by `with_memory`).
    fn assemble(cfg: Config, mem: GuestMem, disk: Disk, mailbox: Mailbox) -> crate::Result<Self> {
        let rev =
            Revision::from_number(cfg.revision).ok_or_else(|| crate::Error::Config(format!("unsupported revision {}", cfg.revision)))?;
        let board = cfg.board.clone();
        let engines = cfg.engines.unwrap_or(board.engines_per_hdu);
        let depth = board.io_queue_depth;
        let clock = Clock::new(cfg.timing);
        let nvme = Controller::new(cfg.nvme.clone(), board.nvme_bar, disk, clock.timed());
        let mut hdus = Vec::new();
        for (i, h) in board.hdus.iter().enumerate() {
            if !mem.contains(h.user, DNVM_PAGE_SIZE) || h.privileged.is_some_and(|p| !mem.contains(p, DNVM_PAGE_SIZE)) {
                return Err(crate::Error::Config(format!("HDU {i} register pages are outside guest RAM")));
            }
            let mut es = Vec::new();
            for e in 0..engines {
                let qid = dnvm_qid(i as u32, e, engines);
                let base = board.queue_base(qid).ok_or_else(|| crate::Error::Config(format!("queue window too small for QID {qid}")))?;
                es.push(Engine::new(qid, board.nvme_bar, base, depth));
            }
            let caps = if !rev.has_caps() {
                HduCaps::REV1
            } else {
                let mdts_pages = 1u32 << nvme.cfg.mdts;
                HduCaps {
                    engines,
                    queue_depth_log2: depth.trailing_zeros(),
                    max_nreqs: cfg.max_nreqs.min(0xffff),
                    dispatch_depth: 64,
                    max_xfer_pages: cfg.max_xfer_pages.min(mdts_pages).min(es[0].max_pages()).max(1),
                    start_queue: cfg.start_queue.min(1),
                }
            };
            hdus.push(Hdu::new(i, rev, h.user, if rev.has_privileged_page() { h.privileged } else { None }, caps, es));
        }
        let faults = Faults::new(hdus.len());
        Ok(Self { mem, board, clock, hdus, nvme, faults, mailbox, cfg, restarts: 0, quiesced: false, shutdown_requested: false })
    }

    /// Power-cycle the device (FPGA reconfigured, SSD power cycled): every register page, the
    /// NVMe BAR and the engine queue memory back to their power-on contents (zero, then the
    /// device-owned registers), HDUs, engines, controller, faults and counters rebuilt from the
    /// configuration; commands in flight are lost. The namespace data and the mailbox (so the
    /// request that asked for the restart is still answered) carry over.
    pub fn restart(&mut self) -> crate::Result<()> {
        let disk = self.nvme.disk.try_clone()?;
        let b = &self.board;
        let mut pages: Vec<(u64, u64)> = vec![(b.nvme_bar, b.nvme_bar_size), (b.queue_window, b.queue_window_size)];
        for h in &b.hdus {
            pages.push((h.user, DNVM_PAGE_SIZE));
            pages.extend(h.privileged.map(|p| (p, DNVM_PAGE_SIZE)));
        }
        for (addr, len) in pages {
            self.mem.fill(addr, len, 0).map_err(|e| crate::Error::Memory(format!("restart: clearing {addr:#x}+{len:#x}: {e:?}")))?;
        }
        let mailbox = self.mailbox.clone();
        let restarts = self.restarts + 1;
        *self = Self::assemble(self.cfg.clone(), self.mem.clone(), disk, mailbox)?;
        self.restarts = restarts;
        Ok(())
    }

    /// One polling pass over the mailbox, every HDU and the controller.
    pub fn step(&mut self) -> bool {
        let mut progress = self.poll_mailbox();
        if self.quiesced {
            return progress;
        }
        let now = self.clock.now();
        for h in self.hdus.iter_mut() {
            progress |= h.step(&self.mem, &mut self.faults);
        }
        progress |= self.nvme.step(&self.mem, now, &mut self.faults);
        progress
    }

    /// Earliest scheduled event (virtual/wall time, ns).
    pub fn next_event(&self) -> Option<u64> {
        if self.quiesced {
            None
        } else {
            self.nvme.next_event()
        }
    }

    /// Step until nothing happens; in virtual time also advance to pending events. Bounded by
    /// `max_steps`; returns the number of steps taken. Deterministic-test helper.
    pub fn run_until_idle(&mut self, max_steps: usize) -> usize {
        for i in 0..max_steps {
            if !self.step() {
                match (self.clock.mode(), self.next_event()) {
                    (TimingMode::Virtual, Some(t)) => self.clock.advance_to(t),
                    (TimingMode::WallClock, Some(_)) => std::thread::yield_now(),
                    _ => return i,
                }
            }
        }
        max_steps
    }

    /// Counter snapshot.
    pub fn stats(&self) -> Stats {
        Stats { hdus: self.hdus.iter().map(|h| h.stats.clone()).collect(), nvme: self.nvme.stats.clone() }
    }

    /// Execute a control operation; the reply text (without `ok`).
    pub fn control(&mut self, op: ControlOp) -> crate::Result<String> {
        let hdus = self.hdus.len();
        let check = |h: usize| if h < hdus { Ok(()) } else { Err(crate::Error::Control(format!("no HDU {h}"))) };
        match op {
            ControlOp::Ping => {}
            ControlOp::Stats => return Ok(self.stats().to_kv()),
            ControlOp::ClearFaults => self.faults.clear(),
            ControlOp::IoError(f) => {
                if f.lba_start >= f.lba_end {
                    return Err(crate::Error::Control("empty LBA range".into()));
                }
                self.faults.io.push(f);
            }
            ControlOp::DropStart { hdu, count } => {
                check(hdu)?;
                self.faults.drop_start[hdu] = count;
            }
            ControlOp::Stuck { hdu, on } => {
                check(hdu)?;
                self.faults.stuck[hdu] = on;
            }
            ControlOp::Slow { permille } => {
                if permille == 0 {
                    return Err(crate::Error::Control("slow factor must be > 0".into()));
                }
                self.faults.slow_permille = permille;
            }
            ControlOp::Window { hdu, count } => {
                check(hdu)?;
                self.faults.window[hdu] = count;
            }
            ControlOp::Quiesce => self.quiesced = true,
            ControlOp::Resume => self.quiesced = false,
            ControlOp::Restart => self.restart()?,
            ControlOp::Shutdown => self.shutdown_requested = true,
        }
        Ok(String::new())
    }

    fn poll_mailbox(&mut self) -> bool {
        let Some((seq, req)) = self.mailbox.poll(&self.mem) else { return false };
        let (status, result) = match req {
            Request::Bad(s) => (s, Vec::new()),
            Request::Stats(h) => match self.hdu_stats_array(h) {
                Some(r) => (TESTDEV_STATUS_OK, r),
                None => (TESTDEV_STATUS_BAD_ARG, Vec::new()),
            },
            // Shutdown is not reachable from the guest.
            Request::Op(ControlOp::Shutdown) => (TESTDEV_STATUS_BAD_CMD, Vec::new()),
            Request::Op(op) => match self.control(op) {
                Ok(_) => (TESTDEV_STATUS_OK, Vec::new()),
                Err(_) => (TESTDEV_STATUS_BAD_ARG, Vec::new()),
            },
        };
        self.mailbox.reply(&self.mem, seq, status, &result);
        true
    }

    fn hdu_stats_array(&self, h: usize) -> Option<Vec<u64>> {
        let s = &self.hdus.get(h)?.stats;
        let n = &self.nvme.stats;
        let mut r = vec![0u64; TESTDEV_STAT_COUNT];
        r[TESTDEV_STAT_STARTS] = s.starts;
        r[TESTDEV_STAT_DROPPED_STARTS] = s.dropped_starts;
        r[TESTDEV_STAT_BATCHES] = s.batches;
        r[TESTDEV_STAT_ENTRIES] = s.entries;
        r[TESTDEV_STAT_SQ_DOORBELLS] = s.sq_doorbells;
        r[TESTDEV_STAT_CQ_DOORBELLS] = s.cq_doorbells;
        r[TESTDEV_STAT_PROTOCOL_VIOLATIONS] = s.protocol_violations;
        r[TESTDEV_STAT_ERRORS] = s.errors;
        r[TESTDEV_STAT_WINDOW_FAULTS] = s.window_faults;
        r[TESTDEV_STAT_ABORTED] = s.aborted;
        r[TESTDEV_STAT_IO_COMMANDS] = n.io_commands;
        r[TESTDEV_STAT_IO_ERRORS] = n.io_errors;
        r[TESTDEV_STAT_ADMIN_COMMANDS] = n.admin_commands;
        r[TESTDEV_STAT_BYTES_READ] = n.bytes_read;
        r[TESTDEV_STAT_BYTES_WRITTEN] = n.bytes_written;
        Some(r)
    }

    /// Flush the disk image (shutdown path).
    pub fn flush(&self) {
        let _ = self.nvme.disk.flush();
    }
}
