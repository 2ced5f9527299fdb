// SPDX-License-Identifier: MIT OR Apache-2.0
//! # libnvmedl — the DirectNVM userspace I/O library
//!
//! Userspace drives the DirectNVM engines directly: a request is a 24-byte entry written into
//! the core's staging queue and one START store to the core's HDU; completion is read from the
//! HDU (DONE) and, on rev 2, from per-request status words. The kernel is only on the control
//! path (open, claim, mmap, reset). Design notes: `docs/libnvmedl.md`.
//!
//! ```no_run
//! use nvmedl::{Device, Request};
//! let dev = Device::open()?;                 // /dev/directnvm
//! let mut h = dev.handle(0)?;                // claims core 0, maps /dev/hdu0 and the slices
//! let mut buf = h.buf_alloc(4096)?;
//! buf.as_mut_slice().fill(0xab);
//! h.write(&buf, 0)?;                         // sync
//! let tag = h.submit(Request::read(&buf, 0).priority(0))?;   // async
//! let mut done = [nvmedl::Completion { tag: 0, result: Ok(()) }; 16];
//! while h.poll(&mut done) == 0 {}
//! assert_eq!(done[0].tag, tag);
//! # Ok::<(), nvmedl::Error>(())
//! ```
//!
//! * [`Device`] / [`Handle`] / [`Buffer`] / [`Request`] / [`Completion`]: the Rust API
//!   ([`handle`] module docs: two-level queue, rev 1 vs rev 2 semantics, I/O path rules).
//! * [`Scheduler`], [`Fifo`], [`PriorityDeadline`]: the software level of the queue.
//! * [`ffi`]: the C ABI (`include/libnvmedl.h`).
//! * [`platform`]: the backend interface; [`chardev`] (kernel devices) and `inproc` (the
//!   fakehdu model in this process: the `nvmedl-inproc` crate in `qemu/inproc`, test code
//!   outside this crate).

pub mod alloc;
pub mod backoff;
pub mod chardev;
pub mod device;
pub mod error;
pub mod ffi;
pub mod handle;
pub mod mmio;
pub mod platform;
pub mod qos;
pub mod request;
pub mod sched;

pub use backoff::Backoff;
pub use directnvm_abi as abi_types;
pub use error::{Error, Result};
pub use handle::{Buffer, Cap, Completion, Device, Handle, HandleOptions, HandleStats, Op, Request};
pub use sched::{Fifo, PriorityDeadline, SchedInfo, Scheduler, SchedulerKind, StarvationGuard, TenantLanes};
