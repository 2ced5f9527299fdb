// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Engine`: the handle's view of its HDU. It owns the core's mapping (register page, staging
//! entries, status words), knows the revision and its limits, and is the only code that
//! stores to the registers (REQBUF/STATUSBUF are sticky, NREQS is written only when it
//! changes) or reads DONE and the status words.

use directnvm_abi::*;

use crate::error::{Error, Result};
use crate::mmio;
use crate::platform::CoreMapping;

/// The mapped HDU of one core and its limits.
pub(super) struct Engine {
    map: Box<dyn CoreMapping>,
    regs: *mut u64,
    staging: *mut DnvmEntry,
    staging_bus: u64,
    status: *mut u32,
    status_bus: u64,
    revision: Revision,
    caps: HduCaps,
    core: u32,
    /// Most entries per hardware batch.
    batch_max: u32,
    /// Largest transfer of one staging entry in bytes.
    entry_bytes: u32,
    /// Namespace capacity in 512-byte LBAs.
    capacity_lbas: u64,
    /// Rev 2 START queue: a second batch may be started while one runs.
    start_queue: bool,
    /// Last value written to REQBUF (u64::MAX: unknown, written at the next batch).
    reqbuf_reg: u64,
    /// Last value written to NREQS (u64::MAX: unknown).
    nreqs_reg: u64,
}

impl Engine {
    /// Take over `map` (core `core`) of a device whose largest transfer is `max_transfer`
    /// bytes and whose namespace holds `capacity_lbas` (the queue registers are programmed by
    /// `program_queue_regs`).
    pub(super) fn new(map: Box<dyn CoreMapping>, core: u32, max_transfer: u32, capacity_lbas: u64) -> Result<Engine> {
        let hinfo = map.hdu_info();
        let revision = Revision::from_number(hinfo.revision).ok_or(Error::Revision)?;
        let caps = if revision.has_caps() { HduCaps::from_reg(hinfo.caps) } else { HduCaps::REV1 };
        let (st, ss, sd) = (map.staging(), map.status(), map.data());
        let staging_entries = (st.len / DNVM_ENTRY_SIZE) as u32;
        let batch_max = if !revision.has_status() {
            staging_entries.min(DNVM_REV1_MAX_NREQS)
        } else {
            staging_entries.min(caps.max_nreqs).min((ss.len / 4) as u32)
        };
        let entry_bytes = if !revision.has_sized_entries() {
            DNVM_REV1_BLOCK_SIZE
        } else {
            (caps.max_xfer_pages.max(1) * 4096).min(max_transfer.max(4096)) / 4096 * 4096
        };
        if batch_max == 0 || st.bus % DNVM_PAGE_SIZE != 0 || sd.bus % DNVM_PAGE_SIZE != 0 {
            return Err(Error::Misaligned);
        }
        Ok(Engine {
            regs: map.regs(),
            staging: st.ptr.cast(),
            staging_bus: st.bus,
            status: ss.ptr.cast(),
            status_bus: ss.bus,
            map,
            revision,
            caps,
            core,
            batch_max,
            entry_bytes,
            capacity_lbas,
            start_queue: revision.has_caps() && caps.start_queue > 0,
            reqbuf_reg: u64::MAX,
            nreqs_reg: u64::MAX,
        })
    }

    /// The mapping (its data region, its reset).
    pub(super) fn map(&self) -> &dyn CoreMapping {
        &*self.map
    }
    #[inline(always)]
    pub(super) fn revision(&self) -> Revision {
        self.revision
    }
    pub(super) fn caps(&self) -> HduCaps {
        self.caps
    }
    pub(super) fn core(&self) -> u32 {
        self.core
    }
    #[inline(always)]
    pub(super) fn batch_max(&self) -> u32 {
        self.batch_max
    }
    #[inline(always)]
    pub(super) fn entry_bytes(&self) -> u32 {
        self.entry_bytes
    }
    #[inline(always)]
    pub(super) fn capacity_lbas(&self) -> u64 {
        self.capacity_lbas
    }
    #[inline(always)]
    pub(super) fn start_queue(&self) -> bool {
        self.start_queue
    }

