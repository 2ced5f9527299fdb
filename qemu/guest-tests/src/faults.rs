// SPDX-License-Identifier: MIT OR Apache-2.0
//! Fault injection through the fake device's test mailbox (`TESTDEV_*`, reached through
//! /dev/mem; docs/design.md "Test hooks"). One case per fault class; each fails if the library
//! reports success for a command the device failed (where the revision can tell) or if any
//! wait is not bounded. Rev 1 has no status path: there the cases assert what is observable
//! (the pattern check catches the bad data, the model's counters show the fault fired).
//!
//! Classes: NVMe error status on an LBA (read and write), stuck engine (timeout, reset on
//! rev 2, reuse), dropped START, device outage (the model stops servicing, then resumes),
//! device restart (the model power-cycles itself: registers, queues and commands in flight
//! lost, data kept; software brings it up again), DMA window fault (rev 2).

use std::time::{Duration, Instant};

use directnvm_abi::*;
use nvmedl::{Completion, Error, Handle, Request};

use crate::fixtures::data;
use crate::fixtures::data::{dev, handle, read_check, verify, write_gen, write_read, BLOCK, BLOCK_LBAS};
use crate::fixtures::mailbox::Mailbox;
use crate::summary::{self, FAULTS_INJECTED, FAULTS_SURVIVED, IOS_VERIFIED};
use crate::tap::{check, eq, Case, Tap};

/// LBA range of the fault cases (below the soak area, away from other groups' ranges).
fn area(h: &Handle, core: u32) -> u64 {
    let cap = h.capacity_lbas();
    data::scratch(cap) + u64::from(core) * 0x1000
}

