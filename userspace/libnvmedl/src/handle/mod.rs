// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Handle`: one claimed core, driven without system calls. This file holds the handle's
//! state and its set-up; the rest is split by concern:
//! `options` (accessors, setters), `buffers` (the DMA data slice), `submit` (level 1),
//! `batch` (level 2: staging entries, START), `complete` (status words, DONE), `progress`
//! (the state machine, timeouts, poll/drain), `sync` (blocking calls), `recovery` (reset,
//! late DONE), `qos_hooks` (the clock, depth and tenant samples) and `guard` (the tiers'
//! starvation guard between batches). `Device` is in
//! `crate::device`, the request types in `crate::request`.
//!
//! ## The two-level queue
//! Level 1 is software: `submit` puts a request into a pre-sized slot table and hands its id
//! to the handle's [`Scheduler`]. Level 2 is the hardware batch: when the HDU is idle the
//! handle takes requests from the scheduler until the batch is full, writes their 24-byte
//! entries into the staging queue, and stores START. One batch is in flight per HDU at a time
//! (a START while busy is lost, docs/hardware.md §7.4); requests submitted meanwhile wait in
//! level 1 and go out as the next batch when `poll` sees DONE. With the rev 2 START queue
//! (`HduCaps::start_queue`) a second batch of at least `batch` requests is started behind the
//! running one, in the free staging entries beside it, once DONE.QUEUED reads 0; the oldest
//! batch is retired when its status words show all its requests done.
//!
//! Batch limits: rev 1 at most min(170, staging entries) entries (the 4 KiB burst rule),
//! 4 KiB per entry; rev 2 at most min(CAPS.max_nreqs, staging entries) entries of up to
//! CAPS.max_xfer_pages pages each. A request longer than one entry is split into several
//! entries of the same batch.
//!
//! ## Completion status
//! Rev 2 writes one status word per entry; a request fails with the first non-zero status of
//! its entries ([`Error::Nvme`] with the NVMe status field, or [`Error::Hdu`]).
//!
//! **Early completion (rev 2).** The handle zeroes a batch's status words before START, and the
//! HDU writes each word when its entry finishes (after the data moved, before DONE). `poll`
//! therefore completes every in-flight request whose entries all show the done bit, without
//! waiting for the batch's DONE; its slot and buffer are free at once, so new requests can be
//! staged while the rest of the batch runs. Without a START queue the next START still waits
//! for DONE (one batch in flight per HDU). Rev 1 has no status words and completes a batch at
//! DONE only. **Rev 1 has no status**: a batch that reaches DONE is reported as all requests succeeding, whatever the
//! SSD answered, and a START the HDU dropped after an earlier batch is indistinguishable from
//! a finished batch (DONE stays 1). Use rev 2 where errors matter.
//!
//! ## Priorities
//! Every request carries an urgency class (0 urgent .. 3 low; default: the handle's
//! `priority`). On rev 2 the HDU routes it to engine `dnvm_engine_for_urgency` (per-I/O
//! priority through NVMe WRR). **Rev 1 ignores it**: the handle's single engine serves every
//! request; only the software scheduler (e.g. [`crate::PriorityDeadline`]) still orders by it.
//!
//! ## I/O path rules
//! After `Device::handle`, submit/poll/sync calls allocate nothing and make no system call
//! (unless `yield_spins` is set, which calls `sched_yield` in blocking waits). Every wait is
//! bounded by the handle's timeout.

use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use directnvm_abi::*;

use crate::alloc::{PageAlloc, PAGE};
use crate::backoff::{Backoff, Wait};
use crate::error::{status_result, Error, Result};
use crate::mmio;
use crate::platform::{CoreMapping, Region};
use crate::qos::{DepthConfig, DepthController, DepthSample, TenantConfig, TenantStats, TenantTable, MAX_TENANTS};
use crate::sched::{SchedInfo, Scheduler};

mod batch;
mod buffers;
mod complete;
mod guard;
mod options;
mod progress;
mod qos_hooks;
mod recovery;
mod submit;
mod sync;

pub use crate::device::Device;
pub use crate::request::{Buffer, Completion, HandleOptions, HandleStats, Op, Request};

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

#[derive(Clone, Copy, Default)]
struct Slot {
    op: u16,
    urgency: u16,
    lba: u64,
    len: u32,
    bus: u64,
    tag: u64,
    entries: u32,
    first_entry: u32,
    sync: bool,
    info: SchedInfo,
    /// Time of the batch START (0: not started or no QoS clock).
    launch_ns: u64,
    /// Submit time on the handle's coarse clock (adaptive depth, tenant accounting).
    submit_ns: u64,
    /// In flight and guarded by the scheduler's starvation guard (`Scheduler::guards`).
    guarded: bool,
}

impl Default for SchedInfo {
    fn default() -> Self {
        SchedInfo { priority: 0, seq: 0, deadline_ns: u64::MAX, tenant: 0 }
    }
}

