// SPDX-License-Identifier: MIT OR Apache-2.0
//! Probe, ioctl and mmap rules of /dev/directnvm and /dev/hduN, checked against the live device
//! tree, plus the module load/unload cycle.

use crate::fixtures::ioctl::{claim, expect_errno, hdu_info, info, layout};
use crate::sys::{self, errno, ioctl, ioctl_none, open, Map};
use crate::tap::{check, eq, Case, Tap};
use directnvm_abi::*;
use std::time::{Duration, Instant};

const DT: &str = "/sys/firmware/devicetree/base";
const PAGE: u64 = 4096;

fn dt_u32(path: &str) -> Option<u32> {
    let b = std::fs::read(format!("{DT}/{path}")).ok()?;
    Some(u32::from_be_bytes(b.get(0..4)?.try_into().ok()?))
}

/// DT nodes of the board: (path of the engine node, [(hdu path, index)], carve-out (base, size)).
struct Board {
    engine: String,
    hdus: Vec<(String, u32)>,
    carve: (u64, u64),
}

fn find_board() -> Result<Board, String> {
    let mut engine = None;
    let mut hdus = Vec::new();
    // dts/qemu-virt-directnvm.dtso puts the engine and the HDUs directly under the root.
    for e in std::fs::read_dir(DT).map_err(|e| format!("{DT}: {e}"))? {
        let name = e.map_err(|e| e.to_string())?.file_name().to_string_lossy().into_owned();
        let compat = std::fs::read(format!("{DT}/{name}/compatible")).unwrap_or_default();
        if compat.starts_with(DT_COMPAT_ENGINE.to_bytes()) {
            engine = Some(name);
        } else if compat.starts_with(DT_COMPAT_HDU.to_bytes()) {
            let idx = dt_u32(&format!("{name}/directnvm,index")).ok_or("hdu without index")?;
            hdus.push((name, idx));
        }
    }
    hdus.sort_by_key(|h| h.1);
    let mut carve = None;
    for e in std::fs::read_dir(format!("{DT}/reserved-memory")).map_err(|e| e.to_string())? {
        let name = e.map_err(|e| e.to_string())?.file_name().to_string_lossy().into_owned();
        if std::path::Path::new(&format!("{DT}/reserved-memory/{name}/no-map")).exists() {
            carve = sys::dt_reg(&format!("reserved-memory/{name}")).ok().and_then(|r| r.first().copied());
        }
    }
    Ok(Board { engine: engine.ok_or("no directnvm,engine node")?, hdus, carve: carve.ok_or("no no-map reserved-memory node")? })
}

fn region(l: &DnvmLayout, core: u32, kind: u32) -> Option<DnvmRegion> {
    l.regions[..l.count as usize].iter().copied().find(|r| r.core == core && r.kind == kind)
}

/// Every case of this group.
pub fn run(t: &mut Tap) {
    let board = match find_board() {
        Ok(b) => b,
        Err(e) => {
            t.case("device tree describes the DirectNVM board", || Err(e));
            return;
        }
    };
    t.case("device tree describes the DirectNVM board", || check(board.hdus.len() == 4, "want 4 HDU nodes"));
    probe_cases(t, &board);
    sysfs_cases(t, &board);
    ioctl_cases(t);
    mmap_cases(t);
    hdu_cases(t, &board);
    unbind_cases(t, &board);
    lifecycle_cases(t);
    // Everything works again after the reload cycles.
    probe_cases(t, &board);
}