/// Wait (bounded) until the handle is not wedged any more, polling it.
fn unwedge(h: &mut Handle, within: Duration) -> Case {
    let t0 = Instant::now();
    let mut out = [Completion { tag: 0, result: Ok(()) }; 8];
    while h.is_wedged() {
        h.poll(&mut out);
        if t0.elapsed() > within {
            return Err(format!("handle still wedged {within:?} after the fault was removed"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Wait (bounded) until sysfs `state` of hdu`core` is one of `want`.
fn wait_state(core: u32, want: &[&str], within: Duration) -> Case {
    let p = format!("/sys/class/misc/hdu{core}/state");
    let rd = || std::fs::read_to_string(&p).map(|s| s.trim().to_string()).unwrap_or_default();
    let t0 = Instant::now();
    while !want.contains(&rd().as_str()) {
        if t0.elapsed() > within {
            return Err(format!("hdu{core} state {} after {within:?}, want {want:?}", rd()));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Rev 2 reset, then wait until the engine really went through it. HDU_IOC_RESET can return
/// before the device saw the CTRL write (hdu.ko polls PSTATUS.RESETTING, which the device sets
/// only once it noticed the reset; see the report), and a START in that window is dropped.
fn reset_and_settle(h: &mut Handle, core: u32) -> Case {
    h.reset().map_err(|e| format!("reset: {e}"))?;
    wait_state(core, &["idle"], Duration::from_secs(3))
}

/// Collect `n` completions (bounded by `within`), indexed by tag.
fn collect(h: &mut Handle, n: usize, within: Duration) -> Result<Vec<Option<Result<(), Error>>>, String> {
    let mut res = vec![None; n];
    let mut got = 0;
    let mut out = [Completion { tag: 0, result: Ok(()) }; 16];
    let t0 = Instant::now();
    while got < n {
        let k = h.poll(&mut out);
        for c in &out[..k] {
            let slot = res.get_mut(c.tag as usize).ok_or(format!("unexpected tag {}", c.tag))?;
            *slot = Some(c.result);
            got += 1;
        }
        if t0.elapsed() > within {
            return Err(format!("only {got} of {n} completions within {within:?} (library hung?)"));
        }
    }
    Ok(res)
}

/// NVMe error status on one LBA: a read and a write batch of 8 one-block requests, one of them
/// hitting the fault.
fn io_error(mb: &Mailbox) -> Case {
    let d = dev()?;
    let core = 0;
    let mut h = handle(&d, core, Duration::from_secs(5))?;
    let rev = h.revision();
    let base = area(&h, core);
    let lba = |i: usize| base + i as u64 * BLOCK_LBAS;
    let mut bufs: Vec<_> = (0..8).map(|_| h.buf_alloc(BLOCK)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    for (i, b) in bufs.iter_mut().enumerate() {
        write_gen(&mut h, b, lba(i), 1)?;
    }
    const STATUS: u64 = 0x4281; // DNR | SCT 2 (media) | SC 0x81 (unrecovered read error)
    let errs0 = mb.stats(core)?[TESTDEV_STAT_IO_ERRORS];

    // Reads: block 3 fails.
    mb.fault(TESTDEV_FAULT_IO_ERROR, &[lba(3), lba(3) + BLOCK_LBAS, STATUS, 0x02, 1])?;
    for (i, b) in bufs.iter_mut().enumerate() {
        b.as_mut_slice().fill(0xa5);
        h.submit(Request::read(b, lba(i)).tag(i as u64)).map_err(|e| format!("submit read {i}: {e}"))?;
    }
    h.kick();
    let res = collect(&mut h, 8, Duration::from_secs(10))?;
    eq(mb.stats(core)?[TESTDEV_STAT_IO_ERRORS], errs0 + 1, "model's NVMe I/O error count after the read fault")?;
    for (i, r) in res.iter().enumerate() {
        let r = r.ok_or("missing completion")?;
        if i == 3 {
            if rev.has_status() {
                eq(r, Err(Error::Nvme { status: STATUS as u16 }), "faulted read (rev 2 must report the NVMe status)")?;
            } else {
                // Rev 1 (documented): no status path, the library reports success; the data
                // did not move, which the pattern check sees.
                eq(r, Ok(()), "faulted read on rev 1 (no status path)")?;
                check(data::compare(bufs[i].as_slice(), lba(i), &[1]).is_err(), "rev 1: the faulted read moved data")?;
            }
        } else {
            r.map_err(|e| format!("read {i} beside the faulted one failed: {e}"))?;
            verify(bufs[i].as_slice(), lba(i), &[1]).map_err(|e| format!("read {i}: {e}"))?;
            summary::add(&IOS_VERIFIED, 1);
        }
    }

    // Writes (generation 2): block 5 fails and keeps generation 1.
    mb.fault(TESTDEV_FAULT_IO_ERROR, &[lba(5), lba(5) + BLOCK_LBAS, STATUS & !0xff | 0x80, 0x01, 1])?;
    for (i, b) in bufs.iter_mut().enumerate() {
        data::fill(b.as_mut_slice(), lba(i), &[2]);
        h.submit(Request::write(b, lba(i)).tag(i as u64)).map_err(|e| format!("submit write {i}: {e}"))?;
    }
    h.kick();
    let res = collect(&mut h, 8, Duration::from_secs(10))?;
    eq(mb.stats(core)?[TESTDEV_STAT_IO_ERRORS], errs0 + 2, "model's NVMe I/O error count after the write fault")?;
    for (i, r) in res.iter().enumerate() {
        let r = r.ok_or("missing completion")?;
        if i == 5 && rev.has_status() {
            eq(r, Err(Error::Nvme { status: (STATUS & !0xff | 0x80) as u16 }), "faulted write (rev 2)")?;
        } else {
            r.map_err(|e| format!("write {i}: {e}"))?;
        }
    }
    for (i, b) in bufs.iter_mut().enumerate() {
        read_check(&mut h, b, lba(i), if i == 5 { 1 } else { 2 }).map_err(|e| format!("after the write fault, block {i}: {e}"))?;
    }
    summary::add(&FAULTS_SURVIVED, 2);
    Ok(())
}

/// Stuck engine: the library times out within its bound; rev 2 resets and reuses the core,
/// rev 1 recovers when the late DONE comes.
fn stuck(mb: &Mailbox) -> Case {
    let d = dev()?;
    let core = 1;
    let timeout = Duration::from_millis(300);
    let mut h = handle(&d, core, timeout)?;
    let rev = h.revision();
    let base = area(&h, core);
    let mut b = h.buf_alloc(4 * BLOCK).map_err(|e| e.to_string())?;
    write_read(&mut h, &mut b, base, 1)?;
    mb.fault(TESTDEV_FAULT_STUCK, &[u64::from(core), 1])?;
    data::fill(b.as_mut_slice(), base, &[2; 4]);
    let mut t0 = Instant::now();
    let r = h.write(&b, base);
    if rev.has_status() {
        // Rev 2: the entry's status word says done (the data moved), so the library completes
        // the write early although DONE never comes. The next request cannot run: without a
        // START queue it stays staged and fails (NotReady) once the batch times out; with one
        // it is started behind the held batch and times out itself.
        eq(r, Ok(()), "write whose status word is done on a stuck engine (rev 2 early completion)")?;
        t0 = Instant::now();
        let want = if h.caps().start_queue > 0 { Error::Timeout } else { Error::NotReady };
        eq(h.write(&b, base), Err(want), "next write on a stuck engine (rev 2)")?;
        eq(h.stats().timeouts, 1, "batch timeouts counted")?;
    } else {
        eq(r, Err(Error::Timeout), "write on a stuck engine")?;
    }
    let took = t0.elapsed();
    check(took < timeout * 2 + Duration::from_secs(1), format!("timeout took {took:?} (bound {timeout:?})"))?;
    check(h.is_wedged(), "handle not wedged after the timeout")?;
    eq(h.write(&b, base), Err(Error::NotReady), "I/O on a wedged handle")?;
    println!("# stuck engine: Timeout after {:.0} ms ({} ms timeout): {}", took.as_secs_f64() * 1e3, timeout.as_millis(), Error::Timeout);
    if rev.can_reset() {
        // Reset while the fault is still armed: the reset alone must clear the wedge.
        wait_state(core, &["busy"], Duration::from_secs(3))?;
        reset_and_settle(&mut h, core)?;
        check(!h.is_wedged(), "still wedged after reset")?;
        mb.clear()?;
    } else {
        eq(h.reset(), Err(Error::Revision), "reset on rev 1")?;
        mb.clear()?;
        unwedge(&mut h, Duration::from_secs(5))?;
    }
    h.set_timeout(Duration::from_secs(5));
    if rev.has_status() {
        // The write reported as done really happened.
        read_check(&mut h, &mut b, base, 2).map_err(|e| format!("early-completed write: {e}"))?;
    }
    write_read(&mut h, &mut b, base, 3).map_err(|e| format!("reuse after the stuck engine: {e}"))?;
    summary::add(&FAULTS_SURVIVED, 1);
    Ok(())
}

/// Dropped START after an earlier batch (DONE still 1): rev 2 reports BatchLost, rev 1
/// reports success (documented) and the pattern check shows the write never happened.
fn drop_start(mb: &Mailbox) -> Case {
    let d = dev()?;
    let core = 2;
    let mut h = handle(&d, core, Duration::from_secs(2))?;
    let rev = h.revision();
    let base = area(&h, core);
    let mut b = h.buf_alloc(2 * BLOCK).map_err(|e| e.to_string())?;
    write_read(&mut h, &mut b, base, 1)?; // leaves DONE = 1
    let dropped0 = mb.stats(core)?[TESTDEV_STAT_DROPPED_STARTS];
    mb.fault(TESTDEV_FAULT_DROP_START, &[u64::from(core), 1])?;
    data::fill(b.as_mut_slice(), base, &[2; 2]);
    let t0 = Instant::now();
    let r = h.write(&b, base);
    check(t0.elapsed() < Duration::from_secs(5), "dropped START: wait not bounded")?;
    eq(mb.stats(core)?[TESTDEV_STAT_DROPPED_STARTS], dropped0 + 1, "model's dropped-START count")?;
    if rev.has_status() {
        eq(r, Err(Error::BatchLost), "write whose START was dropped (rev 2)")?;
    } else {
        eq(r, Ok(()), "write whose START was dropped (rev 1 cannot tell, documented)")?;
    }
    // Either way the data never reached the SSD: generation 1 is still there.
    read_check(&mut h, &mut b, base, 1).map_err(|e| format!("after the dropped START: {e}"))?;
    write_read(&mut h, &mut b, base, 3).map_err(|e| format!("reuse after the dropped START: {e}"))?;
    summary::add(&FAULTS_SURVIVED, 1);
    Ok(())
}

/// The model stops servicing everything for a while (device outage), then resumes.
fn outage(mb: &Mailbox) -> Case {
    let d = dev()?;
    let core = 3;
    let timeout = Duration::from_millis(300);
    let mut h = handle(&d, core, timeout)?;
    let rev = h.revision();
    let base = area(&h, core);
    let mut b = h.buf_alloc(BLOCK).map_err(|e| e.to_string())?;
    write_read(&mut h, &mut b, base, 1)?;
    mb.cmd(TESTDEV_CMD_QUIESCE, &[])?;
    summary::add(&FAULTS_INJECTED, 1);
    data::fill(b.as_mut_slice(), base, &[2]);
    let t0 = Instant::now();
    let r = h.write(&b, base);
    let took = t0.elapsed();
    let resumed = mb.cmd(TESTDEV_CMD_RESUME, &[]);
    eq(r, Err(Error::Timeout), "write while the device is out")?;
    resumed?;
    check(took < timeout * 2 + Duration::from_secs(1), format!("timeout took {took:?}"))?;
    if rev.can_reset() {
        // The START issued during the outage runs after the resume; let it end, then reset.
        wait_state(core, &["done"], Duration::from_secs(5))?;
        reset_and_settle(&mut h, core)?;
    } else {
        unwedge(&mut h, Duration::from_secs(5))?;
    }
    h.set_timeout(Duration::from_secs(5));
    write_read(&mut h, &mut b, base, 3).map_err(|e| format!("reuse after the outage: {e}"))?;
    summary::add(&FAULTS_SURVIVED, 1);
    Ok(())
}

/// The fake device restarts (FPGA reconfigured and SSD power-cycled) with a write in flight:
/// that write and the next I/O fail within the handle's bound, the data written before the
/// restart survives, and the documented recovery brings the whole stack back: rev 2
/// `Device::controller_init` (CONTROLLER_INIT + queue reset of every HDU); rev 1 refuses that
/// (`Revision`, its engines cannot be reset) and is recovered by reloading the modules, which
/// is also what a board does after reprogramming the PL.
fn restart(mb: &Mailbox) -> Case {
    let timeout = Duration::from_millis(300);
    let bound = timeout * 2 + Duration::from_secs(1);
    let core = 2;
    let d = dev()?;
    let mut h = handle(&d, core, timeout)?;
    let rev = h.revision();
    let a = area(&h, core) + 0x800; // written before the restart, must survive it
    let b = a + 4 * BLOCK_LBAS; // target of the write lost in the restart
    let mut buf = h.buf_alloc(4 * BLOCK).map_err(|e| e.to_string())?;
    write_read(&mut h, &mut buf, a, 1)?;
    write_read(&mut h, &mut buf, b, 1)?;

    // The write is in flight (started, not yet serviced) when the device restarts.
    mb.cmd(TESTDEV_CMD_QUIESCE, &[])?;
    data::fill(buf.as_mut_slice(), b, &[2; 4]);
    h.submit(Request::write(&buf, b).tag(0)).map_err(|e| format!("submit: {e}"))?;
    h.kick();
    mb.cmd(TESTDEV_CMD_RESTART, &[])?;
    summary::add(&FAULTS_INJECTED, 1);
    let t0 = Instant::now();
    let res = collect(&mut h, 1, bound)?;
    eq(res[0], Some(Err(Error::Timeout)), "write in flight across the device restart")?;
    let took = t0.elapsed();
    check(took < bound, format!("in-flight write failed after {took:?} (bound {bound:?})"))?;
    check(h.is_wedged(), "handle not wedged after the lost batch")?;
    eq(h.write(&buf, b), Err(Error::NotReady), "I/O on the wedged handle after the restart")?;
    if rev.can_reset() {
        // An engine reset clears the wedge, but the controller has no queues any more: I/O
        // still fails within the bound until the controller is brought up again.
        reset_and_settle(&mut h, core)?;
        let t0 = Instant::now();
        eq(h.write(&buf, b), Err(Error::Timeout), "write after the restart before re-init (rev 2)")?;
        check(t0.elapsed() < bound, format!("write took {:?} (bound {bound:?})", t0.elapsed()))?;
    }
    println!("# device restart: in-flight write -> Timeout after {:.0} ms", took.as_secs_f64() * 1e3);
    drop(h);

    let d = if rev.can_reset() {
        d.controller_init().map_err(|e| format!("controller_init after the restart: {e}"))?;
        d
    } else {
        eq(d.controller_init(), Err(Error::Revision), "controller_init on rev 1 once the queues were used")?;
        drop(d);
        check(crate::fixtures::modules::rmmod("hdu") && crate::fixtures::modules::rmmod("directnvm"), "rmmod after the restart")?;
        crate::fixtures::modules::insmod_both()?;
        dev()?
    };
    check(d.info().flags & DNVM_INFO_READY != 0, "controller ready after the recovery")?;
    for c in 0..d.info().cores {
        let mut h = handle(&d, c, Duration::from_secs(5))?;
        let mut buf = h.buf_alloc(4 * BLOCK).map_err(|e| e.to_string())?;
        if c == core {
            read_check(&mut h, &mut buf, a, 1).map_err(|e| format!("data written before the restart: {e}"))?;
            read_check(&mut h, &mut buf, b, 1).map_err(|e| format!("target of the lost write: {e}"))?;
            write_read(&mut h, &mut buf, b, 3).map_err(|e| format!("I/O after the recovery: {e}"))?;
        } else {
            let lba = area(&h, c) + 0x800;
            write_read(&mut h, &mut buf, lba, 4).map_err(|e| format!("core {c} after the recovery: {e}"))?;
        }
    }
    summary::add(&FAULTS_SURVIVED, 1);
    Ok(())
}

/// Rev 2: one entry fails the DMA window check, the others of the batch are unaffected.
fn window(mb: &Mailbox) -> Case {
    let d = dev()?;
    let core = 0;
    let mut h = handle(&d, core, Duration::from_secs(5))?;
    if !h.revision().has_dma_window() {
        println!("# window fault: rev 1 has no DMA window (documented), nothing to inject");
        return Ok(());
    }
    let base = area(&h, core) + 0x800;
    let lba = |i: usize| base + i as u64 * BLOCK_LBAS;
    let mut bufs: Vec<_> = (0..4).map(|_| h.buf_alloc(BLOCK)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    for (i, b) in bufs.iter_mut().enumerate() {
        write_gen(&mut h, b, lba(i), 7)?;
    }
    // One batch of 4 reads; the first entry fetched hits the forced window violation.
    mb.fault(TESTDEV_FAULT_WINDOW, &[u64::from(core), 1])?;
    for (i, b) in bufs.iter_mut().enumerate() {
        b.as_mut_slice().fill(0);
        h.submit(Request::read(b, lba(i)).tag(i as u64)).map_err(|e| e.to_string())?;
    }
    h.kick();
    let res = collect(&mut h, 4, Duration::from_secs(10))?;
    let failed: Vec<usize> = (0..4).filter(|&i| res[i] != Some(Ok(()))).collect();
    eq(failed.len(), 1, "requests failed by one forced window fault")?;
    eq(res[failed[0]], Some(Err(Error::Hdu { code: DNVM_HDU_ERR_WINDOW })), "window fault result")?;
    for i in (0..4).filter(|i| *i != failed[0]) {
        verify(bufs[i].as_slice(), lba(i), &[7]).map_err(|e| format!("read {i}: {e}"))?;
    }
    write_read(&mut h, &mut bufs[0], lba(0), 8)?;
    summary::add(&FAULTS_SURVIVED, 1);
    Ok(())
}

/// Every fault case.
pub fn run(t: &mut Tap) {
    let mb = match Mailbox::open() {
        Ok(m) => m,
        Err(e) => {
            t.case("faults: test mailbox reachable through /dev/mem", || Err(e));
            return;
        }
    };
    t.case("faults: test mailbox reachable through /dev/mem (ping)", || mb.cmd(TESTDEV_CMD_PING, &[]).map(|_| ()));
    t.case("faults: NVMe error on one LBA fails that request only (read and write batch)", || {
        let r = io_error(&mb);
        mb.clear().and(r)
    });
    t.case("faults: stuck engine -> bounded Timeout, wedge, reset (rev 2) / late DONE (rev 1), reuse", || {
        let r = stuck(&mb);
        mb.clear().and(r)
    });
    t.case("faults: dropped START -> BatchLost (rev 2) / no data written (rev 1), reuse", || {
        let r = drop_start(&mb);
        mb.clear().and(r)
    });
    t.case("faults: device outage (model quiesced) -> bounded Timeout, resume, reuse", || {
        let r = outage(&mb);
        let _ = mb.cmd(TESTDEV_CMD_RESUME, &[]);
        mb.clear().and(r)
    });
    t.case("faults: device restart (power cycle) -> bounded Timeout, data kept, controller_init (rev 2) / module reload (rev 1), reuse on every core", || {
        let r = restart(&mb);
        let _ = mb.cmd(TESTDEV_CMD_RESUME, &[]);
        mb.clear().and(r)
    });
    t.case("faults: DMA window violation fails one entry of a batch (rev 2)", || {
        let r = window(&mb);
        mb.clear().and(r)
    });
}
