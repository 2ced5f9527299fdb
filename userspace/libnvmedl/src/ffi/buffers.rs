// SPDX-License-Identifier: MIT OR Apache-2.0
//! Buffers of the handle's DMA data slice.

use std::ffi::{c_int, c_void};

use super::boundary::{code, set_last, with, NvmedlHandle};
use crate::error::Error;

/// Allocate `len` bytes (rounded up to 4 KiB, 4 KiB aligned) from the handle's data slice.
/// NULL on failure with `nvmedl_errno()`: -1006 for `len` 0 (nothing is allocated), -1012 when
/// the slice has no free run that long.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_buf_alloc(h: *mut NvmedlHandle, len: usize) -> *mut c_void {
    with(h, core::ptr::null_mut(), |h| match h.h.buf_alloc(len) {
        Ok(b) => b.as_ptr().cast(),
        Err(e) => {
            set_last(e.code());
            core::ptr::null_mut()
        }
    })
}

/// Free a buffer from `nvmedl_buf_alloc`. 0 or a negative code.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_buf_free(h: *mut NvmedlHandle, buf: *mut c_void) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| code(h.h.buffer_at_ptr(buf.cast()).and_then(|b| h.h.buf_free(b))))
}
