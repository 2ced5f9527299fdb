// SPDX-License-Identifier: MIT OR Apache-2.0
//! `dnvm-guest-lab info` (`make demo`): what the stack sees, as text.

use directnvm_abi::*;
use dnvm_guest_tests::fixtures::ioctl::{hdu_info, info, layout};
use dnvm_guest_tests::sys::open;

/// Demo output: what the stack sees.
pub fn show() -> bool {
    let fd = match open("/dev/directnvm") {
        Ok(f) => f,
        Err(e) => {
            println!("/dev/directnvm: {e}");
            return false;
        }
    };
    let Ok(i) = info(&fd) else { return false };
    let s = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    println!(
        "directnvm: ABI {}, {} core(s) x {} engine(s), staging {} entries, I/O queue depth {}",
        i.abi_version, i.cores, i.engines, i.staging_entries, i.io_queue_depth
    );
    println!(
        "  carve-out {:#x} + {} MiB, controller {}",
        i.carveout_phys,
        i.carveout_size >> 20,
        if i.flags & DNVM_INFO_READY != 0 { "ready" } else { "NOT ready" }
    );
    if i.flags & DNVM_INFO_READY != 0 {
        println!(
            "  NVMe {}.{} '{}' sn '{}' fw '{}': {} LBAs x {} B, arbitration {}",
            i.nvme_version >> 16,
            (i.nvme_version >> 8) & 0xff,
            s(&i.model),
            s(&i.serial),
            s(&i.firmware),
            i.capacity_lbas,
            i.lba_size,
            if i.flags & DNVM_INFO_WRR != 0 { "WRR" } else { "RR" }
        );
    }
    if let Ok(l) = layout(&fd) {
        for r in &l.regions[..l.count as usize] {
            let kind = ["admin", "staging", "status", "data"].get(r.kind as usize).unwrap_or(&"?");
            let core = if r.core == DNVM_NO_CORE { "-".to_string() } else { r.core.to_string() };
            println!("  region {kind:8} core {core:>2}  phys {:#011x}  size {:>8} KiB", r.phys, r.size >> 10);
        }
    }
    for n in 0..DNVM_MAX_CORES {
        if let Ok(h) = open(&format!("/dev/hdu{n}")) {
            if let Ok(hi) = hdu_info(&h) {
                println!("hdu{n}: rev {} at {:#x}, {} engine(s), caps {:#x}", hi.revision, hi.user_phys, hi.engines, hi.caps);
            }
        }
    }
    true
}
