// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`: a small fio-like benchmark on libnvmedl (command line: `bench_cli.rs`, clap).
//!
//! ```text
//! nvmedl-bench [--rw seq-read|seq-write|rand-read|rand-write|mixed] [--rwmix 70] [--bs 4096]
//!              [--iodepth 32] [--cores 0,1,2,3] [--priority 1 | 0,3,...] [--runtime 5 | --ios N]
//!              [--size BYTES-per-core] [--verify] [--json] [--device PATH] [--inproc REV]
//!              [--yield N] [--batch N] [--syscall-markers]
//! ```
//! One job per core (one thread, one handle). Latency is submit → completion, recorded into a
//! preallocated log-linear histogram (64 sub-buckets per power of two, ≤ 1.6% error).
//! `--verify` writes a pattern that depends on the LBA only (the region is pre-filled first
//! for read/mixed jobs) and checks every byte read. Exit status 1 on any I/O or verify error.
//!
//! `--yield N` sets the library's `yield_spins` and makes the job call `sched_yield` after N
//! polls in a row that found nothing (default 0: pure polling, no system call).
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

use clap::Parser;
use nvmedl::{Buffer, Completion, Device, HandleOptions, Request};
use nvmedl_tools::bench_cli::{BenchCli, InprocTiming, Mode};
use nvmedl_tools::bench_qos::{QosArgs, QosReport};
use nvmedl_tools::{EXIT_FAILURE, EXIT_USAGE};
use serde::Serialize;

/// First argument of the marker `prctl` ("DNVM"; not a prctl option, so the call fails with
/// EINVAL and does nothing).
pub const SYSCALL_MARK: i32 = 0x444e_564d;

fn mark(on: bool, which: u64) {
    if on {
        // SAFETY: prctl with an unknown option only returns EINVAL.
        unsafe { libc::prctl(SYSCALL_MARK, which, 0u64, 0u64, 0u64) };
    }
}

const SUB: usize = 64;
const BUCKETS: usize = 64 * SUB;

/// Log-linear latency histogram in nanoseconds.
struct Hist {
    counts: Vec<u64>,
    n: u64,
    sum: f64,
    sumsq: f64,
    max: u64,
}

impl Hist {
    fn new() -> Self {
        Hist { counts: vec![0; BUCKETS], n: 0, sum: 0.0, sumsq: 0.0, max: 0 }
    }
    fn index(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros() as usize; // >= 6
        let shift = msb - 6;
        ((shift + 1) * SUB + ((v >> shift) as usize - SUB)).min(BUCKETS - 1)
    }
    fn value(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let shift = i / SUB - 1;
        ((SUB + i % SUB) as u64) << shift
    }
    fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.n += 1;
        self.sum += v as f64;
        self.sumsq += (v as f64) * (v as f64);
        self.max = self.max.max(v);
    }
    fn merge(&mut self, o: &Hist) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.sumsq += o.sumsq;
        self.max = self.max.max(o.max);
    }
    fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
    fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.sumsq / self.n as f64 - m * m).max(0.0).sqrt()
    }
    fn percentile(&self, p: f64) -> u64 {
        let want = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= want {
                return Self::value(i);
            }
        }
        self.max
    }
}

#[derive(Clone)]
struct Opts {
    mode: Mode,
    rwmix: u32,
    bs: usize,
    iodepth: usize,
    cores: Vec<u32>,
    priority: Vec<u16>,
    runtime: Option<Duration>,
    ios: Option<u64>,
    size: u64,
    verify: bool,
    json: bool,
    device: String,
    inproc: Option<u32>,
    yield_polls: u32,
    batch: usize,
    markers: bool,
    inproc_timing: InprocTiming,
    qos: QosArgs,
}

