// SPDX-License-Identifier: MIT OR Apache-2.0
//! The paper's arbitration experiment (Figure 13): a foreground stream keeps its throughput
//! while background streams burst, because the NVMe controller serves the engines' queues by
//! weighted round robin. Runs on a rev 2 device (one engine per urgency class) whose SSD model
//! is the bottleneck (`make wrr` starts fake-hdu with a slow SSD, 4000 random-read IOPS, and 8
//! commands in flight inside it).
//!
//! Foreground: core 0, urgency high, random 4 KiB reads at QD `WRR_QD` (default 32).
//! Background: cores 1..3, urgency low, same load, from `WRR_BG_START` to `WRR_BG_END` seconds
//! of a `WRR_SECS`-second run (default 2..6 of 8). The run is done twice: weights
//! high:low = 128:1, then 1:1 (plain round robin among the classes) for contrast.
//!
//! Prints one `# wrr <label> <t_ms> <fg_iops> <bg_iops>` line per 100 ms sample (the host's
//! `scripts/wrr-plot.py` draws them with the Fig. 13 plot of `make figures`) and per weight
//! setting the foreground throughput during the burst as a share of its solo throughput. It is a benchmark: it fails only when I/O
//! fails, not on the figures.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use directnvm_abi::{DnvmArbitration, DNVM_URGENCY_HIGH, DNVM_URGENCY_LOW};
use nvmedl::{Completion, Device, HandleOptions, Request};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One stream: `qd` random 4 KiB reads kept outstanding on `core` at `priority` until `stop`.
fn stream(d: &Device, core: u32, priority: u16, qd: usize, count: &AtomicU64, stop: &AtomicBool) -> Result<(), String> {
    // Batches of a quarter of the queue depth: with the rev 2 START queue the next batch is
    // started behind the running one, so the stream's NVMe queue never runs dry.
    let opts = HandleOptions { capacity: 2 * qd, iodepth: qd, batch: (qd / 4).max(1), priority, ..HandleOptions::default() };
    let mut h = d.handle_with(core, opts).map_err(|e| format!("core {core}: {e}"))?;
    let bufs: Vec<_> = (0..qd).map(|_| h.buf_alloc(4096)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    let span = (h.capacity_lbas() / 8).min(1 << 18); // first 1 GiB at most, in 4 KiB blocks
    let mut x = 0x9e37_79b9_u64 ^ u64::from(core);
    let mut next_lba = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % span) * 8
    };
    for (i, b) in bufs.iter().enumerate() {
        h.submit(Request::read(b, next_lba()).tag(i as u64)).map_err(|e| format!("core {core}: submit: {e}"))?;
    }
    let mut out = [Completion { tag: 0, result: Ok(()) }; 64];
    let mut idle = 0u32;
    // 4 vCPUs and the fake device share 2 host cores: a stream with nothing to reap naps
    // (WRR_IDLE_US, default 50 µs; 0 = yield only) so the CPU goes to the device model and the
    // other streams, not to spinning. The SSD model, not the CPU, must be the bottleneck.
    let nap = Duration::from_micros(env("WRR_IDLE_US", 50));
    while !stop.load(Ordering::Relaxed) {
        let n = h.poll(&mut out);
        if n == 0 {
            idle += 1;
            if idle.is_multiple_of(8) {
                if nap.is_zero() {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(nap);
                }
            }
            continue;
        }
        for c in &out[..n] {
            c.result.map_err(|e| format!("core {core}: read failed: {e}"))?;
            let b = &bufs[c.tag as usize];
            h.submit(Request::read(b, next_lba()).tag(c.tag)).map_err(|e| format!("core {core}: submit: {e}"))?;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
    h.drain().map_err(|e| format!("core {core}: drain: {e}"))
}

/// One run at the given weights; returns (solo fg IOPS, fg IOPS during the burst, bg IOPS).
fn run_once(d: &Device, label: &str, a: DnvmArbitration) -> Result<(f64, f64, f64), String> {
    d.set_arbitration(a).map_err(|e| format!("set arbitration: {e}"))?;
    let secs = env("WRR_SECS", 8);
    let (bg_start, bg_end) = (env("WRR_BG_START", 2), env("WRR_BG_END", 6));
    let qd = env("WRR_QD", 32) as usize;
    let fg = Arc::new(AtomicU64::new(0));
    let bg = Arc::new(AtomicU64::new(0));
    let stop_fg = Arc::new(AtomicBool::new(false));
    let stop_bg = Arc::new(AtomicBool::new(false));
    let cores = d.cores().min(4);
    let spawn = |core: u32, prio: u16, cnt: &Arc<AtomicU64>, stop: &Arc<AtomicBool>| {
        let (d, cnt, stop) = (d.clone(), cnt.clone(), stop.clone());
        std::thread::spawn(move || stream(&d, core, prio, qd, &cnt, &stop))
    };
    let t0 = Instant::now();
    let fg_thread = spawn(0, DNVM_URGENCY_HIGH, &fg, &stop_fg);
    let mut bg_threads = Vec::new();
    let (mut solo, mut solo_n, mut burst, mut burst_n, mut bg_sum) = (0.0, 0, 0.0, 0, 0.0);
    let (mut last_fg, mut last_bg) = (0u64, 0u64);
    let step = Duration::from_millis(100);
    let mut next = t0 + step;
    while t0.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += step;
        let t = t0.elapsed();
        if bg_threads.is_empty() && t >= Duration::from_secs(bg_start) && t < Duration::from_secs(bg_end) {
            bg_threads = (1..cores).map(|c| spawn(c, DNVM_URGENCY_LOW, &bg, &stop_bg)).collect();
        }
        if !bg_threads.is_empty() && t >= Duration::from_secs(bg_end) {
            stop_bg.store(true, Ordering::Relaxed);
            for th in bg_threads.drain(..) {
                th.join().map_err(|_| "background thread panicked".to_string())??;
            }
        }
        let (f, b) = (fg.load(Ordering::Relaxed), bg.load(Ordering::Relaxed));
        let (fi, bi) = ((f - last_fg) as f64 * 10.0, (b - last_bg) as f64 * 10.0);
        (last_fg, last_bg) = (f, b);
        let ms = t.as_millis() as u64;
        println!("# wrr {label} {ms} {fi:.0} {bi:.0}");
        // Steady-state windows: skip the first 500 ms after each change.
        let s = t.as_secs_f64();
        if (s > 0.5 && s <= bg_start as f64) || (s > bg_end as f64 + 0.5) {
            solo += fi;
            solo_n += 1;
        } else if s > bg_start as f64 + 0.5 && s <= bg_end as f64 {
            burst += fi;
            bg_sum += bi;
            burst_n += 1;
        }
    }
    stop_bg.store(true, Ordering::Relaxed);
    for th in bg_threads {
        th.join().map_err(|_| "background thread panicked".to_string())??;
    }
    stop_fg.store(true, Ordering::Relaxed);
    fg_thread.join().map_err(|_| "foreground thread panicked".to_string())??;
    let avg = |sum: f64, n: u32| if n == 0 { 0.0 } else { sum / f64::from(n) };
    Ok((avg(solo, solo_n), avg(burst, burst_n), avg(bg_sum, burst_n)))
}

