// SPDX-License-Identifier: MIT OR Apache-2.0
//! Shared helpers of the integration tests.
#![allow(dead_code)]

use directnvm_abi::*;
use fakehdu::nvme::spec::{cq_doorbell, sq_doorbell, Cqe, Sqe};
use fakehdu::test_support::{self, bringup, Controller, ModelHost, NvmeConfig, NvmeError};
use fakehdu::{Config, Device, GuestMem, TimingMode};

/// Carve-out layout used by the tests (the first 64 KiB belong to the admin bring-up).
pub const STAGING: u64 = 0x7b01_0000;
pub const STATUS: u64 = 0x7b03_0000;
pub const DATA: u64 = 0x7b10_0000;
pub const DATA2: u64 = 0x7d00_0000;
/// Host I/O queue used by controller tests (outside the engine queue window).
pub const HOSTQ: u64 = 0x7b04_0000;

pub fn device(rev: u32, timing: TimingMode) -> Device {
    device_with(rev, timing, |_| {})
}

pub fn device_with(rev: u32, timing: TimingMode, f: impl FnOnce(&mut Config)) -> Device {
    let mut cfg = Config::in_process(rev);
    cfg.timing = timing;
    f(&mut cfg);
    Device::new(cfg).expect("device")
}

/// A host over `dev`'s controller and the test admin region; every wait steps `dev`.
pub fn with_host<R>(dev: &mut Device, f: impl FnOnce(&ModelHost) -> R) -> R {
    let (mem, board) = (dev.mem.clone(), dev.board.clone());
    let host = ModelHost::for_board(
        &mem,
        &board,
        Box::new(|_| {
            dev.run_until_idle(10_000);
        }),
    );
    f(&host)
}

/// The kernel's admin bring-up of every engine queue, stepping the device while waiting.
pub fn bring_up(dev: &mut Device) -> Controller {
    let engines = dev.hdus[0].engines().len() as u32;
    bring_up_with(dev, |c| c.engines = engines)
}

/// Bring-up with the board's configuration changed by `f`; tests go on using the returned
/// controller's admin queue.
pub fn bring_up_with(dev: &mut Device, f: impl FnOnce(&mut NvmeConfig)) -> Controller {
    let mut cfg = test_support::nvme_config(&dev.board);
    f(&mut cfg);
    with_host(dev, |h| bringup::bring_up(h, cfg)).expect("bring-up")
}

/// Bring-up of one host-side engine queue pair (HDU 0), round robin unless `wrr`, asking for
/// 16 I/O queues so tests can create their own.
pub fn bring_up_host_queues(dev: &mut Device, wrr: bool) -> Controller {
    bring_up_with(dev, |c| {
        (c.cores, c.engines, c.io_queue_depth, c.allow_wrr, c.extra_queues) = (1, 1, 32, wrr, 15);
    })
}

/// One admin command on `ctrl`, stepping `dev`: its completion (DW0 on success, else the
/// status field).
pub fn admin(dev: &mut Device, ctrl: &mut Controller, sqe: Sqe) -> Cqe {
    match with_host(dev, |h| ctrl.admin(h, sqe)) {
        Ok(dw0) => Cqe { dw0, ..Cqe::default() },
        Err(NvmeError::Status { status, .. }) => Cqe { status, ..Cqe::default() },
        Err(e) => panic!("admin opcode {:#x}: {e:?}", sqe.opcode),
    }
}

/// Admin command that must succeed; its DW0.
pub fn admin_ok(dev: &mut Device, ctrl: &mut Controller, sqe: Sqe) -> u32 {
    let c = admin(dev, ctrl, sqe);
    assert_eq!(c.status, 0, "admin opcode {:#x}", sqe.opcode);
    c.dw0
}

/// Rev 2 DMA window = the carve-out, on every HDU.
pub fn open_window(dev: &Device) {
    for h in 0..dev.board.hdus.len() {
        test_support::program_window(&dev.mem, &dev.board, h, dev.board.carveout, dev.board.carveout + dev.board.carveout_size).unwrap();
    }
}

pub fn entry(op: u16, data_addr: u64, lba: u64) -> DnvmEntry {
    DnvmEntry { op, urgency: 0, block_size: 4096, data_addr, lba }
}

/// Deterministic pattern for (lba, byte).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    dnvm_testkit::bytes::seeded_bytes(seed, len)
}

pub fn read_vec(mem: &GuestMem, addr: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    mem.read(addr, &mut v).unwrap();
    v
}