    /// REQBUF (one 64-bit store) and STATUSBUF are sticky: program them once per (re)start.
    pub(super) fn program_queue_regs(&mut self) {
        self.reqbuf_reg = u64::MAX;
        self.program_base(0);
        self.nreqs_reg = u64::MAX;
    }

    /// Point REQBUF and STATUSBUF at staging entry `base` (skipped when they already do).
    #[inline]
    pub(super) fn program_base(&mut self, base: u32) {
        let reqbuf = self.staging_bus + u64::from(base) * DNVM_ENTRY_SIZE as u64;
        if reqbuf == self.reqbuf_reg {
            return;
        }
        // SAFETY: `regs` is the mapped HDU page; offsets are ABI register offsets.
        unsafe {
            mmio::wr(self.regs, HduReg::Reqbuf, reqbuf);
            if self.revision.has_status() {
                mmio::wr(self.regs, HduReg::Statusbuf, self.status_bus + u64::from(base) * 4);
            }
        }
        self.reqbuf_reg = reqbuf;
    }

    /// Write staging entry `at` (< `batch_max`) and, on rev 2, zero its status word. Plain
    /// stores to the write-combining mapping; `start` publishes them.
    #[inline(always)]
    pub(super) fn write_entry(&mut self, at: u32, e: DnvmEntry) {
        debug_assert!(at < self.batch_max);
        // SAFETY: at < batch_max <= entries of the mapped staging region.
        unsafe { self.staging.add(at as usize).write(e) };
        if self.revision.has_status() {
            // SAFETY: batch_max <= status words of the mapped status region.
            unsafe { self.status.add(at as usize).write(0) };
        }
    }

    /// START a batch of `n` entries from the programmed base (NREQS written if it changed,
    /// after the barrier that publishes the entries).
    #[inline]
    pub(super) fn start(&mut self, n: u32) {
        // SAFETY: `regs` is the mapped HDU page.
        unsafe {
            if self.nreqs_reg != u64::from(n) {
                mmio::wr(self.regs, HduReg::Nreqs, u64::from(n));
                self.nreqs_reg = u64::from(n);
            }
            mmio::before_start();
            mmio::wr(self.regs, HduReg::Start, HDU_START_GO);
        }
    }

    /// The status word of staging entry `at` (rev 2; volatile, the HDU writes it).
    #[inline(always)]
    pub(super) fn status_word(&self, at: u32) -> u32 {
        debug_assert!(at < self.batch_max);
        // SAFETY: at < batch_max <= status words of the mapped status region.
        unsafe { self.status.add(at as usize).read_volatile() }
    }

    /// True once DONE of the current batch is visible (handles the stale-DONE hazard: `seen`
    /// turns true once START reads 0).
    #[inline]
    pub(super) fn batch_done(&self, seen: &mut bool) -> bool {
        // SAFETY: `regs` is the mapped HDU page.
        unsafe {
            if !*seen {
                // The model clears DONE before START; the RTL's START always reads 0 and DONE
                // clears 2 cycles after the write (docs/hardware.md §7.3).
                if mmio::rd(self.regs, HduReg::Start) != 0 {
                    return false;
                }
                *seen = true;
            }
            mmio::rd(self.regs, HduReg::Done) & HDU_DONE_BIT != 0
        }
    }

    /// DONE.QUEUED reads 0: the START queue slot is free (only the device clears it).
    #[inline]
    pub(super) fn queue_slot_free(&self) -> bool {
        // SAFETY: `regs` is the mapped HDU page.
        unsafe { mmio::rd(self.regs, HduReg::Done) & HDU_QUEUED_BIT == 0 }
    }