fn probe_cases(t: &mut Tap, b: &Board) {
    t.case("directnvm probed: /dev/directnvm exists", || check(std::path::Path::new("/dev/directnvm").exists(), "/dev/directnvm missing"));
    for (_, idx) in &b.hdus {
        t.case(&format!("hdu probed: /dev/hdu{idx} exists"), || {
            check(std::path::Path::new(&format!("/dev/hdu{idx}")).exists(), "node missing")
        });
    }
    t.case("GET_INFO reports the DT carve-out and configuration", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let i = info(&fd).map_err(|e| e.to_string())?;
        eq(i.abi_version, DNVM_ABI_VERSION, "abi_version")?;
        eq(Some(i.cores), dt_u32(&format!("{}/directnvm,cores", b.engine)), "cores")?;
        eq((i.carveout_phys, i.carveout_size), b.carve, "carve-out")?;
        eq(i.lba_size, 512, "lba_size")
    });
    t.case("GET_LAYOUT: page-aligned disjoint regions inside the carve-out", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let l = layout(&fd).map_err(|e| e.to_string())?;
        let i = info(&fd).map_err(|e| e.to_string())?;
        eq(l.count, 1 + 3 * i.cores, "region count")?;
        let mut end = 0;
        for r in &l.regions[..l.count as usize] {
            check(r.offset % PAGE == 0 && r.size % PAGE == 0 && r.size > 0, format!("unaligned {r:?}"))?;
            check(r.offset >= end, format!("overlap at {r:?}"))?;
            eq(r.phys, b.carve.0 + r.offset, "phys = base + offset")?;
            end = r.offset + r.size;
        }
        check(end <= b.carve.1, "layout past the carve-out")?;
        eq(l.regions[0].kind, DNVM_REGION_ADMIN, "first region is admin")?;
        eq(l.regions[0].cache, DNVM_CACHE_NONE, "admin not mappable")
    });
    for (path, idx) in &b.hdus {
        t.case(&format!("hdu{idx} GET_INFO matches its DT node"), || {
            let fd = open(&format!("/dev/hdu{idx}")).map_err(|e| e.to_string())?;
            let hi = hdu_info(&fd).map_err(|e| e.to_string())?;
            let reg = sys::dt_reg(path).map_err(|e| e.to_string())?;
            eq(hi.index, *idx, "index")?;
            eq(hi.user_phys, reg[0].0, "user page")?;
            check(Revision::from_number(hi.revision).is_some(), format!("revision {}", hi.revision))
        });
    }
}

fn sysfs(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| format!("{path}: {e}"))
}

fn sysfs_cases(t: &mut Tap, b: &Board) {
    for (path, idx) in &b.hdus {
        t.case(&format!("hdu{idx} sysfs attributes match GET_INFO and the DT"), || {
            let d = format!("/sys/class/misc/hdu{idx}");
            let fd = open(&format!("/dev/hdu{idx}")).map_err(|e| e.to_string())?;
            let hi = hdu_info(&fd).map_err(|e| e.to_string())?;
            let reg = sys::dt_reg(path).map_err(|e| e.to_string())?;
            eq(sysfs(&format!("{d}/index"))?, idx.to_string(), "index")?;
            eq(sysfs(&format!("{d}/revision"))?, hi.revision.to_string(), "revision")?;
            eq(sysfs(&format!("{d}/engines"))?, hi.engines.to_string(), "engines")?;
            eq(sysfs(&format!("{d}/caps"))?, format!("{:#018x}", hi.caps), "caps")?;
            eq(sysfs(&format!("{d}/phys_addr"))?, format!("{:#x}", reg[0].0), "phys_addr")?;
            eq(sysfs(&format!("{d}/owner"))?, "open".to_string(), "owner while open")?;
            let state = sysfs(&format!("{d}/state"))?;
            check(["done", "idle", "busy", "not-done"].contains(&state.as_str()), format!("state {state}"))?;
            sysfs(&format!("{d}/errors"))?.parse::<u64>().map_err(|e| format!("errors: {e}"))?;
            Ok(())
        });
    }
    t.case("directnvm sysfs attributes match GET_INFO", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let i = info(&fd).map_err(|e| e.to_string())?;
        let d = "/sys/class/misc/directnvm";
        eq(sysfs(&format!("{d}/cores"))?, i.cores.to_string(), "cores")?;
        eq(sysfs(&format!("{d}/engines"))?, i.engines.to_string(), "engines")?;
        eq(sysfs(&format!("{d}/carveout"))?, format!("{:#x}+{:#x}", i.carveout_phys, i.carveout_size), "carveout")?;
        eq(sysfs(&format!("{d}/ready"))?, ((i.flags & DNVM_INFO_READY != 0) as u32).to_string(), "ready")?;
        claim(&fd, 2, false).map_err(|e| e.to_string())?;
        eq(sysfs(&format!("{d}/claimed"))?, "0x4".to_string(), "claimed after CLAIM(2)")
    });
}

