// SPDX-License-Identifier: MIT OR Apache-2.0
//! The C ABI's documented contract: key ranges of `nvmedl_set_handle`,
//! `nvmedl_buf_alloc(0)`, buffer bounds of the pointer calls, and one recovery call after a
//! timeout that works on both revisions. Runs on the in-process board (no global device).

use std::ffi::{c_int, c_void};
use std::time::Duration;

use directnvm_abi::*;
use fakehdu::ControlOp;

use nvmedl::ffi::*;
use nvmedl::*;
use nvmedl_inproc::{InProc, InProcConfig};

fn c_handle(rev: u32, timeout: Duration) -> (std::sync::Arc<InProc>, Box<NvmedlHandle>) {
    let ip = InProc::start(InProcConfig::new(rev)).expect("in-process board");
    let dev = Device::from_platform(ip.clone()).expect("device");
    let h = dev.handle_with(0, HandleOptions { timeout, yield_spins: 64, ..HandleOptions::default() }).expect("handle");
    (ip, Box::new(NvmedlHandle::new(h, 64)))
}

fn set(h: &mut NvmedlHandle, key: &std::ffi::CStr, v: u64) -> c_int {
    // SAFETY: a live handle and a NUL-terminated key.
    unsafe { nvmedl_set_handle(h, key.as_ptr(), v) }
}

#[test]
fn priority_constants_are_the_abi_urgency_classes() {
    assert_eq!(NVMEDL_PRIO_URGENT, u64::from(DNVM_URGENCY_URGENT));
    assert_eq!(NVMEDL_PRIO_HIGH, u64::from(DNVM_URGENCY_HIGH));
    assert_eq!(NVMEDL_PRIO_MEDIUM, u64::from(DNVM_URGENCY_MEDIUM));
    assert_eq!(NVMEDL_PRIO_LOW, u64::from(DNVM_URGENCY_LOW));
    assert_eq!(NVMEDL_PRIO_LOW + 1, u64::from(DNVM_URGENCY_CLASSES));
}

#[test]
fn set_handle_keys_accept_their_documented_range_and_nothing_else() {
    let (_ip, mut h) = c_handle(HDU_REV2, Duration::from_secs(5));
    let bad = Error::InvalidArgument.code();
    for p in [NVMEDL_PRIO_URGENT, NVMEDL_PRIO_HIGH, NVMEDL_PRIO_MEDIUM, NVMEDL_PRIO_LOW] {
        assert_eq!(set(&mut h, c"priority", p), 0, "priority {p}");
    }
    assert_eq!(set(&mut h, c"priority", NVMEDL_PRIO_LOW + 1), bad);
    assert_eq!(set(&mut h, c"timeout_us", 0), bad, "a zero timeout is refused");
    assert_eq!(set(&mut h, c"timeout_us", NVMEDL_TIMEOUT_US_MAX + 1), bad);
    assert_eq!(set(&mut h, c"timeout_us", 1), 0);
    assert_eq!(set(&mut h, c"timeout_us", NVMEDL_TIMEOUT_US_MAX), 0);
    assert_eq!(set(&mut h, c"yield", u64::from(u32::MAX)), 0);
    assert_eq!(set(&mut h, c"yield", u64::from(u32::MAX) + 1), bad, "not silently clamped");
    assert_eq!(set(&mut h, c"iodepth", 0), bad);
    assert_eq!(set(&mut h, c"iodepth", 1), 0);
    assert_eq!(set(&mut h, c"batch", 0), bad);
    assert_eq!(set(&mut h, c"no-such-key", 1), bad);
    // SAFETY: a NULL key is refused before it is read.
    assert_eq!(unsafe { nvmedl_set_handle(&mut *h, std::ptr::null(), 1) }, bad);
}

#[test]
fn buf_alloc_zero_is_null_with_bad_length() {
    let (_ip, mut h) = c_handle(HDU_REV2, Duration::from_secs(5));
    // SAFETY: a live handle.
    let p = unsafe { nvmedl_buf_alloc(&mut *h, 0) };
    assert!(p.is_null());
    assert_eq!(nvmedl_errno(), Error::BadLength.code());
}

#[test]
fn pointer_calls_stay_inside_their_allocation() {
    let (_ip, mut h) = c_handle(HDU_REV2, Duration::from_secs(5));
    let hp: *mut NvmedlHandle = &mut *h;
    // SAFETY: `hp` is a live handle; every pointer passed comes from it or is
    // refused by address before any access.
    unsafe {
        let a = nvmedl_buf_alloc(hp, 4096).cast::<u8>();
        let b = nvmedl_buf_alloc(hp, 4096).cast::<u8>();
        let big = nvmedl_buf_alloc(hp, 4 * 4096).cast::<u8>();
        assert!(!a.is_null() && !b.is_null() && !big.is_null());
        b.write_bytes(0x5a, 4096);
        assert_eq!(nvmedl_write(hp, b.cast(), 0, 4096), 0);
        // 8 KiB into a 4 KiB allocation would overwrite the next one: refused, nothing moved.
        assert_eq!(nvmedl_read(hp, a.cast(), 0, 8192), Error::BadLength.code());
        assert!(std::slice::from_raw_parts(b, 4096).iter().all(|&x| x == 0x5a), "the neighbour was overwritten");
        // Any page of an allocation may start a request, up to the allocation's end.
        assert_eq!(nvmedl_read(hp, big.add(4096).cast(), 0, 3 * 4096), 0);
        assert_eq!(nvmedl_read(hp, big.add(4096).cast(), 0, 4 * 4096), Error::BadLength.code());
        // Freed or never allocated memory of the slice is refused.
        assert_eq!(nvmedl_buf_free(hp, a.cast()), 0);
        assert_eq!(nvmedl_read(hp, a.cast(), 0, 4096), Error::NotFromSlice.code());
        let beyond = big.add(8 * 4096).cast::<c_void>();
        assert_eq!(nvmedl_read_async(hp, beyond, 0, 4096), i64::from(Error::NotFromSlice.code()));
    }
}

