// SPDX-License-Identifier: MIT OR Apache-2.0
//! Raw-register I/O before any library: staging entries written by hand into the claimed
//! staging queue, the HDU started through its mmap'd registers, data verified byte for byte.
//! Runs on whatever revision the fake device plays (rev 1 or rev 2 boots of the suite).

use crate::sys::{self, open, Map};
use crate::tap::{check, eq, Case, Tap};
use directnvm_abi::*;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

const BS: usize = 4096;

/// One claimed core with all its mappings (also used by the kernel-driver group, kdrv.rs).
pub(crate) struct Core {
    pub(crate) _dn: OwnedFd,
    pub(crate) _hdu: OwnedFd,
    pub(crate) regs: Map,
    pub(crate) staging: Map,
    pub(crate) status: Map,
    pub(crate) data: Map,
    pub(crate) st: DnvmRegion,
    pub(crate) stat: DnvmRegion,
    pub(crate) dat: DnvmRegion,
    pub(crate) rev: Revision,
}

/// Claim `core`, open its HDU and map its registers and regions.
pub(crate) fn setup(core: u32) -> Result<Core, String> {
    let dn = open("/dev/directnvm").map_err(|e| e.to_string())?;
    // SAFETY: plain-integer struct, all-zero valid.
    let mut l: DnvmLayout = unsafe { std::mem::zeroed() };
    sys::ioctl(&dn, DNVM_IOC_GET_LAYOUT, &mut l).map_err(|e| e.to_string())?;
    let find = |kind| l.regions[..l.count as usize].iter().copied().find(|r| r.core == core && r.kind == kind);
    let (st, stat, dat) =
        (find(DNVM_REGION_STAGING).ok_or("staging")?, find(DNVM_REGION_STATUS).ok_or("status")?, find(DNVM_REGION_DATA).ok_or("data")?);
    let mut c = DnvmClaim { core, flags: 0 };
    sys::ioctl(&dn, DNVM_IOC_CLAIM, &mut c).map_err(|e| format!("claim: {e}"))?;
    let hdu = open(&format!("/dev/hdu{core}")).map_err(|e| e.to_string())?;
    let mut hi = HduInfo::default();
    sys::ioctl(&hdu, HDU_IOC_GET_INFO, &mut hi).map_err(|e| e.to_string())?;
    let regs = Map::shared(&hdu, 4096, 0).map_err(|e| e.to_string())?;
    let staging = Map::shared(&dn, st.size as usize, st.offset).map_err(|e| e.to_string())?;
    let status = Map::shared(&dn, stat.size as usize, stat.offset).map_err(|e| e.to_string())?;
    let data = Map::shared(&dn, dat.size as usize, dat.offset).map_err(|e| e.to_string())?;
    Ok(Core {
        _dn: dn,
        _hdu: hdu,
        regs,
        staging,
        status,
        data,
        st,
        stat,
        dat,
        rev: Revision::from_number(hi.revision).ok_or(format!("unknown HDU revision {}", hi.revision))?,
    })
}

fn pattern(lba: u64, i: usize, gen: u8) -> u8 {
    (lba as u8).wrapping_mul(31) ^ (i as u8).wrapping_mul(7) ^ ((i >> 8) as u8) ^ gen
}

impl Core {
    fn entry(&mut self, i: usize, e: DnvmEntry) {
        let off = i * DNVM_ENTRY_SIZE;
        self.staging.bytes()[off..off + DNVM_ENTRY_SIZE].copy_from_slice(&e.to_bytes());
    }

    fn status_word(&mut self, i: usize) -> u32 {
        let b = &self.status.bytes()[i * 4..i * 4 + 4];
        u32::from_le_bytes(b.try_into().unwrap())
    }

    /// Start `n` entries and wait for DONE (the protocol of docs/hardware.md).
    pub(crate) fn run(&mut self, n: usize) -> Case {
        if self.rev.has_status() {
            self.status.bytes()[..n * 4].fill(0);
            self.regs.wr64(HDU_REG_STATUSBUF, self.stat.phys);
        }
        self.regs.wr64(HDU_REG_REQBUF, self.st.phys);
        self.regs.wr64(HDU_REG_NREQS, n as u64);
        sys::barrier(); // entries (WC memory) before the START store (device memory)
        self.regs.wr64(HDU_REG_START, HDU_START_GO);
        let t0 = Instant::now();
        // START reads 0 once the device took it; only then is DONE about this batch.
        while self.regs.rd64(HDU_REG_START) != 0 || self.regs.rd64(HDU_REG_DONE) & HDU_DONE_BIT == 0 {
            if t0.elapsed() > Duration::from_secs(20) {
                return Err(format!("batch of {n} not DONE within 20 s"));
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        Ok(())
    }

    /// Stage `n` entries of `op` for blocks `lba0`.. into data buffers 0..n.
    pub(crate) fn entries(&mut self, op: u16, n: usize, lba0: u64) {
        let phys = self.dat.phys;
        for i in 0..n {
            let e = DnvmEntry {
                op,
                urgency: DNVM_URGENCY_HIGH,
                block_size: BS as u32,
                data_addr: phys + (i * BS) as u64,
                lba: lba0 + (i * BS / 512) as u64,
            };
            self.entry(i, e);
        }
    }

    /// Write `n` 4 KiB blocks of generation `gen` from LBA `lba0`.
    pub(crate) fn write(&mut self, n: usize, lba0: u64, gen: u8) -> Case {
        check(n * BS <= self.dat.size as usize && n * DNVM_ENTRY_SIZE <= self.st.size as usize, "batch too big")?;
        for i in 0..n {
            let lba = lba0 + (i * BS / 512) as u64;
            for (j, b) in self.data.bytes()[i * BS..(i + 1) * BS].iter_mut().enumerate() {
                *b = pattern(lba, j, gen);
            }
        }
        self.entries(DNVM_OP_WRITE, n, lba0);
        self.run(n)?;
        self.check_status(n)
    }

    /// Read `n` blocks from LBA `lba0` into zeroed buffers and compare with generation `gen`.
    pub(crate) fn verify(&mut self, n: usize, lba0: u64, gen: u8) -> Case {
        check(n * BS <= self.dat.size as usize && n * DNVM_ENTRY_SIZE <= self.st.size as usize, "batch too big")?;
        self.data.bytes()[..n * BS].fill(0);
        self.entries(DNVM_OP_READ, n, lba0);
        self.run(n)?;
        self.check_status(n)?;
        let mut bad = 0usize;
        for i in 0..n {
            let lba = lba0 + (i * BS / 512) as u64;
            bad += self.data.bytes()[i * BS..(i + 1) * BS].iter().enumerate().filter(|(j, b)| **b != pattern(lba, *j, gen)).count();
        }
        eq(bad, 0, &format!("mismatched bytes reading LBA {lba0:#x}+{n} blocks (generation {gen})"))
    }

    /// Write `n` 4 KiB blocks from LBA `lba0`, read them back into zeroed buffers, compare.
    fn write_read_verify(&mut self, n: usize, lba0: u64, gen: u8) -> Case {
        self.write(n, lba0, gen)?;
        self.verify(n, lba0, gen)
    }

    pub(crate) fn check_status(&mut self, n: usize) -> Case {
        if !self.rev.has_status() {
            return Ok(()); // rev 1 has no per-request status
        }
        for i in 0..n {
            let w = self.status_word(i);
            check(w == DNVM_STATUS_DONE, format!("entry {i}: status word {w:#x}, want done/success"))?;
        }
        Ok(())
    }
}

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