fn ioctl_cases(t: &mut Tap) {
    t.case("directnvm: unknown ioctl is ENOTTY", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let mut x = 0u64;
        expect_errno(ioctl(&fd, dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x7f, 8), &mut x), libc::ENOTTY, "nr 0x7f")?;
        expect_errno(ioctl(&fd, dnvm_ioc(DNVM_IOC_READ, b'x' as u32, 1, 8), &mut x), libc::ENOTTY, "foreign type")
    });
    t.case("directnvm: short and oversized structs are EINVAL", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let mut big = [0u8; 4096];
        let short = dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, std::mem::size_of::<DnvmInfo>() - 8);
        let over = dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, std::mem::size_of::<DnvmInfo>() + 8);
        expect_errno(ioctl(&fd, short, &mut big), libc::EINVAL, "short GET_INFO")?;
        expect_errno(ioctl(&fd, over, &mut big), libc::EINVAL, "oversized GET_INFO")?;
        let short_claim = dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x03, 4);
        expect_errno(ioctl(&fd, short_claim, &mut big), libc::EINVAL, "short CLAIM")
    });
    t.case("directnvm: CLAIM of a bad core or with flags is EINVAL", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        expect_errno(claim(&fd, 99, false), libc::EINVAL, "core 99")?;
        expect_errno(claim(&fd, u32::MAX, false), libc::EINVAL, "core MAX")?;
        let mut c = DnvmClaim { core: 0, flags: 1 };
        expect_errno(ioctl(&fd, DNVM_IOC_CLAIM, &mut c), libc::EINVAL, "flags 1")
    });
    t.case("directnvm: double claim is EBUSY; close releases the claim", || {
        let a = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let b = open("/dev/directnvm").map_err(|e| e.to_string())?;
        claim(&a, 1, false).map_err(|e| format!("first claim: {e}"))?;
        expect_errno(claim(&b, 1, false), libc::EBUSY, "second file")?;
        expect_errno(claim(&a, 1, false), libc::EBUSY, "same file twice")?;
        expect_errno(claim(&b, 1, true), libc::EINVAL, "release by non-owner")?;
        claim(&a, 2, false).map_err(|e| format!("several cores per file: {e}"))?;
        drop(a);
        claim(&b, 1, false).map_err(|e| format!("claim after owner closed: {e}"))?;
        claim(&b, 2, false).map_err(|e| format!("second core after owner closed: {e}"))?;
        claim(&b, 1, true).map_err(|e| format!("release: {e}"))?;
        claim(&b, 1, false).map_err(|e| format!("claim after release: {e}"))
    });
    t.case("directnvm: CONTROLLER_INIT while a core is claimed is EBUSY", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        claim(&fd, 0, false).map_err(|e| e.to_string())?;
        expect_errno(ioctl_none(&fd, DNVM_IOC_CONTROLLER_INIT), libc::EBUSY, "init while claimed")
    });
    t.case("directnvm: GET_STATS counts claims", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let mut s = DnvmStats::default();
        ioctl(&fd, DNVM_IOC_GET_STATS, &mut s).map_err(|e| e.to_string())?;
        let before = s.claims;
        claim(&fd, 3, false).map_err(|e| e.to_string())?;
        ioctl(&fd, DNVM_IOC_GET_STATS, &mut s).map_err(|e| e.to_string())?;
        eq(s.claims, before + 1, "claims")?;
        eq(s.claimed_mask & (1 << 3), 1 << 3, "claimed_mask bit 3")
    });
}

