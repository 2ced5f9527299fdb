// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`'s engine: a small fio-like benchmark on libnvmedl (command line:
//! `bench_cli.rs`, clap; the binary: `bench.rs`; the host rig runs the same engine on the
//! in-process device model, `nvmedl-bench-inproc` in qemu/inproc-bench).
//!
//! ```text
//! nvmedl-bench [--rw seq-read|seq-write|rand-read|rand-write|mixed] [--rwmix 70] [--bs 4096]
//!              [--iodepth 32] [--cores 0,1,2,3] [--priority 1 | 0,3,...] [--runtime 5 | --ios N]
//!              [--size BYTES-per-core] [--verify] [--json] [--device PATH]
//!              [--yield N] [--backoff spin|adaptive [--backoff-*-us US]] [--batch N]
//!              [--syscall-markers] [--bs-dist fixed|exp [--bs-max B]]
//!              [--prio-mix P:W,..] [--rate IOPS[,IOPS..]] [--trace-ms MS] [QoS flags: bench_qos.rs]
//! ```
//! One job per core (one thread, one handle). Latency is submit → completion (arrival →
//! completion with `--rate`), recorded into preallocated HDR histograms (`hdrhistogram`, 3
//! significant digits; `bench_report.rs`), per job and per urgency class.
//! `--bs-dist exp` draws sizes from an exponential distribution with mean `--bs` (rounded up to
//! 4 KiB, at most `--bs-max`), `--prio-mix P:W,..` each request's urgency class, `--rate R`
//! (or one rate per job, `R1,R2,..`) makes the job an open loop with Poisson arrivals (an
//! arrival finding `--iodepth` requests outstanding is blocked: the M/D/1/K measurement of
//! `nvmedl advise`), `--trace-ms MS` samples the in-flight limit, completions and p99 (the
//! JSON `trace`; the generator: `bench_load.rs`).
//! `--verify` writes a pattern that depends on the LBA only (the region is pre-filled first
//! for read/mixed jobs) and checks every byte read. Exit status 1 on any I/O or verify error.
//!
//! `--yield N` sets the library's `yield_spins` and makes the job call `sched_yield` after N
//! polls in a row that found nothing (default 0: pure polling, no system call).
//! `--backoff adaptive` gives the handle the library's `Backoff` (thresholds from the
//! `--backoff-*-us` flags) and makes the job wait in `Handle::wait` instead of polling: spin,
//! then yield, then sleep while nothing completes (the default `spin` polls without a break).
//! `--batch N` sets the library's `batch` (start a batch once N requests are staged; default 1).
//! With the rev 2 START queue a batch of a quarter of the queue depth keeps two batches in
//! flight, so the NVMe queue stays full.
//! `--syscall-markers` brackets each job's timed I/O loop with two marker system calls,
//! `prctl(SYSCALL_MARK, 1)` before and `prctl(SYSCALL_MARK, 2)` after (an unknown prctl option:
//! EINVAL, no effect), so a tracer can count the system calls of the I/O loop alone (the guest
//! test `library: zero syscalls in the I/O loop` does).
//!
//! Exit status: 0 success, 1 any I/O, verify or setup error, 2 usage error.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench_cli::{BenchCli, Mode};
use crate::bench_job::job;
use crate::bench_load::{PrioMix, Sizes};
use crate::bench_qos::QosArgs;
use crate::bench_summary::report;
use crate::{EXIT_FAILURE, EXIT_USAGE};
use nvmedl::Device;

/// First argument of the marker `prctl` ("DNVM"; not a prctl option, so the call fails with
/// EINVAL and does nothing).
pub const SYSCALL_MARK: i32 = 0x444e_564d;

/// Urgency classes (per-class histograms).
pub(crate) const CLASSES: usize = directnvm_abi::DNVM_URGENCY_CLASSES as usize;

