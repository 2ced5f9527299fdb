// SPDX-License-Identifier: MIT OR Apache-2.0
//! C ABI additions for clients that size their work from the handle (the fio engine): the
//! scheduler chosen at claim time and read-only handle properties.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::{device, guard, set_last, with, NvmedlHandle};
use crate::backoff::Backoff;
use crate::error::Error;
use crate::handle::{HandleOptions, Op};
use crate::sched::{Fifo, PriorityDeadline, Scheduler};
use crate::Result;

/// As `nvmedl_create_handle`, with the level-1 scheduler named: "fifo" (the default, also
/// for NULL) or "priority" (strict urgency class, FIFO within a class, overdue deadlines
/// first). NULL on failure (`nvmedl_errno()` says why; an unknown name is invalid argument).
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
    guard(core::ptr::null_mut(), || {
        let (sched, id): (Box<dyn Scheduler>, u64) = match name {
            b"fifo" => (Box::new(Fifo::default()), 0),
            b"priority" => (Box::new(PriorityDeadline::default()), 1),
            _ => {
                set_last(Error::InvalidArgument.code());
                return core::ptr::null_mut();
            }
        };
        let r = device().and_then(|d| {
            let core = u32::try_from(cpu).map_err(|_| Error::InvalidArgument)?;
            let opts = HandleOptions { scheduler: sched, ..HandleOptions::default() };
            let cap = opts.capacity;
            let h = d.handle_with(core, opts)?;
            let mut c = NvmedlHandle::new(h, cap);
            c.sched = id;
            Ok(Box::into_raw(Box::new(c)))
        });
        r.unwrap_or_else(|e| {
            set_last(e.code());
            core::ptr::null_mut()
        })
    })
}

/// Read-only handle properties for `nvmedl_get_handle` (which also answers the QoS keys of
/// `ffi_qos::get`): "max_request" (largest request in bytes), "data_size" and "data_free"
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

/// `nvmedl_submit_tagged` operation: read (SSD to buffer).
pub const NVMEDL_OP_READ: c_int = 0;
/// `nvmedl_submit_tagged` operation: write (buffer to SSD).
pub const NVMEDL_OP_WRITE: c_int = 1;

/// Queue a read or write (`NVMEDL_OP_*`) of `len` bytes at `lba` on `buf` (inside the data
/// slice, 4 KiB aligned) with the caller's `tag`, returned in its completion
/// (`nvmedl_poll_completions`), and urgency class `priority` (0..3; -1: the handle's).
/// Never waits: a full queue returns the queue-full code at once. 0 or a negative code.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_submit_tagged(
    h: *mut NvmedlHandle,
    op: c_int,
    buf: *mut c_void,
    lba: u64,
    len: u32,
    priority: c_int,
    tag: u64,
) -> c_int {
    let op = match op {
        NVMEDL_OP_READ => Op::Read,
        NVMEDL_OP_WRITE => Op::Write,
        _ => return Error::InvalidArgument.code(),
    };
    with(h, Error::InvalidArgument.code(), |h| {
        let r = h.h.request_at_ptr(op, buf.cast(), lba, len).and_then(|r| {
            let r = r.tag(tag);
            let r = match priority {
                -1 => r,
                0..=3 => r.priority(priority as u16),
                _ => return Err(Error::InvalidArgument),
            };
            h.h.try_submit(r)
        });
        match r {
            Ok(_) => 0,
            Err(e) => {
                set_last(e.code());
                e.code()
            }
        }
    })
}

/// Start whatever is staged if the HDU is idle, ignoring the "batch" threshold (the
/// doorbell of clients that stage several requests first). 0 or a negative code.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_kick(h: *mut NvmedlHandle) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| {
        h.h.kick();
        0
    })
}

/// The "backoff*" keys of `nvmedl_set_handle` (ranges in its docs); `None` for another key.
pub(crate) fn set_backoff_key(h: &mut NvmedlHandle, name: &[u8], value: u64) -> Option<Result<()>> {
    let us = |lo: u64, hi: u64| {
        if (lo..=hi).contains(&value) {
            Ok(std::time::Duration::from_micros(value))
        } else {
            Err(Error::InvalidArgument)
        }
    };
    let cur = h.h.backoff().unwrap_or_default();
    let next = match name {
        b"backoff" => match value {
            0 => return Some(h.h.set_backoff(None)),
            1 => Ok(cur),
            _ => Err(Error::InvalidArgument),
        },
        b"backoff_spin_us" => us(0, 1_000_000).map(|d| Backoff { spin: d, ..cur }),
        b"backoff_yield_us" => us(0, 1_000_000).map(|d| Backoff { yield_for: d, ..cur }),
        b"backoff_max_sleep_us" => us(1, 100_000).map(|d| Backoff { max_sleep: d, min_sleep: cur.min_sleep.min(d), ..cur }),
        _ => return None,
    };
    Some(next.and_then(|b| h.h.set_backoff(Some(b))))
}
