// SPDX-License-Identifier: MIT OR Apache-2.0
//! The errno of every refusal of the two device nodes, in one table: the guest suite performs
//! each refusal and compares the errno with the table, and `docs/errors.md` is rendered from the
//! same rows (the host test `errors_md_is_current` fails when it is stale; regenerate with
//! `DNVM_BLESS=1 cargo test -p dnvm-guest-tests errors_md`).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use directnvm_abi::*;

use crate::tap::{Case, Tap};

/// One documented refusal.
pub struct Row {
    /// Device node.
    pub node: &'static str,
    /// What is asked.
    pub call: &'static str,
    /// When it is refused.
    pub when: &'static str,
    /// errno name and value.
    pub errno: (&'static str, i32),
    /// Performs the refusal in the guest (cleans up after itself).
    pub probe: fn() -> io::Result<()>,
}

const DN: &str = "/dev/directnvm";

fn open_mode(path: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path).unwrap();
    // SAFETY: valid C string; the fd is owned below.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn rw(path: &str) -> io::Result<OwnedFd> {
    open_mode(path, libc::O_RDWR)
}

fn raw_ioctl(fd: &OwnedFd, cmd: u32, arg: usize) -> io::Result<()> {
    // SAFETY: the kernel validates `arg` (a pointer or garbage on purpose: EFAULT).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn claim(fd: &OwnedFd, cmd: u32, core: u32, flags: u32) -> io::Result<()> {
    let mut c = DnvmClaim { core, flags };
    raw_ioctl(fd, cmd, &mut c as *mut DnvmClaim as usize)
}

fn map(fd: &OwnedFd, len: usize, offset: u64, flags: i32) -> io::Result<()> {
    map_with(fd, len, offset, flags, libc::PROT_READ | libc::PROT_WRITE)
}

/// A shared mapping with protection `prot`; Ok only if the kernel granted it.
fn map_prot(fd: &OwnedFd, len: usize, offset: u64, prot: i32) -> io::Result<()> {
    map_with(fd, len, offset, libc::MAP_SHARED, prot)
}

fn map_with(fd: &OwnedFd, len: usize, offset: u64, flags: i32, prot: i32) -> io::Result<()> {
    // SAFETY: a new mapping chosen by the kernel; unmapped at once if it succeeds.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd.as_raw_fd(), offset as libc::off_t) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: our own mapping.
    unsafe { libc::munmap(p, len) };
    Ok(())
}

fn region(fd: &OwnedFd, core: u32, kind: u32) -> io::Result<DnvmRegion> {
    // SAFETY: plain-integer struct, all-zero valid.
    let mut l: DnvmLayout = unsafe { std::mem::zeroed() };
    raw_ioctl(fd, DNVM_IOC_GET_LAYOUT, &mut l as *mut DnvmLayout as usize)?;
    l.regions[..l.count as usize].iter().copied().find(|r| r.core == core && r.kind == kind).ok_or_else(|| io::Error::other("no region"))
}

fn cores(fd: &OwnedFd) -> io::Result<u32> {
    // SAFETY: plain-integer struct, all-zero valid.
    let mut i: DnvmInfo = unsafe { std::mem::zeroed() };
    raw_ioctl(fd, DNVM_IOC_GET_INFO, &mut i as *mut DnvmInfo as usize)?;
    Ok(i.cores)
}

