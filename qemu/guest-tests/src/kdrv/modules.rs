// SPDX-License-Identifier: MIT OR Apache-2.0
//! The modules' KUnit suites, the rev 2 privileged page never being mappable, and hdu.ko's
//! `shared_readonly` parameter (reloads only hdu.ko).

use std::time::Duration;

use directnvm_abi::*;

use super::debugfs::DBG;
use super::reinit::{reinit_lba, REINIT_BLOCKS};
use super::{core, hdu_info, hdu_stats, open_flags, read_text, s};
use crate::fixtures::ioctl::expect_errno;
use crate::sys::{ioctl_none, open, sh, Map};
use crate::tap::{check, eq, Case, Tap};

pub(super) fn kunit_cases(t: &mut Tap) {
    t.case("KUnit suites directnvm_ioctl and directnvm_hdu ran and passed", || {
        let (_, log) = sh("dmesg");
        for suite in ["directnvm_ioctl", "directnvm_hdu", "directnvm_layout"] {
            let ran = log.lines().any(|l| {
                let l = l.split("] ").last().unwrap_or(l).trim();
                l.starts_with("ok ") && l.ends_with(&format!(" {suite}"))
            });
            check(ran, format!("no passing KUnit result line for {suite}"))?;
            let failed: Vec<&str> = log.lines().filter(|l| l.contains("not ok") && l.contains(suite)).collect();
            check(failed.is_empty(), format!("{suite} failures: {failed:?}"))?;
        }
        Ok(())
    });
}

pub(super) fn privileged_page_cases(t: &mut Tap) {
    t.case("hdu: the privileged page can never be mapped (any offset, size or private mapping)", || {
        for n in 0..4u32 {
            let fd = open(&format!("/dev/hdu{n}")).map_err(s)?;
            let hi = hdu_info(&fd)?;
            let rw = libc::PROT_READ | libc::PROT_WRITE;
            expect_errno(Map::shared(&fd, 4096, 4096), libc::EINVAL, "offset one page")?;
            expect_errno(Map::shared(&fd, 8192, 0), libc::EINVAL, "user page + next page")?;
            expect_errno(Map::new(&fd, 4096, 4096, rw, libc::MAP_PRIVATE), libc::EINVAL, "MAP_PRIVATE writable, offset one page")?;
            expect_errno(
                Map::new(&fd, 4096, 4096, libc::PROT_READ, libc::MAP_PRIVATE),
                libc::EINVAL,
                "MAP_PRIVATE read-only, offset one page",
            )?;
            expect_errno(Map::new(&fd, 4096, 0, rw, libc::MAP_PRIVATE), libc::EINVAL, "MAP_PRIVATE writable, offset 0")?;
            if hi.priv_phys != 0 {
                let delta = hi.priv_phys.wrapping_sub(hi.user_phys);
                expect_errno(Map::shared(&fd, 4096, delta), libc::EINVAL, "offset priv - user")?;
                expect_errno(Map::shared(&fd, 4096, hi.priv_phys), libc::EINVAL, "offset = privileged phys")?;
            }
            // The one legal mapping really is the user page: DONE/ID read as the driver says.
            let m = Map::shared(&fd, 4096, 0).map_err(s)?;
            let id = m.rd64(HDU_REG_ID);
            eq(hdu_revision(id), hi.revision, &format!("hdu{n}: revision through the mapping"))?;
        }
        Ok(())
    });
}

fn reload_hdu(args: &str) -> Case {
    let (ok, out) = sh(&format!("rmmod hdu && insmod /lib/modules/hdu.ko {args}"));
    check(ok, format!("reload hdu.ko {args}: {out}"))?;
    for _ in 0..200 {
        if (0..4).all(|n| std::path::Path::new(&format!("/dev/hdu{n}")).exists()) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("hdu nodes did not come back".into())
}

pub(super) fn shared_open_cases(t: &mut Tap) {
    t.case("hdu default: exclusive for every open mode (O_RDONLY second open is EBUSY)", || {
        let _a = open("/dev/hdu1").map_err(s)?;
        expect_errno(open_flags("/dev/hdu1", libc::O_RDONLY), libc::EBUSY, "O_RDONLY beside the owner")?;
        expect_errno(open_flags("/dev/hdu1", libc::O_RDWR), libc::EBUSY, "O_RDWR beside the owner")
    });
    t.case("hdu shared_readonly=1: read-only opens beside the owner; GET_INFO only, no mmap, no reset", || {
        reload_hdu("shared_readonly=1")?;
        let r = (|| -> Case {
            let r0 = open_flags("/dev/hdu1", libc::O_RDONLY).map_err(|e| format!("reader before owner: {e}"))?;
            let owner = open("/dev/hdu1").map_err(|e| format!("owner beside a reader: {e}"))?;
            let r1 = open_flags("/dev/hdu1", libc::O_RDONLY).map_err(|e| format!("reader beside owner: {e}"))?;
            expect_errno(open("/dev/hdu1"), libc::EBUSY, "second writable open")?;
            let hi = hdu_info(&r1)?;
            eq(hi.index, 1, "reader GET_INFO index")?;
            let before = hdu_stats(&r1)?;
            expect_errno(Map::new(&r1, 4096, 0, libc::PROT_READ, libc::MAP_SHARED), libc::EACCES, "reader mmap")?;
            expect_errno(ioctl_none(&r1, HDU_IOC_RESET), libc::EPERM, "reader RESET")?;
            expect_errno(ioctl_none(&r1, HDU_IOC_RESET_QUEUES), libc::EPERM, "reader RESET_QUEUES")?;
            eq(read_text("/sys/class/misc/hdu1/owner")?.trim().to_string(), "open".to_string(), "sysfs owner")?;
            let dbg = read_text(&format!("{DBG}/hdu1/registers"))?;
            check(
                dbg.lines().next().is_some_and(|h| h.contains("owner open readers 2")),
                format!("debugfs header {:?}", dbg.lines().next()),
            )?;
            drop((r0, r1));
            let after = hdu_stats(&owner)?;
            eq(after.resets, before.resets, "engine resets after readers closed (a reader never resets)")?;
            eq(after.opens, before.opens, "opens counted between")?;
            let m = Map::shared(&owner, 4096, 0).map_err(|e| format!("owner mmap: {e}"))?;
            eq(hdu_revision(m.rd64(HDU_REG_ID)), hi.revision, "owner mapping works")
        })();
        let back = reload_hdu("");
        r?;
        back?;
        let _a = open("/dev/hdu1").map_err(s)?;
        expect_errno(open_flags("/dev/hdu1", libc::O_RDONLY), libc::EBUSY, "O_RDONLY after reload without the parameter")
    });
    t.case("after the hdu.ko reloads: raw I/O on core 1 still verifies", || {
        let mut k = core(1)?;
        k.write(REINIT_BLOCKS, reinit_lba(1, 4), 4)?;
        k.verify(REINIT_BLOCKS, reinit_lba(1, 4), 4)
    });
}