/// The validated command line as the jobs use it.
fn opts(cli: &BenchCli) -> Result<Opts, String> {
    cli.validate()?;
    let small = |v: u64, what: &str| usize::try_from(v).map_err(|_| format!("--{what} {v} is too large"));
    Ok(Opts {
        mode: cli.rw,
        rwmix: cli.rwmix.min(100) as u32,
        bs: small(cli.bs, "bs")?,
        iodepth: small(cli.iodepth, "iodepth")?,
        cores: cli.cores.iter().map(|&c| c as u32).collect(),
        priority: cli.priority.iter().map(|&p| p as u16).collect(),
        runtime: cli.time_limit(),
        ios: cli.ios,
        size: cli.size,
        verify: cli.verify,
        json: cli.json,
        device: cli.device.clone(),
        inproc: cli.inproc.map(|r| r.min(u64::from(u32::MAX)) as u32),
        yield_polls: cli.yield_polls.min(u64::from(u32::MAX)) as u32,
        batch: small(cli.batch, "batch")?,
        markers: cli.syscall_markers,
        inproc_timing: cli.inproc_timing,
        qos: cli.qos.clone(),
    })
}

/// The verify pattern of the 8-byte word at byte `off` of the namespace.
fn word(off: u64) -> u64 {
    off.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1ce_5eed
}

fn fill(buf: &mut Buffer, lba: u64, len: usize) {
    let base = lba * 512;
    for (i, w) in buf.as_mut_slice()[..len].chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&word(base + 8 * i as u64).to_le_bytes());
    }
}

fn check(buf: &Buffer, lba: u64, len: usize) -> bool {
    let base = lba * 512;
    buf.as_slice()[..len]
        .chunks_exact(8)
        .enumerate()
        .all(|(i, w)| u64::from_le_bytes(w.try_into().unwrap_or_default()) == word(base + 8 * i as u64))
}

struct JobResult {
    core: u32,
    priority: u16,
    hist: Hist,
    reads: u64,
    writes: u64,
    errors: u64,
    verify_errors: u64,
    first_error: Option<String>,
    elapsed: Duration,
    qos: QosReport,
}