/// A batch the device holds: its staging entries `[lo, hi)` and its first `reqs` requests
/// of `Handle::inflight`.
#[derive(Clone, Copy, Debug)]
struct Flight {
    lo: u32,
    hi: u32,
    reqs: usize,
    /// Clock at START (0: not read).
    start_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hw {
    Idle,
    /// One or two batches run; `seen` once the last START read 0 (the device consumed it, so
    /// DONE is current).
    /// `started_ns` is 0 until the first poll that reads the clock stamps it (the timeout
    /// counts from there; that poll comes at most 32 polls after START), so a batch that
    /// finishes quickly costs no clock read.
    InFlight {
        started_ns: u64,
        seen: bool,
    },
    /// The batch timed out; its requests were failed. Waiting for a late DONE or `reset()`.
    Wedged {
        seen: bool,
    },
}

/// A claimed core: the only way to do I/O. `Send` (move it to the thread that uses it), not
/// `Sync` (one thread drives one HDU; the hardware has no locking).
pub struct Handle {
    map: Box<dyn CoreMapping>,
    regs: *mut u64,
    staging: *mut DnvmEntry,
    staging_bus: u64,
    status: *mut u32,
    status_bus: u64,
    data: Region,
    revision: Revision,
    caps: HduCaps,
    core: u32,
    batch_max: u32,
    entry_bytes: u32,
    capacity_lbas: u64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    sched: Box<dyn Scheduler>,
    /// Requests of the batches in flight, oldest batch first.
    inflight: Vec<u32>,
    /// The batches in flight (at most two: one running, one queued behind it).
    flights: VecDeque<Flight>,
    /// Rev 2 START queue: a second batch may be started while one runs.
    start_queue: bool,
    /// Last value written to REQBUF (the second batch's entries follow the first one's).
    reqbuf_reg: u64,
    /// Per `inflight` entry: already completed from its status words (rev 2 early completion).
    inflight_done: Vec<bool>,
    /// `inflight[..scan_from]` are all completed (where the early-completion scan starts).
    scan_from: usize,
    done: VecDeque<Completion>,
    iodepth: usize,
    batch: usize,
    priority: u16,
    timeout: Duration,
    yield_spins: u32,
    /// Backoff of blocking waits (`None`: spin, with `yield_spins`).
    backoff: Option<Backoff>,
    epoch: Instant,
    hw: Hw,
    nreqs_reg: u64,
    polls: u32,
    seq: u64,
    alloc: PageAlloc,
    /// Pages of the allocation that starts at each page (0: no allocation starts there).
    runs: Vec<u32>,
    /// For each page, 1 + the first page of the allocation holding it (0: free): the C ABI
    /// bounds a pointer into an allocation by the end of that allocation.
    starts: Vec<u32>,
    uid: u64,
    sync_result: Option<Result<()>>,
    /// Sequence number of the request the running `sync` call waits for (0: none). A sync
    /// request whose call gave up (Timeout) completes later into nothing.
    sync_seq: u64,
    stats: HandleStats,
    /// The configured depth (the controller's upper bound).
    iodepth_max: usize,
    depth_ctl: Option<DepthController>,
    depth_cfg: DepthConfig,
    tenants: Option<Box<TenantTable>>,
    tenant_cfg: TenantConfig,
    /// Default tenant of requests.
    tenant: u32,
    /// Last clock reading (QoS stamps), ns since `epoch`.
    clock_ns: u64,
    /// Clock reading of the current `progress` step (0: not read yet).
    step_ns: u64,
    /// The scheduler's starvation bound (`Scheduler::guard_bound_ns`; 0: no guard).
    guard_ns: u64,
    /// Device time per entry, for the guard's batch cap.
    dev_time: guard::DeviceTime,
    /// Guarded requests in flight, and the time the last one completed (0: none yet).
    guard_inflight: u32,
    guard_done_ns: u64,
    /// Clock of the last progress step seen while the guard was armed (0: none since the
    /// guard armed or the device went idle), and the moving average (weight 1/8) of steps.
    guard_last_step_ns: u64,
    guard_step_avg_ns: u64,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the raw pointers point into mappings owned by `map`, which moves with the handle;
// nothing is shared with other threads except through the device.
unsafe impl Send for Handle {}

impl Handle {
    pub(crate) fn new(dev: &Device, core: u32, opts: HandleOptions) -> Result<Handle> {
        let info = dev.platform.info()?;
        if info.flags & DNVM_INFO_READY == 0 {
            return Err(Error::NotReady);
        }
        if opts.capacity == 0 || opts.capacity > 1 << 20 || opts.iodepth == 0 || opts.batch == 0 || opts.priority > 3 {
            return Err(Error::InvalidArgument);
        }
        let map = dev.platform.open_core(core)?;
        let hinfo = map.hdu_info();
        let revision = Revision::from_number(hinfo.revision).ok_or(Error::Revision)?;
        let caps = if revision.has_caps() { HduCaps::from_reg(hinfo.caps) } else { HduCaps::REV1 };
        let (st, ss, sd) = (map.staging(), map.status(), map.data());
        let staging_entries = (st.len / DNVM_ENTRY_SIZE) as u32;
        let batch_max = if !revision.has_status() {
            staging_entries.min(DNVM_REV1_MAX_NREQS)
        } else {
            staging_entries.min(caps.max_nreqs).min((ss.len / 4) as u32)
        };
        let entry_bytes = if !revision.has_sized_entries() {
            DNVM_REV1_BLOCK_SIZE
        } else {
            (caps.max_xfer_pages.max(1) * 4096).min(info.max_transfer.max(4096)) / 4096 * 4096
        };
        if batch_max == 0 || st.bus % DNVM_PAGE_SIZE != 0 || sd.bus % DNVM_PAGE_SIZE != 0 {
            return Err(Error::Misaligned);
        }
        let mut sched = opts.scheduler;
        sched.reserve(opts.capacity);
        let iodepth = opts.iodepth.min(opts.capacity);
        let depth_ctl = match opts.depth_control {
            Some(c) => Some(DepthController::new(c, c.min_depth, iodepth)?),
            None => None,
        };
        let tenants = match opts.tenants {
            Some(c) => Some(Box::new(TenantTable::new(c)?)),
            None => None,
        };
        let pages = sd.len / PAGE;
        let mut h = Handle {
            regs: map.regs(),
            staging: st.ptr.cast(),
            staging_bus: st.bus,
            status: ss.ptr.cast(),
            status_bus: ss.bus,
            data: sd,
            map,
            revision,
            caps,
            core,
            batch_max,
            entry_bytes,
            capacity_lbas: info.capacity_lbas,
            slots: vec![Slot::default(); opts.capacity],
            free: (0..opts.capacity as u32).rev().collect(),
            sched,
            inflight: Vec::with_capacity(batch_max as usize),
            flights: VecDeque::with_capacity(2),
            start_queue: revision.has_caps() && caps.start_queue > 0,
            reqbuf_reg: u64::MAX,
            inflight_done: Vec::with_capacity(batch_max as usize),
            scan_from: 0,
            done: VecDeque::with_capacity(opts.capacity),
            iodepth: depth_ctl.as_ref().map_or(iodepth, |c| c.limit()),
            batch: opts.batch,
            priority: opts.priority,
            timeout: opts.timeout,
            yield_spins: opts.yield_spins,
            backoff: opts.backoff,
            epoch: Instant::now(),
            hw: Hw::Idle,
            nreqs_reg: u64::MAX,
            polls: 0,
            seq: 0,
            alloc: PageAlloc::new(pages),
            runs: vec![0; pages],
            starts: vec![0; pages],
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            sync_result: None,
            sync_seq: 0,
            stats: HandleStats::default(),
            iodepth_max: iodepth,
            depth_ctl,
            depth_cfg: opts.depth_control.unwrap_or_default(),
            tenants,
            tenant_cfg: opts.tenants.unwrap_or_default(),
            tenant: 0,
            clock_ns: 0,
            step_ns: 0,
            guard_ns: 0,
            dev_time: guard::DeviceTime::default(),
            guard_inflight: 0,
            guard_done_ns: 0,
            guard_last_step_ns: 0,
            guard_step_avg_ns: 0,
            _not_sync: PhantomData,
        };
        h.guard_ns = h.sched.guard_bound_ns();
        h.program_queue_regs();
        Ok(h)
    }

    /// REQBUF (one 64-bit store) and STATUSBUF are sticky: program them once per (re)start.
    fn program_queue_regs(&mut self) {
        self.reqbuf_reg = u64::MAX;
        self.program_base(0);
        self.nreqs_reg = u64::MAX;
    }

    /// Point REQBUF and STATUSBUF at staging entry `base` (skipped when they already do).
    fn program_base(&mut self, base: u32) {
        let reqbuf = self.staging_bus + u64::from(base) * DNVM_ENTRY_SIZE as u64;
        if reqbuf == self.reqbuf_reg {
            return;
        }
        // SAFETY: `regs` is the mapped HDU page; offsets are ABI register offsets.
        unsafe {
            mmio::wr(self.regs, HduReg::Reqbuf, reqbuf);
            if self.revision.has_status() {
                mmio::wr(self.regs, HduReg::Statusbuf, self.status_bus + u64::from(base) * 4);
            }
        }
        self.reqbuf_reg = reqbuf;
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Do not release the core while the engine may still DMA into the data slice.
        let t0 = Instant::now();
        while matches!(self.hw, Hw::InFlight { .. }) && t0.elapsed() < self.timeout {
            self.progress(false);
            std::hint::spin_loop();
        }
        self.publish_tenants();
    }
}
