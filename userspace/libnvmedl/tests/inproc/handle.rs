// SPDX-License-Identifier: MIT OR Apache-2.0
//! Host tests against the in-process device model (fakehdu, no timing): every API call, bad
//! inputs, device error status, timeouts.

use std::sync::Arc;
use std::time::Duration;

use directnvm_abi::*;
use fakehdu::faults::IoFault;
use fakehdu::ControlOp;

use nvmedl::*;
use nvmedl_inproc::{InProc, InProcConfig};

use crate::completion::settle;

pub(super) fn board(rev: u32, engines: u32) -> (Arc<InProc>, Device) {
    board_with(rev, engines, 1)
}

pub(super) fn board_with(rev: u32, engines: u32, start_queue: u32) -> (Arc<InProc>, Device) {
    start_board(InProcConfig { engines, start_queue, ..InProcConfig::new(rev) })
}

/// A rev 2 board whose SSD model takes real (wall-clock) time per command.
pub(super) fn wallclock_board() -> (Arc<InProc>, Device) {
    start_board(InProcConfig { timing: fakehdu::TimingMode::WallClock, ..InProcConfig::new(HDU_REV2) })
}

pub(super) fn start_board(c: InProcConfig) -> (Arc<InProc>, Device) {
    let ip = InProc::start(c).expect("in-process board");
    let dev = Device::from_platform(ip.clone()).expect("device");
    (ip, dev)
}

pub(super) fn opts() -> HandleOptions {
    HandleOptions { timeout: Duration::from_secs(5), yield_spins: 64, ..HandleOptions::default() }
}

pub(super) fn pattern(lba: u64, i: usize) -> u8 {
    (lba.wrapping_mul(31) as usize ^ i.wrapping_mul(7)) as u8
}

pub(super) fn fill(buf: &mut Buffer, lba: u64) {
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(lba, i);
    }
}

pub(super) fn check(buf: &Buffer, lba: u64) -> bool {
    buf.as_slice().iter().enumerate().all(|(i, b)| *b == pattern(lba, i))
}

pub(super) fn empty() -> [Completion; 64] {
    [Completion { tag: 0, result: Ok(()) }; 64]
}

/// Poll until `n` completions arrived (bounded).
pub(super) fn collect(h: &mut Handle, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut out = empty();
    let t0 = std::time::Instant::now();
    while got.len() < n {
        let k = h.poll(&mut out);
        got.extend_from_slice(&out[..k]);
        assert!(t0.elapsed() < Duration::from_secs(20), "only {} of {n} completions", got.len());
        if k == 0 {
            std::thread::yield_now();
        }
    }
    got
}

fn sync_roundtrip(rev: u32) {
    let (_ip, dev) = board(rev, 1);
    assert!(dev.info().flags & DNVM_INFO_READY != 0);
    assert_eq!(dev.cores(), 4);
    let mut h = dev.handle_with(0, opts()).unwrap();
    assert_eq!(h.revision().number(), rev);
    let mut w = h.buf_alloc(8192).unwrap();
    let r = h.buf_alloc(8192).unwrap();
    fill(&mut w, 64);
    h.write(&w, 64).unwrap();
    h.read(&r, 64).unwrap();
    assert!(check(&r, 64));
    // A second core works independently.
    let mut h1 = dev.handle_with(1, opts()).unwrap();
    let b1 = h1.buf_alloc(4096).unwrap();
    h1.read(&b1, 64).unwrap();
    assert_eq!(&b1.as_slice()[..4096], &w.as_slice()[..4096]);
    if rev == HDU_REV1 {
        assert_eq!(h.flush(), Err(Error::Revision));
        assert_eq!(h.reset(), Err(Error::Revision));
    } else {
        h.flush().unwrap();
        h.reset().unwrap();
        h.read(&r, 64).unwrap();
    }
    h.buf_free(w).unwrap();
    h.buf_free(r).unwrap();
}

#[test]
fn rev1_sync_roundtrip() {
    sync_roundtrip(HDU_REV1);
}

#[test]
fn rev2_sync_roundtrip() {
    sync_roundtrip(HDU_REV2);
}

