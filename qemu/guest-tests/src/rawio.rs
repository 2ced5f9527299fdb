// SPDX-License-Identifier: MIT OR Apache-2.0
//! Raw-register I/O before any library: staging entries written by hand into the claimed
//! staging queue, the HDU started through its mmap'd registers, data verified byte for byte.
//! Runs on whatever revision the fake device plays (rev 1 or rev 2 boots of the suite).

use crate::fixtures::raw_core::{setup, BS};
use crate::sys::{self, open};
use crate::tap::{check, eq, Tap};
use directnvm_abi::*;

/// Every case of this group.
pub fn run(t: &mut Tap) {
    t.case("raw registers: 170-entry write+read batch on each core verifies byte for byte", || {
        for core in 0..4u32 {
            let mut c = setup(core)?;
            let n = if c.rev.has_caps() { 170 } else { DNVM_REV1_MAX_NREQS as usize };
            c.write_read_verify(n, core as u64 * 0x2_0000, core as u8).map_err(|e| format!("core {core}: {e}"))?;
        }
        Ok(())
    });
    t.case("raw registers: data survives across batches and generations (rewrite, read back)", || {
        let mut c = setup(1)?;
        for gen in 1..=3u8 {
            c.write_read_verify(31, 0x10_0000, gen).map_err(|e| format!("generation {gen}: {e}"))?;
        }
        // Sub-batch boundary on rev 1 (31 in flight): 32 and 62 entries.
        c.write_read_verify(32, 0x11_0000, 9)?;
        c.write_read_verify(62, 0x12_0000, 10)
    });
    t.case("raw registers: NREQS=0 still completes (DONE set, no data moved)", || {
        let mut c = setup(2)?;
        c.run(0)
    });
    t.case("raw registers (rev 2): LBA past the namespace end reports NVMe status 0x80", || {
        let mut c = setup(0)?;
        if !c.rev.has_status() {
            return Ok(()); // rev 1 has no status path: the RTL drops CQE status (documented)
        }
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        // SAFETY: plain-integer struct, all-zero valid.
        let mut info: DnvmInfo = unsafe { std::mem::zeroed() };
        sys::ioctl(&fd, DNVM_IOC_GET_INFO, &mut info).map_err(|e| e.to_string())?;
        let phys = c.dat.phys;
        c.entry(0, DnvmEntry { op: DNVM_OP_READ, urgency: 0, block_size: BS as u32, data_addr: phys, lba: info.capacity_lbas });
        c.entry(1, DnvmEntry { op: DNVM_OP_READ, urgency: 0, block_size: BS as u32, data_addr: phys + BS as u64, lba: 0 });
        c.run(2)?;
        let w = c.status_word(0);
        eq(dnvm_status_nvme(w) & 0x7ff, 0x80, "SC/SCT of the out-of-range read")?;
        eq(c.status_word(1), DNVM_STATUS_DONE, "the in-range read beside it")
    });
    t.case("raw registers (rev 2): entry outside the DMA window fails alone, others succeed", || {
        let mut c = setup(3)?;
        if !c.rev.has_dma_window() {
            return Ok(()); // rev 1 has no DMA window (documented); nothing to check
        }
        let phys = c.dat.phys;
        for i in 0..4 {
            let addr = if i == 2 { 0x1000 } else { phys + (i * BS) as u64 };
            c.entry(i, DnvmEntry { op: DNVM_OP_READ, urgency: 0, block_size: BS as u32, data_addr: addr, lba: 8 * i as u64 });
        }
        c.run(4)?;
        for i in 0..4 {
            let w = c.status_word(i);
            if i == 2 {
                check(
                    w & DNVM_STATUS_DONE != 0 && dnvm_status_hdu(w) == DNVM_HDU_ERR_WINDOW,
                    format!("entry 2: status {w:#x}, want window error"),
                )?;
            } else {
                eq(w, DNVM_STATUS_DONE, &format!("entry {i} status"))?;
            }
        }
        Ok(())
    });
}
