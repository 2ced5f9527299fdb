// SPDX-License-Identifier: MIT OR Apache-2.0
//! Host-side helpers for in-process tests: a `NvmeHost` over the model's guest memory, so tests
//! bring the controller up with the kernel's own NVMe bring-up (`directnvm_abi::bringup`, the
//! one NVMe host of the tree), plus HDU helpers (program a rev 2 DMA window, write staging
//! entries, run a batch).
//!
//! This is test support, not a driver: by default it uses the first 64 KiB of the carve-out for
//! the admin queues and identify page (`TEST_ADMIN_*`; the kernel layout reserves that region
//! for admin use).

use std::cell::RefCell;
use std::time::Duration;

use directnvm_abi::*;

pub use directnvm_abi::bringup::{self, Config as NvmeConfig, Controller, NvmeError, NvmeHost};

use crate::board::Board;
use crate::mem::GuestMem;

/// Offset in the carve-out of the admin SQ the test hosts use.
pub const TEST_ADMIN_SQ: usize = 0;
/// Offset of the admin CQ.
pub const TEST_ADMIN_CQ: usize = 0x4000;
/// Offset of the 4 KiB identify / scratch page.
pub const TEST_ADMIN_DATA: usize = 0x8000;

/// Called for each wait of the bring-up with the microseconds it would sleep: step the device
/// (deterministic tests) or sleep (a device on its polling thread).
pub type Pump<'a> = Box<dyn FnMut(u32) + 'a>;

/// `NvmeHost` over the model's guest memory: the controller's BAR window and an admin region.
pub struct ModelHost<'a> {
    mem: GuestMem,
    bar: u64,
    admin: u64,
    pump: RefCell<Pump<'a>>,
}

impl<'a> ModelHost<'a> {
    /// A host for the controller at `bar` with its admin region at bus address `admin`.
    pub fn new(mem: &GuestMem, bar: u64, admin: u64, pump: Pump<'a>) -> Self {
        Self { mem: mem.clone(), bar, admin, pump: RefCell::new(pump) }
    }

    /// A host for `board`'s controller using the test admin region (the carve-out's first
    /// 64 KiB), waiting with `pump`.
    pub fn for_board(mem: &GuestMem, board: &Board, pump: Pump<'a>) -> Self {
        Self::new(mem, board.nvme_bar, board.carveout, pump)
    }

    /// A host for a device running on its polling thread: waits sleep.
    pub fn sleeping(mem: &GuestMem, bar: u64, admin: u64) -> Self {
        Self::new(mem, bar, admin, Box::new(|us| std::thread::sleep(Duration::from_micros(us.into()))))
    }
}

impl NvmeHost for ModelHost<'_> {
    fn rd32(&self, off: usize) -> Result<u32, NvmeError> {
        self.mem.load32(self.bar + off as u64).map_err(|_| NvmeError::Bus)
    }
    fn wr32(&self, off: usize, val: u32) -> Result<(), NvmeError> {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.mem.store32(self.bar + off as u64, val).map_err(|_| NvmeError::Bus)
    }
    fn mem_read(&self, off: usize, buf: &mut [u8]) -> Result<(), NvmeError> {
        self.mem.read(self.admin + off as u64, buf).map_err(|_| NvmeError::Bus)
    }
    fn mem_write(&self, off: usize, buf: &[u8]) -> Result<(), NvmeError> {
        self.mem.write(self.admin + off as u64, buf).map_err(|_| NvmeError::Bus)
    }
    fn mem_bus(&self) -> u64 {
        self.admin
    }
    fn read_barrier(&self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    }
    fn sleep_us(&self, us: u32) {
        (self.pump.borrow_mut())(us);
    }
}

/// The bring-up configuration of `board`'s engine queues (WRR allowed, no extra queues), with
/// the test admin region.
pub fn nvme_config(board: &Board) -> NvmeConfig {
    NvmeConfig {
        cores: board.hdus.len() as u32,
        engines: board.engines_per_hdu,
        io_queue_depth: board.io_queue_depth,
        queue_window_base: board.queue_window,
        queue_window_size: board.queue_window_size,
        admin_sq_off: TEST_ADMIN_SQ,
        admin_cq_off: TEST_ADMIN_CQ,
        admin_data_off: TEST_ADMIN_DATA,
        allow_wrr: true,
        extra_queues: 0,
    }
}

/// Program a rev 2 HDU's DMA window (what hdu_drv does at probe).
pub fn program_window(mem: &GuestMem, board: &Board, hdu: usize, base: u64, limit: u64) -> crate::Result<()> {
    let p = board.hdus.get(hdu).and_then(|h| h.privileged).ok_or_else(|| crate::Error::BringUp("HDU has no privileged page".into()))?;
    mem.store64(p + HduPrivReg::DmaBase.offset() as u64, base).map_err(bu)?;
    mem.store64(p + HduPrivReg::DmaLimit.offset() as u64, limit).map_err(bu)
}

/// Write staging entries at `addr`.
pub fn write_entries(mem: &GuestMem, addr: u64, entries: &[DnvmEntry]) -> crate::Result<()> {
    for (i, e) in entries.iter().enumerate() {
        mem.write(addr + (i * DNVM_ENTRY_SIZE) as u64, &e.to_bytes()).map_err(bu)?;
    }
    Ok(())
}

/// Program REQBUF / NREQS (/ STATUSBUF if given) of HDU `hdu` and store START, the way
/// software must: 64-bit REQBUF store, then NREQS, then START.
pub fn start_batch(mem: &GuestMem, board: &Board, hdu: usize, reqbuf: u64, nreqs: u32, statusbuf: Option<u64>) -> crate::Result<()> {
    let u = board.hdus.get(hdu).ok_or_else(|| crate::Error::BringUp("no such HDU".into()))?.user;
    let e = |r: Result<(), crate::mem::MemFault>| r.map_err(bu);
    e(mem.store64(u + HduReg::Reqbuf.offset() as u64, reqbuf))?;
    e(mem.store64(u + HduReg::Nreqs.offset() as u64, u64::from(nreqs)))?;
    if let Some(s) = statusbuf {
        e(mem.store64(u + HduReg::Statusbuf.offset() as u64, s))?;
    }
    e(mem.store64(u + HduReg::Start.offset() as u64, HDU_START_GO))
}

/// Read HDU `hdu`'s DONE register.
pub fn done_reg(mem: &GuestMem, board: &Board, hdu: usize) -> u64 {
    board.hdus.get(hdu).and_then(|h| mem.load64(h.user + HduReg::Done.offset() as u64).ok()).unwrap_or(0)
}

/// Read HDU `hdu`'s START register (the model clears it when it takes the pulse).
pub fn start_reg(mem: &GuestMem, board: &Board, hdu: usize) -> u64 {
    board.hdus.get(hdu).and_then(|h| mem.load64(h.user + HduReg::Start.offset() as u64).ok()).unwrap_or(1)
}

/// A guest-memory access of the bring-up failed.
fn bu(e: impl std::fmt::Debug) -> crate::Error {
    crate::Error::BringUp(format!("guest memory: {e:?}"))
}