    /// Reset the engine (rev 2; `Revision` on rev 1) and program the queue registers again.
    pub(super) fn reset(&mut self) -> Result<()> {
        self.map.reset()?;
        self.program_queue_regs();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Region;

    /// A core in ordinary memory: registers, 8 staging entries, 8 status words, 4 data pages.
    struct Mem {
        regs: Vec<u64>,
        staging: Vec<DnvmEntry>,
        status: Vec<u32>,
        data: Vec<u8>,
        info: HduInfo,
    }

    struct Map(*mut Mem);
    // SAFETY: test only; the memory outlives the mapping and one thread uses it.
    unsafe impl Send for Map {}

    impl CoreMapping for Map {
        fn regs(&self) -> *mut u64 {
            // SAFETY: the test keeps `Mem` alive.
            unsafe { (*self.0).regs.as_mut_ptr() }
        }
        fn hdu_info(&self) -> HduInfo {
            // SAFETY: as above.
            unsafe { (*self.0).info }
        }
        fn staging(&self) -> Region {
            // SAFETY: as above.
            let m = unsafe { &mut *self.0 };
            Region { ptr: m.staging.as_mut_ptr().cast(), bus: 0x10_0000, len: m.staging.len() * DNVM_ENTRY_SIZE }
        }
        fn status(&self) -> Region {
            // SAFETY: as above.
            let m = unsafe { &mut *self.0 };
            Region { ptr: m.status.as_mut_ptr().cast(), bus: 0x20_0000, len: m.status.len() * 4 }
        }
        fn data(&self) -> Region {
            // SAFETY: as above.
            let m = unsafe { &mut *self.0 };
            Region { ptr: m.data.as_mut_ptr(), bus: 0x30_0000, len: m.data.len() }
        }
        fn reset(&self) -> Result<()> {
            Err(Error::Revision)
        }
    }

    fn mem(revision: u32, caps: u64) -> Box<Mem> {
        let e = DnvmEntry { op: 0, urgency: 0, block_size: 0, data_addr: 0, lba: 0 };
        Box::new(Mem {
            regs: vec![0; 512],
            staging: vec![e; 8],
            status: vec![7; 8],
            data: vec![0; 4 * 4096],
            info: HduInfo { revision, caps, ..HduInfo::default() },
        })
    }

    fn reg(m: &Mem, r: HduReg) -> u64 {
        // SAFETY: the register page of the test.
        unsafe { mmio::rd(m.regs.as_ptr().cast_mut(), r) }
    }

    #[test]
    fn rev1_limits_and_sticky_registers() {
        let mut m = mem(1, 0);
        let mut e = Engine::new(Box::new(Map(&mut *m)), 3, 1 << 20, 1 << 16).unwrap();
        assert_eq!((e.core(), e.batch_max(), e.entry_bytes(), e.start_queue()), (3, 8, DNVM_REV1_BLOCK_SIZE, false));
        assert_eq!(e.capacity_lbas(), 1 << 16);
        assert_eq!(reg(&m, HduReg::Reqbuf), 0);
        e.program_queue_regs();
        assert_eq!(reg(&m, HduReg::Reqbuf), 0x10_0000);
        e.program_base(2);
        assert_eq!(reg(&m, HduReg::Reqbuf), 0x10_0000 + 2 * DNVM_ENTRY_SIZE as u64);
        let ent = DnvmEntry { op: DNVM_OP_READ, urgency: 1, block_size: 4096, data_addr: 0x30_0000, lba: 8 };
        e.write_entry(2, ent);
        assert_eq!(m.staging[2].lba, 8);
        assert_eq!(m.status[2], 7, "rev 1 has no status words");
        e.start(1);
        assert_eq!((reg(&m, HduReg::Nreqs), reg(&m, HduReg::Start)), (1, HDU_START_GO));
        let mut seen = false;
        assert!(!e.batch_done(&mut seen), "START still reads non-zero");
        assert!(e.reset().is_err());
    }

    #[test]
    fn rev2_limits_come_from_caps() {
        // 1 engine, START queue, max 4 entries per batch, 2 pages per entry.
        let caps = 1 | (1 << 4) | (4 << 16) | (2 << 48);
        let mut m = mem(2, caps);
        let mut e = Engine::new(Box::new(Map(&mut *m)), 0, 1 << 20, 1 << 16).unwrap();
        assert_eq!((e.batch_max(), e.entry_bytes(), e.start_queue()), (4, 8192, true));
        e.write_entry(1, DnvmEntry { op: DNVM_OP_WRITE, urgency: 0, block_size: 8192, data_addr: 0x30_0000, lba: 0 });
        assert_eq!(m.status[1], 0, "the status word is zeroed with its entry");
        m.status[1] = DNVM_STATUS_DONE;
        assert_eq!(e.status_word(1), DNVM_STATUS_DONE);
        let mut seen = false;
        assert!(!e.batch_done(&mut seen) && seen, "START reads 0, DONE not set");
        assert!(e.queue_slot_free());
    }
}