/// xorshift64*: cheap, allocation-free randomness.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn job(dev: &Device, o: &Opts, idx: usize, progress: &AtomicU64, stop: &AtomicBool) -> Result<JobResult, String> {
    let core = o.cores[idx];
    let priority = *o.priority.get(idx).or(o.priority.last()).unwrap_or(&1);
    let mut opts = HandleOptions {
        capacity: o.iodepth.max(1) * 2,
        iodepth: o.iodepth,
        priority,
        yield_spins: o.yield_polls,
        batch: o.batch,
        ..HandleOptions::default()
    };
    o.qos.apply(&mut opts).map_err(|e| format!("core {core}: qos: {e}"))?;
    let mut h = dev.handle_with(core, opts).map_err(|e| format!("core {core}: handle: {e}"))?;
    o.qos.setup(&mut h, idx).map_err(|e| format!("core {core}: qos: {e}"))?;
    let blocks = o.size / o.bs as u64;
    let lbas_per_block = (o.bs / 512) as u64;
    let base = u64::from(core) * blocks * lbas_per_block;
    if base + blocks * lbas_per_block > h.capacity_lbas() {
        return Err(format!("core {core}: {} bytes per core do not fit the namespace", o.size));
    }
    let mut bufs: Vec<Buffer> =
        (0..o.iodepth).map(|_| h.buf_alloc(o.bs)).collect::<Result<_, _>>().map_err(|e| format!("core {core}: buffers: {e}"))?;
    let mut r = JobResult {
        core,
        priority,
        hist: Hist::new(),
        reads: 0,
        writes: 0,
        errors: 0,
        verify_errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        qos: QosReport::default(),
    };
    // Pre-fill for verified read/mixed jobs.
    if o.verify && !matches!(o.mode, Mode::SeqWrite | Mode::RandWrite) {
        for b in 0..blocks {
            let lba = base + b * lbas_per_block;
            fill(&mut bufs[0], lba, o.bs);
            h.write(&bufs[0], lba).map_err(|e| format!("core {core}: prefill: {e}"))?;
        }
    }
    let mut rng = Rng(0x1234_5678 ^ (u64::from(core) << 32) | 1);
    let mut seq = 0u64;
    let mut started = vec![Instant::now(); o.iodepth];
    let mut is_read = vec![false; o.iodepth];
    let mut lbas = vec![0u64; o.iodepth];
    let mut done = vec![Completion { tag: 0, result: Ok(()) }; o.iodepth];
    let mut free: Vec<usize> = (0..o.iodepth).collect();
    let mut empty_polls = 0u32;
    mark(o.markers, 1);
    let t0 = Instant::now();
    let mut issued = 0u64;
    let mut completed = 0u64;
    let limit = o.ios.unwrap_or(u64::MAX);
    loop {
        let time_up = o.runtime.is_some_and(|rt| t0.elapsed() >= rt) || stop.load(Ordering::Relaxed);
        while !time_up && issued < limit {
            let Some(slot) = free.pop() else { break };
            let block = match o.mode {
                Mode::SeqRead | Mode::SeqWrite => {
                    seq = (seq + 1) % blocks;
                    seq
                }
                _ => rng.next() % blocks,
            };
            let lba = base + block * lbas_per_block;
            let read = match o.mode {
                Mode::SeqRead | Mode::RandRead => true,
                Mode::SeqWrite | Mode::RandWrite => false,
                Mode::Mixed => (rng.next() % 100) < u64::from(o.rwmix),
            };
            if !read && o.verify {
                fill(&mut bufs[slot], lba, o.bs);
            }
            let req = if read { Request::read(&bufs[slot], lba) } else { Request::write(&bufs[slot], lba) };
            started[slot] = Instant::now();
            is_read[slot] = read;
            lbas[slot] = lba;
            if let Err(e) = h.submit(req.tag(slot as u64)) {
                r.errors += 1;
                r.first_error.get_or_insert(format!("submit: {e}"));
                free.push(slot);
                stop.store(true, Ordering::Relaxed);
                break;
            }
            issued += 1;
        }
        if completed == issued && (time_up || issued >= limit) {
            break;
        }
        let n = h.poll(&mut done);
        if n == 0 && o.yield_polls != 0 {
            empty_polls += 1;
            if empty_polls >= o.yield_polls {
                empty_polls = 0;
                std::thread::yield_now();
            }
        }
        for c in &done[..n] {
            let slot = c.tag as usize;
            r.hist.record(started[slot].elapsed().as_nanos() as u64);
            completed += 1;
            if is_read[slot] {
                r.reads += 1;
            } else {
                r.writes += 1;
            }
            match c.result {
                Err(e) => {
                    r.errors += 1;
                    r.first_error.get_or_insert(format!("LBA {}: {e}", lbas[slot]));
                }
                Ok(()) if o.verify && is_read[slot] && !check(&bufs[slot], lbas[slot], o.bs) => {
                    r.verify_errors += 1;
                    r.first_error.get_or_insert(format!("verify mismatch at LBA {}", lbas[slot]));
                }
                Ok(()) => {}
            }
            free.push(slot);
        }
        if n > 0 {
            progress.fetch_add(n as u64, Ordering::Relaxed);
        }
        if h.is_wedged() {
            r.errors += issued - completed;
            r.first_error.get_or_insert("engine timed out".into());
            break;
        }
    }
    r.elapsed = t0.elapsed();
    mark(o.markers, 2);
    r.qos = QosReport::of(&h, o.qos.tenant_of(idx));
    Ok(r)
}

fn open_device(o: &Opts) -> Result<Device, String> {
    match o.inproc {
        #[cfg(feature = "inproc")]
        Some(rev) => {
            let timing = match o.inproc_timing {
                InprocTiming::None => fakehdu::TimingMode::None,
                InprocTiming::Wall => fakehdu::TimingMode::WallClock,
            };
            let cfg = nvmedl_inproc::InProcConfig { timing, ..nvmedl_inproc::InProcConfig::new(rev) };
            let ip = nvmedl_inproc::InProc::start(cfg).map_err(|e| e.to_string())?;
            Device::from_platform(ip).map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "inproc"))]
        Some(_) => Err(format!("built without the inproc feature (--inproc-timing {:?} needs it too)", o.inproc_timing)),
        None => Device::open_path(&o.device).map_err(|e| format!("{}: {e}", o.device)),
    }
}

/// Round to `digits` decimals (the JSON keeps the text report's precision).
fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// Latency summary in microseconds.
#[derive(Serialize)]
struct LatJson {
    mean: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    stddev: f64,
    max: f64,
}

impl LatJson {
    fn of(h: &Hist) -> Self {
        let us = |v: f64| round(v / 1000.0, 2);
        LatJson {
            mean: us(h.mean()),
            p50: us(h.percentile(50.0) as f64),
            p99: us(h.percentile(99.0) as f64),
            p999: us(h.percentile(99.9) as f64),
            stddev: us(h.stddev()),
            max: us(h.max as f64),
        }
    }
}

