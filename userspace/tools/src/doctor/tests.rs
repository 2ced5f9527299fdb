// SPDX-License-Identifier: MIT OR Apache-2.0
//! Every diagnosis of `nvmedl doctor` on a fabricated board: a directory tree with the device
//! tree, sysfs and device nodes a real board has (nodes are symlinks to /dev/null, a real
//! character device anyone may open). The access diagnosis needs a non-root caller and real
//! nodes: the guest suite checks it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;

struct Fake(PathBuf);

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Fake {
    /// A healthy board: engine + carve-out + 2 HDUs in the device tree, modules loaded,
    /// drivers bound, nodes present, revision 2, controller ready, no core claimed.
    fn healthy() -> Fake {
        static N: AtomicU32 = AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!("nvmedl-doctor-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let f = Fake(root);
        let dt = "sys/firmware/devicetree/base";
        f.write(&format!("{dt}/axi/engine@a0000000/compatible"), b"directnvm,engine\0");
        f.write(&format!("{dt}/axi/engine@a0000000/status"), b"okay\0");
        f.write(&format!("{dt}/axi/engine@a0000000/memory-region"), &0x42u32.to_be_bytes());
        f.write(&format!("{dt}/reserved-memory/buffer@70000000/phandle"), &0x42u32.to_be_bytes());
        f.write(&format!("{dt}/reserved-memory/buffer@70000000/no-map"), b"");
        let reg: Vec<u8> = [0u32, 0x7000_0000, 0, 0x1000_0000].iter().flat_map(|c| c.to_be_bytes()).collect();
        f.write(&format!("{dt}/reserved-memory/buffer@70000000/reg"), &reg);
        for i in 0..2 {
            f.write(&format!("{dt}/axi/hdu@42000{i}000/compatible"), b"directnvm,hdu\0");
            f.write(&format!("sys/class/misc/hdu{i}/revision"), b"2\n");
            f.dev(&format!("hdu{i}"));
        }
        f.mkdir("sys/module/directnvm");
        f.mkdir("sys/module/hdu");
        f.write("sys/class/misc/directnvm/ready", b"1\n");
        f.write("sys/class/misc/directnvm/capacity_lbas", b"2097152\n");
        f.write("sys/class/misc/directnvm/claimed", b"0x0\n");
        f.write("sys/class/misc/directnvm/last_error", b"none\n");
        f.dev("directnvm");
        f
    }

    fn write(&self, rel: &str, data: &[u8]) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }

    fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.0.join(rel)).unwrap();
    }

    fn rm(&self, rel: &str) {
        let p = self.0.join(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }

    fn dev(&self, name: &str) {
        self.mkdir("dev");
        std::os::unix::fs::symlink("/dev/null", self.0.join("dev").join(name)).unwrap();
    }

    fn diagnose(&self) -> Vec<Finding> {
        diagnose(&Board::new(self.0.clone(), "/dev/directnvm"))
    }
}

fn status_of(f: &[Finding], check: &str) -> Status {
    f.iter().find(|x| x.check == check).unwrap_or_else(|| panic!("no check {check} in {f:?}")).status
}

fn finding<'a>(f: &'a [Finding], check: &str) -> &'a Finding {
    f.iter().find(|x| x.check == check).unwrap()
}

/// Every check reports, whatever fails (the JSON consumers look findings up by name).
const ALL: [&str; 9] = ["device-tree", "carve-out", "modules", "drivers", "device-nodes", "access", "hdu-revision", "controller", "cores"];

#[test]
fn healthy_board_is_all_ok() {
    let b = Fake::healthy();
    let f = b.diagnose();
    let names: Vec<&str> = f.iter().map(|x| x.check).collect();
    assert_eq!(names, ALL);
    for x in &f {
        assert_eq!(x.status, Status::Ok, "{x:?}");
    }
    assert!(healthy(&f));
    assert!(finding(&f, "carve-out").detail.contains("0x70000000+0x10000000"), "{f:?}");
    assert!(finding(&f, "drivers").detail.contains("2 HDU(s)"));
    assert!(render(&f).ends_with("board ready for libnvmedl\n"));
}

#[test]
fn module_not_loaded_says_modprobe_and_skips_what_depends_on_it() {
    let b = Fake::healthy();
    b.rm("sys/module/hdu");
    let f = b.diagnose();
    let m = finding(&f, "modules");
    assert_eq!(m.status, Status::Fail);
    assert_eq!(m.detail, "not loaded: hdu");
    assert!(m.fix.starts_with("modprobe hdu"), "{m:?}");
    for c in ["drivers", "device-nodes", "access", "controller"] {
        assert_eq!(status_of(&f, c), Status::Skip, "{c}");
    }
    assert_eq!(f.len(), ALL.len());
    assert!(!healthy(&f));
    assert!(render(&f).contains("FAIL modules"));
}