/// `dnvm-guest-lab wrr`: both weight settings; true when every I/O succeeded.
pub fn run() -> bool {
    let d = match Device::open() {
        Ok(d) => d,
        Err(e) => {
            println!("wrr: open /dev/directnvm: {e}");
            return false;
        }
    };
    if d.hdu_info(0).map(|i| i.engines).unwrap_or(1) < 4 {
        println!("wrr: needs a rev 2 device with 4 engines per HDU (one per urgency class)");
        return false;
    }
    let mut ok = true;
    // Weights are 0-based in the ABI (127 = 128); burst 2^3 = 8 commands.
    for (label, a) in [
        ("wrr-128-1", DnvmArbitration { burst: 3, high: 127, medium: 0, low: 0 }),
        ("rr-1-1", DnvmArbitration { burst: 3, high: 0, medium: 0, low: 0 }),
    ] {
        match run_once(&d, label, a) {
            Ok((solo, burst, bg)) => println!(
                "wrr: {label}: foreground solo {solo:.0} IOPS, during burst {burst:.0} IOPS ({:.1}% of solo), background {bg:.0} IOPS",
                if solo > 0.0 { 100.0 * burst / solo } else { 0.0 }
            ),
            Err(e) => {
                println!("wrr: {label}: {e}");
                ok = false;
            }
        }
    }
    ok
}
