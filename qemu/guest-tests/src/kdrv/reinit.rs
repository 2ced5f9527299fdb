// SPDX-License-Identifier: MIT OR Apache-2.0
//! The controller re-init protocol on rev 1 and rev 2 and the reset drain (docs/design.md
//! "Controller re-init"), driven through the fake device's test mailbox.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use directnvm_abi::*;

use super::{core, dn_info, dn_stats, hdu_stats, open_flags, s};
use crate::fixtures::ioctl::{claim, expect_errno};
use crate::sys::{self, ioctl, ioctl_none, open, Map};
use crate::tap::{check, eq, Case, Tap};

/// The fake device's test mailbox (docs/hardware.md §10), mapped through /dev/mem.
struct Mailbox {
    _fd: OwnedFd,
    m: Map,
}

impl Mailbox {
    fn open() -> Result<Mailbox, String> {
        let fd = open_flags("/dev/mem", libc::O_RDWR | libc::O_SYNC).map_err(|e| format!("/dev/mem: {e}"))?;
        let m = Map::shared(&fd, 4096, TESTDEV_MAILBOX_PHYS).map_err(|e| format!("mmap mailbox: {e}"))?;
        let mut mb = Mailbox { _fd: fd, m };
        eq(mb.rd32(TESTDEV_REG_MAGIC), TESTDEV_MAGIC, "mailbox magic")?;
        Ok(mb)
    }

    fn reg32(&mut self, off: usize) -> *mut u32 {
        self.m.bytes()[off..off + 4].as_mut_ptr().cast()
    }

    fn rd32(&mut self, off: usize) -> u32 {
        // SAFETY: an aligned u32 inside the live mailbox mapping.
        unsafe { std::ptr::read_volatile(self.reg32(off)) }
    }

    fn wr32(&mut self, off: usize, v: u32) {
        // SAFETY: as in rd32.
        unsafe { std::ptr::write_volatile(self.reg32(off), v) }
    }