fn async_many(rev: u32, engines: u32, sched: Box<dyn Scheduler>) {
    let (_ip, dev) = board(rev, engines);
    let mut h = dev.handle_with(2, HandleOptions { scheduler: sched, capacity: 512, iodepth: 512, ..opts() }).unwrap();
    let n = 400usize; // > one rev 1 batch (170)
    let base = 4096u64;
    let mut bufs: Vec<Buffer> = (0..n).map(|_| h.buf_alloc(4096).unwrap()).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        fill(b, base + 8 * i as u64);
    }
    for (i, b) in bufs.iter().enumerate() {
        let tag = h.submit(Request::write(b, base + 8 * i as u64).priority((i % 4) as u16).tag(i as u64)).unwrap();
        assert_eq!(tag, i as u64);
    }
    let got = collect(&mut h, n);
    assert!(got.iter().all(|c| c.result.is_ok()), "{got:?}");
    let mut tags: Vec<u64> = got.iter().map(|c| c.tag).collect();
    tags.sort_unstable();
    assert_eq!(tags, (0..n as u64).collect::<Vec<_>>());
    for b in bufs.iter_mut() {
        b.as_mut_slice().fill(0);
    }
    for (i, b) in bufs.iter().enumerate() {
        h.submit(Request::read(b, base + 8 * i as u64).tag(i as u64)).unwrap();
    }
    h.drain().unwrap();
    let got = collect(&mut h, n);
    assert!(got.iter().all(|c| c.result.is_ok()));
    for (i, b) in bufs.iter().enumerate() {
        assert!(check(b, base + 8 * i as u64), "buffer {i}");
    }
    let st = h.stats();
    assert!(st.batches >= 2 * (n as u64).div_ceil(h.batch_max() as u64));
    assert!(st.max_batch <= h.batch_max());
    if rev == HDU_REV1 {
        assert!(h.batch_max() <= DNVM_REV1_MAX_NREQS);
    }
    let stats = dev_stats(&_ip, 2);
    assert_eq!(stats.protocol_violations, 0);
    assert_eq!(stats.dropped_starts, 0);
}

pub(super) fn dev_stats(ip: &InProc, hdu: usize) -> fakehdu::stats::HduStats {
    ip.model().stats().hdus[hdu].clone()
}

#[test]
fn rev1_async_batches_fifo() {
    async_many(HDU_REV1, 1, Box::new(Fifo::default()));
}

#[test]
fn rev2_async_batches_priority_four_engines() {
    async_many(HDU_REV2, 4, Box::new(PriorityDeadline::default()));
}

#[test]
fn large_requests_are_split_into_entries() {
    for rev in [HDU_REV1, HDU_REV2] {
        let (_ip, dev) = board(rev, 1);
        let mut h = dev.handle_with(0, opts()).unwrap();
        let len = 256 * 1024;
        let mut w = h.buf_alloc(len).unwrap();
        let r = h.buf_alloc(len).unwrap();
        fill(&mut w, 8192);
        h.write(&w, 8192).unwrap();
        h.read(&r, 8192).unwrap();
        assert!(check(&r, 8192));
        let expect_entries = if rev == HDU_REV1 { 64 } else { (len as u32).div_ceil(h.entry_bytes()) as u64 };
        assert_eq!(h.stats().entries, 2 * expect_entries);
    }
}

#[test]
fn bad_inputs_are_errors() {
    let (_ip, dev) = board(HDU_REV2, 1);
    let mut h = dev.handle_with(0, opts()).unwrap();
    let mut other = dev.handle_with(1, opts()).unwrap();
    let b = h.buf_alloc(8192).unwrap();
    let foreign = other.buf_alloc(4096).unwrap();
    let cap = h.capacity_lbas();
    assert_eq!(h.submit(Request::read(&b, 3)).unwrap_err(), Error::Misaligned);
    assert_eq!(h.submit(Request::read(&b, cap)).unwrap_err(), Error::InvalidLba);
    assert_eq!(h.submit(Request::read(&b, cap - 8)).unwrap_err(), Error::InvalidLba); // 8 KiB
    assert_eq!(h.submit(Request::read(&b, u64::MAX - 7)).unwrap_err(), Error::InvalidLba);
    assert_eq!(h.submit(Request::read(&b, 0).len(0)).unwrap_err(), Error::BadLength);
    assert_eq!(h.submit(Request::read(&b, 0).len(100)).unwrap_err(), Error::BadLength);
    assert_eq!(h.submit(Request::read(&b, 0).len(12288)).unwrap_err(), Error::BadLength);
    assert_eq!(h.submit(Request::read(&foreign, 0)).unwrap_err(), Error::NotFromSlice);
    assert_eq!(h.submit(Request::read(&b, 0).priority(4)).unwrap_err(), Error::InvalidArgument);
    assert_eq!(h.buf_alloc(0).unwrap_err(), Error::BadLength);
    assert_eq!(h.buf_alloc(1 << 40).unwrap_err(), Error::NoBuffers);
    assert_eq!(h.buf_free(foreign).unwrap_err(), Error::NotFromSlice);
    assert!(h.request_at_ptr(Op::Read, std::ptr::null(), 0, 4096).is_err());
    assert_eq!(h.request_at_ptr(Op::Read, b.as_ptr().wrapping_add(1), 0, 4096).unwrap_err(), Error::Misaligned);
    assert_eq!(h.set_iodepth(0), Err(Error::InvalidArgument));
    assert_eq!(h.set_priority(9), Err(Error::InvalidArgument));
    // Claims are exclusive; out-of-range cores are refused.
    assert_eq!(dev.handle(0).err(), Some(Error::Busy));
    assert_eq!(dev.handle(99).err(), Some(Error::InvalidArgument));
    // Poll with nothing pending.
    let mut out = empty();
    assert_eq!(h.poll(&mut out), 0);
    assert!(h.poll_one().is_none());
    h.drain().unwrap();
    // Nothing was queued by the failed submits.
    assert_eq!(h.stats().submitted, 0);
    assert_eq!(h.outstanding(), 0);
    // A released core can be claimed again.
    drop(h);
    assert!(dev.handle(0).is_ok());
}

