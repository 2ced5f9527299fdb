// SPDX-License-Identifier: MIT OR Apache-2.0
//! I/O: queue requests (async, tagged, sync), drive the device, reap completions, recover.

use std::ffi::{c_int, c_void};

use super::boundary::{code, fail64, set_last, with, NvmedlHandle};
use crate::error::Error;
use crate::handle::{Completion, Op};

/// One finished request (`nvmedl_poll_completions`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NvmedlCompletion {
    /// Tag returned by the async call.
    pub tag: u64,
    /// 0 or the negative error code.
    pub result: i32,
    /// NVMe status field when `result` is the NVMe error code (-1001), else 0.
    pub nvme_status: u16,
    /// Reserved, 0.
    pub reserved: u16,
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

fn submit(h: *mut NvmedlHandle, op: Op, buf: *mut c_void, lba: u64, len: u32) -> i64 {
    with(h, i64::from(Error::InvalidArgument.code()), |h| {
        let r = h.h.request_at_ptr(op, buf.cast(), lba, len).and_then(|r| h.h.submit(r));
        match r {
            Ok(tag) => (tag & i64::MAX as u64) as i64,
            Err(e) => fail64(e),
        }
    })
}

/// Queue a read of `len` bytes (multiple of 4096) at `lba` (512-byte units, multiple of 8)
/// into `buf`: a 4 KiB aligned address inside one `nvmedl_buf_alloc` allocation, with `len`
/// bytes left in that allocation (-1006 otherwise: a request never spills into the next
/// allocation; -1007 for memory not allocated from this handle). Returns the request tag (≥ 0)
/// or a negative code. On a full queue it submits what is staged and waits (bounded).
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_read_async(h: *mut NvmedlHandle, buf: *mut c_void, lba: u64, len: u32) -> i64 {
    submit(h, Op::Read, buf, lba, len)
}

/// Queue a write; as `nvmedl_read_async`.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_write_async(h: *mut NvmedlHandle, buf: *mut c_void, lba: u64, len: u32) -> i64 {
    submit(h, Op::Write, buf, lba, len)
}

fn sum(done: &[Completion]) -> c_int {
    let mut first_err = None;
    for c in done {
        if let Err(e) = c.result {
            first_err.get_or_insert(e.code());
        }
    }
    first_error_or(first_err, done.len() as c_int)
}

/// The first error code (also recorded as the thread's last error), or `ok` if there was none.
fn first_error_or(first_err: Option<c_int>, ok: c_int) -> c_int {
    match first_err {
        Some(e) => {
            set_last(e);
            e
        }
        None => ok,
    }
}

/// Drive the device without blocking. Returns the number of requests that finished since the
/// last call (all successful), or the code of the first failed one (the others are reaped
/// too). 0 if nothing finished or nothing is pending.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_poll(h: *mut NvmedlHandle) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| {
        let n = h.h.poll(&mut h.done);
        sum(&h.done[..n])
    })
}

/// Copy `done` into the caller's `out` (room checked by the caller).
///
/// # Safety
/// `out` has room for `done.len()` entries.
unsafe fn copy_out(done: &[Completion], out: *mut NvmedlCompletion) {
    for (i, c) in done.iter().enumerate() {
        let (result, nvme_status) = match c.result {
            Ok(()) => (0, 0),
            Err(e) => (e.code(), e.nvme_status().unwrap_or(0)),
        };
        // SAFETY: i < done.len(), within the caller's array.
        unsafe { out.add(i).write(NvmedlCompletion { tag: c.tag, result, nvme_status, reserved: 0 }) };
    }
}

/// Drive the device and copy up to `max` finished requests into `out`; returns how many.
///
/// # Safety
/// `h` is a live handle; `out` has room for `max` entries.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_poll_completions(h: *mut NvmedlHandle, out: *mut NvmedlCompletion, max: c_int) -> c_int {
    if out.is_null() || max < 0 {
        return Error::InvalidArgument.code();
    }
    with(h, Error::InvalidArgument.code(), |h| {
        let n = (max as usize).min(h.done.len());
        let got = h.h.poll(&mut h.done[..n]);
        // SAFETY: got <= max, the caller's array length.
        unsafe { copy_out(&h.done[..got], out) };
        got as c_int
    })
}

/// As `nvmedl_poll_completions`, but wait (bounded by the timeout) until at least one
/// request finished; 0 at once when nothing is queued or `max` is 0. The wait backs off as
/// the "backoff" keys say (spin, yield, sleep), so a handle waiting on a slow device does not
/// hold a CPU. The number copied, or a negative code (the timeout code if none finished).
///
/// # Safety
/// `h` is a live handle; `out` has room for `max` entries.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_wait_completions(h: *mut NvmedlHandle, out: *mut NvmedlCompletion, max: c_int) -> c_int {
    if out.is_null() || max < 0 {
        return Error::InvalidArgument.code();
    }
    with(h, Error::InvalidArgument.code(), |h| {
        let n = (max as usize).min(h.done.len());
        match h.h.wait(&mut h.done[..n]) {
            Ok(got) => {
                // SAFETY: got <= max, the caller's array length.
                unsafe { copy_out(&h.done[..got], out) };
                got as c_int
            }
            Err(e) => e.code(),
        }
    })
}

/// Wait (bounded by the timeout) until every queued request finished. Returns the number
/// finished since the last poll, or the code of the first failure.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_wait(h: *mut NvmedlHandle) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| {
        let drained = h.h.drain();
        let mut total = 0;
        let mut first_err = drained.err().map(|e| e.code());
        loop {
            let n = h.h.poll(&mut h.done);
            if n == 0 {
                break;
            }
            match sum(&h.done[..n]) {
                e if e < 0 => {
                    first_err.get_or_insert(e);
                }
                k => total += k,
            }
        }
        first_error_or(first_err, total)
    })
}

fn sync(h: *mut NvmedlHandle, op: Op, buf: *mut c_void, lba: u64, len: u32) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| code(h.h.request_at_ptr(op, buf.cast(), lba, len).and_then(|r| h.h.execute(r))))
}

/// Read and wait. 0 or a negative code.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_read(h: *mut NvmedlHandle, buf: *mut c_void, lba: u64, len: u32) -> c_int {
    sync(h, Op::Read, buf, lba, len)
}

/// Write and wait. 0 or a negative code.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_write(h: *mut NvmedlHandle, buf: *mut c_void, lba: u64, len: u32) -> c_int {
    sync(h, Op::Write, buf, lba, len)
}

/// Flush the SSD's write cache and wait (rev 2; the revision error on rev 1).
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_flush(h: *mut NvmedlHandle) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| code(h.h.flush()))
}

/// Recover after a timeout (-1003), on both revisions. Once a request timed out the handle is
/// wedged: calls return -1009 (not ready) until it recovers. Rev 2: resets the engine (the
/// timed-out batch is aborted, its requests fail). Rev 1 (no engine reset): waits, bounded by
/// the timeout, for the device to finish the timed-out batch. 0 when the handle takes requests
/// again; -1003 if a rev 1 batch is still in the device (call again later). Calls also recover
/// by themselves once the device finished the batch.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn nvmedl_reset_handle(h: *mut NvmedlHandle) -> c_int {
    with(h, Error::InvalidArgument.code(), |h| code(h.h.recover()))
}
