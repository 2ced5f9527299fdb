// SPDX-License-Identifier: MIT OR Apache-2.0
//! The backoff of blocking waits: a handle waiting on a stuck engine gives its CPU back, and
//! the handle works normally once the device answers again. The CPU figures are printed
//! (`cargo test -p libnvmedl --test inproc backoff -- --nocapture`).

use std::time::{Duration, Instant};

use directnvm_abi::*;
use fakehdu::ControlOp;

use nvmedl::*;

use crate::completion::settle;
use crate::handle::{board, opts};

/// CPU time (user + system) of the calling thread.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
    let t = |v: libc::timeval| Duration::from_secs(v.tv_sec as u64) + Duration::from_micros(v.tv_usec as u64);
    t(u.ru_utime) + t(u.ru_stime)
}

/// CPU and wall time of one read on a stuck rev 1 engine (it ends in Timeout).
fn stuck_wait(backoff: Option<Backoff>) -> (Duration, Duration) {
    let (ip, dev) = board(HDU_REV1, 1);
    let mut h = dev.handle_with(0, HandleOptions { timeout: Duration::from_millis(300), backoff, ..opts() }).unwrap();
    let b = h.buf_alloc(4096).unwrap();
    h.read(&b, 0).unwrap();
    settle(&ip, &mut h);
    ip.control(ControlOp::Stuck { hdu: 0, on: true }).unwrap();
    let (c0, t0) = (thread_cpu(), Instant::now());
    assert_eq!(h.read(&b, 0), Err(Error::Timeout));
    let (cpu, wall) = (thread_cpu() - c0, t0.elapsed());
    // The device answers again: the late DONE ends the wedge and the next I/O works.
    ip.control(ControlOp::Stuck { hdu: 0, on: false }).unwrap();
    h.recover().unwrap();
    h.write(&b, 8).unwrap();
    h.read(&b, 8).unwrap();
    (cpu, wall)
}

#[test]
fn a_waiting_handle_with_backoff_gives_its_cpu_back() {
    let (spin_cpu, spin_wall) = stuck_wait(None);
    let (cpu, wall) = stuck_wait(Some(Backoff::default()));
    println!(
        "stuck-engine wait: spin {:.0}% CPU ({spin_cpu:?} of {spin_wall:?}), backoff {:.1}% CPU ({cpu:?} of {wall:?})",
        100.0 * spin_cpu.as_secs_f64() / spin_wall.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
    );
    // Sleeping most of the wait: well under half a CPU whatever the host load (spinning is
    // close to one CPU on an idle host).
    assert!(cpu * 2 < wall, "backoff used {cpu:?} CPU in a {wall:?} wait");
}

#[test]
fn wait_returns_completions_and_zero_when_idle() {
    let (_ip, dev) = board(HDU_REV2, 1);
    let mut h = dev.handle_with(0, HandleOptions { backoff: Some(Backoff::default()), ..opts() }).unwrap();
    let mut out = [Completion { tag: 0, result: Ok(()) }; 8];
    assert_eq!(h.wait(&mut out), Ok(0), "nothing pending: no wait");
    let b = h.buf_alloc(4096).unwrap();
    h.submit(Request::read(&b, 0).tag(7)).unwrap();
    let n = h.wait(&mut out).unwrap();
    assert_eq!((n, out[0].tag, out[0].result), (1, 7, Ok(())));
    let bad = Backoff { min_sleep: Duration::ZERO, ..Backoff::default() };
    assert_eq!(h.set_backoff(Some(bad)), Err(Error::InvalidArgument));
    assert_eq!(h.backoff(), Some(Backoff::default()), "a refused setting changes nothing");
}
