// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Device` (one engine) and `Handle` (one claimed core): buffers, requests, the two-level
//! queue, submit and poll.
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
use std::sync::Arc;
use std::time::{Duration, Instant};

use directnvm_abi::*;

use crate::alloc::{PageAlloc, PAGE};
use crate::error::{status_result, Error, Result};
use crate::mmio;
use crate::platform::{CoreMapping, Platform, Region};
use crate::qos::{DepthConfig, DepthController, DepthSample, TenantConfig, TenantStats, TenantTable, MAX_TENANTS};
use crate::sched::{Fifo, SchedInfo, Scheduler};

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// One DirectNVM engine (what `/dev/directnvm` describes).
#[derive(Clone)]
pub struct Device {
    platform: Arc<dyn Platform>,
    info: DnvmInfo,
}

impl Device {
    /// Open `/dev/directnvm`.
    pub fn open() -> Result<Device> {
        Self::open_path(crate::chardev::DEFAULT_DEVICE)
    }

    /// Open the engine device at `path`.
    pub fn open_path(path: &str) -> Result<Device> {
        Self::from_platform(Arc::new(crate::chardev::CharDev::open(path)?))
    }

    /// A device on any backend (e.g. `inproc::InProc`).
    pub fn from_platform(platform: Arc<dyn Platform>) -> Result<Device> {
        let info = platform.info()?;
        Ok(Device { platform, info })
    }

    /// Device information as read at open (`refresh_info` re-reads it).
    pub fn info(&self) -> &DnvmInfo {
        &self.info
    }

    /// Re-read the device information (e.g. after `controller_init`).
    pub fn refresh_info(&mut self) -> Result<&DnvmInfo> {
        self.info = self.platform.info()?;
        Ok(&self.info)
    }

    /// Region layout.
    pub fn layout(&self) -> Result<DnvmLayout> {
        self.platform.layout()
    }

    /// Number of cores (HDUs).
    pub fn cores(&self) -> u32 {
        self.info.cores
    }

    /// The backend.
    pub fn platform(&self) -> &Arc<dyn Platform> {
        &self.platform
    }

    /// HDU information of `core` (briefly opens the HDU; fails with `Busy` while a handle
    /// owns it).
    pub fn hdu_info(&self, core: u32) -> Result<HduInfo> {
        self.platform.hdu_info(core)
    }

    /// Reset the engine of `core` (rev 2).
    pub fn reset_hdu(&self, core: u32) -> Result<()> {
        self.platform.reset_hdu(core)
    }

    /// Program NVMe arbitration (burst log2, weights minus one).
    pub fn set_arbitration(&self, a: DnvmArbitration) -> Result<()> {
        self.platform.set_arbitration(a)
    }

    /// Re-initialise the controller: CONTROLLER_INIT, then a queue reset of every rev 2 HDU.
    /// No core may be claimed and no HDU open (`Busy`); on rev 1, `Revision` once a core was
    /// claimed since the queues were created (the engines keep their queue pointers).
    pub fn controller_init(&self) -> Result<()> {
        self.platform.controller_init()
    }

    /// A handle on `core` with default options.
    pub fn handle(&self, core: u32) -> Result<Handle> {
        self.handle_with(core, HandleOptions::default())
    }

    /// A handle on `core`.
    pub fn handle_with(&self, core: u32, opts: HandleOptions) -> Result<Handle> {
        Handle::new(self, core, opts)
    }
}

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
    owner: u64,
    page: usize,
    pages: usize,
    ptr: *mut u8,
    bus: u64,
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
    op: Op,
    lba: u64,
    len: u32,
    owner: u64,
    data_off: usize,
    buf_len: usize,
    priority: Option<u16>,
    deadline: Option<Duration>,
    tag: Option<u64>,
    tenant: Option<u32>,
}

impl Request {
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
    pub fn read(buf: &Buffer, lba: u64) -> Request {
        Self::on(Op::Read, buf, lba)
    }
    /// Write `buf` at `lba`.
    pub fn write(buf: &Buffer, lba: u64) -> Request {
        Self::on(Op::Write, buf, lba)
    }
    /// Flush the SSD's volatile write cache (rev 2).
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
    pub fn len(mut self, len: u32) -> Request {
        self.len = len;
        self
    }
    /// Urgency class 0 (urgent) .. 3 (low) of this request.
    pub fn priority(mut self, p: u16) -> Request {
        self.priority = Some(p);
        self
    }
    /// Deadline relative to submission (used by deadline-aware schedulers).
    pub fn deadline(mut self, d: Duration) -> Request {
        self.deadline = Some(d);
        self
    }
    /// Caller's tag, returned in the completion (default: a per-handle sequence number).
    pub fn tag(mut self, t: u64) -> Request {
        self.tag = Some(t);
        self
    }
    /// Tenant id (`0 .. qos::MAX_TENANTS`; default: the handle's tenant) for accounting and
    /// tenant-aware schedulers.
    pub fn tenant(mut self, t: u32) -> Request {
        self.tenant = Some(t);
        self
    }
    /// The operation.
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
}

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
    /// Submit time on the handle's coarse clock (tenant accounting).
    submit_ns: u64,
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
    revision: u32,
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
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the raw pointers point into mappings owned by `map`, which moves with the handle;
// nothing is shared with other threads except through the device.
unsafe impl Send for Handle {}

