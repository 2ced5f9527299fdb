// SPDX-License-Identifier: MIT OR Apache-2.0
//! Completion paths: early completion from status words (rev 2), DONE-only completion (rev 1),
//! the START queue, sync calls that gave up, reset of timed-out writes, tagged C submission.

use crate::handle::*;
use directnvm_abi::*;
use fakehdu::faults::IoFault;
use fakehdu::ControlOp;
use nvmedl::*;
use nvmedl_inproc::InProc;
use std::time::Duration;

/// DONE register of HDU `hdu` as the model holds it.
pub(super) fn done_reg(ip: &InProc, hdu: usize) -> u64 {
    let user = ip.model().board().hdus[hdu].user;
    ip.model().mem().load64(user + HDU_REG_DONE as u64).unwrap()
}

/// A rev 2 request can complete (early) before its batch's DONE: wait for that DONE and let
/// the handle see it, so a fault injected next hits the next batch only.
pub(super) fn settle(ip: &InProc, h: &mut Handle) {
    let t0 = std::time::Instant::now();
    while done_reg(ip, h.core() as usize) & HDU_DONE_BIT == 0 {
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::yield_now();
    }
    h.kick();
}

#[test]
fn rev2_completes_requests_from_status_words_before_done() {
    for sq in [0, 1] {
        early_completion(sq);
    }
}

fn early_completion(sq: u32) {
    let (ip, dev) = board_with(HDU_REV2, 1, sq);
    let mut h = dev.handle_with(0, HandleOptions { timeout: Duration::from_secs(10), ..opts() }).unwrap();
    let mut a = h.buf_alloc(4096).unwrap();
    let mut b = h.buf_alloc(8192).unwrap();
    let c = h.buf_alloc(4096).unwrap();
    fill(&mut a, 0);
    h.write(&a, 0).unwrap();
    settle(&ip, &mut h);
    // The model finishes every entry (status words written) but holds DONE back.
    ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
    ip.control(ControlOp::IoError(IoFault { lba_start: 800, lba_end: 808, opcode: None, status: 0x281, remaining: Some(1) })).unwrap();
    h.set_batch(3).unwrap();
    let (batches0, early0) = (h.stats().batches, h.stats().early);
    a.as_mut_slice().fill(0);
    fill(&mut b, 64);
    let ta = h.submit(Request::read(&a, 0)).unwrap();
    let tb = h.submit(Request::write(&b, 64)).unwrap();
    let tc = h.submit(Request::read(&c, 800)).unwrap();
    assert_eq!(h.stats().batches, batches0 + 1, "the three requests form one batch");
    let got = collect(&mut h, 3);
    assert_eq!(done_reg(&ip, 0) & HDU_DONE_BIT, 0, "completions arrived while DONE is still 0");
    let by_tag = |t: u64| got.iter().find(|c| c.tag == t).unwrap().result;
    assert_eq!(by_tag(ta), Ok(()));
    assert_eq!(by_tag(tb), Ok(()));
    assert_eq!(by_tag(tc), Err(Error::Nvme { status: 0x281 }));
    assert!(check(&a, 0), "read data visible at early completion");
    assert_eq!(h.stats().early, early0 + 3);
    assert_eq!(h.pending(), 0);
    // Without a START queue one batch is in flight per HDU: a new request waits in level 1
    // until DONE (still held). With one, it is started behind the held batch (and runs once
    // the device lets go of it).
    h.set_batch(1).unwrap();
    a.as_mut_slice().fill(0);
    let td = h.submit(Request::read(&a, 64)).unwrap();
    let t0 = std::time::Instant::now();
    let mut out = empty();
    while t0.elapsed() < Duration::from_millis(50) {
        assert_eq!(h.poll(&mut out), 0, "start_queue {sq}: nothing completes while DONE is held");
    }
    assert_eq!(h.stats().batches, batches0 + 1 + u64::from(sq), "start_queue {sq}");
    assert_eq!(h.stats().queued, u64::from(sq));
    ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
    let got = collect(&mut h, 1);
    assert_eq!(got[0], Completion { tag: td, result: Ok(()) });
    assert_eq!(h.stats().batches, batches0 + 2);
    // `a` now holds the first page written from `b` at LBA 64.
    assert!(a.as_slice() == &b.as_slice()[..4096]);
    assert_eq!(h.stats().errors, 1);
}