fn mmap_cases(t: &mut Tap) {
    t.case("directnvm: mmap rules (unclaimed, admin, past end, private, unaligned)", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let l = layout(&fd).map_err(|e| e.to_string())?;
        let st = region(&l, 0, DNVM_REGION_STAGING).ok_or("no staging region")?;
        let data = region(&l, 0, DNVM_REGION_DATA).ok_or("no data region")?;
        expect_errno(Map::shared(&fd, st.size as usize, st.offset), libc::EACCES, "unclaimed core")?;
        claim(&fd, 0, false).map_err(|e| e.to_string())?;
        expect_errno(Map::shared(&fd, 4096, 0), libc::EINVAL, "admin page")?;
        expect_errno(Map::shared(&fd, (st.size + PAGE) as usize, st.offset), libc::EINVAL, "past region end")?;
        expect_errno(Map::shared(&fd, 4096, st.offset + 1), libc::EINVAL, "offset not page aligned")?;
        expect_errno(
            Map::new(&fd, 4096, st.offset, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE),
            libc::EINVAL,
            "private mapping",
        )?;
        let far = (l.regions[l.count as usize - 1].offset + l.regions[l.count as usize - 1].size) as u64;
        expect_errno(Map::shared(&fd, 4096, far), libc::EINVAL, "past the carve-out")?;
        let mut m = Map::shared(&fd, data.size as usize, data.offset).map_err(|e| format!("claimed data: {e}"))?;
        let pat: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
        m.bytes()[..8192].copy_from_slice(&pat);
        check(m.bytes()[..8192] == pat[..], "data region does not read back (memcpy through WC)")?;
        let _s = Map::shared(&fd, st.size as usize, st.offset).map_err(|e| format!("claimed staging: {e}"))?;
        Ok(())
    });
    t.case("directnvm: RELEASE zaps the core's mappings of that file (SIGBUS after)", || {
        // The mappings are VM_DONTCOPY, so the whole sequence runs in a child that may die.
        // SAFETY: fork in a single-threaded test program; the child only uses async-safe calls
        // plus the wrappers below and always exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = (|| -> Option<i32> {
                let fd = open("/dev/directnvm").ok()?;
                let l = layout(&fd).ok()?;
                let data = region(&l, 1, DNVM_REGION_DATA)?;
                claim(&fd, 1, false).ok()?;
                let m = Map::shared(&fd, 4096, data.offset).ok()?;
                m.wr64(0, 0x1234);
                if m.rd64(0) != 0x1234 {
                    return Some(5);
                }
                claim(&fd, 1, true).ok()?;
                let _ = m.rd64(0); // must fault
                Some(3)
            })()
            .unwrap_or(4);
            std::process::exit(code);
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        check(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGBUS,
            format!("child status {status:#x}: want SIGBUS after RELEASE (exit 3 = no fault, 4 = setup failed)"),
        )
    });
}