impl Handle {
    fn new(dev: &Device, core: u32, opts: HandleOptions) -> Result<Handle> {
        let info = dev.platform.info()?;
        if info.flags & DNVM_INFO_READY == 0 {
            return Err(Error::NotReady);
        }
        if opts.capacity == 0 || opts.capacity > 1 << 20 || opts.iodepth == 0 || opts.batch == 0 || opts.priority > 3 {
            return Err(Error::InvalidArgument);
        }
        let map = dev.platform.open_core(core)?;
        let hinfo = map.hdu_info();
        let (revision, caps) = match hinfo.revision {
            HDU_REV1 => (HDU_REV1, HduCaps::REV1),
            HDU_REV2 => (HDU_REV2, HduCaps::from_reg(hinfo.caps)),
            _ => return Err(Error::Revision),
        };
        let (st, ss, sd) = (map.staging(), map.status(), map.data());
        let staging_entries = (st.len / DNVM_ENTRY_SIZE) as u32;
        let batch_max = if revision == HDU_REV1 {
            staging_entries.min(DNVM_REV1_MAX_NREQS)
        } else {
            staging_entries.min(caps.max_nreqs).min((ss.len / 4) as u32)
        };
        let entry_bytes = if revision == HDU_REV1 {
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
            Some(c) => Some(DepthController::new(c, iodepth, iodepth)?),
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
            start_queue: revision >= HDU_REV2 && caps.start_queue > 0,
            reqbuf_reg: u64::MAX,
            inflight_done: Vec::with_capacity(batch_max as usize),
            scan_from: 0,
            done: VecDeque::with_capacity(opts.capacity),
            iodepth: depth_ctl.map_or(iodepth, |c| c.limit()),
            batch: opts.batch,
            priority: opts.priority,
            timeout: opts.timeout,
            yield_spins: opts.yield_spins,
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
            _not_sync: PhantomData,
        };
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
            mmio::wr(self.regs, HDU_REG_REQBUF, reqbuf);
            if self.revision >= HDU_REV2 {
                mmio::wr(self.regs, HDU_REG_STATUSBUF, self.status_bus + u64::from(base) * 4);
            }
        }
        self.reqbuf_reg = reqbuf;
    }

    // ---------------------------------------------------------------- accessors and options

    /// Core index.
    pub fn core(&self) -> u32 {
        self.core
    }
    /// HDU revision (1 or 2).
    pub fn revision(&self) -> u32 {
        self.revision
    }
    /// HDU capabilities.
    pub fn caps(&self) -> HduCaps {
        self.caps
    }
    /// Most entries per hardware batch.
    pub fn batch_max(&self) -> u32 {
        self.batch_max
    }
    /// Largest transfer of one staging entry in bytes.
    pub fn entry_bytes(&self) -> u32 {
        self.entry_bytes
    }
    /// Largest request length in bytes.
    pub fn max_request(&self) -> u64 {
        u64::from(self.batch_max) * u64::from(self.entry_bytes)
    }
    /// Namespace capacity in 512-byte LBAs.
    pub fn capacity_lbas(&self) -> u64 {
        self.capacity_lbas
    }
    /// Size of the data slice in bytes.
    pub fn data_size(&self) -> usize {
        self.data.len
    }
    /// Free bytes in the data slice.
    pub fn data_free(&self) -> usize {
        self.alloc.free_pages() * PAGE
    }
    /// Counters.
    pub fn stats(&self) -> HandleStats {
        self.stats
    }
    /// Requests staged, in flight, or completed but not yet polled (at most `capacity`).
    pub fn outstanding(&self) -> usize {
        self.slots.len() - self.free.len() + self.done.len()
    }
    /// Requests not yet completed (staged or in flight).
    pub fn pending(&self) -> usize {
        self.slots.len() - self.free.len()
    }
    /// The engine that serves urgency `priority` (rev 2 routing; 0 on rev 1).
    pub fn engine_for(&self, priority: u16) -> u32 {
        if self.revision >= HDU_REV2 {
            dnvm_engine_for_urgency(priority, self.caps.engines)
        } else {
            0
        }
    }
    /// Set the queue depth (1..=capacity); with adaptive depth on, its upper bound.
    pub fn set_iodepth(&mut self, v: usize) -> Result<()> {
        if v == 0 || v > self.slots.len() {
            return Err(Error::InvalidArgument);
        }
        self.iodepth_max = v;
        self.iodepth = match self.depth_ctl.as_mut() {
            Some(c) => {
                c.set_max(v);
                c.limit()
            }
            None => v,
        };
        Ok(())
    }
    /// The in-flight limit in force now (the adaptive controller's, or `iodepth`).
    pub fn iodepth(&self) -> usize {
        self.iodepth
    }
    /// Turn adaptive depth on with `cfg` (restarting the controller from the current limit)
    /// or off (`None`: back to the configured `iodepth`).
    pub fn set_depth_control(&mut self, cfg: Option<DepthConfig>) -> Result<()> {
        match cfg {
            Some(c) => {
                let ctl = DepthController::new(c, self.iodepth, self.iodepth_max)?;
                self.depth_cfg = c;
                self.iodepth = ctl.limit();
                self.depth_ctl = Some(ctl);
            }
            None => {
                self.depth_ctl = None;
                self.iodepth = self.iodepth_max;
            }
        }
        Ok(())
    }
    /// The adaptive-depth settings (the last ones given, also while off).
    pub fn depth_config(&self) -> DepthConfig {
        self.depth_cfg
    }
    /// Whether adaptive depth is on.
    pub fn depth_control_on(&self) -> bool {
        self.depth_ctl.is_some()
    }
    /// The controller's last decision (`None` while adaptive depth is off).
    pub fn depth_sample(&self) -> Option<DepthSample> {
        self.depth_ctl.map(|c| c.last())
    }
    /// Replace the level-1 scheduler; `Busy` while requests are staged in the old one.
    pub fn set_scheduler(&mut self, mut s: Box<dyn Scheduler>) -> Result<()> {
        if !self.sched.is_empty() {
            return Err(Error::Busy);
        }
        s.reserve(self.slots.len());
        self.sched = s;
        Ok(())
    }
    /// Counters of the scheduler if it is tiered (`qos::Tiered`).
    pub fn tier_stats(&self) -> Option<crate::qos::TierStats> {
        self.sched.tier_stats()
    }
    /// Turn tenant accounting on with `cfg` (allocates the histograms; keeps nothing of an
    /// earlier table except what it published to the process) or off (`None`).
    pub fn set_tenant_accounting(&mut self, cfg: Option<TenantConfig>) -> Result<()> {
        if let Some(t) = self.tenants.as_mut() {
            t.publish(true);
        }
        self.tenants = match cfg {
            Some(c) => {
                self.tenant_cfg = c;
                Some(Box::new(TenantTable::new(c)?))
            }
            None => None,
        };
        for t in 0..MAX_TENANTS as u32 {
            self.sched.set_tenant_weight(t, 1.0);
        }
        Ok(())
    }
    /// The tenant settings (the last ones given, also while off).
    pub fn tenant_config(&self) -> TenantConfig {
        self.tenant_cfg
    }
    /// Whether tenant accounting is on.
    pub fn tenant_accounting_on(&self) -> bool {
        self.tenants.is_some()
    }
    /// Set the target share (0 ..= 1) of `tenant`; accounting must be on (`NotReady`).
    pub fn set_tenant_target(&mut self, tenant: u32, share: f64) -> Result<()> {
        self.tenants.as_mut().ok_or(Error::NotReady)?.set_target(tenant, share)
    }
    /// This handle's accounting of `tenant` (`None` while accounting is off or out of range).
    pub fn tenant_stats(&self, tenant: u32) -> Option<TenantStats> {
        self.tenants.as_ref()?.stats(tenant)
    }
    /// Add this handle's new samples to the process totals (`qos::process_stats`) now.
    pub fn publish_tenants(&mut self) {
        if let Some(t) = self.tenants.as_mut() {
            t.publish(true);
        }
    }
    /// The default tenant of requests.
    pub fn tenant(&self) -> u32 {
        self.tenant
    }
    /// Set the default tenant of requests (`0 .. qos::MAX_TENANTS`).
    pub fn set_tenant(&mut self, t: u32) -> Result<()> {
        if t as usize >= MAX_TENANTS {
            return Err(Error::InvalidArgument);
        }
        self.tenant = t;
        Ok(())
    }
    /// Set the default urgency class (0..=3).
    pub fn set_priority(&mut self, p: u16) -> Result<()> {
        if p >= DNVM_URGENCY_CLASSES as u16 {
            return Err(Error::InvalidArgument);
        }
        self.priority = p;
        Ok(())
    }
    /// Set the staged-request threshold that starts a batch (1..=capacity).
    pub fn set_batch(&mut self, v: usize) -> Result<()> {
        if v == 0 || v > self.slots.len() {
            return Err(Error::InvalidArgument);
        }
        self.batch = v;
        Ok(())
    }
    /// Set the wait bound (zero makes every blocking wait time out at once; the C key
    /// `timeout_us` refuses 0).
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }
    /// Set the blocking-wait yield policy (0 = pure spin).
    pub fn set_yield_spins(&mut self, n: u32) {
        self.yield_spins = n;
    }

    // ---------------------------------------------------------------------------- buffers

    /// Allocate a buffer of `len` bytes (rounded up to 4 KiB) from the data slice.
    pub fn buf_alloc(&mut self, len: usize) -> Result<Buffer> {
        if len == 0 {
            return Err(Error::BadLength);
        }
        let pages = len.div_ceil(PAGE);
        let page = self.alloc.alloc(pages).ok_or(Error::NoBuffers)?;
        self.runs[page] = pages as u32;
        self.starts[page..page + pages].fill(page as u32 + 1);
        Ok(self.buffer(page, pages))
    }

    fn buffer(&self, page: usize, pages: usize) -> Buffer {
        let off = page * PAGE;
        // SAFETY: `page + pages` lies inside the data slice (allocator bounds).
        let ptr = unsafe { self.data.ptr.add(off) };
        Buffer { owner: self.uid, page, pages, ptr, bus: self.data.bus + off as u64 }
    }

    /// Return a buffer to the data slice.
    pub fn buf_free(&mut self, buf: Buffer) -> Result<()> {
        if buf.owner != self.uid || self.runs.get(buf.page) != Some(&(buf.pages as u32)) {
            return Err(Error::NotFromSlice);
        }
        self.runs[buf.page] = 0;
        self.starts[buf.page..buf.page + buf.pages].fill(0);
        if self.alloc.free(buf.page, buf.pages) {
            Ok(())
        } else {
            Err(Error::NotFromSlice)
        }
    }

    /// The buffer that `nvmedl_buf_alloc` returned as `ptr` (C ABI support).
    pub fn buffer_at_ptr(&self, ptr: *const u8) -> Result<Buffer> {
        let off = (ptr as usize).wrapping_sub(self.data.ptr as usize);
        if off >= self.data.len {
            return Err(Error::NotFromSlice);
        }
        if !off.is_multiple_of(PAGE) {
            return Err(Error::Misaligned);
        }
        match self.runs[off / PAGE] {
            0 => Err(Error::NotFromSlice),
            n => Ok(self.buffer(off / PAGE, n as usize)),
        }
    }

    /// A request on memory of one `buf_alloc` allocation at `ptr` (C ABI support): `ptr` must be
    /// 4 KiB aligned and inside an allocation (its start or any page of it), and `[ptr, ptr +
    /// len)` must end within that allocation (`BadLength` otherwise, checked at submit), so a
    /// request can never spill into the next allocation.
    pub fn request_at_ptr(&self, op: Op, ptr: *const u8, lba: u64, len: u32) -> Result<Request> {
        let off = (ptr as usize).wrapping_sub(self.data.ptr as usize);
        if off >= self.data.len {
            return Err(Error::NotFromSlice);
        }
        if !off.is_multiple_of(PAGE) {
            return Err(Error::Misaligned);
        }
        let first = match self.starts[off / PAGE] {
            0 => return Err(Error::NotFromSlice),
            s => s as usize - 1,
        };
        let end = (first + self.runs[first] as usize) * PAGE;
        Ok(Request {
            op,
            lba,
            len,
            owner: self.uid,
            data_off: off,
            buf_len: end - off,
            priority: None,
            deadline: None,
            tag: None,
            tenant: None,
        })
    }

    // ----------------------------------------------------------------------------- submit

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Check a request and build its slot (no side effects).
    fn prepare(&self, r: &Request) -> Result<Slot> {
        let urgency = r.priority.unwrap_or(self.priority);
        if urgency >= DNVM_URGENCY_CLASSES as u16 {
            return Err(Error::InvalidArgument);
        }
        let tenant = r.tenant.unwrap_or(self.tenant);
        if tenant as usize >= MAX_TENANTS {
            return Err(Error::InvalidArgument);
        }
        let mut s = Slot { urgency, ..Slot::default() };
        s.info.tenant = tenant;
        match r.op {
            Op::Flush => {
                if self.revision < HDU_REV2 {
                    return Err(Error::Revision);
                }
                s.op = DNVM_OP_FLUSH;
                s.entries = 1;
                return Ok(s);
            }
            Op::Read => s.op = DNVM_OP_READ,
            Op::Write => s.op = DNVM_OP_WRITE,
        }
        if r.owner != self.uid {
            return Err(Error::NotFromSlice);
        }
        if r.len == 0 || !(r.len as usize).is_multiple_of(PAGE) || r.len as usize > r.buf_len {
            return Err(Error::BadLength);
        }
        let entries = r.len.div_ceil(self.entry_bytes);
        if entries > self.batch_max {
            return Err(Error::BadLength);
        }
        if !r.lba.is_multiple_of(PAGE as u64 / u64::from(DNVM_LBA_SIZE)) || !r.data_off.is_multiple_of(PAGE) {
            return Err(Error::Misaligned);
        }
        let nlb = u64::from(r.len) / u64::from(DNVM_LBA_SIZE);
        if r.lba.checked_add(nlb).is_none_or(|end| end > self.capacity_lbas) {
            return Err(Error::InvalidLba);
        }
        s.lba = r.lba;
        s.len = r.len;
        s.bus = self.data.bus + r.data_off as u64;
        s.entries = entries;
        Ok(s)
    }

    fn enqueue(&mut self, mut s: Slot, r: &Request, sync: bool) -> u64 {
        self.seq += 1;
        s.tag = r.tag.unwrap_or(self.seq);
        s.sync = sync;
        s.info = SchedInfo {
            priority: s.urgency,
            seq: self.seq,
            // The clock is read only for requests with a deadline (it costs ~20 ns).
            deadline_ns: r.deadline.map_or(u64::MAX, |d| self.now_ns().saturating_add(d.as_nanos() as u64)),
            tenant: s.info.tenant,
        };
        if self.tenants.is_some() {
            // Tenant latency counts from submit on the coarse clock; the first request of a
            // busy period reads the clock (one read per busy period), later ones reuse the
            // last reading (taken at every batch START and completing poll).
            if self.pending() == 0 {
                self.clock_ns = self.now_ns().max(1);
            }
            s.submit_ns = self.clock_ns;
        }
        // The caller checked that a slot is free.
        let id = self.free.pop().unwrap_or_default();
        self.slots[id as usize] = s;
        self.sched.push(id, s.info);
        self.stats.submitted += 1;
        if self.hw == Hw::Idle && self.sched.len() >= self.batch {
            self.launch();
        }
        s.tag
    }

    /// `iodepth` requests are staged or in flight.
    fn full(&self) -> bool {
        self.pending() >= self.iodepth || self.no_room()
    }

    /// Every slot or completion-ring entry is taken (completions nobody polled count).
    fn no_room(&self) -> bool {
        self.free.is_empty() || self.outstanding() >= self.done.capacity().min(self.slots.len())
    }

    /// Queue a request; returns its tag. On a full queue, start what is staged and wait for
    /// completions (bounded by the timeout); `QueueFull` if the queue is full of completions
    /// nobody polled.
    pub fn submit(&mut self, r: Request) -> Result<u64> {
        let s = self.prepare(&r)?;
        if self.still_wedged() {
            return Err(Error::NotReady);
        }
        if self.full() {
            self.note_full();
            let t0 = Instant::now();
            let mut spins = 0;
            while self.full() && self.pending() > 0 {
                self.progress(true);
                if matches!(self.hw, Hw::Wedged { .. }) {
                    return Err(Error::Timeout);
                }
                self.relax(&mut spins, t0)?;
            }
            if self.full() {
                return Err(Error::QueueFull);
            }
        }
        Ok(self.enqueue(s, &r, false))
    }

    /// Queue a request, or `QueueFull` at once if the queue is full.
    pub fn try_submit(&mut self, r: Request) -> Result<u64> {
        let s = self.prepare(&r)?;
        if self.still_wedged() {
            return Err(Error::NotReady);
        }
        if self.full() {
            self.note_full();
            return Err(Error::QueueFull);
        }
        Ok(self.enqueue(s, &r, false))
    }

    /// A submit found the queue full: tell the depth controller if the limit is the reason.
    fn note_full(&mut self) {
        if self.pending() >= self.iodepth {
            if let Some(c) = self.depth_ctl.as_mut() {
                c.note_limited();
            }
        }
    }

    /// The clock reading of this `progress` step (read at most once per step).
    fn step_clock(&mut self) -> u64 {
        if self.step_ns == 0 {
            self.step_ns = self.now_ns().max(1);
            self.clock_ns = self.step_ns;
        }
        self.step_ns
    }

    /// QoS bookkeeping of a finished request (adaptive depth, tenants).
    fn account(&mut self, s: &Slot, ok: bool) {
        if s.launch_ns == 0 || !ok || (self.depth_ctl.is_none() && self.tenants.is_none()) {
            return;
        }
        let now = self.step_clock();
        if let Some(c) = self.depth_ctl.as_mut() {
            if let Some(limit) = c.record(now, now.saturating_sub(s.launch_ns)) {
                self.iodepth = limit;
            }
        }
        if let Some(t) = self.tenants.as_mut() {
            if t.record(s.info.tenant, u64::from(s.len), now.saturating_sub(s.submit_ns)) {
                t.end_window();
                for k in 0..MAX_TENANTS as u32 {
                    self.sched.set_tenant_weight(k, t.boost(k));
                }
                t.publish(false);
            }
        }
    }

    /// Start whatever is staged if the HDU is idle (ignores the `batch` threshold).
    pub fn kick(&mut self) {
        self.progress(true);
    }

    // ------------------------------------------------------------------ hardware batches

    /// Staging entries free for the next batch: all of them with nothing in flight, else the
    /// larger gap beside the batch in flight (the entries of a batch are contiguous).
    fn free_region(&self) -> (u32, u32) {
        match self.flights.front() {
            None => (0, self.batch_max),
            Some(f) if self.batch_max - f.hi >= f.lo => (f.hi, self.batch_max),
            Some(f) => (0, f.lo),
        }
    }

    /// Start a batch of whatever is staged. The caller checked that the device takes a START
    /// now: it is idle, or (START queue) it runs one batch and none is queued.
    fn launch(&mut self) {
        let qos = self.depth_ctl.is_some() || self.tenants.is_some();
        let now = if self.sched.uses_clock() || qos { self.now_ns().max(1) } else { 0 };
        if qos {
            self.clock_ns = now;
        }
        let stamp = if qos { now } else { 0 };
        if self.flights.is_empty() {
            self.inflight.clear();
            self.inflight_done.clear();
            self.scan_from = 0;
        }
        let (base, limit) = self.free_region();
        let reqs0 = self.inflight.len();
        let mut n = 0u32;
        while let Some(id) = self.sched.pop(now) {
            let s = self.slots[id as usize];
            if base + n + s.entries > limit {
                self.sched.unpop(id, s.info);
                break;
            }
            self.slots[id as usize].first_entry = base + n;
            self.slots[id as usize].launch_ns = stamp;
            let mut done = 0u32;
            for i in 0..s.entries {
                let bytes = if s.op == DNVM_OP_FLUSH { 0 } else { (s.len - done).min(self.entry_bytes) };
                let e = DnvmEntry {
                    op: s.op,
                    urgency: s.urgency,
                    block_size: bytes,
                    data_addr: if s.op == DNVM_OP_FLUSH { 0 } else { s.bus + u64::from(done) },
                    lba: if s.op == DNVM_OP_FLUSH { 0 } else { s.lba + u64::from(done / DNVM_LBA_SIZE) },
                };
                let at = (base + n + i) as usize;
                // SAFETY: at < limit <= batch_max <= entries of the mapped staging region. Plain
                // stores to the write-combining mapping; `before_start` publishes them.
                unsafe { self.staging.add(at).write(e) };
                if self.revision >= HDU_REV2 {
                    // SAFETY: batch_max <= status words of the mapped status region.
                    unsafe { self.status.add(at).write(0) };
                }
                done += bytes;
            }
            n += s.entries;
            self.inflight.push(id);
            self.inflight_done.push(false);
        }
        if n == 0 {
            return;
        }
        self.program_base(base);
        // SAFETY: `regs` is the mapped HDU page.
        unsafe {
            if self.nreqs_reg != u64::from(n) {
                mmio::wr(self.regs, HDU_REG_NREQS, u64::from(n));
                self.nreqs_reg = u64::from(n);
            }
            mmio::before_start();
            mmio::wr(self.regs, HDU_REG_START, HDU_START_GO);
        }
        self.stats.batches += 1;
        self.stats.entries += u64::from(n);
        self.stats.max_batch = self.stats.max_batch.max(n);
        self.hw = match self.hw {
            // Queued behind a running batch: the timeout keeps counting from the older one.
            Hw::InFlight { started_ns, .. } => {
                self.stats.queued += 1;
                Hw::InFlight { started_ns, seen: false }
            }
            _ => Hw::InFlight { started_ns: 0, seen: false },
        };
        self.flights.push_back(Flight { lo: base, hi: base + n, reqs: self.inflight.len() - reqs0 });
    }

    /// START queue: the device takes another START now (the last one was consumed, fewer than
    /// two batches are in flight, and DONE.QUEUED reads 0, which only the device clears).
    fn can_queue(&self, seen: bool) -> bool {
        if !self.start_queue || !seen || self.flights.len() >= 2 || self.sched.len() < self.batch {
            return false;
        }
        let (base, limit) = self.free_region();
        if base >= limit {
            return false;
        }
        // SAFETY: `regs` is the mapped HDU page.
        unsafe { mmio::rd(self.regs, HDU_REG_DONE) & HDU_QUEUED_BIT == 0 }
    }

    /// START queue: forget the oldest batches whose requests all completed from their status
    /// words (their staging entries are free again). True if any was.
    fn retire(&mut self) -> bool {
        let mut any = false;
        while let Some(f) = self.flights.front().copied() {
            if !self.start_queue || f.reqs > self.scan_from {
                break;
            }
            self.flights.pop_front();
            self.inflight.drain(..f.reqs);
            self.inflight_done.drain(..f.reqs);
            self.scan_from -= f.reqs;
            any = true;
        }
        any
    }

    /// True once DONE of the current batch is visible (handles the stale-DONE hazard).
    fn batch_done(&mut self, seen: &mut bool) -> bool {
        // SAFETY: `regs` is the mapped HDU page.
        unsafe {
            if !*seen {
                // The model clears DONE before START; the RTL's START always reads 0 and DONE
                // clears 2 cycles after the write (docs/hardware.md §7.3).
                if mmio::rd(self.regs, HDU_REG_START) != 0 {
                    return false;
                }
                *seen = true;
            }
            mmio::rd(self.regs, HDU_REG_DONE) & HDU_DONE_BIT != 0
        }
    }

    fn complete(&mut self, id: u32, result: Result<()>) {
        let s = self.slots[id as usize];
        self.account(&s, result.is_ok());
        self.free.push(id);
        self.stats.completed += 1;
        if result.is_err() {
            self.stats.errors += 1;
        }
        if s.sync {
            if s.info.seq == self.sync_seq {
                self.sync_result = Some(result);
            }
        } else {
            self.done.push_back(Completion { tag: s.tag, result });
        }
    }

    fn harvest(&mut self) {
        mmio::after_done();
        for k in self.scan_from..self.inflight.len() {
            if self.inflight_done[k] {
                continue;
            }
            let id = self.inflight[k];
            let s = self.slots[id as usize];
            let mut r = Ok(());
            if self.revision >= HDU_REV2 {
                for e in s.first_entry..s.first_entry + s.entries {
                    // SAFETY: e < batch_max <= status words of the mapped region; the HDU
                    // wrote them before DONE.
                    let w = unsafe { self.status.add(e as usize).read_volatile() };
                    if let Err(err) = status_result(w) {
                        r = Err(err);
                        break;
                    }
                }
            }
            self.complete(id, r);
        }
        self.clear_inflight();
    }

    fn clear_inflight(&mut self) {
        self.inflight.clear();
        self.inflight_done.clear();
        self.flights.clear();
        self.scan_from = 0;
    }

    /// Rev 2 early completion: complete every in-flight request whose status words all have
    /// the done bit, before the batch's DONE. The words were zeroed before START, so a done
    /// bit belongs to this batch.
    fn complete_early(&mut self) {
        if self.revision < HDU_REV2 {
            return;
        }
        let mut found = false;
        for k in self.scan_from..self.inflight.len() {
            if self.inflight_done[k] {
                continue;
            }
            let s = self.slots[self.inflight[k] as usize];
            let mut r = Ok(());
            let mut finished = true;
            for e in s.first_entry..s.first_entry + s.entries {
                // SAFETY: e < batch_max <= status words of the mapped region.
                let w = unsafe { self.status.add(e as usize).read_volatile() };
                if w & DNVM_STATUS_DONE == 0 {
                    finished = false;
                    break;
                }
                if r.is_ok() {
                    r = status_result(w);
                }
            }
            if !finished {
                continue;
            }
            if !found {
                // The request's data and status words are read after its done bit.
                mmio::after_done();
                found = true;
            }
            self.inflight_done[k] = true;
            self.stats.early += 1;
            self.complete(self.inflight[k], r);
        }
        while self.scan_from < self.inflight.len() && self.inflight_done[self.scan_from] {
            self.scan_from += 1;
        }
    }

    /// Complete every in-flight request not completed yet with `err`.
    fn fail_inflight(&mut self, err: Error) {
        for k in self.scan_from..self.inflight.len() {
            if !self.inflight_done[k] {
                self.complete(self.inflight[k], Err(err));
            }
        }
        self.clear_inflight();
    }

    /// Fail the in-flight batch (Timeout) and everything staged (NotReady).
    fn wedge(&mut self, seen: bool) {
        self.stats.timeouts += 1;
        self.fail_inflight(Error::Timeout);
        while let Some(id) = self.sched.pop(u64::MAX) {
            self.complete(id, Err(Error::NotReady));
        }
        self.hw = Hw::Wedged { seen };
    }

    /// Advance the hardware state machine once; `check_time` reads the clock.
    fn progress(&mut self, check_time: bool) {
        self.step_ns = 0;
        match self.hw {
            Hw::InFlight { mut started_ns, mut seen } => {
                if self.batch_done(&mut seen) {
                    self.harvest();
                    self.hw = Hw::Idle;
                } else {
                    self.complete_early();
                    if self.retire() {
                        // The oldest batch ended: the timeout restarts for the next one.
                        started_ns = 0;
                    }
                    if check_time {
                        let now = self.now_ns().max(1);
                        if started_ns == 0 {
                            started_ns = now;
                        } else if now.saturating_sub(started_ns) > self.timeout.as_nanos() as u64 {
                            self.wedge(seen);
                            return;
                        }
                    }
                    self.hw = Hw::InFlight { started_ns, seen };
                    if self.can_queue(seen) {
                        self.launch();
                    }
                    return;
                }
            }
            Hw::Wedged { mut seen } => {
                // A late DONE ends the wedge (the failed batch finished after all).
                if self.batch_done(&mut seen) {
                    self.hw = Hw::Idle;
                } else {
                    self.hw = Hw::Wedged { seen };
                }
                return;
            }
            Hw::Idle => {}
        }
        if !self.sched.is_empty() {
            self.launch();
        }
    }

    /// Spin/yield step of a blocking wait; `Timeout` past the deadline.
    fn relax(&self, spins: &mut u32, t0: Instant) -> Result<()> {
        *spins += 1;
        if (*spins).is_multiple_of(64) && t0.elapsed() > self.timeout + self.timeout {
            return Err(Error::Timeout);
        }
        if self.yield_spins != 0 && (*spins).is_multiple_of(self.yield_spins) {
            std::thread::yield_now();
        } else {
            core::hint::spin_loop();
        }
        Ok(())
    }

    // ------------------------------------------------------------------------------- poll

    /// Drive the device and move finished requests into `out`; returns how many. Never
    /// blocks; with nothing pending it returns 0.
    pub fn poll(&mut self, out: &mut [Completion]) -> usize {
        self.polls = self.polls.wrapping_add(1);
        self.progress(self.polls.is_multiple_of(32));
        let mut n = 0;
        while n < out.len() {
            match self.done.pop_front() {
                Some(c) => {
                    out[n] = c;
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    /// One completion, if any (drives the device once).
    pub fn poll_one(&mut self) -> Option<Completion> {
        self.polls = self.polls.wrapping_add(1);
        self.progress(self.polls.is_multiple_of(32));
        self.done.pop_front()
    }

    /// Wait until nothing is staged or in flight (completions stay queued for `poll`).
    pub fn drain(&mut self) -> Result<()> {
        let t0 = Instant::now();
        let mut spins = 0;
        while self.pending() > 0 {
            self.progress(spins % 32 == 0);
            if matches!(self.hw, Hw::Wedged { .. }) {
                return Err(Error::Timeout);
            }
            self.relax(&mut spins, t0)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------------------- sync

    fn sync(&mut self, r: Request) -> Result<()> {
        let s = self.prepare(&r)?;
        if self.still_wedged() {
            return Err(Error::NotReady);
        }
        let t0 = Instant::now();
        let mut spins = 0;
        while self.free.is_empty() {
            self.progress(true);
            if self.pending() == 0 {
                return Err(Error::QueueFull);
            }
            self.relax(&mut spins, t0)?;
        }
        self.sync_result = None;
        self.enqueue(s, &r, true);
        self.sync_seq = self.seq;
        let r = loop {
            self.progress(spins % 32 == 0);
            if let Some(r) = self.sync_result.take() {
                break r;
            }
            if let Err(e) = self.relax(&mut spins, t0) {
                break Err(e);
            }
        };
        // A request given up on (Timeout) may still complete; it must not answer a later call.
        self.sync_seq = 0;
        r
    }

    /// Read `buf.len()` bytes at `lba` and wait.
    pub fn read(&mut self, buf: &Buffer, lba: u64) -> Result<()> {
        self.sync(Request::read(buf, lba))
    }

    /// Write `buf` at `lba` and wait.
    pub fn write(&mut self, buf: &Buffer, lba: u64) -> Result<()> {
        self.sync(Request::write(buf, lba))
    }

    /// Submit any request and wait for it.
    pub fn execute(&mut self, r: Request) -> Result<()> {
        self.sync(r)
    }

    /// Flush the SSD's write cache and wait (rev 2; `Revision` on rev 1).
    pub fn flush(&mut self) -> Result<()> {
        self.sync(Request::flush())
    }

    // ------------------------------------------------------------------------------ reset

    /// Reset the engine (rev 2): aborts the batch, clears the wedge. `Revision` on rev 1,
    /// where only a late DONE can end a wedge.
    pub fn reset(&mut self) -> Result<()> {
        self.map.reset()?;
        self.fail_inflight(Error::Hdu { code: DNVM_HDU_ERR_ABORTED });
        self.hw = Hw::Idle;
        self.program_queue_regs();
        Ok(())
    }

    /// Bring the handle back after a timeout, on either revision. Rev 2: `reset` (the engine
    /// aborts the timed-out batch). Rev 1 has no engine reset: wait, bounded by the timeout, for
    /// the late DONE that ends the wedge. `Ok` when the handle takes requests again; `Timeout`
    /// while a rev 1 batch is still inside the device (call again later, or reload the modules).
    pub fn recover(&mut self) -> Result<()> {
        if self.revision >= HDU_REV2 {
            return self.reset();
        }
        let t0 = Instant::now();
        while self.still_wedged() {
            if t0.elapsed() > self.timeout {
                return Err(Error::Timeout);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(())
    }

    /// Wedged even after looking once for the late DONE that ends a wedge (so every call
    /// recovers by itself once the device finished the timed-out batch).
    fn still_wedged(&mut self) -> bool {
        if matches!(self.hw, Hw::Wedged { .. }) {
            self.progress(false);
        }
        matches!(self.hw, Hw::Wedged { .. })
    }

    /// True when the last batch timed out and the engine has not recovered.
    pub fn is_wedged(&self) -> bool {
        matches!(self.hw, Hw::Wedged { .. })
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