#[test]
fn full_queue() {
    let (ip, dev) = board(HDU_REV2, 1);
    let mut h = dev.handle_with(0, HandleOptions { capacity: 8, iodepth: 8, ..opts() }).unwrap();
    let b = h.buf_alloc(4096).unwrap();
    ip.control(ControlOp::Quiesce).unwrap();
    for _ in 0..8 {
        h.try_submit(Request::read(&b, 0)).unwrap();
    }
    assert_eq!(h.try_submit(Request::read(&b, 0)).unwrap_err(), Error::QueueFull);
    ip.control(ControlOp::Resume).unwrap();
    // submit on a full queue drives the device and waits; completions stay queued, so once
    // all 8 slots hold unpolled completions even submit reports QueueFull.
    h.drain().unwrap();
    assert_eq!(h.submit(Request::read(&b, 0)).unwrap_err(), Error::QueueFull);
    assert_eq!(collect(&mut h, 8).len(), 8);
    h.set_iodepth(2).unwrap();
    for _ in 0..6 {
        h.submit(Request::read(&b, 0)).unwrap();
        let mut out = empty();
        h.poll(&mut out);
    }
    h.drain().unwrap();
}

#[test]
fn device_error_status_is_surfaced() {
    let (ip, dev) = board(HDU_REV2, 1);
    let mut h = dev.handle_with(0, opts()).unwrap();
    let b = h.buf_alloc(4096).unwrap();
    // Unrecovered read error (SCT 2, SC 0x81) on LBAs 800..808.
    let status = 0x281u16;
    ip.control(ControlOp::IoError(IoFault { lba_start: 800, lba_end: 808, opcode: None, status, remaining: None })).unwrap();
    assert_eq!(h.read(&b, 800), Err(Error::Nvme { status }));
    assert_eq!(Error::Nvme { status }.nvme_status(), Some(status));
    h.read(&b, 808).unwrap();
    // Async: only the failing request fails.
    h.submit(Request::read(&b, 792).tag(1)).unwrap();
    h.submit(Request::read(&b, 800).tag(2)).unwrap();
    let got = collect(&mut h, 2);
    for c in got {
        match c.tag {
            1 => assert_eq!(c.result, Ok(())),
            _ => assert_eq!(c.result, Err(Error::Nvme { status })),
        }
    }
    assert_eq!(h.stats().errors, 2);
    // A dropped START after a finished batch: DONE stays 1, but rev 2 status words tell.
    ip.control(ControlOp::ClearFaults).unwrap();
    ip.control(ControlOp::DropStart { hdu: 0, count: 1 }).unwrap();
    assert_eq!(h.read(&b, 0), Err(Error::BatchLost));
    h.read(&b, 0).unwrap();
    // DMA window violation is reported by the HDU.
    ip.control(ControlOp::Window { hdu: 0, count: 1 }).unwrap();
    assert_eq!(h.read(&b, 0), Err(Error::Hdu { code: DNVM_HDU_ERR_WINDOW }));
}

