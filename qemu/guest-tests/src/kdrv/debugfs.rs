// SPDX-License-Identifier: MIT OR Apache-2.0
//! debugfs of both drivers checked against known values.

use directnvm_abi::*;

use super::{dn_info, dn_layout, hdu_info, hex, read_text, s};
use crate::fixtures::ioctl::claim;
use crate::sys::{open, Map};
use crate::tap::{check, eq, Tap};

pub(super) const DBG: &str = "/sys/kernel/debug";

/// Non-comment lines of a debugfs file, split on whitespace.
fn dbg_lines(path: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(read_text(&format!("{DBG}/{path}"))?
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect())
}

/// `NAME VALUE` lines of a debugfs file's text as a map (hex values); `skip` leading fields.
fn regs_of(text: &str, skip: usize) -> std::collections::HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|l| l.len() > skip + 1)
        .map(|l| (l[skip].to_string(), l[l.len() - 1].to_string()))
        .collect()
}

fn dbg_regs(path: &str, skip: usize) -> Result<std::collections::HashMap<String, String>, String> {
    Ok(regs_of(&read_text(&format!("{DBG}/{path}"))?, skip))
}

pub(super) fn debugfs_cases(t: &mut Tap, rev: Revision) {
    t.case("debugfs directnvm/layout matches GET_LAYOUT", || {
        let fd = open("/dev/directnvm").map_err(s)?;
        let l = dn_layout(&fd)?;
        let lines = dbg_lines("directnvm/layout")?;
        eq(lines.len(), l.count as usize, "region lines")?;
        for (r, line) in l.regions[..l.count as usize].iter().zip(&lines) {
            let kind = ["admin", "staging", "status", "data"][r.kind as usize];
            let core = if r.core == DNVM_NO_CORE { "-".to_string() } else { r.core.to_string() };
            let cache = ["wc", "cached", "none"][r.cache as usize];
            let want = vec![
                kind.to_string(),
                core,
                format!("{:#x}", r.offset),
                format!("{:#x}", r.phys),
                format!("{:#x}", r.size),
                cache.to_string(),
            ];
            eq(line, &want, "layout line")?;
        }
        Ok(())
    });
    t.case("debugfs directnvm/claims follows CLAIM and RELEASE", || {
        let fd = open("/dev/directnvm").map_err(s)?;
        let cores = dn_info(&fd)?.cores;
        let all_free = dbg_lines("directnvm/claims")?;
        for c in 0..cores as usize {
            eq(all_free.get(c).map(|l| l.join(" ")), Some(format!("core {c} free")), "before claim")?;
        }
        claim(&fd, 2, false).map_err(s)?;
        let l = dbg_lines("directnvm/claims")?;
        let line = l.get(2).ok_or("no line for core 2")?;
        check(
            line.len() == 4 && line[2] == "file" && line[3].parse::<u64>().is_ok_and(|v| v > 0),
            format!("core 2 after CLAIM: {line:?}"),
        )?;
        eq(l.get(1).map(|l| l.join(" ")), Some("core 1 free".into()), "core 1")?;
        eq(l.iter().find(|l| l[0] == "queues_used").map(|l| l.join(" ")), Some("queues_used 1".into()), "queues_used")?;
        claim(&fd, 2, true).map_err(s)?;
        eq(dbg_lines("directnvm/claims")?.get(2).map(|l| l.join(" ")), Some("core 2 free".into()), "after RELEASE")
    });
    t.case("debugfs directnvm/admin_log shows the bring-up commands, all successful", || {
        let fd = open("/dev/directnvm").map_err(s)?;
        let i = dn_info(&fd)?;
        let text = read_text(&format!("{DBG}/directnvm/admin_log"))?;
        check(
            text.lines().next().is_some_and(|h| h.starts_with("# commands") && h.contains(" errors 0;")),
            format!("header: {:?}", text.lines().next()),
        )?;
        let log = dbg_lines("directnvm/admin_log")?;
        let has = |opc: &str, cdw10: u32| log.iter().any(|l| l.len() == 5 && l[1] == opc && l[3] == format!("{cdw10:#010x}"));
        check(has("0x06", 1) && has("0x06", 0), "Identify controller/namespace missing")?;
        check(has("0x09", 7), "Set Features Number of Queues missing")?;
        for qid in 1..=i.cores * i.engines {
            let cdw10 = ((i.io_queue_depth - 1) << 16) | qid;
            check(has("0x05", cdw10) && has("0x01", cdw10), format!("Create CQ/SQ of QID {qid} (cdw10 {cdw10:#x}) missing"))?;
        }
        let bad: Vec<&Vec<String>> = log.iter().filter(|l| l.len() != 5 || l[4] != "0x0000").collect();
        check(bad.is_empty(), format!("failed or malformed entries: {bad:?}"))
    });
    t.case("debugfs directnvm/registers: controller enabled, admin queues in the carve-out", || {
        let fd = open("/dev/directnvm").map_err(s)?;
        let i = dn_info(&fd)?;
        let l = dn_layout(&fd)?;
        let r = dbg_regs("directnvm/registers", 0)?;
        let g = |n: &str| r.get(n).ok_or(format!("{n} missing")).and_then(|v| hex(v));
        let cap = g("CAP")?;
        eq(cap & 0xffff, 4095, "CAP.MQES (docs/hardware.md §8)")?;
        eq((cap >> 24) & 0xff, 10, "CAP.TO")?;
        eq(g("VS")?, i.nvme_version as u64, "VS = GET_INFO nvme_version")?;
        let cc = g("CC")?;
        eq(cc & 1, 1, "CC.EN")?;
        eq((cc >> 16) & 0xf, 6, "CC.IOSQES")?;
        eq((cc >> 20) & 0xf, 4, "CC.IOCQES")?;
        eq((cc >> 11) & 7, if i.flags & DNVM_INFO_WRR != 0 { 1 } else { 0 }, "CC.AMS")?;
        eq(g("CSTS")? & 3, 1, "CSTS.RDY=1, CFS=0")?;
        eq(g("AQA")?, 0x003f_003f, "AQA (64-entry admin queues)")?;
        eq(g("ASQ")?, l.regions[0].phys, "ASQ = admin region page 0")?;
        eq(g("ACQ")?, l.regions[0].phys + 4096, "ACQ = admin region page 1")
    });
    for n in 0..4u32 {
        t.case(&format!("debugfs hdu{n}/registers match GET_INFO and a live REQBUF write"), || {
            let fd = open(&format!("/dev/hdu{n}")).map_err(s)?;
            let hi = hdu_info(&fd)?;
            let m = Map::shared(&fd, 4096, 0).map_err(s)?;
            let old = m.rd64(HDU_REG_REQBUF);
            let probe = 0x7b00_0000 + 0x1000 * (n as u64 + 1) + 0x18;
            m.wr64(HDU_REG_REQBUF, probe);
            let text = read_text(&format!("{DBG}/hdu{n}/registers"));
            m.wr64(HDU_REG_REQBUF, old);
            let text = text?;
            check(
                text.lines().next().is_some_and(|h| h.starts_with(&format!("# hdu{n} rev {rev} ")) && h.contains("owner open")),
                format!("header: {:?}", text.lines().next()),
            )?;
            let user = regs_of(&text, 1);
            let g = |name: &str| user.get(name).ok_or(format!("{name} missing")).and_then(|v| hex(v));
            eq(g("REQBUF")?, probe, "REQBUF")?;
            if rev.has_caps() {
                eq(g("ID")?, hdu_id(rev.number()), "ID")?;
                eq(g("CAPS")?, hi.caps, "CAPS = GET_INFO caps")?;
                eq(g("DMA_BASE")?, hi.dma_base, "DMA_BASE")?;
                eq(g("DMA_LIMIT")?, hi.dma_limit, "DMA_LIMIT")?;
                eq(g("CTRL")?, 0, "CTRL (no reset running)")?;
                eq(g("PSTATUS")? & HDU_PSTATUS_RESETTING, 0, "PSTATUS.RESETTING")
            } else {
                eq(g("ID")?, 0, "ID reads 0 on rev 1")?;
                eq(g("CAPS")?, 0, "CAPS reads 0 on rev 1")?;
                check(!user.contains_key("CTRL"), "rev 1 shows a privileged page")
            }
        });
    }
}
