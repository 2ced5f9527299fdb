// SPDX-License-Identifier: MIT OR Apache-2.0
//! What every C entry point stands on: panics caught at the boundary, the last error code of
//! the thread (`nvmedl_errno`), the device opened by `nvmedl_admin_init`, and the opaque
//! handle. The other `ffi` files use this one; it uses none of them.

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use crate::error::Error;
use crate::handle::{Completion, Device, Handle};
use crate::qos::TierConfig;
use crate::sched::SchedulerKind;

/// Opaque per-core handle (`nvmedl_create_handle`).
pub struct NvmedlHandle {
    pub(crate) h: Handle,
    pub(crate) done: Vec<Completion>,
    /// The scheduler in use ("scheduler" key).
    pub(crate) sched: SchedulerKind,
    /// Settings of the tiered scheduler ("tier_*" keys).
    pub(crate) tiers: TierConfig,
}

impl NvmedlHandle {
    /// A C handle around a Rust `h` (for Rust code that hands a handle to C; box it and pass
    /// the pointer), with room for `cap` completions per poll and the FIFO scheduler key.
    pub fn new(h: Handle, cap: usize) -> Self {
        NvmedlHandle { h, done: vec![Completion { tag: 0, result: Ok(()) }; cap], sched: SchedulerKind::Fifo, tiers: TierConfig::default() }
    }
}

static DEVICE: Mutex<Option<Device>> = Mutex::new(None);

thread_local! {
    static LAST: Cell<i32> = const { Cell::new(0) };
}

/// Keep `code` as this thread's last failure.
pub(crate) fn set_last(code: i32) {
    LAST.with(|l| l.set(code));
}

/// Run `f`, or return `fail` (last error: internal) if it panics.
pub(crate) fn guard<T>(fail: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        set_last(Error::Internal.code());
        fail
    })
}

/// 0, or the code of the error (kept as the last failure).
pub(crate) fn code(r: crate::Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_last(e.code());
            e.code()
        }
    }
}

/// The negative code of `e` as an `i64` return (kept as the last failure).
pub(crate) fn fail64(e: Error) -> i64 {
    set_last(e.code());
    i64::from(e.code())
}

/// The device of `nvmedl_admin_init` (`NotReady` before it).
pub(crate) fn device() -> crate::Result<Device> {
    DEVICE.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or(Error::NotReady)
}

/// Set or clear the device of the C API.
pub(crate) fn set_device(f: impl FnOnce(&mut Option<Device>) -> c_int) -> c_int {
    f(&mut DEVICE.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Run `f` on the live handle `h` under `guard`; `fail` (invalid argument) for NULL.
pub(crate) fn with<T: Copy>(h: *mut NvmedlHandle, fail: T, f: impl FnOnce(&mut NvmedlHandle) -> T) -> T {
    guard(fail, || {
        // SAFETY: the C caller passes a live handle used by one thread at a time (the
        // header documents it); NULL is refused.
        match unsafe { h.as_mut() } {
            Some(h) => f(h),
            None => {
                set_last(Error::InvalidArgument.code());
                fail
            }
        }
    })
}

/// Code of the last failure on this thread (for calls that return NULL).
#[no_mangle]
pub extern "C" fn nvmedl_errno() -> c_int {
    LAST.with(|l| l.get())
}
