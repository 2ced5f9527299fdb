// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-cpubench idle`: what the backoff of blocking waits costs and saves, on the null
//! HDU with a second thread playing the device (it completes a batch when told to, so the
//! timing is the device's, not the library's).
//!
//! Two scenarios, each for three wait policies (spin: the library's default; the default
//! [`Backoff`]; a backoff with a 100 µs sleep bound), `--trials` times per length N:
//!
//! * **held**: one 4 KiB read that the device holds for N ms while the application sits in
//!   `Handle::wait`. Printed: the waiting thread's CPU share over the wait (its
//!   `CLOCK_THREAD_CPUTIME_ID` / wall), and how late `wait` returns after the device wrote
//!   DONE (the wake-up cost of the backoff: bounded by its longest sleep plus the scheduler).
//! * **after-idle**: the application sleeps N ms with nothing outstanding, then submits one
//!   QD1 read that the device completes as soon as its thread wakes; printed: submit to
//!   completion and DONE to `wait` returning. Each `wait` starts in the spin phase, so the
//!   backoff adds no penalty here by design; the figures show it.
//!
//! Percentiles are over the trials (nearest rank).

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use directnvm_abi::HDU_REV2;
use nvmedl::{Backoff, Completion, HandleOptions, Request};

use crate::cases::thread_cpu_ns;
use crate::nullhdu::{null_handle, NullHdu, PAGE};

/// Options of `nvmedl-cpubench idle`.
#[derive(clap::Args, Debug)]
pub struct IdleArgs {
    /// Trials per policy, scenario and length.
    #[arg(long, default_value = "30", value_parser = clap::value_parser!(u32).range(1..=100000))]
    trials: u32,
    /// The lengths N in ms (how long the device holds the I/O / the application is idle).
    #[arg(long, default_value = "1,10,100", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=10000))]
    ms: Vec<u64>,
}

/// The device thread: for each (instant, hold) received, sleep until instant + hold, complete
/// the started batch, and answer with the time DONE was written.
fn device(hdu: Arc<NullHdu>, rx: mpsc::Receiver<(Instant, Duration)>, tx: mpsc::Sender<Instant>) {
    // Sleep precisely: the device's timing is not what is measured.
    // SAFETY: prctl(PR_SET_TIMERSLACK) with a plain integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    while let Ok((at, hold)) = rx.recv() {
        let due = at + hold;
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        // The START may come a moment after the message (bounded: the handle times out).
        let t0 = Instant::now();
        while !hdu.step() && t0.elapsed() < Duration::from_secs(1) {
            thread::sleep(Duration::from_micros(10));
        }
        if tx.send(Instant::now()).is_err() {
            return;
        }
    }
}

/// Nearest-rank percentile of sorted `v`.
fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let k = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize - 1;
    v[k.min(v.len() - 1)]
}

struct Trial {
    /// Submit to `wait` returning, µs.
    latency_us: f64,
    /// DONE written to `wait` returning, µs.
    late_us: f64,
    /// Thread CPU / wall over the wait.
    cpu_share: f64,
}

/// One scenario for one policy: `trials` runs of (idle, hold).
fn scenario(backoff: Option<Backoff>, idle: Duration, hold: Duration, trials: u32) -> Result<Vec<Trial>, String> {
    let opts = HandleOptions { capacity: 2, iodepth: 1, backoff, ..HandleOptions::default() };
    let (hdu, mut h) = null_handle(HDU_REV2, opts)?;
    let buf = h.buf_alloc(PAGE).map_err(|e| e.to_string())?;
    let (to_dev, dev_rx) = mpsc::channel();
    let (dev_tx, from_dev) = mpsc::channel();
    let dev = {
        let hdu = hdu.clone();
        thread::spawn(move || device(hdu, dev_rx, dev_tx))
    };
    let mut out = Vec::with_capacity(trials as usize);
    let mut done = [Completion { tag: 0, result: Ok(()) }];
    for _ in 0..trials {
        if !idle.is_zero() {
            thread::sleep(idle);
        }
        let t0 = Instant::now();
        h.submit(Request::read(&buf, 0)).map_err(|e| e.to_string())?;
        // The last batch may still count as running (its request completed from its status
        // word before DONE): retire it so the START is out before the device is told.
        h.kick();
        to_dev.send((t0, hold)).map_err(|e| e.to_string())?;
        let c0 = thread_cpu_ns();
        let n = h.wait(&mut done).map_err(|e| e.to_string())?;
        let (t1, c1) = (Instant::now(), thread_cpu_ns());
        if n != 1 {
            return Err(format!("wait returned {n} completions"));
        }
        done[0].result.map_err(|e| e.to_string())?;
        let t_done = from_dev.recv().map_err(|e| e.to_string())?;
        out.push(Trial {
            latency_us: (t1 - t0).as_secs_f64() * 1e6,
            late_us: t1.saturating_duration_since(t_done).as_secs_f64() * 1e6,
            cpu_share: (c1 - c0) as f64 / (t1 - t0).as_nanos().max(1) as f64,
        });
    }
    drop(to_dev);
    dev.join().map_err(|_| "device thread panicked".to_string())?;
    Ok(out)
}

/// Print both scenarios' tables; false if a case failed.
pub fn idle(a: &IdleArgs) -> bool {
    let tight = Backoff { max_sleep: Duration::from_micros(100), ..Backoff::default() };
    let policies: [(&str, Option<Backoff>); 3] =
        [("spin", None), ("backoff", Some(Backoff::default())), ("backoff max 100us", Some(tight))];
    let d = Backoff::default();
    println!(
        "# backoff of a waiting handle, null HDU rev 2, device thread; {} trials per row; backoff = spin {:?}, yield {:?}, sleep {:?}..{:?}",
        a.trials, d.spin, d.yield_for, d.min_sleep, d.max_sleep
    );
    let mut ok = true;
    for (title, held) in [
        ("held: the device holds one read N ms, the application waits in Handle::wait", true),
        ("after-idle: N ms with nothing outstanding, then one QD1 read (device completes at once)", false),
    ] {
        println!("\n## {title}");
        println!("| policy | N ms | waiter CPU % | submit->completion p50 us | p99 us | DONE->wait returns p50 us | p99 us | max us |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        for (name, b) in policies {
            for &ms in &a.ms {
                let n = Duration::from_millis(ms);
                let (idle, hold) = if held { (Duration::ZERO, n) } else { (n, Duration::ZERO) };
                match scenario(b, idle, hold, a.trials) {
                    Ok(t) => {
                        let cpu: f64 = t.iter().map(|x| x.cpu_share).sum::<f64>() / t.len() as f64 * 100.0;
                        let mut lat: Vec<f64> = t.iter().map(|x| x.latency_us).collect();
                        let mut late: Vec<f64> = t.iter().map(|x| x.late_us).collect();
                        lat.sort_by(f64::total_cmp);
                        late.sort_by(f64::total_cmp);
                        println!(
                            "| {name} | {ms} | {cpu:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                            pct(&lat, 50.0),
                            pct(&lat, 99.0),
                            pct(&late, 50.0),
                            pct(&late, 99.0),
                            late.last().copied().unwrap_or(f64::NAN)
                        );
                    }
                    Err(e) => {
                        println!("| {name} | {ms} | unavailable: {e} | | | | | |");
                        ok = false;
                    }
                }
            }
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::pct;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!((pct(&v, 50.0), pct(&v, 99.0), pct(&v, 100.0)), (50.0, 99.0, 100.0));
        assert_eq!(pct(&[7.0], 99.0), 7.0);
        assert!(pct(&[], 50.0).is_nan());
    }
}
