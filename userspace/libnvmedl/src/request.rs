// SPDX-License-Identifier: MIT OR Apache-2.0
//! What a handle is asked to do: its options, buffers, requests, completions and counters.

use std::time::Duration;

use directnvm_abi::DNVM_URGENCY_HIGH;

use crate::alloc::PAGE;
use crate::backoff::Backoff;
use crate::error::Result;
use crate::qos::{DepthConfig, TenantConfig};
use crate::sched::{Fifo, Scheduler};

/// Options fixed at handle creation (some can be changed later with setters).
pub struct HandleOptions {
    /// Request slots (staged + in flight + completed but not polled). Every ring is sized
    /// from this once.
    pub capacity: usize,
    /// Largest number of requests staged or in flight (≤ capacity); `submit` on a full
    /// queue drives the device and waits (the paper's behaviour).
    pub iodepth: usize,
    /// Default urgency class of requests (0 urgent .. 3 low).
    pub priority: u16,
    /// Bound of every wait (one batch, a full-queue wait, a sync call).
    pub timeout: Duration,
    /// Start a batch once this many requests are staged (1 = as soon as the HDU is idle).
    pub batch: usize,
    /// In blocking waits, call `sched_yield` after this many empty polls (0 = pure spin).
    pub yield_spins: u32,
    /// Backoff of blocking waits when the device is slow or stuck (`crate::Backoff`: spin,
    /// yield, then sleep); `None` (the default) spins.
    pub backoff: Option<Backoff>,
    /// Level-1 scheduler.
    pub scheduler: Box<dyn Scheduler>,
    /// Adaptive depth (docs/qos.md): `Some` turns the controller on; `iodepth` is then its
    /// upper bound.
    pub depth_control: Option<DepthConfig>,
    /// Tenant accounting and boosting (docs/qos.md): `Some` turns it on.
    pub tenants: Option<TenantConfig>,
}

impl Default for HandleOptions {
    fn default() -> Self {
        Self {
            capacity: 1024,
            iodepth: 1024,
            priority: DNVM_URGENCY_HIGH,
            timeout: Duration::from_secs(5),
            batch: 1,
            yield_spins: 0,
            backoff: None,
            scheduler: Box::new(Fifo::default()),
            depth_control: None,
            tenants: None,
        }
    }
}

/// Operation of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// SSD → buffer.
    Read,
    /// Buffer → SSD.
    Write,
    /// Flush the volatile write cache (rev 2 only).
    Flush,
}

/// A region of a handle's data slice, 4 KiB aligned, with its bus address.
///
/// The memory is shared with the device: while a request using the buffer is in flight, its
/// contents are undefined (reads land in it, writes are taken from it).
#[derive(Debug)]
pub struct Buffer {
    pub(crate) owner: u64,
    pub(crate) page: usize,
    pub(crate) pages: usize,
    pub(crate) ptr: *mut u8,
    pub(crate) bus: u64,
}

// SAFETY: a Buffer names memory of the data slice; it carries no thread affinity.
unsafe impl Send for Buffer {}

impl Buffer {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.pages * PAGE
    }
    /// Never empty (buffers are at least one page).
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Bus address the engine uses.
    pub fn bus(&self) -> u64 {
        self.bus
    }
    /// Pointer in this process.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// The bytes (do not read while a request using this buffer is in flight).
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the pages belong to this buffer alone (allocator) and stay mapped while the
        // handle lives; the caller keeps I/O and CPU access apart (type docs).
        unsafe { core::slice::from_raw_parts(self.ptr, self.len()) }
    }
    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as for `as_slice`; `&mut self` makes this the only CPU view.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len()) }
    }
}

/// One I/O request.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub(crate) op: Op,
    pub(crate) lba: u64,
    pub(crate) len: u32,
    pub(crate) owner: u64,
    pub(crate) data_off: usize,
    pub(crate) buf_len: usize,
    pub(crate) priority: Option<u16>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) tag: Option<u64>,
    pub(crate) tenant: Option<u32>,
}

// The builders are `#[inline]`: they run once per I/O in the caller's crate, where a call
// across the crate boundary is not inlined otherwise.
impl Request {
    #[inline]
    fn on(op: Op, buf: &Buffer, lba: u64) -> Request {
        Request {
            op,
            lba,
            len: buf.len().min(u32::MAX as usize) as u32,
            owner: buf.owner,
            data_off: buf.page * PAGE,
            buf_len: buf.len(),
            priority: None,
            deadline: None,
            tag: None,
            tenant: None,
        }
    }
    /// Read `buf.len()` bytes at `lba` (512-byte units, 4 KiB aligned) into `buf`.
    #[inline]
    pub fn read(buf: &Buffer, lba: u64) -> Request {
        Self::on(Op::Read, buf, lba)
    }
    /// Write `buf` at `lba`.
    #[inline]
    pub fn write(buf: &Buffer, lba: u64) -> Request {
        Self::on(Op::Write, buf, lba)
    }
    /// Flush the SSD's volatile write cache (rev 2).
    #[inline]
    pub fn flush() -> Request {
        Request {
            op: Op::Flush,
            lba: 0,
            len: 0,
            owner: 0,
            data_off: 0,
            buf_len: 0,
            priority: None,
            deadline: None,
            tag: None,
            tenant: None,
        }
    }
    /// Transfer only `len` bytes (multiple of 4 KiB, at most the buffer).
    #[inline]
    pub fn len(mut self, len: u32) -> Request {
        self.len = len;
        self
    }
    /// Urgency class 0 (urgent) .. 3 (low) of this request.
    #[inline]
    pub fn priority(mut self, p: u16) -> Request {
        self.priority = Some(p);
        self
    }
    /// Deadline relative to submission (used by deadline-aware schedulers).
    #[inline]
    pub fn deadline(mut self, d: Duration) -> Request {
        self.deadline = Some(d);
        self
    }
    /// Caller's tag, returned in the completion (default: a per-handle sequence number).
    #[inline]
    pub fn tag(mut self, t: u64) -> Request {
        self.tag = Some(t);
        self
    }
    /// Tenant id (`0 .. qos::MAX_TENANTS`; default: the handle's tenant) for accounting and
    /// tenant-aware schedulers.
    #[inline]
    pub fn tenant(mut self, t: u32) -> Request {
        self.tenant = Some(t);
        self
    }
    /// The operation.
    #[inline]
    pub fn op(&self) -> Op {
        self.op
    }
}

/// A finished request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The request's tag.
    pub tag: u64,
    /// Outcome.
    pub result: Result<()>,
}

/// Counters of a handle.
#[derive(Clone, Copy, Debug, Default)]
pub struct HandleStats {
    /// Requests accepted by submit.
    pub submitted: u64,
    /// Requests completed (any result).
    pub completed: u64,
    /// Requests completed with an error.
    pub errors: u64,
    /// Hardware batches started.
    pub batches: u64,
    /// Staging entries written.
    pub entries: u64,
    /// Largest batch in entries.
    pub max_batch: u32,
    /// Batches that timed out.
    pub timeouts: u64,
    /// Requests completed from their status words before their batch's DONE (rev 2).
    pub early: u64,
    /// Batches started while another was in flight (rev 2 START queue; the device takes one as
    /// a fresh START if the running batch ended meanwhile).
    pub queued: u64,
    /// Longest interval (ns) between two progress steps (`poll`, `wait`, a blocking submit's
    /// wait) with a batch in flight while the tiers' starvation guard was armed: the "one poll
    /// step" of the guard's stated bound (docs/qos.md §2). 0 without a guard.
    pub guard_max_step_ns: u64,
}