/// Run one batch on `hdu` and wait for DONE.
pub fn run_batch(dev: &mut Device, hdu: usize, entries: &[DnvmEntry], statusbuf: Option<u64>) {
    test_support::write_entries(&dev.mem, STAGING, entries).unwrap();
    if let Some(s) = statusbuf {
        dev.mem.fill(s, 4 * entries.len() as u64, 0).unwrap();
    }
    test_support::start_batch(&dev.mem, &dev.board, hdu, STAGING, entries.len() as u32, statusbuf).unwrap();
    dev.run_until_idle(1_000_000);
    assert_eq!(test_support::start_reg(&dev.mem, &dev.board, hdu), 0, "START self-clears");
    assert_eq!(test_support::done_reg(&dev.mem, &dev.board, hdu) & HDU_DONE_BIT, 1, "DONE after batch");
}

/// Write `n` 4 KiB blocks (block i at LBA lba0 + 8i) through `hdu`, then read them back into a
/// second buffer and compare byte for byte.
pub fn write_read_verify(dev: &mut Device, hdu: usize, lba0: u64, n: usize, seed: u64) {
    let data = pattern(seed, n * 4096);
    dev.mem.write(DATA, &data).unwrap();
    let w: Vec<_> = (0..n).map(|i| entry(DNVM_OP_WRITE, DATA + 4096 * i as u64, lba0 + 8 * i as u64)).collect();
    run_batch(dev, hdu, &w, None);
    dev.mem.fill(DATA2, (n * 4096) as u64, 0).unwrap();
    let r: Vec<_> = (0..n).map(|i| entry(DNVM_OP_READ, DATA2 + 4096 * i as u64, lba0 + 8 * i as u64)).collect();
    run_batch(dev, hdu, &r, None);
    assert!(read_vec(&dev.mem, DATA2, n * 4096) == data, "data mismatch");
}

/// A host-owned I/O queue pair for controller tests.
pub struct IoQ {
    pub qid: u16,
    pub sq: u64,
    pub cq: u64,
    pub depth: u32,
    pub tail: u32,
    pub head: u32,
    pub phase: bool,
    pub bar: u64,
}

impl IoQ {
    pub fn create(dev: &mut Device, ctrl: &mut Controller, qid: u16, base: u64, depth: u32, qprio: u32) -> IoQ {
        let bar = dev.board.nvme_bar;
        let (sq, cq) = (base, base + 0x10000);
        dev.mem.fill(cq, u64::from(depth) * 16, 0).unwrap();
        admin_ok(dev, ctrl, Sqe::create_io_cq(qid, depth, cq));
        admin_ok(dev, ctrl, Sqe::create_io_sq(qid, depth, qprio, sq));
        IoQ { qid, sq, cq, depth, tail: 0, head: 0, phase: true, bar }
    }

    pub fn submit(&mut self, mem: &GuestMem, sqe: &Sqe, ring: bool) {
        mem.write(self.sq + u64::from(self.tail) * 64, &sqe.to_bytes()).unwrap();
        self.tail = (self.tail + 1) % self.depth;
        if ring {
            mem.store32(sq_doorbell(self.bar, self.qid), self.tail).unwrap();
        }
    }

    pub fn ring(&self, mem: &GuestMem) {
        mem.store32(sq_doorbell(self.bar, self.qid), self.tail).unwrap();
    }

    pub fn poll(&mut self, mem: &GuestMem) -> Option<Cqe> {
        let addr = self.cq + u64::from(self.head) * 16;
        let mut b = [0u8; 16];
        mem.read(addr, &mut b).unwrap();
        let (c, p) = Cqe::decode(&b);
        if p != self.phase {
            return None;
        }
        self.head += 1;
        if self.head == self.depth {
            self.head = 0;
            self.phase = !self.phase;
        }
        mem.store32(cq_doorbell(self.bar, self.qid), self.head).unwrap();
        Some(c)
    }

    /// Submit one command, run the device, return its completion.
    pub fn exec(&mut self, dev: &mut Device, sqe: &Sqe) -> Cqe {
        self.submit(&dev.mem, sqe, true);
        dev.run_until_idle(100_000);
        self.poll(&dev.mem).expect("completion")
    }
}

pub fn rw(opcode: u8, slba: u64, nblocks: u32, prp1: u64, prp2: u64) -> Sqe {
    Sqe { opcode, nsid: 1, prp1, prp2, cdw: [slba as u32, (slba >> 32) as u32, nblocks - 1, 0, 0, 0], ..Default::default() }
}

/// SC | SCT of a status field (without DNR/M/CRD).
pub fn sc(status: u16) -> u16 {
    status & 0x7ff
}
