// SPDX-License-Identifier: MIT OR Apache-2.0
//! What `nvmedl doctor` reads: the device tree, sysfs, the device nodes and /etc/group, all
//! below one root directory.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The board below `root`.
pub struct Board {
    root: PathBuf,
    /// The engine's character device as the user named it (`--device`).
    device: PathBuf,
}

/// A device node as found.
pub struct Node {
    pub path: PathBuf,
    pub is_char: bool,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Board {
    /// The board below `root`; `device` is the engine's node (absolute, as on the board).
    pub fn new(root: PathBuf, device: &str) -> Board {
        Board { root, device: PathBuf::from(device) }
    }

    /// `p` (an absolute path on the board) below the root.
    pub fn path(&self, p: &Path) -> PathBuf {
        self.root.join(p.strip_prefix("/").unwrap_or(p))
    }

    /// The flattened device tree's root directory, if the kernel exposes one.
    fn dt_root(&self) -> Option<PathBuf> {
        ["/sys/firmware/devicetree/base", "/proc/device-tree"].iter().map(|p| self.path(Path::new(p))).find(|p| p.is_dir())
    }

    /// Whether the board has a device tree at all (ACPI-only machines do not).
    pub fn has_device_tree(&self) -> bool {
        self.dt_root().is_some()
    }

    /// Every device-tree node whose `compatible` lists `compat`, sorted by path.
    pub fn dt_nodes(&self, compat: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        if let Some(r) = self.dt_root() {
            walk(&r, &mut |dir| {
                if let Ok(c) = std::fs::read(dir.join("compatible")) {
                    if c.split(|b| *b == 0).any(|s| s == compat.as_bytes()) {
                        found.push(dir.to_path_buf());
                    }
                }
            });
        }
        found.sort();
        found
    }

    /// A device-tree node's property (raw bytes).
    pub fn prop(&self, node: &Path, name: &str) -> Option<Vec<u8>> {
        std::fs::read(node.join(name)).ok()
    }

    /// The node a phandle points to.
    pub fn by_phandle(&self, phandle: u32) -> Option<PathBuf> {
        let r = self.dt_root()?;
        let mut hit = None;
        walk(&r, &mut |dir| {
            if hit.is_none() && std::fs::read(dir.join("phandle")).ok().and_then(|b| be32(&b, 0)) == Some(phandle) {
                hit = Some(dir.to_path_buf());
            }
        });
        hit
    }

    /// Whether module `name` is loaded.
    pub fn module_loaded(&self, name: &str) -> bool {
        self.path(Path::new("/sys/module")).join(name).is_dir()
    }

    /// The misc devices whose name starts with `prefix` (`hdu`: hdu0, hdu1...), sorted.
    pub fn misc_devices(&self, prefix: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(Path::new("/sys/class/misc")))
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(prefix)).collect())
            .unwrap_or_default();
        v.sort_by_key(|n| (n.len(), n.clone()));
        v
    }

    /// A sysfs attribute of misc device `dev`, trimmed.
    pub fn misc_attr(&self, dev: &str, attr: &str) -> Option<String> {
        let p = self.path(Path::new("/sys/class/misc")).join(dev).join(attr);
        std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
    }

    /// The engine's node as the user named it.
    pub fn device(&self) -> &Path {
        &self.device
    }

    /// A device node (absolute board path), if it exists.
    pub fn node(&self, p: &Path) -> Option<Node> {
        let path = self.path(p);
        let m = std::fs::metadata(&path).ok()?;
        Some(Node { path, is_char: m.file_type().is_char_device(), mode: m.mode() & 0o7777, uid: m.uid(), gid: m.gid() })
    }

    /// Whether the caller may open `node` for reading and writing (the kernel's own answer:
    /// access(2) with the real uid/gid and supplementary groups).
    pub fn may_open_rw(&self, node: &Node) -> bool {
        let Ok(c) = CString::new(node.path.as_os_str().as_bytes()) else { return false };
        // SAFETY: a valid NUL-terminated path; access() only reads it.
        unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) == 0 }
    }

    /// The name of group `gid` (/etc/group), or the number.
    pub fn group_name(&self, gid: u32) -> String {
        let groups = std::fs::read_to_string(self.path(Path::new("/etc/group"))).unwrap_or_default();
        groups
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() >= 3 && f[2].parse() == Ok(gid)).then(|| f[0].to_string())
            })
            .next()
            .unwrap_or_else(|| gid.to_string())
    }
}

/// Big-endian u32 at `off` (device-tree cells).
pub fn be32(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Visit `dir` and every directory below it (device-tree nodes are directories; symlinks are
/// not followed, so a loop cannot hang the walk).
fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    f(dir);
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(&e.path(), f);
            }
        }
    }
}
