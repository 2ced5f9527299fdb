// SPDX-License-Identifier: MIT OR Apache-2.0
//! Errors as values. Every fallible call returns `Result<T, Error>`; the C ABI maps each
//! variant to a distinct negative code (`Error::code`), and one table names each code
//! (`Error::describe_code`: `Display` and `nvmedl_strerror` print it).

use core::ffi::CStr;
use core::fmt;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A system call failed with this errno (open, ioctl, mmap: control path only).
    Os(i32),
    /// The NVMe command completed with a non-zero status field
    /// (SC | SCT << 8 | CRD << 11 | M << 13 | DNR << 14). Rev 2 only: rev 1 has no status.
    Nvme {
        /// The NVMe status field.
        status: u16,
    },
    /// The HDU failed the entry (`DNVM_HDU_ERR_*`: window, aborted, invalid, timeout).
    Hdu {
        /// HDU error code.
        code: u32,
    },
    /// A wait ran out (engine stuck, device gone). The request reached the device and its
    /// outcome is unknown (it may still run) until `reset()`, which the handle needs afterwards.
    Timeout,
    /// The LBA range lies (partly) past the end of the namespace.
    InvalidLba,
    /// The LBA or the buffer is not 4 KiB aligned.
    Misaligned,
    /// The length is 0, not a multiple of 4 KiB, or larger than one request may be.
    BadLength,
    /// The buffer does not lie in this handle's data slice.
    NotFromSlice,
    /// Every request slot is in use (submitted, in flight or completed but not polled).
    QueueFull,
    /// The handle cannot start I/O: controller not ready, or the engine timed out and
    /// needs `reset()`.
    NotReady,
    /// The operation needs a newer HDU revision (e.g. flush, reset on rev 1).
    Revision,
    /// The device reported DONE but not every status word: the START was dropped or the
    /// batch rejected (rev 2 detects this; rev 1 cannot).
    BatchLost,
    /// No buffer space left in the data slice.
    NoBuffers,
    /// An argument is out of range (core index, option name or value).
    InvalidArgument,
    /// The core is claimed by another open file.
    Busy,
    /// A panic was caught at the C boundary (a bug in the library).
    Internal,
}

// The library's own error codes (negative returns of the C ABI; other negative values are
// -errno). They start at -1000 so they never collide with an errno. cbindgen copies them into
// include/libnvmedl.h.
/// NVMe status != 0 (nvmedl_completion.nvme_status).
pub const NVMEDL_E_NVME: i32 = -1001;
/// HDU: window, aborted, invalid, timeout.
pub const NVMEDL_E_HDU: i32 = -1002;
/// Engine did not finish in time: nvmedl_reset_handle.
pub const NVMEDL_E_TIMEOUT: i32 = -1003;
/// LBA range past the end of the namespace.
pub const NVMEDL_E_INVALID_LBA: i32 = -1004;
/// LBA or buffer not 4 KiB aligned.
pub const NVMEDL_E_MISALIGNED: i32 = -1005;
/// Length zero, not a multiple of 4 KiB, or too large.
pub const NVMEDL_E_BAD_LENGTH: i32 = -1006;
/// Buffer not from this handle's data slice.
pub const NVMEDL_E_NOT_FROM_SLICE: i32 = -1007;
/// Queue full.
pub const NVMEDL_E_QUEUE_FULL: i32 = -1008;
/// Controller down, or engine needs reset.
pub const NVMEDL_E_NOT_READY: i32 = -1009;
/// Not supported by this HDU revision.
pub const NVMEDL_E_REVISION: i32 = -1010;
/// START dropped or batch rejected by the HDU.
pub const NVMEDL_E_BATCH_LOST: i32 = -1011;
/// No buffer space left in the data slice.
pub const NVMEDL_E_NO_BUFFERS: i32 = -1012;
/// Invalid argument.
pub const NVMEDL_E_INVALID_ARGUMENT: i32 = -1013;
/// Core already claimed.
pub const NVMEDL_E_BUSY: i32 = -1014;
/// Internal error (caught panic).
pub const NVMEDL_E_INTERNAL: i32 = -1015;

