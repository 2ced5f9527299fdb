// SPDX-License-Identifier: GPL-2.0-only
//! debugfs `directnvm/`: the layout, the claims, the admin command log and the controller
//! registers, each read live under the device lock.

use super::*;

/// Name of a region kind in debugfs.
fn kind_name(kind: u32) -> &'static str {
    match kind {
        DNVM_REGION_ADMIN => "admin",
        DNVM_REGION_STAGING => "staging",
        DNVM_REGION_STATUS => "status",
        DNVM_REGION_DATA => "data",
        _ => "?",
    }
}

/// debugfs `directnvm/layout`: `KIND CORE OFFSET PHYS SIZE CACHE` per region, as GET_LAYOUT.
fn debugfs_layout(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let l = sh.layout.to_abi();
    writeln!(f, "# kind core offset phys size cache")?;
    for r in &l.regions[..l.count as usize] {
        let cache = match r.cache {
            DNVM_CACHE_WC => "wc",
            DNVM_CACHE_CACHED => "cached",
            _ => "none",
        };
        if r.core == DNVM_NO_CORE {
            writeln!(
                f,
                "{} - {:#x} {:#x} {:#x} {}",
                kind_name(r.kind),
                r.offset,
                r.phys,
                r.size,
                cache
            )?;
        } else {
            writeln!(
                f,
                "{} {} {:#x} {:#x} {:#x} {}",
                kind_name(r.kind),
                r.core,
                r.offset,
                r.phys,
                r.size,
                cache
            )?;
        }
    }
    Ok(())
}

/// debugfs `directnvm/claims`: `core N free` or `core N file ID` per core, then the flags.
fn debugfs_claims(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let st = sh.state.lock();
    for (i, &owner) in st.claims[..sh.layout.params.cores as usize]
        .iter()
        .enumerate()
    {
        if owner == 0 {
            writeln!(f, "core {i} free")?;
        } else {
            writeln!(f, "core {i} file {owner}")?;
        }
    }
    writeln!(f, "queues_used {}", u32::from(st.queues_used))
}

/// debugfs `directnvm/admin_log`: the controller's recent admin commands, oldest first:
/// `SEQ OPCODE CID CDW10 STATUS` (status 0xffff: timed out).
fn debugfs_admin_log(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let st = sh.state.lock();
    let Some(c) = &st.ctrl.ctrl else {
        return match st.ctrl.last_error {
            Some(e) => writeln!(f, "# controller not up: {e:?}"),
            None => writeln!(f, "# controller not up"),
        };
    };
    writeln!(
        f,
        "# commands {} errors {}; seq opcode cid cdw10 status",
        c.commands, c.errors
    )?;
    let n = nvme::LOG_ENTRIES as u64;
    for seq in c.commands.saturating_sub(n)..c.commands {
        let e = c.log[(seq % n) as usize];
        writeln!(
            f,
            "{seq} {:#04x} {} {:#010x} {:#06x}",
            e.opcode, e.cid, e.cdw10, e.status
        )?;
    }
    Ok(())
}

/// debugfs `directnvm/registers`: the controller registers, read live (`NAME VALUE`).
fn debugfs_registers(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use nvme::NvmeHost;
    let h = Host { sh };
    let rd64 = |off: usize| -> Option<u64> {
        Some(u64::from(h.rd32(off).ok()?) | u64::from(h.rd32(off + 4).ok()?) << 32)
    };
    let regs64 = [
        ("CAP", abi::nvme::reg::CAP),
        ("ASQ", abi::nvme::reg::ASQ),
        ("ACQ", abi::nvme::reg::ACQ),
    ];
    let regs32 = [
        ("VS", abi::nvme::reg::VS),
        ("CC", abi::nvme::reg::CC),
        ("CSTS", abi::nvme::reg::CSTS),
        ("AQA", abi::nvme::reg::AQA),
    ];
    for (name, off) in regs64 {
        match rd64(off) {
            Some(v) => writeln!(f, "{name} {v:#018x}")?,
            None => writeln!(f, "{name} unavailable")?,
        }
    }
    for (name, off) in regs32 {
        match h.rd32(off) {
            Ok(v) => writeln!(f, "{name} {v:#010x}")?,
            Err(_) => writeln!(f, "{name} unavailable")?,
        }
    }
    Ok(())
}

/// Populate debugfs `directnvm/`.
pub(crate) fn debugfs_files<'a>(sh: &'a Arc<Shared>, d: &ScopedDir<'a, '_>) {
    d.read_callback_file(c_str!("layout"), sh, &debugfs_layout);
    d.read_callback_file(c_str!("claims"), sh, &debugfs_claims);
    d.read_callback_file(c_str!("admin_log"), sh, &debugfs_admin_log);
    d.read_callback_file(c_str!("registers"), sh, &debugfs_registers);
}