    /// Run one command; its status must be OK.
    fn cmd(&mut self, cmd: u32, args: &[u64]) -> Case {
        let seq = self.rd32(TESTDEV_REG_ACK_SEQ).wrapping_add(1);
        self.wr32(TESTDEV_REG_CMD, cmd);
        for (i, a) in args.iter().enumerate() {
            self.m.wr64(TESTDEV_REG_ARGS + 8 * i, *a);
        }
        sys::barrier();
        self.wr32(TESTDEV_REG_REQ_SEQ, seq);
        let t0 = Instant::now();
        while self.rd32(TESTDEV_REG_ACK_SEQ) != seq {
            if t0.elapsed() > Duration::from_secs(5) {
                return Err(format!("mailbox command {cmd} not acknowledged in 5 s"));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let st = self.rd32(TESTDEV_REG_STATUS);
        eq(st, TESTDEV_STATUS_OK, &format!("mailbox command {cmd} status"))
    }
}

/// Rev 2 engine reset while commands sit at a slowed SSD: the reset drains them (the spec
/// allows up to 1 s; the old 100 ms bound failed here), reports them ABORTED, and the engine
/// (a plain reset keeps its queue pointers) does verified I/O right after.
pub(super) fn reset_drain_cases(t: &mut Tap, rev: Revision) {
    if !rev.can_reset() {
        t.case("rev 1: HDU_IOC_RESET and HDU_IOC_RESET_QUEUES are EOPNOTSUPP", || {
            let h = open("/dev/hdu3").map_err(s)?;
            expect_errno(ioctl_none(&h, HDU_IOC_RESET), libc::EOPNOTSUPP, "RESET")?;
            expect_errno(ioctl_none(&h, HDU_IOC_RESET_QUEUES), libc::EOPNOTSUPP, "RESET_QUEUES")
        });
        return;
    }
    t.case("rev 2: reset with commands at a slow SSD drains them (> 100 ms), reports ABORTED, I/O works after", || {
        let mut mb = Mailbox::open()?;
        let mut k = core(3)?;
        const N: usize = 8;
        k.write(N, reinit_lba(3, 5), 5)?;
        // 5000x: a 40 us read takes 200 ms at the SSD (8 of them drain in ~400 ms).
        mb.cmd(TESTDEV_CMD_SET_FAULT, &[TESTDEV_FAULT_SLOW, 5_000_000])?;
        let r = (|| -> Case {
            k.entries(DNVM_OP_READ, N, reinit_lba(3, 5));
            k.status.bytes()[..N * 4].fill(0);
            k.regs.wr64(HDU_REG_STATUSBUF, k.stat.phys);
            k.regs.wr64(HDU_REG_REQBUF, k.st.phys);
            k.regs.wr64(HDU_REG_NREQS, N as u64);
            sys::barrier();
            k.regs.wr64(HDU_REG_START, HDU_START_GO);
            let t0 = Instant::now();
            while k.regs.rd64(HDU_REG_START) != 0 || k.regs.rd64(HDU_REG_DONE) & HDU_BUSY_BIT == 0 {
                check(t0.elapsed() < Duration::from_secs(5), "batch did not start")?;
                std::thread::sleep(Duration::from_micros(50));
            }
            std::thread::sleep(Duration::from_millis(20)); // commands reach the SSD
            let t1 = Instant::now();
            ioctl_none(&k._hdu, HDU_IOC_RESET).map_err(|e| format!("HDU_IOC_RESET: {e}"))?;
            let took = t1.elapsed();
            println!("# engine reset with {N} slowed reads in flight took {} ms", took.as_millis());
            check(took > Duration::from_millis(100), format!("reset took only {took:?}: nothing was drained"))?;
            eq(k.regs.rd64(HDU_REG_DONE) & (HDU_DONE_BIT | HDU_BUSY_BIT), 0, "DONE/BUSY after reset")?;
            for i in 0..N {
                let b = &k.status.bytes()[i * 4..i * 4 + 4];
                let w = u32::from_le_bytes(b.try_into().unwrap());
                eq(dnvm_status_hdu(w), DNVM_HDU_ERR_ABORTED, &format!("entry {i} status {w:#x}: HDU error"))?;
            }
            Ok(())
        })();
        let cleared = mb.cmd(TESTDEV_CMD_CLEAR_FAULTS, &[]);
        r?;
        cleared?;
        k.write(N, reinit_lba(3, 6), 6)?;
        k.verify(N, reinit_lba(3, 6), 6)?;
        k.verify(N, reinit_lba(3, 5), 5)
    });
}

/// LBAs of the re-init test: core `c`, region 1 (before) and 2 (after).
pub(super) fn reinit_lba(c: u32, region: u64) -> u64 {
    0x18_0000 + c as u64 * 0x4000 + region * 0x400
}

pub(super) const REINIT_BLOCKS: usize = 7;

pub(super) fn reinit_cases(t: &mut Tap, rev: Revision) {
    t.case("directnvm: GET_INFO sets QUEUES_USED once a core is claimed", || {
        let fd = open("/dev/directnvm").map_err(s)?;
        claim(&fd, 3, false).map_err(s)?;
        let i = dn_info(&fd)?;
        check(i.flags & DNVM_INFO_READY != 0, "controller not ready")?;
        check(i.flags & DNVM_INFO_QUEUES_USED != 0, format!("flags {:#x}: QUEUES_USED missing", i.flags))
    });
    t.case("controller re-init is refused (Busy) while an HDU is open; nothing re-created", || {
        let dn = open("/dev/directnvm").map_err(s)?;
        let before = dn_stats(&dn)?.controller_inits;
        let _h = open("/dev/hdu1").map_err(s)?;
        let d = nvmedl::Device::open().map_err(s)?;
        eq(d.controller_init().err(), Some(nvmedl::Error::Busy), "Device::controller_init with hdu1 open")?;
        eq(dn_stats(&dn)?.controller_inits, before, "controller_inits")
    });
    if !rev.can_reset() {
        t.case("rev 1: controller re-init after I/O is refused (Revision); queues kept, I/O still verifies", || {
            let dn = open("/dev/directnvm").map_err(s)?;
            let before = dn_stats(&dn)?.controller_inits;
            let d = nvmedl::Device::open().map_err(s)?;
            eq(d.controller_init().err(), Some(nvmedl::Error::Revision), "Device::controller_init on rev 1")?;
            eq(dn_stats(&dn)?.controller_inits, before, "controller_inits (no re-init happened)")?;
            let h = open("/dev/hdu0").map_err(s)?;
            expect_errno(ioctl_none(&h, HDU_IOC_RESET_QUEUES), libc::EOPNOTSUPP, "HDU_IOC_RESET_QUEUES on rev 1")?;
            drop((h, dn));
            let mut c = core(0)?;
            c.write(REINIT_BLOCKS, reinit_lba(0, 1), 1)?;
            c.verify(REINIT_BLOCKS, reinit_lba(0, 1), 1)
        });
        return;
    }
    t.case("rev 2: CONTROLLER_INIT + engine queue reset: I/O verifies byte for byte, earlier data intact", || {
        // Before: every engine's queue pointers move (and its SQ slots hold these commands).
        for c in 0..4 {
            let mut k = core(c)?;
            k.write(REINIT_BLOCKS, reinit_lba(c, 1), 1).map_err(|e| format!("core {c} before: {e}"))?;
            k.verify(REINIT_BLOCKS, reinit_lba(c, 1), 1).map_err(|e| format!("core {c} before: {e}"))?;
        }
        let dn = open("/dev/directnvm").map_err(s)?;
        let inits = dn_stats(&dn)?.controller_inits;
        let mut resets = Vec::new();
        for c in 0..4 {
            resets.push(hdu_stats(&open(&format!("/dev/hdu{c}")).map_err(s)?)?.resets);
        }
        let d = nvmedl::Device::open().map_err(s)?;
        d.controller_init().map_err(|e| format!("Device::controller_init: {e}"))?;
        eq(dn_stats(&dn)?.controller_inits, inits + 1, "controller_inits")?;
        let i = dn_info(&dn)?;
        check(i.flags & DNVM_INFO_READY != 0, "controller not ready after re-init")?;
        eq(i.flags & DNVM_INFO_QUEUES_USED, 0, "QUEUES_USED right after re-init")?;
        for c in 0..4 {
            let st = hdu_stats(&open(&format!("/dev/hdu{c}")).map_err(s)?)?;
            // One queue reset, plus the plain reset when libnvmedl closed the HDU.
            check(st.resets >= resets[c as usize] + 2, format!("hdu{c}: resets {} -> {}", resets[c as usize], st.resets))?;
        }
        // After: the same data buffers, new LBAs. An engine out of step with its new queue
        // would make the controller replay the stale SQEs (the "before" writes, now with
        // these buffers' new contents) and corrupt region 1, or take stale completions.
        for c in 0..4 {
            let mut k = core(c)?;
            k.write(REINIT_BLOCKS, reinit_lba(c, 2), 2).map_err(|e| format!("core {c} after: {e}"))?;
            k.verify(REINIT_BLOCKS, reinit_lba(c, 2), 2).map_err(|e| format!("core {c} after: {e}"))?;
            k.verify(REINIT_BLOCKS, reinit_lba(c, 1), 1).map_err(|e| format!("core {c} data from before the re-init: {e}"))?;
        }
        let i = dn_info(&dn)?;
        check(i.flags & DNVM_INFO_QUEUES_USED != 0, "QUEUES_USED after claims")
    });
    t.case("rev 2: HDU_IOC_RESET_QUEUES with a wrong size is EINVAL; on an idle engine it succeeds", || {
        let h = open("/dev/hdu2").map_err(s)?;
        let mut x = 0u64;
        expect_errno(ioctl(&h, dnvm_ioc(DNVM_IOC_WRITE, HDU_IOC_MAGIC, 0x04, 8), &mut x), libc::EINVAL, "sized RESET_QUEUES")?;
        let before = hdu_stats(&h)?.resets;
        // Without a re-created queue this would desync the engine, so re-create first.
        drop(h);
        let d = nvmedl::Device::open().map_err(s)?;
        d.controller_init().map_err(|e| format!("Device::controller_init: {e}"))?;
        let h = open("/dev/hdu2").map_err(s)?;
        check(hdu_stats(&h)?.resets > before, "resets did not grow")?;
        drop(h);
        let mut k = core(2)?;
        k.write(REINIT_BLOCKS, reinit_lba(2, 3), 3)?;
        k.verify(REINIT_BLOCKS, reinit_lba(2, 3), 3)?;
        k.verify(REINIT_BLOCKS, reinit_lba(2, 2), 2)
    });
}