/// Result alias.
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    /// The negative code the C ABI returns for this error. `Os(e)` is `-e`; the library's own
    /// codes start at -1000 so they never collide with an errno.
    pub fn code(&self) -> i32 {
        match *self {
            Error::Os(e) => -e.abs().max(1),
            Error::Nvme { .. } => NVMEDL_E_NVME,
            Error::Hdu { .. } => NVMEDL_E_HDU,
            Error::Timeout => NVMEDL_E_TIMEOUT,
            Error::InvalidLba => NVMEDL_E_INVALID_LBA,
            Error::Misaligned => NVMEDL_E_MISALIGNED,
            Error::BadLength => NVMEDL_E_BAD_LENGTH,
            Error::NotFromSlice => NVMEDL_E_NOT_FROM_SLICE,
            Error::QueueFull => NVMEDL_E_QUEUE_FULL,
            Error::NotReady => NVMEDL_E_NOT_READY,
            Error::Revision => NVMEDL_E_REVISION,
            Error::BatchLost => NVMEDL_E_BATCH_LOST,
            Error::NoBuffers => NVMEDL_E_NO_BUFFERS,
            Error::InvalidArgument => NVMEDL_E_INVALID_ARGUMENT,
            Error::Busy => NVMEDL_E_BUSY,
            Error::Internal => NVMEDL_E_INTERNAL,
        }
    }

    /// The NVMe status field, when the device reported one.
    pub fn nvme_status(&self) -> Option<u16> {
        match *self {
            Error::Nvme { status } => Some(status),
            _ => None,
        }
    }

    /// The error of the last failed system call.
    pub(crate) fn last_os() -> Error {
        Error::Os(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    }

    /// Static description of a C error code (what `nvmedl_strerror` returns, from the same
    /// table: `describe_code_c`).
    pub fn describe_code(code: i32) -> &'static str {
        Error::describe_code_c(code).to_str().unwrap_or("unknown code")
    }

    /// `describe_code` as a NUL-terminated string (the text of `nvmedl_strerror`).
    pub fn describe_code_c(code: i32) -> &'static CStr {
        match code {
            0 => c"success",
            NVMEDL_E_NVME => c"NVMe command failed (see the completion's NVMe status)",
            NVMEDL_E_HDU => c"HDU rejected the request (window, aborted, invalid or timeout)",
            NVMEDL_E_TIMEOUT => c"timed out waiting for the engine (reset the handle)",
            NVMEDL_E_INVALID_LBA => c"LBA range past the end of the namespace",
            NVMEDL_E_MISALIGNED => c"LBA or buffer not 4 KiB aligned",
            NVMEDL_E_BAD_LENGTH => c"length zero, not a multiple of 4 KiB, or too large",
            NVMEDL_E_NOT_FROM_SLICE => c"buffer not from this handle's data slice",
            NVMEDL_E_QUEUE_FULL => c"queue full",
            NVMEDL_E_NOT_READY => c"not ready (controller down, or engine needs reset)",
            NVMEDL_E_REVISION => c"not supported by this HDU revision",
            NVMEDL_E_BATCH_LOST => c"batch lost: START dropped or batch rejected by the HDU",
            NVMEDL_E_NO_BUFFERS => c"no buffer space left in the data slice",
            NVMEDL_E_INVALID_ARGUMENT => c"invalid argument",
            NVMEDL_E_BUSY => c"core already claimed",
            NVMEDL_E_INTERNAL => c"internal error (caught panic)",
            c if c < 0 => errno_name(c.checked_neg().unwrap_or(0)),
            _ => c"unknown code",
        }
    }
}

fn errno_name(e: i32) -> &'static CStr {
    match e {
        libc::ENOENT => c"no such device node (modules loaded?)",
        libc::EACCES => c"permission denied",
        libc::EBUSY => c"device or core busy",
        libc::EINVAL => c"invalid argument (kernel)",
        libc::ENODEV => c"no such device",
        libc::ENOTTY => c"inappropriate ioctl (ABI mismatch?)",
        libc::EOPNOTSUPP => c"operation not supported",
        libc::ETIMEDOUT => c"timed out (kernel)",
        libc::EIO => c"I/O error (kernel)",
        libc::ENOMEM => c"out of memory",
        libc::EPERM => c"operation not permitted",
        _ => c"system error",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Os(e) => write!(f, "{} (errno {e})", std::io::Error::from_raw_os_error(e)),
            Error::Nvme { status } => {
                write!(f, "NVMe status {status:#06x} (SCT {}, SC {:#04x})", (status >> 8) & 7, status & 0xff)
            }
            Error::Hdu { code } => write!(f, "HDU error {code}: {}", hdu_err_name(code)),
            e => f.write_str(Error::describe_code(e.code())),
        }
    }
}

impl std::error::Error for Error {}

/// Name of a `DNVM_HDU_ERR_*` code.
pub fn hdu_err_name(code: u32) -> &'static str {
    use directnvm_abi::*;
    match code {
        DNVM_HDU_ERR_NONE => "none",
        DNVM_HDU_ERR_WINDOW => "outside the DMA window",
        DNVM_HDU_ERR_ABORTED => "aborted by reset",
        DNVM_HDU_ERR_INVALID => "malformed entry",
        DNVM_HDU_ERR_TIMEOUT => "controller timeout",
        _ => "unknown",
    }
}

/// Decode a rev 2 status word into a result.
pub fn status_result(word: u32) -> Result<()> {
    use directnvm_abi::*;
    if word & DNVM_STATUS_DONE == 0 {
        return Err(Error::BatchLost);
    }
    let hdu = dnvm_status_hdu(word);
    if hdu != DNVM_HDU_ERR_NONE {
        return Err(Error::Hdu { code: hdu });
    }
    match dnvm_status_nvme(word) {
        0 => Ok(()),
        status => Err(Error::Nvme { status }),
    }
}