/// One job of the `--json` report.
#[derive(Serialize)]
struct JobJson {
    core: u32,
    priority: u16,
    reads: u64,
    writes: u64,
    errors: u64,
    verify_errors: u64,
    iops: f64,
    mb_s: f64,
    lat_us: LatJson,
    qos: QosReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The `--json` report: one object on one line.
#[derive(Serialize)]
struct RunJson {
    rw: String,
    bs: usize,
    iodepth: usize,
    verify: bool,
    seconds: f64,
    ios: u64,
    iops: f64,
    mb_s: f64,
    lat_us: LatJson,
    ok: bool,
    jobs: Vec<JobJson>,
}

fn report(o: &Opts, results: &[JobResult], wall: Duration) -> bool {
    let mut all = Hist::new();
    // A job that could not even start (claim, buffers) has no result: the run failed.
    let mut ok = results.len() == o.cores.len();
    for r in results {
        all.merge(&r.hist);
        ok &= r.errors == 0 && r.verify_errors == 0;
    }
    // Jobs run concurrently: the longest job's timed loop (prefill excluded) is the run time.
    let secs = results.iter().map(|r| r.elapsed).max().unwrap_or(wall).as_secs_f64().max(1e-9);
    let ios = all.n;
    let iops = ios as f64 / secs;
    let mbs = ios as f64 * o.bs as f64 / secs / 1e6;
    let us = |v: f64| v / 1000.0;
    if o.json {
        let jobs = results
            .iter()
            .map(|r| {
                let s = r.elapsed.as_secs_f64().max(1e-9);
                JobJson {
                    core: r.core,
                    priority: r.priority,
                    reads: r.reads,
                    writes: r.writes,
                    errors: r.errors,
                    verify_errors: r.verify_errors,
                    iops: round(r.hist.n as f64 / s, 1),
                    mb_s: round(r.hist.n as f64 * o.bs as f64 / s / 1e6, 2),
                    lat_us: LatJson::of(&r.hist),
                    qos: r.qos.clone(),
                    error: r.first_error.clone(),
                }
            })
            .collect();
        let run = RunJson {
            rw: format!("{:?}", o.mode),
            bs: o.bs,
            iodepth: o.iodepth,
            verify: o.verify,
            seconds: round(secs, 3),
            ios,
            iops: round(iops, 1),
            mb_s: round(mbs, 2),
            lat_us: LatJson::of(&all),
            ok,
            jobs,
        };
        match serde_json::to_string(&run) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("nvmedl-bench: JSON: {e}");
                return false;
            }
        }
    } else {
        println!("rw={:?} bs={} iodepth={} jobs={} verify={}", o.mode, o.bs, o.iodepth, results.len(), o.verify);
        for r in results {
            println!(
                "  core {} prio {}: {} reads, {} writes, {:.0} IOPS, lat mean {:.1} us p99 {:.1} us, errors {} verify_errors {}{}",
                r.core,
                r.priority,
                r.reads,
                r.writes,
                r.hist.n as f64 / r.elapsed.as_secs_f64().max(1e-9),
                us(r.hist.mean()),
                us(r.hist.percentile(99.0) as f64),
                r.errors,
                r.verify_errors,
                r.first_error.as_ref().map_or(String::new(), |e| format!(" ({e})"))
            );
            println!("    {}", r.qos.line());
        }
        println!("total: {ios} I/Os in {secs:.2} s: {iops:.0} IOPS, {mbs:.1} MB/s");
        println!(
            "latency (us): mean {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} stddev {:.1} max {:.1}",
            us(all.mean()),
            us(all.percentile(50.0) as f64),
            us(all.percentile(99.0) as f64),
            us(all.percentile(99.9) as f64),
            us(all.stddev()),
            us(all.max as f64)
        );
        println!("result: {}", if ok { "ok" } else { "FAILED" });
    }
    ok
}

fn main() -> ExitCode {
    // Parsing never opens the device: --help, --version and usage errors work anywhere.
    let cli = BenchCli::parse();
    let o = match opts(&cli) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("nvmedl-bench: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let dev = match open_device(&o) {
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
