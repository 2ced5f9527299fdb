// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Handle`: one claimed core, driven without system calls. This file holds the handle's
//! parts and its set-up. The parts are owned types, one per file: `Engine` (`engine`: the
//! mapped HDU, its registers, staging entries and status words), `SlotTable` (`slots`: the
//! requests held), `Flights` (`flights`: the batches in flight and their requests),
//! `BufferMap` (`buffers`: the DMA data slice), `DoneQueue` (`done`: finished requests),
//! `Settings` (`settings`), `DepthLimit` (`limit`: fixed or adaptive depth), `Tenants`
//! (`tenants`), `Clock` (`clock`) and `GuardState` (`guard`: the tiers' starvation guard
//! between batches); `Cap` (`caps`) names what the engine can do. The handle's calls are
//! split by concern: `options` (accessors, setters), `submit` (level 1), `batch` (level 2:
//! staging entries, START), `complete` (status words, DONE), `progress` (the state machine,
//! timeouts, poll/drain), `sync` (blocking calls), `recovery` (reset, late DONE) and
//! `qos_hooks` (the depth and tenant samples). `Device` is in `crate::device`, the request
//! types in `crate::request`.
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
use std::marker::PhantomData;
use std::time::Instant;

use directnvm_abi::DNVM_INFO_READY;

use crate::error::{Error, Result};
use crate::sched::Scheduler;

mod batch;
mod buffers;
mod caps;
mod clock;
mod complete;
mod done;
mod engine;
mod flights;
mod guard;
mod limit;
mod options;
mod progress;
mod qos_hooks;
mod recovery;
mod settings;
mod slots;
mod submit;
mod sync;
mod tenants;

pub use crate::device::Device;
pub use crate::request::{Buffer, Completion, HandleOptions, HandleStats, Op, Request};
pub use caps::Cap;

use buffers::BufferMap;
use clock::Clock;
use done::DoneQueue;
use engine::Engine;
use flights::Flights;
use guard::GuardState;
use limit::DepthLimit;
use settings::Settings;
use slots::{Slot, SlotTable};
use tenants::Tenants;

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
    engine: Engine,
    slots: SlotTable,
    flights: Flights,
    bufs: BufferMap,
    done: DoneQueue,
    sched: Box<dyn Scheduler>,
    cfg: Settings,
    depth: DepthLimit,
    tenants: Tenants,
    clock: Clock,
    guard: GuardState,
    hw: Hw,
    /// Sequence number of the last request submitted.
    seq: u64,
    stats: HandleStats,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the raw pointers (in `engine` and `bufs`) point into mappings owned by `engine`,
// which moves with the handle; nothing is shared with other threads except through the
// device.
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
        let engine = Engine::new(map, core, info.max_transfer, info.capacity_lbas)?;
        let cfg = Settings::new(&opts);
        let mut sched = opts.scheduler;
        sched.reserve(opts.capacity);
        let depth = DepthLimit::new(opts.iodepth.min(opts.capacity), opts.depth_control)?;
        let tenants = Tenants::new(opts.tenants)?;
        let bound = sched.guard().map_or(0, |g| g.guard_bound_ns());
        let mut h = Handle {
            bufs: BufferMap::new(engine.map().data()),
            slots: SlotTable::new(opts.capacity),
            flights: Flights::new(engine.batch_max()),
            engine,
            done: DoneQueue::new(opts.capacity),
            sched,
            cfg,
            depth,
            tenants,
            clock: Clock::new(),
            guard: GuardState::new(bound),
            hw: Hw::Idle,
            seq: 0,
            stats: HandleStats::default(),
            _not_sync: PhantomData,
        };
        h.engine.program_queue_regs();
        Ok(h)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Do not release the core while the engine may still DMA into the data slice.
        let t0 = Instant::now();
        while matches!(self.hw, Hw::InFlight { .. }) && t0.elapsed() < self.cfg.timeout {
            self.progress(false);
            std::hint::spin_loop();
        }
        self.publish_tenants();
    }
}