#[test]
fn rev1_completes_only_at_done() {
    let (ip, dev) = board(HDU_REV1, 1);
    let mut h = dev.handle_with(0, HandleOptions { timeout: Duration::from_secs(10), ..opts() }).unwrap();
    let b = h.buf_alloc(4096).unwrap();
    ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
    let t = h.submit(Request::read(&b, 0)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut out = empty();
    assert_eq!(h.poll(&mut out), 0, "rev 1 has no status words: nothing completes before DONE");
    ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
    assert_eq!(collect(&mut h, 1)[0], Completion { tag: t, result: Ok(()) });
    assert_eq!(h.stats().early, 0);
}

/// Rev 2 START queue: with requests kept outstanding, a second batch is started while one
/// runs (`stats.queued`), and every block still verifies.
#[test]
fn start_queue_overlaps_batches_and_data_verifies() {
    let (ip, dev) = wallclock_board();
    let qd = 32usize;
    let mut h = dev.handle_with(0, HandleOptions { capacity: 2 * qd, iodepth: qd, ..opts() }).unwrap();
    let mut bufs: Vec<Buffer> = (0..qd).map(|_| h.buf_alloc(4096).unwrap()).collect();
    let blocks = 512u64;
    // Whether a START lands behind a running batch depends on timing (a loaded host can finish
    // every batch before the next START); up to 5 rounds, each still verifying every block.
    for _round in 0..5 {
        for write in [true, false] {
            let mut next = 0u64;
            let mut done = 0u64;
            let mut busy = vec![None::<u64>; qd];
            let mut out = empty();
            let t0 = std::time::Instant::now();
            while done < blocks {
                for (i, slot) in busy.iter_mut().enumerate() {
                    if slot.is_none() && next < blocks {
                        let lba = next * 8;
                        let b = &mut bufs[i];
                        if write {
                            fill(b, lba);
                        } else {
                            b.as_mut_slice().fill(0);
                        }
                        let r = if write { Request::write(b, lba) } else { Request::read(b, lba) };
                        h.submit(r.tag(i as u64)).unwrap();
                        *slot = Some(lba);
                        next += 1;
                    }
                }
                let n = h.poll(&mut out);
                for c in &out[..n] {
                    assert_eq!(c.result, Ok(()));
                    let i = c.tag as usize;
                    let lba = busy[i].take().unwrap();
                    if !write {
                        assert!(check(&bufs[i], lba), "block at LBA {lba}");
                    }
                    done += 1;
                }
                assert!(t0.elapsed() < Duration::from_secs(20), "{done} of {blocks} blocks");
            }
        }
        if h.stats().queued > 0 {
            break;
        }
    }
    let s = h.stats();
    assert!(s.queued > 0, "no batch was started behind a running one: {s:?}");
    // The library counts a START it issues behind a running batch; the device counts it as
    // queued only if that batch was still running when it took the START (it may have ended
    // in between), never more.
    let dq = ip.model().stats().hdus[0].queued_starts;
    assert!(dq <= s.queued, "the device queued {dq} STARTs, the library issued {} behind a batch", s.queued);
    assert_eq!(ip.model().stats().hdus[0].dropped_starts, 0, "no START was lost");
}

/// With the START queue a sync request can sit behind two batches whose clocks each restart
/// at retire, so `sync` gives up after 2x timeout although no batch timed out (no wedge). Its
/// late completion must not become the next sync call's result (found in review).
#[test]
fn sync_that_gave_up_does_not_answer_the_next_sync_call() {
    let (ip, dev) = wallclock_board();
    // The margins are fractions of T (a batch takes 0.85 T and must end within T; three must
    // outlast 2 T): T = 1 s keeps them above the scheduling delays of a loaded 2-core host, where
    // 200 ms once let a 0.85 T batch run past T (a wedge the test did not ask for).
    let t = Duration::from_millis(1000);
    let mut h = dev.handle_with(0, HandleOptions { timeout: t, ..opts() }).unwrap();
    let big = 2 << 20;
    let a = h.buf_alloc(big).unwrap();
    let b = h.buf_alloc(big).unwrap();
    let cbuf = h.buf_alloc(big).unwrap();
    let mut d = h.buf_alloc(4096).unwrap();
    fill(&mut d, 1 << 16);
    h.write(&d, 1 << 16).unwrap();
    d.as_mut_slice().fill(0);
    settle(&ip, &mut h);
    // Each 2 MiB read now takes ~0.85 T of channel time; the device pipelines the batches.
    ip.control(ControlOp::Slow { permille: 1_335_000 }).unwrap();
    h.submit(Request::read(&a, 0)).unwrap();
    h.submit(Request::read(&b, 4096)).unwrap();
    let t0 = std::time::Instant::now();
    while h.stats().queued == 0 {
        h.kick();
        assert!(
            t0.elapsed() < t,
            "{:?} batch_max {} entry_bytes {} done {:x}",
            h.stats(),
            h.batch_max(),
            h.entry_bytes(),
            done_reg(&ip, 0)
        );
    }
    let r = h.read(&cbuf, 8192);
    assert_eq!(r, Err(Error::Timeout));
    assert!(!h.is_wedged(), "nothing timed out as far as the handle is concerned");
    // The next sync call: a 4 KiB read that must fill `d`.
    let r = h.read(&d, 1 << 16);
    assert_eq!(r, Ok(()));
    assert!(check(&d, 1 << 16), "sync read returned Ok but the data has not landed (C's stale result)");
}

/// A write queued behind a held batch fails with Timeout, but it was handed to the device:
/// its outcome is unknown until the HDU is reset. After `reset()` it can no longer run (its
/// entries are ABORTED), so the buffer may be reused safely (docs/libnvmedl.md, "Timeouts").
#[test]
fn timed_out_queued_write_cannot_run_after_reset() {
    let (ip, dev) = board_with(HDU_REV2, 1, 1);
    let mut h = dev.handle_with(0, HandleOptions { timeout: Duration::from_millis(200), ..opts() }).unwrap();
    let mut b = h.buf_alloc(4096).unwrap();
    b.as_mut_slice().fill(0x11);
    h.write(&b, 4096).unwrap();
    settle(&ip, &mut h);
    ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
    h.read(&b, 0).unwrap(); // completes early from its status word; DONE is held
    b.as_mut_slice().fill(0x22);
    assert_eq!(h.write(&b, 4096), Err(Error::Timeout), "write queued behind the held batch");
    assert!(h.is_wedged());
    h.reset().unwrap();
    b.as_mut_slice().fill(0x33); // the application reuses its buffer
    ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
    let r = h.buf_alloc(4096).unwrap();
    h.read(&r, 4096).unwrap();
    assert!(r.as_slice().iter().all(|&x| x == 0x11), "LBA 4096 changed after reset by a write that failed: {:#x}", r.as_slice()[0]);
}

/// The C ABI additions of the fio engine: scheduler at claim time, handle properties, tagged
/// non-blocking submission with a per-request urgency, and the doorbell.
#[test]
fn c_abi_tagged_submission() {
    use nvmedl::ffi::*;
    let _g = FFI_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (_ip, dev) = board(HDU_REV2, 4);
    nvmedl_admin_init_with(dev);
    // SAFETY: the handle `h` is live from its creation to `nvmedl_destroy_handle`; the keys are C
    // strings; `buf` is an allocation of `h` of 4 pages.
    unsafe {
        assert!(nvmedl_create_handle_with(1, c"bogus".as_ptr()).is_null());
        assert_eq!(nvmedl_errno(), Error::InvalidArgument.code());
        let h = nvmedl_create_handle_with(1, c"priority".as_ptr());
        assert!(!h.is_null());
        assert!(nvmedl_create_handle_with(1, std::ptr::null()).is_null());
        assert_eq!(nvmedl_errno(), Error::Busy.code());
        assert_eq!(nvmedl_get_handle(h, c"core".as_ptr()), 1);
        assert_eq!(nvmedl_get_handle(h, c"revision".as_ptr()), 2);
        assert_eq!(nvmedl_get_handle(h, c"engines".as_ptr()), 4);
        assert!(nvmedl_get_handle(h, c"max_request".as_ptr()) >= 4096);
        assert_eq!(nvmedl_get_handle(h, c"capacity_lbas".as_ptr()) as u64, nvmedl_capacity_lbas());
        let size = nvmedl_get_handle(h, c"data_size".as_ptr());
        assert_eq!(nvmedl_get_handle(h, c"data_free".as_ptr()), size);
        assert_eq!(nvmedl_get_handle(h, c"bogus".as_ptr()), i64::from(Error::InvalidArgument.code()));
        assert_eq!(nvmedl_set_handle(h, c"batch".as_ptr(), 4), 0);
        assert_eq!(nvmedl_set_handle(h, c"iodepth".as_ptr(), 4), 0);
        let buf = nvmedl_buf_alloc(h, 4096 * 4).cast::<u8>();
        assert!(!buf.is_null());
        assert_eq!(nvmedl_get_handle(h, c"data_free".as_ptr()), size - 4096 * 4);
        for k in 0..4usize {
            std::ptr::write_bytes(buf.add(4096 * k), k as u8 + 1, 4096);
        }
        // Tags are the caller's; priorities -1 (the handle's) and 0..3; 5 is refused.
        for k in 0..4u64 {
            let prio = if k == 0 { -1 } else { k as i32 };
            let b = buf.add(4096 * k as usize).cast();
            assert_eq!(nvmedl_submit_tagged(h, NVMEDL_OP_WRITE, b, 8 * k, 4096, prio, 0xdead_0000 + k), 0);
        }
        // Queue full at once (iodepth 4), not a wait.
        assert_eq!(nvmedl_submit_tagged(h, NVMEDL_OP_WRITE, buf.cast(), 0, 4096, 0, 9), Error::QueueFull.code());
        assert_eq!(nvmedl_submit_tagged(h, 7, buf.cast(), 0, 4096, 0, 9), Error::InvalidArgument.code());
        assert_eq!(nvmedl_kick(h), 0);
        let mut out = [NvmedlCompletion::default(); 4];
        let mut tags = Vec::new();
        let t0 = std::time::Instant::now();
        while tags.len() < 4 {
            let n = nvmedl_poll_completions(h, out.as_mut_ptr(), 4);
            assert!(n >= 0);
            for c in &out[..n as usize] {
                assert_eq!(c.result, 0);
                tags.push(c.tag);
            }
            assert!(t0.elapsed() < Duration::from_secs(10));
        }
        tags.sort_unstable();
        assert_eq!(tags, (0..4).map(|k| 0xdead_0000 + k).collect::<Vec<_>>());
        std::ptr::write_bytes(buf, 0, 4096 * 4);
        for k in 0..4u64 {
            let b = buf.add(4096 * k as usize).cast();
            assert_eq!(nvmedl_submit_tagged(h, NVMEDL_OP_READ, b, 8 * k, 4096, 5, k), Error::InvalidArgument.code());
            assert_eq!(nvmedl_submit_tagged(h, NVMEDL_OP_READ, b, 8 * k, 4096, 3, k), 0);
        }
        assert_eq!(nvmedl_wait(h), 4);
        for k in 0..4usize {
            assert!(std::slice::from_raw_parts(buf.add(4096 * k), 4096).iter().all(|&x| x == k as u8 + 1));
        }
        nvmedl_destroy_handle(h);
    }
    nvmedl_admin_fini();
}

/// `batch: 64` and 64 submits start exactly one hardware batch (the guest's kill-mid-batch case
/// relies on one long batch being in flight).
#[test]
fn batch_threshold_makes_one_batch_of_64() {
    let (_ip, dev) = board_with(HDU_REV2, 1, 0);
    let mut h = dev.handle_with(0, HandleOptions { batch: 64, timeout: Duration::from_secs(10), ..opts() }).unwrap();
    let bufs: Vec<_> = (0..64).map(|_| h.buf_alloc(4096).unwrap()).collect();
    let b0 = h.stats().batches;
    for (i, b) in bufs.iter().enumerate() {
        h.submit(Request::read(b, i as u64 * 8)).unwrap();
    }
    h.kick();
    assert_eq!(h.stats().batches, b0 + 1);
}