/// The table. Rows for the same node and call are ordered from the most to the least specific.
pub const ROWS: &[Row] = &[
    Row {
        node: DN,
        call: "ioctl",
        when: "unknown command number",
        errno: ("ENOTTY", libc::ENOTTY),
        probe: || raw_ioctl(&rw(DN)?, dnvm_ioc(0, DNVM_IOC_MAGIC, 0x7f, 0), 0),
    },
    Row {
        node: DN,
        call: "ioctl",
        when: "known command with a wrong size or direction",
        errno: ("EINVAL", libc::EINVAL),
        probe: || raw_ioctl(&rw(DN)?, dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, dnvm_ioc_nr(DNVM_IOC_GET_INFO), 8), 0),
    },
    Row {
        node: DN,
        call: "ioctl",
        when: "argument pointer not readable/writable",
        errno: ("EFAULT", libc::EFAULT),
        probe: || raw_ioctl(&rw(DN)?, DNVM_IOC_GET_INFO, 8),
    },
    Row {
        node: DN,
        call: "CLAIM, RELEASE, CONTROLLER_INIT, SET_ARBITRATION",
        when: "file opened O_RDONLY",
        errno: ("EBADF", libc::EBADF),
        probe: || claim(&open_mode(DN, libc::O_RDONLY)?, DNVM_IOC_CLAIM, 0, 0),
    },
    Row {
        node: DN,
        call: "CLAIM / RELEASE",
        when: "core >= cores, or flags != 0",
        errno: ("EINVAL", libc::EINVAL),
        probe: || {
            let fd = rw(DN)?;
            let n = cores(&fd)?;
            claim(&fd, DNVM_IOC_CLAIM, n, 0)
        },
    },
    Row {
        node: DN,
        call: "CLAIM",
        when: "the core is claimed by another open file",
        errno: ("EBUSY", libc::EBUSY),
        probe: || {
            let (a, b) = (rw(DN)?, rw(DN)?);
            claim(&a, DNVM_IOC_CLAIM, 0, 0)?;
            claim(&b, DNVM_IOC_CLAIM, 0, 0)
        },
    },
    Row {
        node: DN,
        call: "RELEASE",
        when: "the core is not claimed by this file",
        errno: ("EINVAL", libc::EINVAL),
        probe: || claim(&rw(DN)?, DNVM_IOC_RELEASE, 0, 0),
    },
    Row {
        node: DN,
        call: "CONTROLLER_INIT",
        when: "any core is claimed",
        errno: ("EBUSY", libc::EBUSY),
        probe: || {
            let fd = rw(DN)?;
            claim(&fd, DNVM_IOC_CLAIM, 0, 0)?;
            raw_ioctl(&fd, DNVM_IOC_CONTROLLER_INIT, 0)
        },
    },
    Row {
        node: DN,
        call: "SET_ARBITRATION",
        when: "burst > 7 or a weight > 255",
        errno: ("EINVAL", libc::EINVAL),
        probe: || {
            let mut a = DnvmArbitration { burst: 8, high: 0, medium: 0, low: 0 };
            raw_ioctl(&rw(DN)?, DNVM_IOC_SET_ARBITRATION, &mut a as *mut DnvmArbitration as usize)
        },
    },
    Row {
        node: DN,
        call: "mmap",
        when: "MAP_PRIVATE",
        errno: ("EINVAL", libc::EINVAL),
        probe: || {
            let fd = rw(DN)?;
            claim(&fd, DNVM_IOC_CLAIM, 0, 0)?;
            let r = region(&fd, 0, DNVM_REGION_DATA)?;
            map(&fd, 4096, r.offset, libc::MAP_PRIVATE)
        },
    },
    Row {
        node: DN,
        call: "mmap",
        when: "range not inside one region of a core (admin pages, past the end, across regions)",
        errno: ("EINVAL", libc::EINVAL),
        probe: || {
            let fd = rw(DN)?;
            claim(&fd, DNVM_IOC_CLAIM, 0, 0)?;
            map(&fd, 4096, 0, libc::MAP_SHARED)
        },
    },
    Row {
        node: DN,
        call: "mmap",
        when: "a region of a core this file has not claimed",
        errno: ("EACCES", libc::EACCES),
        probe: || {
            let fd = rw(DN)?;
            let r = region(&fd, 0, DNVM_REGION_DATA)?;
            map(&fd, 4096, r.offset, libc::MAP_SHARED)
        },
    },
    Row {
        node: DN,
        call: "mmap",
        when: "file opened O_RDONLY, writable shared mapping (refused by the VFS)",
        errno: ("EACCES", libc::EACCES),
        probe: || {
            let fd = open_mode(DN, libc::O_RDONLY)?;
            let r = region(&fd, 0, DNVM_REGION_DATA)?;
            map(&fd, 4096, r.offset, libc::MAP_SHARED)
        },
    },
    Row {
        node: DN,
        call: "mmap",
        when: "file opened O_RDONLY, read-only MAP_SHARED mapping (the kernel makes it private)",
        errno: ("EINVAL", libc::EINVAL),
        probe: || {
            let fd = open_mode(DN, libc::O_RDONLY)?;
            let r = region(&fd, 0, DNVM_REGION_DATA)?;
            map_prot(&fd, 4096, r.offset, libc::PROT_READ)
        },
    },
    Row {
        node: "/dev/hduN",
        call: "open",
        when: "another file holds the exclusive open",
        errno: ("EBUSY", libc::EBUSY),
        probe: || {
            let _a = rw("/dev/hdu0")?;
            rw("/dev/hdu0").map(drop)
        },
    },
    Row {
        node: "/dev/hduN",
        call: "ioctl",
        when: "unknown command number",
        errno: ("ENOTTY", libc::ENOTTY),
        probe: || raw_ioctl(&rw("/dev/hdu0")?, dnvm_ioc(0, HDU_IOC_MAGIC, 0x7f, 0), 0),
    },
    Row {
        node: "/dev/hduN",
        call: "ioctl",
        when: "known command with a wrong size or direction",
        errno: ("EINVAL", libc::EINVAL),
        probe: || raw_ioctl(&rw("/dev/hdu0")?, dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, dnvm_ioc_nr(HDU_IOC_GET_INFO), 8), 0),
    },
    Row {
        node: "/dev/hduN",
        call: "RESET, RESET_QUEUES",
        when: "file opened O_RDONLY",
        errno: ("EBADF", libc::EBADF),
        probe: || raw_ioctl(&open_mode("/dev/hdu0", libc::O_RDONLY)?, HDU_IOC_RESET, 0),
    },
    Row {
        node: "/dev/hduN",
        call: "mmap",
        when: "offset != 0 (the privileged page), length != one page, or MAP_PRIVATE",
        errno: ("EINVAL", libc::EINVAL),
        probe: || map(&rw("/dev/hdu0")?, 4096, 4096, libc::MAP_SHARED),
    },
];