#[derive(Clone)]
pub(crate) struct Opts {
    pub(crate) mode: Mode,
    pub(crate) rwmix: u32,
    pub(crate) sizes: Sizes,
    pub(crate) iodepth: usize,
    pub(crate) cores: Vec<u32>,
    pub(crate) priority: Vec<u16>,
    pub(crate) prio_mix: Option<PrioMix>,
    /// Open-loop arrival rate per job (`None`: closed loop).
    pub(crate) rate: Vec<Option<f64>>,
    /// `--class-depth`: in-flight limit per urgency class of an open-loop `--prio-mix` job.
    pub(crate) class_depth: Option<usize>,
    pub(crate) trace: Option<Duration>,
    pub(crate) runtime: Option<Duration>,
    pub(crate) ios: Option<u64>,
    pub(crate) size: u64,
    pub(crate) verify: bool,
    pub(crate) json: bool,
    pub(crate) device: String,
    pub(crate) yield_polls: u32,
    pub(crate) backoff: Option<nvmedl::Backoff>,
    pub(crate) batch: usize,
    pub(crate) markers: bool,
    pub(crate) qos: QosArgs,
}

/// The validated command line as the jobs use it.
fn opts(cli: &BenchCli) -> Result<Opts, String> {
    cli.validate()?;
    let small = |v: u64, what: &str| usize::try_from(v).map_err(|_| format!("--{what} {v} is too large"));
    let sizes = cli.sizes()?;
    small(sizes.max, "bs-max")?;
    Ok(Opts {
        mode: cli.rw,
        rwmix: cli.rwmix.min(100) as u32,
        sizes,
        iodepth: small(cli.iodepth, "iodepth")?,
        cores: cli.cores.iter().map(|&c| c as u32).collect(),
        priority: cli.priority.iter().map(|&p| p as u16).collect(),
        prio_mix: cli.prio_mix.clone(),
        rate: (0..cli.cores.len()).map(|i| cli.rate_of(i)).collect(),
        class_depth: cli.class_depth.map(|n| small(n, "class-depth")).transpose()?,
        trace: cli.trace_ms.map(Duration::from_millis),
        runtime: cli.time_limit(),
        ios: cli.ios,
        size: cli.size,
        verify: cli.verify,
        json: cli.json,
        device: cli.device.clone(),
        yield_polls: cli.yield_polls.min(u64::from(u32::MAX)) as u32,
        backoff: cli.backoff()?,
        batch: small(cli.batch, "batch")?,
        markers: cli.syscall_markers,
        qos: cli.qos.clone(),
    })
}

/// Run the benchmark `cli` describes on the device `open` returns (given `--device`'s path);
/// the process's exit status. Usage errors are reported before `open` is called.
pub fn run(cli: &BenchCli, open: impl FnOnce(&str) -> Result<Device, String>) -> ExitCode {
    let o = match opts(cli) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("nvmedl-bench: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let dev = match open(&o.device) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("nvmedl-bench: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let progress = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..o.cores.len())
        .map(|i| {
            let (dev, o, p, s) = (dev.clone(), o.clone(), progress.clone(), stop.clone());
            std::thread::spawn(move || job(&dev, &o, i, &p, &s))
        })
        .collect();
    // Progress line once a second on long runs (stderr, so --json stays clean).
    let long = o.runtime.is_some_and(|r| r > Duration::from_secs(2)) || o.ios.is_some_and(|n| n > 200_000);
    let mut last = 0;
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(100));
        let el = t0.elapsed().as_secs();
        if long && el > last {
            last = el;
            let n = progress.load(Ordering::Relaxed);
            eprint!("\r[{el:>4} s] {n} I/Os, {:.0} IOPS   ", n as f64 / t0.elapsed().as_secs_f64());
        }
    }
    if long {
        eprintln!();
    }
    let wall = t0.elapsed();
    let mut results = Vec::new();
    let mut failed = false;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) => {
                eprintln!("nvmedl-bench: {e}");
                failed = true;
            }
            Err(_) => {
                eprintln!("nvmedl-bench: a job panicked");
                failed = true;
            }
        }
    }
    let ok = report(&o, &results, wall) && !failed;
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILURE)
    }
}