fn hdu_cases(t: &mut Tap, b: &Board) {
    let idx = b.hdus[0].1;
    let node = format!("/dev/hdu{idx}");
    t.case("hdu: second open is EBUSY (exclusive)", || {
        let _a = open(&node).map_err(|e| e.to_string())?;
        expect_errno(open(&node), libc::EBUSY, "second open")
    });
    t.case("hdu: unknown ioctl ENOTTY, wrong size EINVAL", || {
        let fd = open(&node).map_err(|e| e.to_string())?;
        let mut x = [0u8; 256];
        expect_errno(ioctl(&fd, dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x55, 8), &mut x), libc::ENOTTY, "unknown")?;
        expect_errno(ioctl(&fd, dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x01, 8), &mut x), libc::EINVAL, "short GET_INFO")
    });
    t.case("hdu: mmap only the user page (offset 0, one page, shared)", || {
        let fd = open(&node).map_err(|e| e.to_string())?;
        expect_errno(Map::shared(&fd, 4096, 4096), libc::EINVAL, "offset one page")?;
        expect_errno(Map::shared(&fd, 8192, 0), libc::EINVAL, "two pages")?;
        expect_errno(Map::new(&fd, 4096, 0, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE), libc::EINVAL, "private")?;
        Map::shared(&fd, 4096, 0).map(|_| ()).map_err(|e| format!("user page: {e}"))
    });
    t.case("hdu0 register round trip with the fake device (REQBUF/NREQS/START -> DONE)", || {
        let dn = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let l = layout(&dn).map_err(|e| e.to_string())?;
        let st = region(&l, idx, DNVM_REGION_STAGING).ok_or("no staging region")?;
        let fd = open(&node).map_err(|e| e.to_string())?;
        let regs = Map::shared(&fd, 4096, 0).map_err(|e| e.to_string())?;
        regs.wr64(HDU_REG_REQBUF, st.phys);
        regs.wr64(HDU_REG_NREQS, 0);
        sys::barrier();
        regs.wr64(HDU_REG_START, HDU_START_GO);
        let t0 = Instant::now();
        while regs.rd64(HDU_REG_DONE) & HDU_DONE_BIT == 0 {
            if t0.elapsed() > Duration::from_secs(5) {
                return Err(format!("DONE not set within 5 s (START reads {:#x})", regs.rd64(HDU_REG_START)));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        eq(regs.rd64(HDU_REG_REQBUF), st.phys, "REQBUF reads back")?;
        eq(regs.rd64(HDU_REG_START) & 1, 0, "START consumed by the device")
    });
}

fn unbind_cases(t: &mut Tap, b: &Board) {
    let (path, idx) = &b.hdus[0];
    let devname = format!("{}.hdu", path.rsplit('@').next().unwrap_or(""));
    t.case(&format!("hdu{idx}: unbind while mapped zaps the mapping (SIGBUS), ioctl ENODEV, rebind works"), || {
        // SAFETY: fork in a single-threaded program; the child exits or dies.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = (|| -> Option<i32> {
                let fd = open(&format!("/dev/hdu{idx}")).ok()?;
                let m = Map::shared(&fd, 4096, 0).ok()?;
                let _ = m.rd64(HDU_REG_DONE);
                std::fs::write("/sys/bus/platform/drivers/hdu/unbind", &devname).ok()?;
                let mut hi = HduInfo::default();
                if !matches!(ioctl(&fd, HDU_IOC_GET_INFO, &mut hi), Err(ref e) if errno(e) == libc::ENODEV) {
                    return Some(6);
                }
                let _ = m.rd64(HDU_REG_DONE); // must fault now
                Some(3)
            })()
            .unwrap_or(4);
            std::process::exit(code);
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let rebind = std::fs::write("/sys/bus/platform/drivers/hdu/bind", &devname);
        check(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGBUS,
            format!("child status {status:#x}: want SIGBUS (exit 3 = no fault, 4 = setup, 6 = ioctl not ENODEV)"),
        )?;
        rebind.map_err(|e| format!("bind {devname}: {e}"))?;
        for _ in 0..100 {
            if let Ok(fd) = open(&format!("/dev/hdu{idx}")) {
                return hdu_info(&fd).map(|_| ()).map_err(|e| format!("after rebind: {e}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("device node did not come back after bind".into())
    });
}

fn meminfo_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Unreclaimable slab memory (KiB) after shrinking every cache. Shrinking also empties the
/// KASAN quarantine of freed objects, which otherwise grows by every free until 1/32 of RAM
/// and looks exactly like a leak in /proc/meminfo.
fn slab_unreclaimable_kib() -> u64 {
    let _ = sys::sh("for f in /sys/kernel/slab/*/shrink; do echo 1 > $f; done 2>/dev/null");
    meminfo_kib("SUnreclaim:")
}

/// Snapshot of what a module load holds: /proc/iomem, /proc/misc and unreclaimable slab (KiB).
fn held_resources() -> (String, String, u64) {
    let iomem = std::fs::read_to_string("/proc/iomem").unwrap_or_default();
    let misc = std::fs::read_to_string("/proc/misc").unwrap_or_default();
    (iomem, misc, slab_unreclaimable_kib())
}

fn wait_nodes() -> Case {
    for _ in 0..200 {
        if std::path::Path::new("/dev/directnvm").exists() && std::path::Path::new("/dev/hdu3").exists() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("device nodes did not come back".into())
}

/// Slab growth over the 10 load/unload cycles that counts as a leak (KiB). One load allocates
/// far less than this in total; KASAN quarantine and per-CPU caches account for the noise.
const SLAB_LEAK_KIB: i64 = 1024;

fn lifecycle_cases(t: &mut Tap) {
    // Settle the caches once, so the snapshot is taken in steady state.
    let _ = sys::sh("rmmod hdu && rmmod directnvm; insmod /lib/modules/directnvm.ko; insmod /lib/modules/hdu.ko");
    let _ = wait_nodes();
    let (iomem0, misc0, slab0) = held_resources();
    for round in 1..=10 {
        t.case(&format!("rmmod + insmod cycle {round}"), || {
            let (ok, out) = sys::sh("rmmod hdu && rmmod directnvm");
            check(ok, format!("rmmod: {out}"))?;
            check(
                !std::path::Path::new("/dev/directnvm").exists() && !std::path::Path::new("/dev/hdu0").exists(),
                "device nodes still present after rmmod",
            )?;
            let (_, iomem) = sys::sh("grep -i -E 'directnvm|hdu|7f0|7f1' /proc/iomem; grep -E 'hdu|directnvm' /proc/misc");
            check(iomem.trim().is_empty(), format!("resources still held after rmmod: {iomem}"))?;
            check(
                !std::path::Path::new("/sys/kernel/debug/directnvm").exists() && !std::path::Path::new("/sys/kernel/debug/hdu0").exists(),
                "debugfs directories left after rmmod",
            )?;
            let (ok, out) = sys::sh("insmod /lib/modules/directnvm.ko && insmod /lib/modules/hdu.ko");
            check(ok, format!("insmod: {out}"))?;
            println!("# cycle {round}: SUnreclaim after shrinking {} KiB", slab_unreclaimable_kib());
            wait_nodes()
        });
    }
    t.case("10 load/unload cycles leak nothing (iomem, misc, kmemleak, Slab)", || {
        let (iomem1, misc1, slab1) = held_resources();
        eq(iomem1, iomem0, "/proc/iomem after the cycles")?;
        eq(misc1, misc0, "/proc/misc after the cycles")?;
        let grew = slab1 as i64 - slab0 as i64;
        println!("# SUnreclaim (caches shrunk) before {slab0} KiB, after 10 cycles {slab1} KiB ({grew:+} KiB)");
        check(grew < SLAB_LEAK_KIB, format!("unreclaimable slab grew by {grew} KiB over 10 cycles"))?;
        let _ = std::fs::write("/sys/kernel/debug/kmemleak", "scan");
        let leaks = std::fs::read_to_string("/sys/kernel/debug/kmemleak").unwrap_or_default();
        check(!leaks.contains("unreferenced object"), format!("kmemleak: {}", leaks.lines().take(12).collect::<Vec<_>>().join(" / ")))
    });
    t.case("rmmod refuses while /dev/directnvm is open", || {
        let _fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let (ok, _) = sys::sh("rmmod directnvm 2>&1");
        check(!ok, "rmmod succeeded with an open file")
    });
    t.case("rmmod directnvm refuses while a region stays mapped after close; succeeds after munmap", || {
        let fd = open("/dev/directnvm").map_err(|e| e.to_string())?;
        let l = layout(&fd).map_err(|e| e.to_string())?;
        let data = region(&l, 0, DNVM_REGION_DATA).ok_or("no data region")?;
        claim(&fd, 0, false).map_err(|e| e.to_string())?;
        let m = Map::shared(&fd, 4096, data.offset).map_err(|e| e.to_string())?;
        drop(fd);
        m.wr64(0, 0x5a5a);
        let (ok, _) = sys::sh("rmmod directnvm 2>&1");
        check(!ok, "directnvm unloaded while a mapping of its file was alive")?;
        eq(m.rd64(0), 0x5a5a, "mapping still usable")?;
        drop(m);
        let (ok, out) = sys::sh("rmmod hdu && rmmod directnvm");
        check(ok, format!("rmmod after munmap: {out}"))?;
        let (ok, out) = sys::sh("insmod /lib/modules/directnvm.ko && insmod /lib/modules/hdu.ko");
        check(ok, format!("insmod: {out}"))?;
        wait_nodes()
    });
    t.case("rmmod hdu refuses while /dev/hdu0 is open or mapped; succeeds after close", || {
        let fd = open("/dev/hdu0").map_err(|e| e.to_string())?;
        let (ok, _) = sys::sh("rmmod hdu 2>&1");
        check(!ok, "rmmod hdu succeeded with /dev/hdu0 open")?;
        let m = Map::shared(&fd, 4096, 0).map_err(|e| e.to_string())?;
        drop(fd);
        let (ok, _) = sys::sh("rmmod hdu 2>&1");
        check(!ok, "rmmod hdu succeeded with /dev/hdu0 mapped")?;
        let _ = m.rd64(HDU_REG_DONE);
        drop(m);
        let (ok, out) = sys::sh("rmmod hdu");
        check(ok, format!("rmmod hdu after close: {out}"))?;
        let (ok, out) = sys::sh("insmod /lib/modules/hdu.ko");
        check(ok, format!("insmod hdu: {out}"))?;
        wait_nodes()
    });
}