/// Rows that need module parameters, a revision or an unbound device: covered by the named
/// suite cases instead of a probe here. (Read by `render`, which only the host test that keeps
/// docs/errors.md in step calls.)
#[cfg_attr(not(test), allow(dead_code))]
pub const COVERED_ELSEWHERE: &[(&str, &str, &str, &str)] = &[
    ("/dev/hduN", "RESET, RESET_QUEUES", "shared read-only open (shared_readonly=1)", "EPERM"),
    ("/dev/hduN", "mmap", "shared read-only open (shared_readonly=1)", "EACCES"),
    ("/dev/hduN", "RESET, RESET_QUEUES", "revision 1 engine", "EOPNOTSUPP"),
    ("/dev/hduN", "open, mmap, GET_INFO, GET_STATS", "the HDU was unbound", "ENODEV"),
    ("/dev/directnvm", "CLAIM", "the engine device was unbound", "ENODEV"),
    ("/dev/directnvm", "SET_ARBITRATION", "controller not ready / not in WRR mode", "ENODEV / EOPNOTSUPP"),
    (
        "/dev/directnvm",
        "CONTROLLER_INIT",
        "bring-up failed: no controller / bus error / timeout / NVMe error / bad config",
        "ENODEV / ENXIO / ETIMEDOUT / EIO / EINVAL",
    ),
    (
        "both",
        "a mapping's page, after RELEASE, unbind or losing the claim",
        "user access: SIGBUS; kernel access (e.g. write(2) from it)",
        "EFAULT",
    ),
];

/// The markdown of docs/errors.md (the host test below compares it with the file).
#[cfg_attr(not(test), allow(dead_code))]
pub fn render() -> String {
    let mut s = String::from(
        "# Refusals and their errno\n\n\
         Generated from `qemu/guest-tests/src/errtable.rs`; the guest suite performs every row of the\n\
         first table and checks the errno. A refusal never changes state.\n\n\
         | node | call | refused when | errno |\n|---|---|---|---|\n",
    );
    for r in ROWS {
        s += &format!("| `{}` | {} | {} | `{}` |\n", r.node, r.call, r.when, r.errno.0);
    }
    s += "\nChecked by other suite cases (they need a module parameter, a revision or an unbound device):\n\n\
          | node | call | refused when | errno |\n|---|---|---|---|\n";
    for (n, c, w, e) in COVERED_ELSEWHERE {
        s += &format!("| `{n}` | {c} | {w} | `{e}` |\n");
    }
    s
}

/// The suite case: every row's refusal has the documented errno.
pub fn run(t: &mut Tap) {
    t.case(
        &format!("errno table: {} documented refusals of /dev/directnvm and /dev/hduN give their errno (docs/errors.md)", ROWS.len()),
        || -> Case {
            let mut bad = Vec::new();
            for r in ROWS {
                match (r.probe)() {
                    Ok(()) => bad.push(format!("{} {} ({}): succeeded, want {}", r.node, r.call, r.when, r.errno.0)),
                    Err(e) if e.raw_os_error() == Some(r.errno.1) => {}
                    Err(e) => bad.push(format!("{} {} ({}): {e}, want {}", r.node, r.call, r.when, r.errno.0)),
                }
            }
            if bad.is_empty() {
                Ok(())
            } else {
                Err(bad.join("; "))
            }
        },
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_md_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
        let want = super::render();
        if std::env::var_os("DNVM_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(have == want, "docs/errors.md is stale: DNVM_BLESS=1 cargo test -p dnvm-guest-tests errors_md");
    }
}