/// One call recovers after a timeout on both revisions: rev 2 resets the engine; rev 1 waits
/// for the late DONE (and says Timeout while the batch is still inside the device).
#[test]
fn reset_handle_recovers_on_both_revisions() {
    for rev in [HDU_REV1, HDU_REV2] {
        let (ip, mut h) = c_handle(rev, Duration::from_millis(100));
        let hp: *mut NvmedlHandle = &mut *h;
        // SAFETY: `hp` is a live handle; buffers come from it.
        unsafe {
            let a = nvmedl_buf_alloc(hp, 4096);
            let b = nvmedl_buf_alloc(hp, 4096);
            assert_eq!(nvmedl_read(hp, a, 0, 4096), 0);
            ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
            if rev == HDU_REV2 {
                // The entry's status word completes the read early; the next one times out.
                assert_eq!(nvmedl_read(hp, a, 0, 4096), 0);
            }
            assert_eq!(nvmedl_read(hp, b, 8, 4096), Error::Timeout.code(), "rev {rev}");
            assert_eq!(nvmedl_read(hp, b, 8, 4096), Error::NotReady.code(), "rev {rev}: wedged");
            if rev == HDU_REV1 {
                assert_eq!(nvmedl_reset_handle(hp), Error::Timeout.code(), "rev 1: batch still in the device");
                ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
            }
            assert_eq!(nvmedl_reset_handle(hp), 0, "rev {rev}");
            ip.control(ControlOp::ClearFaults).unwrap();
            assert_eq!(nvmedl_read(hp, b, 8, 4096), 0, "rev {rev}: usable again");
        }
    }
}

/// Rev 1: once the device finished the timed-out batch, the next call recovers by itself.
#[test]
fn rev1_calls_recover_by_themselves_after_the_late_done() {
    let (ip, mut h) = c_handle(HDU_REV1, Duration::from_millis(100));
    let hp: *mut NvmedlHandle = &mut *h;
    // SAFETY: `hp` is a live handle; buffers come from it.
    unsafe {
        let a = nvmedl_buf_alloc(hp, 4096);
        ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
        assert_eq!(nvmedl_read(hp, a, 0, 4096), Error::Timeout.code());
        ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
        let mut r = Error::NotReady.code();
        for _ in 0..10_000 {
            r = nvmedl_read(hp, a, 0, 4096);
            if r != Error::NotReady.code() {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        assert_eq!(r, 0);
    }
}

fn caps_of(c: InProcConfig) -> Vec<c_int> {
    let ip = InProc::start(c).expect("in-process board");
    let dev = Device::from_platform(ip.clone()).expect("device");
    let mut h = NvmedlHandle::new(dev.handle(0).expect("handle"), 64);
    let all = [NVMEDL_CAP_STATUS, NVMEDL_CAP_FLUSH, NVMEDL_CAP_RESET, NVMEDL_CAP_URGENCY, NVMEDL_CAP_START_QUEUE];
    // SAFETY: a live handle.
    all.iter().map(|&c| unsafe { nvmedl_handle_has(&mut h, c) }).collect()
}

#[test]
fn handle_has_names_what_each_revision_can_do() {
    assert_eq!(caps_of(InProcConfig::new(HDU_REV1)), [0, 0, 0, 0, 0]);
    let rev2 = InProcConfig { engines: 4, ..InProcConfig::new(HDU_REV2) };
    assert_eq!(caps_of(rev2), [1, 1, 1, 1, 1]);
    let one_engine = InProcConfig { engines: 1, start_queue: 0, ..InProcConfig::new(HDU_REV2) };
    assert_eq!(caps_of(one_engine), [1, 1, 1, 0, 0]);
    let (_ip, mut h) = c_handle(HDU_REV2, Duration::from_secs(5));
    let bad = Error::InvalidArgument.code();
    // SAFETY: a live handle (unknown capabilities are refused), then NULL.
    unsafe {
        assert_eq!((nvmedl_handle_has(&mut *h, 0), nvmedl_handle_has(&mut *h, NVMEDL_CAP_START_QUEUE + 1)), (bad, bad));
        assert_eq!(nvmedl_handle_has(std::ptr::null_mut(), NVMEDL_CAP_FLUSH), bad);
    }
}

#[test]
fn strerror_has_the_wording_of_the_rust_errors() {
    for e in [Error::Timeout, Error::NotReady, Error::BadLength, Error::Revision, Error::Os(libc::EBUSY)] {
        // SAFETY: a static NUL-terminated string.
        let c = unsafe { std::ffi::CStr::from_ptr(nvmedl_strerror(e.code())) };
        let want = if let Error::Os(_) = e { Error::describe_code(e.code()).to_string() } else { e.to_string() };
        assert_eq!(c.to_str().unwrap(), want);
    }
}
