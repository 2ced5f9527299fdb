// SPDX-License-Identifier: MIT OR Apache-2.0
//! The checks of `nvmedl doctor`, in the order a board comes up: device tree, modules, drivers,
//! device nodes and access, HDU revision, controller, cores in use.

use std::path::{Path, PathBuf};

use directnvm_abi::Revision;

use super::board::{be32, Board};
use super::{Finding, Status};

const ENGINE_COMPAT: &str = "directnvm,engine";
const HDU_COMPAT: &str = "directnvm,hdu";
/// The group the udev rule gives the nodes to (docs/petalinux/99-directnvm.rules).
const GROUP: &str = "directnvm";

fn ok(check: &'static str, detail: impl Into<String>) -> Finding {
    Finding::new(check, Status::Ok, detail, "")
}
fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Finding {
    Finding::new(check, Status::Warn, detail, fix)
}
fn fail(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Finding {
    Finding::new(check, Status::Fail, detail, fix)
}
fn skip(check: &'static str, why: &str) -> Finding {
    Finding::new(check, Status::Skip, format!("not checked: {why}"), "")
}

pub(super) fn run(b: &Board) -> Vec<Finding> {
    let mut out = Vec::new();
    let hdus = device_tree(b, &mut out);
    let loaded = modules(b, &mut out);
    let bound = if loaded { drivers(b, hdus, &mut out) } else { skip_all(&mut out, &["drivers"], "a module is not loaded") };
    if bound {
        nodes(b, &mut out);
        revisions(b, &mut out);
        controller(b, &mut out);
        in_use(b, &mut out);
    } else {
        skip_all(&mut out, &["device-nodes", "access", "hdu-revision", "controller", "cores"], "a driver is not bound");
    }
    out
}

fn skip_all(out: &mut Vec<Finding>, checks: &[&'static str], why: &str) -> bool {
    out.extend(checks.iter().map(|c| skip(c, why)));
    false
}

/// The engine node, its carve-out and the HDU nodes. Returns the number of HDU nodes (None
/// when the board has no device tree to read).
fn device_tree(b: &Board, out: &mut Vec<Finding>) -> Option<usize> {
    if !b.has_device_tree() {
        out.push(skip("device-tree", "no /sys/firmware/devicetree (not a device-tree board)"));
        out.push(skip("carve-out", "no device tree"));
        return None;
    }
    let engines = b.dt_nodes(ENGINE_COMPAT);
    let Some(engine) = engines.first() else {
        out.push(fail(
            "device-tree",
            format!("no {ENGINE_COMPAT} node"),
            "put the engine and HDU nodes in the device tree (dts/zcu106-directnvm.dtso, docs/board.md §3)",
        ));
        out.push(skip("carve-out", "no engine node"));
        return Some(0);
    };
    if let Some(s) = b.prop(engine, "status") {
        let s = String::from_utf8_lossy(&s).trim_end_matches('\0').to_string();
        if s != "okay" && s != "ok" {
            out.push(fail("device-tree", format!("{} has status \"{s}\"", node_name(engine)), "set status = \"okay\" in the overlay"));
            out.push(skip("carve-out", "the engine node is disabled"));
            return Some(0);
        }
    }
    let hdus = b.dt_nodes(HDU_COMPAT).len();
    if hdus == 0 {
        out.push(fail(
            "device-tree",
            format!("{} present, no {HDU_COMPAT} node", node_name(engine)),
            "add the HDU nodes (dts/zcu106-directnvm-pl.dtsi)",
        ));
    } else {
        out.push(ok("device-tree", format!("{} and {hdus} HDU node(s)", node_name(engine))));
    }
    out.push(carve_out(b, engine));
    Some(hdus)
}

fn carve_out(b: &Board, engine: &Path) -> Finding {
    let Some(ph) = b.prop(engine, "memory-region").and_then(|p| be32(&p, 0)) else {
        return fail(
            "carve-out",
            "the engine node has no memory-region",
            "point memory-region at the no-map carve-out (dts/zcu106-directnvm-carveout.dtsi)",
        );
    };
    let Some(region) = b.by_phandle(ph) else {
        return fail(
            "carve-out",
            format!("memory-region points to phandle {ph:#x}, which no node has"),
            "the carve-out must be in the boot DTB, not a runtime overlay (docs/board.md §3.1)",
        );
    };
    if b.prop(&region, "no-map").is_none() {
        return fail(
            "carve-out",
            format!("{} is not no-map", node_name(&region)),
            "add no-map: the kernel must not use the carve-out as RAM",
        );
    }
    let reg = b.prop(&region, "reg").unwrap_or_default();
    // Two address and two size cells, as the board's reserved-memory node declares.
    match (be32(&reg, 0), be32(&reg, 4), be32(&reg, 8), be32(&reg, 12)) {
        (Some(ah), Some(al), Some(sh), Some(sl)) => {
            let (addr, size) = ((u64::from(ah) << 32) | u64::from(al), (u64::from(sh) << 32) | u64::from(sl));
            ok("carve-out", format!("{} no-map, {addr:#x}+{size:#x}", node_name(&region)))
        }
        _ => ok("carve-out", format!("{} no-map", node_name(&region))),
    }
}

fn modules(b: &Board, out: &mut Vec<Finding>) -> bool {
    let missing: Vec<&str> = ["directnvm", "hdu"].into_iter().filter(|m| !b.module_loaded(m)).collect();
    if missing.is_empty() {
        out.push(ok("modules", "directnvm and hdu loaded"));
        return true;
    }
    out.push(fail(
        "modules",
        format!("not loaded: {}", missing.join(", ")),
        format!("modprobe {} (built for this kernel: make modules_install, or the directnvm-modules package)", missing.join(" ")),
    ));
    false
}

fn drivers(b: &Board, dt_hdus: Option<usize>, out: &mut Vec<Finding>) -> bool {
    if b.misc_devices("directnvm").iter().all(|d| d != "directnvm") {
        out.push(fail(
            "drivers",
            "directnvm.ko is loaded but bound no engine",
            "dmesg | grep directnvm: the probe says why (node, carve-out, or no SSD behind the root port)",
        ));
        return false;
    }
    let hdus = b.misc_devices("hdu").len();
    match dt_hdus {
        Some(n) if hdus < n => out.push(fail(
            "drivers",
            format!("engine bound, {hdus} of {n} HDU node(s) bound"),
            "dmesg | grep hdu: the probe of the missing ones says why",
        )),
        _ if hdus == 0 => out.push(fail("drivers", "engine bound, no HDU bound", "dmesg | grep hdu")),
        _ => out.push(ok("drivers", format!("engine and {hdus} HDU(s) bound"))),
    }
    hdus > 0
}

/// The nodes libnvmedl opens: the engine's and one per bound HDU.
fn node_paths(b: &Board) -> Vec<PathBuf> {
    let dir = b.device().parent().unwrap_or(Path::new("/dev")).to_path_buf();
    std::iter::once(b.device().to_path_buf()).chain(b.misc_devices("hdu").iter().map(|h| dir.join(h))).collect()
}

fn nodes(b: &Board, out: &mut Vec<Finding>) {
    let paths = node_paths(b);
    let mut missing = Vec::new();
    let mut denied = Vec::new();
    for p in &paths {
        match b.node(p) {
            Some(n) if n.is_char => {
                if !b.may_open_rw(&n) {
                    denied.push(format!("{} (mode {:04o} {}:{})", p.display(), n.mode, n.uid, b.group_name(n.gid)));
                }
            }
            _ => missing.push(p.display().to_string()),
        }
    }
    if missing.is_empty() {
        out.push(ok("device-nodes", format!("{} character devices present", paths.len())));
    } else {
        out.push(fail(
            "device-nodes",
            format!("missing or not character devices: {}", missing.join(", ")),
            "udev (or mdev) did not create them: check that it runs, or --device names the node",
        ));
    }
    if denied.is_empty() {
        // SAFETY: getuid() cannot fail.
        let uid = unsafe { libc::getuid() };
        out.push(ok("access", format!("uid {uid} may open them for reading and writing")));
    } else {
        out.push(fail(
            "access",
            format!("no read/write access to {}", denied.join(", ")),
            format!(
                "install 99-directnvm.rules (make install, or the directnvm-modules package) so the nodes belong to group {GROUP} with mode 0660, then add the user to it (usermod -aG {GROUP} USER) and log in again"
            ),
        ));
    }
}

fn revisions(b: &Board, out: &mut Vec<Finding>) {
    let mut seen = Vec::new();
    for h in b.misc_devices("hdu") {
        let raw = b.misc_attr(&h, "revision").unwrap_or_default();
        match raw.parse::<u32>().ok().and_then(Revision::from_number) {
            Some(r) => seen.push((h, r)),
            None => {
                out.push(fail(
                    "hdu-revision",
                    format!("{h} reports revision \"{raw}\", which this software does not know"),
                    "load a bitstream of a known revision, or update DirectNVM-rs",
                ));
                return;
            }
        }
    }
    let all: Vec<u32> = seen.iter().map(|(_, r)| r.number()).collect();
    if all.windows(2).any(|w| w[0] != w[1]) {
        out.push(warn(
            "hdu-revision",
            format!("mixed revisions {all:?}"),
            "one bitstream has one revision: check the device tree's HDU nodes",
        ));
    } else if let Some(&n) = all.first() {
        out.push(ok("hdu-revision", format!("revision {n} on {} HDU(s)", all.len())));
    }
}

fn controller(b: &Board, out: &mut Vec<Finding>) {
    let ready = b.misc_attr("directnvm", "ready");
    if ready.as_deref() == Some("1") {
        let cap = b.misc_attr("directnvm", "capacity_lbas").unwrap_or_default();
        out.push(ok("controller", format!("ready, {cap} LBAs")));
    } else {
        let why = b.misc_attr("directnvm", "last_error").unwrap_or_else(|| "unknown".into());
        out.push(fail(
            "controller",
            format!("not ready (last error: {why})"),
            "check the SSD behind the root port (lspci), then nvmedl reset controller",
        ));
    }
}

fn in_use(b: &Board, out: &mut Vec<Finding>) {
    let claimed = b.misc_attr("directnvm", "claimed").unwrap_or_default();
    let mask = u64::from_str_radix(claimed.trim_start_matches("0x"), 16).unwrap_or(0);
    if mask == 0 {
        out.push(ok("cores", "no core claimed"));
    } else {
        let cores: Vec<String> = (0..64).filter(|c| mask >> c & 1 == 1).map(|c| c.to_string()).collect();
        out.push(warn(
            "cores",
            format!("core(s) {} claimed by running programs", cores.join(", ")),
            "a new handle needs a free core: stop the owner, or use another core",
        ));
    }
}

fn node_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