#[test]
fn stuck_engine_times_out_and_recovers() {
    for (rev, sq) in [(HDU_REV1, 0), (HDU_REV2, 0), (HDU_REV2, 1)] {
        let (ip, dev) = board_with(rev, 1, sq);
        let mut h = dev.handle_with(0, HandleOptions { timeout: Duration::from_millis(200), ..opts() }).unwrap();
        let b = h.buf_alloc(4096).unwrap();
        h.read(&b, 0).unwrap();
        settle(&ip, &mut h);
        ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
        let t0 = std::time::Instant::now();
        if rev == HDU_REV2 {
            // Rev 2: the entry's status word says done, so the read completes early (see
            // rev2_completes_requests_from_status_words_before_done)...
            assert_eq!(h.read(&b, 0), Ok(()));
            // ...but DONE never comes. Without a START queue the next request stays staged,
            // the batch times out and the staged request fails (NotReady); with one, it is
            // started behind the held batch, never runs, and times out itself.
            let want = if sq == 0 { Error::NotReady } else { Error::Timeout };
            assert_eq!(h.read(&b, 0), Err(want), "start_queue {sq}");
            assert_eq!(h.stats().timeouts, 1);
            assert_eq!(h.stats().queued, u64::from(sq));
        } else {
            assert_eq!(h.read(&b, 0), Err(Error::Timeout));
        }
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(h.is_wedged());
        assert_eq!(h.submit(Request::read(&b, 0)).unwrap_err(), Error::NotReady);
        if rev == HDU_REV2 {
            h.reset().unwrap();
        } else {
            // Rev 1 cannot be reset; a late DONE ends the wedge.
            assert_eq!(h.reset(), Err(Error::Revision));
            ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
            let t0 = std::time::Instant::now();
            while h.is_wedged() {
                let mut out = empty();
                h.poll(&mut out);
                assert!(t0.elapsed() < Duration::from_secs(5));
            }
        }
        ip.control(ControlOp::ClearFaults).unwrap();
        assert!(!h.is_wedged());
        h.read(&b, 0).unwrap();
    }
}