#[test]
fn carve_out_only_in_a_runtime_overlay_is_named() {
    let b = Fake::healthy();
    b.rm("sys/firmware/devicetree/base/reserved-memory");
    let f = b.diagnose();
    let c = finding(&f, "carve-out");
    assert_eq!(c.status, Status::Fail);
    assert!(c.fix.contains("boot DTB"), "{c:?}");
}

#[test]
fn carve_out_without_no_map_fails() {
    let b = Fake::healthy();
    b.rm("sys/firmware/devicetree/base/reserved-memory/buffer@70000000/no-map");
    assert_eq!(status_of(&b.diagnose(), "carve-out"), Status::Fail);
}

#[test]
fn no_engine_node_and_disabled_engine_fail() {
    let b = Fake::healthy();
    b.write("sys/firmware/devicetree/base/axi/engine@a0000000/status", b"disabled\0");
    let f = b.diagnose();
    assert_eq!(status_of(&f, "device-tree"), Status::Fail);
    assert!(finding(&f, "device-tree").detail.contains("disabled"));
    b.rm("sys/firmware/devicetree/base/axi/engine@a0000000");
    assert!(finding(&b.diagnose(), "device-tree").detail.contains("no directnvm,engine node"));
}

#[test]
fn unbound_hdu_is_counted_against_the_device_tree() {
    let b = Fake::healthy();
    b.rm("sys/class/misc/hdu1");
    let f = b.diagnose();
    let d = finding(&f, "drivers");
    assert_eq!(d.status, Status::Fail);
    assert!(d.detail.contains("1 of 2 HDU"), "{d:?}");
}

#[test]
fn engine_module_loaded_but_not_bound() {
    let b = Fake::healthy();
    b.rm("sys/class/misc/directnvm");
    let f = b.diagnose();
    assert_eq!(status_of(&f, "drivers"), Status::Fail);
    assert_eq!(status_of(&f, "controller"), Status::Skip);
}

#[test]
fn missing_node_is_named() {
    let b = Fake::healthy();
    b.rm("dev/hdu1");
    let f = b.diagnose();
    let n = finding(&f, "device-nodes");
    assert_eq!(n.status, Status::Fail);
    assert!(n.detail.contains("/dev/hdu1"), "{n:?}");
}

#[test]
fn controller_not_ready_shows_the_last_error() {
    let b = Fake::healthy();
    b.write("sys/class/misc/directnvm/ready", b"0\n");
    b.write("sys/class/misc/directnvm/last_error", b"Timeout\n");
    let c = finding(&b.diagnose(), "controller").clone();
    assert_eq!(c.status, Status::Fail);
    assert!(c.detail.contains("Timeout"));
}

#[test]
fn unknown_revision_fails_and_mixed_revisions_warn() {
    let b = Fake::healthy();
    b.write("sys/class/misc/hdu1/revision", b"9\n");
    assert_eq!(status_of(&b.diagnose(), "hdu-revision"), Status::Fail);
    b.write("sys/class/misc/hdu1/revision", b"1\n");
    assert_eq!(status_of(&b.diagnose(), "hdu-revision"), Status::Warn);
}

#[test]
fn claimed_cores_warn_without_failing() {
    let b = Fake::healthy();
    b.write("sys/class/misc/directnvm/claimed", b"0x5\n");
    let f = b.diagnose();
    let c = finding(&f, "cores");
    assert_eq!(c.status, Status::Warn);
    assert!(c.detail.contains("0, 2"), "{c:?}");
    assert!(healthy(&f));
}

#[test]
fn no_device_tree_skips_only_the_tree_checks() {
    let b = Fake::healthy();
    b.rm("sys/firmware");
    let f = b.diagnose();
    assert_eq!(status_of(&f, "device-tree"), Status::Skip);
    assert_eq!(status_of(&f, "carve-out"), Status::Skip);
    assert_eq!(status_of(&f, "modules"), Status::Ok);
    assert!(healthy(&f));
}

#[test]
fn json_names_status_in_lowercase() {
    let f = vec![Finding::new("modules", Status::Fail, "not loaded: hdu", "modprobe hdu")];
    let j = serde_json::to_string(&f).unwrap();
    assert_eq!(j, r#"[{"check":"modules","status":"fail","detail":"not loaded: hdu","fix":"modprobe hdu"}]"#);
}
