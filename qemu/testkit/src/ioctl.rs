// SPDX-License-Identifier: MIT OR Apache-2.0
//! Raw ioctl helpers for the races and isolation cases: calls on bare descriptor numbers that
//! may be stale, closed or reused, answered with an errno instead of a `Result`.

use directnvm_abi::DnvmClaim;

/// `cmd` (DNVM_IOC_CLAIM or DNVM_IOC_RELEASE) for `core` on descriptor number `fd`: 0 or the
/// errno.
pub fn claim_raw(fd: i32, cmd: u32, core: u32) -> i32 {
    let mut c = DnvmClaim { core, flags: 0 };
    // SAFETY: `c` is a valid DnvmClaim; a stale or reused fd number only yields an errno.
    let r = unsafe { libc::ioctl(fd, cmd as _, &mut c as *mut DnvmClaim) };
    if r < 0 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    } else {
        0
    }
}