#[test]
fn four_threads_on_four_cores() {
    let (_ip, dev) = board(HDU_REV2, 1);
    let per_core = 2 << 20; // bytes per core
    let threads: Vec<_> = (0..4u32)
        .map(|core| {
            let dev = dev.clone();
            std::thread::spawn(move || {
                let mut h = dev.handle_with(core, opts()).unwrap();
                let chunk = 64 * 1024;
                let mut bufs: Vec<Buffer> = (0..8).map(|_| h.buf_alloc(chunk).unwrap()).collect();
                let base = u64::from(core) * (per_core as u64 / 512);
                for round in 0..per_core / (chunk * bufs.len()) {
                    for (i, b) in bufs.iter_mut().enumerate() {
                        let lba = base + ((round * 8 + i) * chunk / 512) as u64;
                        fill(b, lba);
                        h.submit(Request::write(b, lba)).unwrap();
                    }
                    h.drain().unwrap();
                    assert!(collect(&mut h, 8).iter().all(|c| c.result.is_ok()));
                }
                for round in 0..per_core / (chunk * bufs.len()) {
                    for (i, b) in bufs.iter().enumerate() {
                        let lba = base + ((round * 8 + i) * chunk / 512) as u64;
                        h.submit(Request::read(b, lba)).unwrap();
                    }
                    h.drain().unwrap();
                    assert!(collect(&mut h, 8).iter().all(|c| c.result.is_ok()));
                    for (i, b) in bufs.iter().enumerate() {
                        let lba = base + ((round * 8 + i) * chunk / 512) as u64;
                        assert!(check(b, lba), "core {core} lba {lba}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// The C API keeps its device in a global: tests that use it run one at a time.
pub(super) static FFI_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn c_abi() {
    use nvmedl::ffi::*;
    let _g = FFI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (_ip, dev) = board(HDU_REV2, 1);
    nvmedl_admin_init_with(dev);
    assert_eq!(nvmedl_admin_init(), 0);
    assert_eq!(nvmedl_cores(), 4);
    assert!(nvmedl_capacity_lbas() > 0);
    let h = nvmedl_create_handle(3);
    assert!(!h.is_null());
    assert!(nvmedl_create_handle(3).is_null());
    assert_eq!(nvmedl_errno(), Error::Busy.code());
    assert!(nvmedl_create_handle(-1).is_null());
    // SAFETY: `h` is a live handle from `nvmedl_create_handle`; the keys are C strings.
    unsafe {
        assert_eq!(nvmedl_set_handle(h, c"iodepth".as_ptr(), 16), 0);
        assert_eq!(nvmedl_set_handle(h, c"priority".as_ptr(), 0), 0);
        assert_eq!(nvmedl_set_handle(h, c"yield".as_ptr(), 64), 0);
        assert_eq!(nvmedl_set_handle(h, c"bogus".as_ptr(), 0), Error::InvalidArgument.code());
        assert_eq!(nvmedl_handle_revision(h), 2);
        let buf = nvmedl_buf_alloc(h, 4096 * 4);
        assert!(!buf.is_null());
        let p = buf.cast::<u8>();
        for i in 0..4096 * 4 {
            *p.add(i) = (i % 251) as u8;
        }
        for k in 0..4u32 {
            assert!(nvmedl_write_async(h, buf.cast::<u8>().add(4096 * k as usize).cast(), 8 * u64::from(k), 4096) >= 0);
        }
        assert_eq!(nvmedl_wait(h), 4);
        std::ptr::write_bytes(p, 0, 4096 * 4);
        for k in 0..4u32 {
            assert!(nvmedl_read_async(h, buf.cast::<u8>().add(4096 * k as usize).cast(), 8 * u64::from(k), 4096) >= 0);
        }
        let mut n = 0;
        let t0 = std::time::Instant::now();
        while n < 4 {
            let r = nvmedl_poll(h);
            assert!(r >= 0);
            n += r;
            assert!(t0.elapsed() < Duration::from_secs(10));
        }
        assert!((0..4096 * 4).all(|i| *p.add(i) == (i % 251) as u8));
        assert_eq!(nvmedl_write(h, buf, 0, 4096), 0);
        assert_eq!(nvmedl_read(h, buf, 0, 4096), 0);
        assert_eq!(nvmedl_read(h, buf, 3, 4096), Error::Misaligned.code());
        assert_eq!(nvmedl_read(h, buf, 0, 0), Error::BadLength.code());
        let mut local = [0u8; 8192];
        assert_eq!(nvmedl_read(h, local.as_mut_ptr().cast(), 0, 4096), Error::NotFromSlice.code());
        assert_eq!(nvmedl_read_async(std::ptr::null_mut(), buf, 0, 4096), i64::from(Error::InvalidArgument.code()));
        assert_eq!(nvmedl_flush(h), 0);
        let mut out = [NvmedlCompletion::default(); 4];
        assert_eq!(nvmedl_poll_completions(h, out.as_mut_ptr(), 4), 0);
        assert_eq!(nvmedl_buf_free(h, buf), 0);
        assert_eq!(nvmedl_buf_free(h, buf), Error::NotFromSlice.code());
        assert!(!std::ffi::CStr::from_ptr(nvmedl_strerror(Error::Timeout.code())).to_bytes().is_empty());
        nvmedl_destroy_handle(h);
        nvmedl_destroy_handle(std::ptr::null_mut());
    }
    nvmedl_admin_fini();
}

/// A backend that panics when a core is opened (everything else is the in-process model).
struct PanickingPlatform(Arc<InProc>);

impl nvmedl::platform::Platform for PanickingPlatform {
    fn info(&self) -> Result<DnvmInfo> {
        self.0.info()
    }
    fn layout(&self) -> Result<DnvmLayout> {
        self.0.layout()
    }
    fn open_core(&self, _core: u32) -> Result<Box<dyn nvmedl::platform::CoreMapping>> {
        panic!("test: panic inside open_core")
    }
    fn hdu_info(&self, core: u32) -> Result<HduInfo> {
        self.0.hdu_info(core)
    }
    fn reset_hdu(&self, core: u32) -> Result<()> {
        self.0.reset_hdu(core)
    }
    fn set_arbitration(&self, a: DnvmArbitration) -> Result<()> {
        self.0.set_arbitration(a)
    }
    fn controller_init(&self) -> Result<()> {
        self.0.controller_init()
    }
}

#[test]
fn panic_in_c_entry_point_becomes_an_error_code() {
    use nvmedl::ffi::*;
    let _g = FFI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (ip, _dev) = board(HDU_REV1, 1);
    let dev = Device::from_platform(Arc::new(PanickingPlatform(ip))).unwrap();
    nvmedl_admin_init_with(dev);
    // nvmedl_create_handle -> Device::handle_with -> Platform::open_core panics: the C caller
    // gets NULL and the internal-error code, and the process goes on.
    let h = nvmedl_create_handle(0);
    assert!(h.is_null());
    assert_eq!(nvmedl_errno(), Error::Internal.code());
    // The library still works afterwards (the global device lock is not poisoned).
    assert_eq!(nvmedl_cores(), 4);
    nvmedl_admin_fini();
    assert_eq!(nvmedl_cores(), Error::NotReady.code());
}
