// SPDX-License-Identifier: MIT OR Apache-2.0
//! The engine and its cores: open and close the device, claim and release a core.

use std::ffi::{c_char, c_int, CStr};

use super::boundary::{device, guard, set_device, set_last, NvmedlHandle};
use crate::error::Error;
use crate::handle::{Device, HandleOptions};
use crate::qos::TierConfig;
use crate::sched::SchedulerKind;

/// Open the engine (`$NVMEDL_DEVICE` or `/dev/directnvm`). The kernel did the NVMe admin
/// bring-up at probe; this checks the controller is ready. Idempotent. 0 or a negative code.
#[no_mangle]
pub extern "C" fn nvmedl_admin_init() -> c_int {
    guard(Error::Internal.code(), || {
        set_device(|g| {
            if g.is_some() {
                return 0;
            }
            let path = std::env::var("NVMEDL_DEVICE").unwrap_or_else(|_| crate::chardev::DEFAULT_DEVICE.into());
            let r = Device::open_path(&path).and_then(|d| {
                if d.info().flags & directnvm_abi::DNVM_INFO_READY == 0 {
                    return Err(Error::NotReady);
                }
                *g = Some(d);
                Ok(())
            });
            super::boundary::code(r)
        })
    })
}

/// Use an already opened device for the C API (Rust programs, in-process tests).
pub fn nvmedl_admin_init_with(dev: Device) {
    set_device(|g| {
        *g = Some(dev);
        0
    });
}

/// Close the engine opened by `nvmedl_admin_init` (handles keep it open until destroyed).
#[no_mangle]
pub extern "C" fn nvmedl_admin_fini() {
    guard((), || {
        set_device(|g| {
            *g = None;
            0
        });
    })
}

/// Number of cores (HDUs), or a negative code.
#[no_mangle]
pub extern "C" fn nvmedl_cores() -> c_int {
    guard(Error::Internal.code(), || match device() {
        Ok(d) => d.cores() as c_int,
        Err(e) => e.code(),
    })
}

/// Namespace capacity in 512-byte LBAs (0 if not initialised).
#[no_mangle]
pub extern "C" fn nvmedl_capacity_lbas() -> u64 {
    guard(0, || device().map_or(0, |d| d.info().capacity_lbas))
}

/// Claim core `cpu` with a scheduler of `kind`; NULL with the last error set on failure.
fn claim(cpu: c_int, kind: SchedulerKind) -> *mut NvmedlHandle {
    let r = device().and_then(|d| {
        let core = u32::try_from(cpu).map_err(|_| Error::InvalidArgument)?;
        let tiers = TierConfig::default();
        let opts = HandleOptions { scheduler: kind.build(tiers)?, ..HandleOptions::default() };
        let cap = opts.capacity;
        let h = d.handle_with(core, opts)?;
        let mut c = NvmedlHandle::new(h, cap);
        c.sched = kind;
        c.tiers = tiers;
        Ok(Box::into_raw(Box::new(c)))
    });
    r.unwrap_or_else(|e| {
        set_last(e.code());
        core::ptr::null_mut()
    })
}

/// Claim core `cpu` and map it. NULL on failure (`nvmedl_errno()` says why).
#[no_mangle]
pub extern "C" fn nvmedl_create_handle(cpu: c_int) -> *mut NvmedlHandle {
    guard(core::ptr::null_mut(), || claim(cpu, SchedulerKind::Fifo))
}

/// As `nvmedl_create_handle`, with the level-1 scheduler named: "fifo" (the default, also
/// for NULL), "priority" (strict urgency class, FIFO within a class, overdue deadlines
/// first) or "tiered" (the tiered scheduler with its default settings; the "tier_*" keys of
/// `nvmedl_set_handle` change them). The "scheduler" key reads the number of the scheduler
/// (`NVMEDL_SCHED_*`). NULL on failure (`nvmedl_errno()` says why; an unknown name is
/// invalid argument).
///
/// # Safety
/// `scheduler` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_create_handle_with(cpu: c_int, scheduler: *const c_char) -> *mut NvmedlHandle {
    let name: &[u8] = if scheduler.is_null() {
        b"fifo"
    } else {
        // SAFETY: per the contract, a NUL-terminated string.
        unsafe { CStr::from_ptr(scheduler) }.to_bytes()
    };
    guard(core::ptr::null_mut(), || match SchedulerKind::from_name(name) {
        Some(kind) => claim(cpu, kind),
        None => {
            set_last(Error::InvalidArgument.code());
            core::ptr::null_mut()
        }
    })
}

/// Release the core and free the handle (waits, bounded, for a running batch).
///
/// # Safety
/// `h` is NULL or a handle from `nvmedl_create_handle` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_destroy_handle(h: *mut NvmedlHandle) {
    guard((), || {
        if !h.is_null() {
            // SAFETY: per the contract, `h` came from Box::into_raw and is dropped once.
            drop(unsafe { Box::from_raw(h) });
        }
    })
}
