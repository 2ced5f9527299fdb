// SPDX-License-Identifier: MIT OR Apache-2.0
//! Kernel-driver cases that need I/O to have happened first (they run after `rawio`): the
//! controller re-init protocol on rev 1 and rev 2 (docs/design.md "Controller re-init"),
//! debugfs of both drivers checked against known values, the modules' KUnit suites, the rev 2
//! privileged page never being mappable, and hdu.ko's `shared_readonly` parameter (reloads
//! only hdu.ko: reloading directnvm.ko re-creates the queues, which rev 1 engines cannot follow
//! once they moved).

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use directnvm_abi::*;

use crate::fixtures::ioctl;
// Raw-register I/O on one claimed core (the protocol of docs/hardware.md §7).
use crate::fixtures::raw_core::setup as core;
use crate::sys::open;
use crate::tap::Tap;

mod debugfs;
mod doctor;
mod modules;
mod reinit;

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn open_flags(path: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path).unwrap();
    // SAFETY: valid C string; the fd is owned by the OwnedFd.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn dn_info(fd: &OwnedFd) -> Result<DnvmInfo, String> {
    ioctl::info(fd).map_err(s)
}

fn dn_stats(fd: &OwnedFd) -> Result<DnvmStats, String> {
    ioctl::stats(fd).map_err(s)
}

fn dn_layout(fd: &OwnedFd) -> Result<DnvmLayout, String> {
    ioctl::layout(fd).map_err(s)
}

fn hdu_info(fd: &OwnedFd) -> Result<HduInfo, String> {
    ioctl::hdu_info(fd).map_err(s)
}

fn hdu_stats(fd: &OwnedFd) -> Result<HduStats, String> {
    ioctl::hdu_stats(fd).map_err(s)
}

/// Revision of the board's HDUs (from hdu0).
fn revision() -> Result<Revision, String> {
    let fd = open("/dev/hdu0").map_err(|e| format!("/dev/hdu0: {e}"))?;
    let n = hdu_info(&fd)?.revision;
    Revision::from_number(n).ok_or(format!("unknown HDU revision {n}"))
}

fn read_text(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn hex(v: &str) -> Result<u64, String> {
    u64::from_str_radix(v.trim_start_matches("0x"), 16).map_err(|e| format!("{v}: {e}"))
}

/// Every case of this group.
pub fn run(t: &mut Tap) {
    let rev = match revision() {
        Ok(r) => r,
        Err(e) => {
            t.case("kernel drivers: HDU revision readable", || Err(e));
            return;
        }
    };
    reinit::reset_drain_cases(t, rev);
    reinit::reinit_cases(t, rev);
    debugfs::debugfs_cases(t, rev);
    modules::kunit_cases(t);
    modules::privileged_page_cases(t);
    modules::shared_open_cases(t);
    doctor::doctor_cases(t);
}
