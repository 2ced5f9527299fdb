// SPDX-License-Identifier: MIT OR Apache-2.0
//! What a handle is and can do (revision, capabilities, read-only properties), and the text
//! of a code (`nvmedl_strerror`, from the library's one error table).

use std::ffi::{c_char, c_int};

use super::boundary::{code, with, NvmedlHandle};
use crate::error::Error;
use crate::handle::Cap;

/// `nvmedl_handle_has`: per-request status (NVMe and HDU errors per request, early
/// completion; rev 2).
pub const NVMEDL_CAP_STATUS: c_int = 1;
/// `nvmedl_handle_has`: `nvmedl_flush` (rev 2; rev 1 returns the revision code).
pub const NVMEDL_CAP_FLUSH: c_int = 2;
/// `nvmedl_handle_has`: engine reset by `nvmedl_reset_handle` (rev 2; rev 1 waits for a late
/// DONE instead).
pub const NVMEDL_CAP_RESET: c_int = 3;
/// `nvmedl_handle_has`: urgency classes served by engines of their own, weighted by the NVMe
/// arbitration (WRR), so the "priority" key reaches the SSD (rev 2 with several engines).
pub const NVMEDL_CAP_URGENCY: c_int = 4;
/// `nvmedl_handle_has`: the START queue (a second batch starts behind the running one).
pub const NVMEDL_CAP_START_QUEUE: c_int = 5;
// (Literals for cbindgen; a test ties them to `Cap::code`.)

/// Read-only handle properties for `nvmedl_get_handle` (which also answers the QoS keys of
/// `qos_keys::get`): "max_request" (largest request in bytes), "data_size" and "data_free"
/// (bytes of the data slice), "capacity_lbas" (512-byte LBAs), "revision", "core", "engines"
/// (urgency engines behind the HDU), "capacity" (requests the handle can hold). None for an
/// unknown name.
pub(crate) fn property(h: &NvmedlHandle, name: &[u8]) -> Option<u64> {
    Some(match name {
        b"max_request" => h.h.max_request(),
        b"data_size" => h.h.data_size() as u64,
        b"data_free" => h.h.data_free() as u64,
        b"capacity_lbas" => h.h.capacity_lbas(),
        b"revision" => u64::from(h.h.revision().number()),
        b"core" => u64::from(h.h.core()),
        b"engines" => u64::from(h.h.caps().engines),
        b"capacity" => h.done.len() as u64,
        _ => return None,
    })
}

/// HDU revision of the handle (1 or 2).
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_handle_revision(h: *mut NvmedlHandle) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| h.h.revision().number() as c_int)
}

/// Whether the handle's engine has capability `cap` (`NVMEDL_CAP_*`): 1 if it has, 0 if not,
/// or a negative code (an unknown capability: invalid argument).
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_handle_has(h: *mut NvmedlHandle, cap: c_int) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| match Cap::from_code(cap) {
        Some(c) => c_int::from(h.h.has(c)),
        None => code(Err(Error::InvalidArgument)),
    })
}

/// Static text for a code returned by this library (the wording of the Rust `Error`'s
/// `Display`).
#[no_mangle]
pub extern "C" fn nvmedl_strerror(code: c_int) -> *const c_char {
    Error::describe_code_c(code).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_numbers_are_the_caps() {
        let c = [NVMEDL_CAP_STATUS, NVMEDL_CAP_FLUSH, NVMEDL_CAP_RESET, NVMEDL_CAP_URGENCY, NVMEDL_CAP_START_QUEUE];
        let caps = [Cap::Status, Cap::Flush, Cap::Reset, Cap::UrgencyClasses, Cap::StartQueue];
        for (n, cap) in c.into_iter().zip(caps) {
            assert_eq!(Cap::from_code(n), Some(cap));
        }
        assert_eq!(c.len(), Cap::ALL.len());
    }

    #[test]
    fn strerror_is_the_error_table() {
        for e in [Error::Timeout, Error::QueueFull, Error::Internal, Error::Os(libc::ENOENT)] {
            // SAFETY: a static NUL-terminated string.
            let s = unsafe { std::ffi::CStr::from_ptr(nvmedl_strerror(e.code())) };
            assert_eq!(s.to_str().unwrap(), Error::describe_code(e.code()));
        }
        assert_eq!(Error::describe_code(1), "unknown code");
        assert_eq!(Error::describe_code(i32::MIN), "system error");
    }
}
