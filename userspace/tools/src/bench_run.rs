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
use crate::bench_load::{Arrivals, PrioMix, Rng, Sizes, SIZE_UNIT};
use crate::bench_qos::{QosArgs, QosReport};
use crate::bench_report::{latency_hist, round, thread_cpu, ClassJson, JobJson, LatJson, OpenLoopJson, RunJson, TracePoint};
use crate::{EXIT_FAILURE, EXIT_USAGE};
use hdrhistogram::Histogram;
use nvmedl::{Buffer, Completion, Device, HandleOptions, Request};

/// First argument of the marker `prctl` ("DNVM"; not a prctl option, so the call fails with
/// EINVAL and does nothing).
pub const SYSCALL_MARK: i32 = 0x444e_564d;

/// Urgency classes (per-class histograms).
const CLASSES: usize = directnvm_abi::DNVM_URGENCY_CLASSES as usize;

fn mark(on: bool, which: u64) {
    if on {
        // SAFETY: prctl with an unknown option only returns EINVAL.
        unsafe { libc::prctl(SYSCALL_MARK, which, 0u64, 0u64, 0u64) };
    }
}

#[derive(Clone)]
struct Opts {
    mode: Mode,
    rwmix: u32,
    sizes: Sizes,
    iodepth: usize,
    cores: Vec<u32>,
    priority: Vec<u16>,
    prio_mix: Option<PrioMix>,
    /// Open-loop arrival rate per job (`None`: closed loop).
    rate: Vec<Option<f64>>,
    /// `--class-depth`: in-flight limit per urgency class of an open-loop `--prio-mix` job.
    class_depth: Option<usize>,
    trace: Option<Duration>,
    runtime: Option<Duration>,
    ios: Option<u64>,
    size: u64,
    verify: bool,
    json: bool,
    device: String,
    yield_polls: u32,
    backoff: Option<nvmedl::Backoff>,
    batch: usize,
    markers: bool,
    qos: QosArgs,
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
    hist: Histogram<u64>,
    /// Per urgency class.
    class_hist: Vec<Histogram<u64>>,
    reads: u64,
    writes: u64,
    bytes: u64,
    errors: u64,
    verify_errors: u64,
    first_error: Option<String>,
    elapsed: Duration,
    /// The job thread's CPU time over the timed loop.
    cpu: Duration,
    qos: QosReport,
    open_loop: Option<OpenLoopJson>,
    /// Per urgency class with `--class-depth`: (arrivals, blocked).
    class_open: Option<[(u64, u64); CLASSES]>,
    trace: Vec<TracePoint>,
}

/// One in-flight request of a job.
#[derive(Clone, Copy)]
struct Slot {
    /// Submit time (closed loop) or arrival time (open loop).
    started: Instant,
    read: bool,
    lba: u64,
    len: usize,
    class: u16,
}

/// Where the next request goes: a 4 KiB-aligned range of `len` bytes inside the job's region
/// of `units` 4 KiB units, random or following the previous one.
fn place(mode: Mode, rng: &mut Rng, seq: &mut u64, units: u64, len: u64) -> u64 {
    let k = len / SIZE_UNIT;
    match mode {
        Mode::SeqRead | Mode::SeqWrite => {
            if *seq + k > units {
                *seq = 0;
            }
            let u = *seq;
            *seq += k;
            u
        }
        _ => rng.next_u64() % (units - k + 1),
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
        backoff: o.backoff,
        batch: o.batch,
        ..HandleOptions::default()
    };
    o.qos.apply(&mut opts).map_err(|e| format!("core {core}: qos: {e}"))?;
    let mut h = dev.handle_with(core, opts).map_err(|e| format!("core {core}: handle: {e}"))?;
    o.qos.setup(&mut h, idx).map_err(|e| format!("core {core}: qos: {e}"))?;
    let units = o.size / SIZE_UNIT;
    let lbas_per_unit = SIZE_UNIT / 512;
    let base = u64::from(core) * units * lbas_per_unit;
    if base + units * lbas_per_unit > h.capacity_lbas() {
        return Err(format!("core {core}: {} bytes per core do not fit the namespace", o.size));
    }
    let max = o.sizes.max as usize;
    let mut bufs: Vec<Buffer> =
        (0..o.iodepth).map(|_| h.buf_alloc(max)).collect::<Result<_, _>>().map_err(|e| format!("core {core}: buffers: {e}"))?;
    let mut r = JobResult {
        core,
        priority,
        hist: latency_hist(),
        class_hist: (0..CLASSES).map(|_| latency_hist()).collect(),
        reads: 0,
        writes: 0,
        bytes: 0,
        errors: 0,
        verify_errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        cpu: Duration::ZERO,
        qos: QosReport::default(),
        open_loop: None,
        class_open: None,
        trace: Vec::new(),
    };
    // Pre-fill for verified read/mixed jobs, in requests of the largest size.
    if o.verify && !matches!(o.mode, Mode::SeqWrite | Mode::RandWrite) {
        let mut u = 0;
        while u < units {
            let len = (units - u).min(o.sizes.max / SIZE_UNIT) * SIZE_UNIT;
            let lba = base + u * lbas_per_unit;
            fill(&mut bufs[0], lba, len as usize);
            h.execute(Request::write(&bufs[0], lba).len(len as u32)).map_err(|e| format!("core {core}: prefill: {e}"))?;
            u += len / SIZE_UNIT;
        }
    }
    let mut rng = Rng::new(0x1234_5678 ^ (u64::from(core) << 32) | 1);
    let mut seq = 0u64;
    let t_start = Instant::now();
    let mut slots = vec![Slot { started: t_start, read: false, lba: 0, len: 0, class: priority }; o.iodepth];
    let mut done = vec![Completion { tag: 0, result: Ok(()) }; o.iodepth];
    let mut free: Vec<usize> = (0..o.iodepth).collect();
    let mut empty_polls = 0u32;
    // Open loop: Poisson arrivals; `offered`/`blocked` count them.
    let rate = o.rate.get(idx).copied().flatten();
    let mut arrivals = rate.map(|rate| Arrivals::new(rate, &mut rng));
    let (mut offered, mut blocked) = (0u64, 0u64);
    // --class-depth: requests outstanding, arrivals and blocked arrivals per urgency class.
    let mut class_out = [0usize; CLASSES];
    let mut class_open = [(0u64, 0u64); CLASSES];
    let class_idx = |c: u16| usize::from(c).min(CLASSES - 1);
    // --trace-ms: samples preallocated for the whole run (no allocation in the loop).
    let mut trace_hist = latency_hist();
    let mut trace_ios = 0u64;
    if let Some(step) = o.trace {
        let n = o.runtime.map_or(4096, |rt| (rt.as_nanos() / step.as_nanos().max(1)) as usize + 2);
        r.trace.reserve(n.min(1 << 20));
    }
    // CLOCK_THREAD_CPUTIME_ID is a real system call (no vDSO): read it outside the markers, so
    // the I/O loop between them stays free of system calls.
    let cpu0 = thread_cpu();
    mark(o.markers, 1);
    let t0 = Instant::now();
    let mut next_trace = o.trace.map(|s| t0 + s);
    let mut issued = 0u64;
    let mut completed = 0u64;
    let limit = o.ios.unwrap_or(u64::MAX);
    loop {
        let time_up = o.runtime.is_some_and(|rt| t0.elapsed() >= rt) || stop.load(Ordering::Relaxed);
        loop {
            if time_up || issued + blocked >= limit {
                break;
            }
            // Open loop: only arrivals that are due; a due arrival without a free slot is blocked.
            // With --class-depth the arrival's class is drawn here, and an arrival of a class
            // with --class-depth requests outstanding is blocked too.
            let mut drawn = None;
            let arrival = match arrivals.as_mut() {
                Some(a) => {
                    let due = t0 + a.due();
                    if Instant::now() < due {
                        break;
                    }
                    a.advance(&mut rng);
                    offered += 1;
                    if let (Some(n), Some(m)) = (o.class_depth, o.prio_mix.as_ref()) {
                        let c = m.pick(&mut rng);
                        class_open[class_idx(c)].0 += 1;
                        if class_out[class_idx(c)] >= n {
                            class_open[class_idx(c)].1 += 1;
                            blocked += 1;
                            continue;
                        }
                        drawn = Some(c);
                    }
                    if free.is_empty() {
                        blocked += 1;
                        if let Some(c) = drawn {
                            class_open[class_idx(c)].1 += 1;
                        }
                        continue;
                    }
                    Some(due)
                }
                None => None,
            };
            let Some(slot) = free.pop() else { break };
            let len = o.sizes.next(&mut rng);
            let lba = base + place(o.mode, &mut rng, &mut seq, units, len) * lbas_per_unit;
            let read = match o.mode {
                Mode::SeqRead | Mode::RandRead => true,
                Mode::SeqWrite | Mode::RandWrite => false,
                Mode::Mixed => (rng.next_u64() % 100) < u64::from(o.rwmix),
            };
            let class = drawn.unwrap_or_else(|| o.prio_mix.as_ref().map_or(priority, |m| m.pick(&mut rng)));
            if !read && o.verify {
                fill(&mut bufs[slot], lba, len as usize);
            }
            let req = if read { Request::read(&bufs[slot], lba) } else { Request::write(&bufs[slot], lba) };
            let req = req.len(len as u32).priority(class).tag(slot as u64);
            slots[slot] = Slot { started: arrival.unwrap_or_else(Instant::now), read, lba, len: len as usize, class };
            // Open loop and --adaptive: never wait inside submit. Under --adaptive the job keeps
            // as many requests outstanding as the controller's limit admits (a refused submit
            // tells the controller the limit held the application back), so its latency is
            // the application's, as at a fixed depth.
            let res = if arrival.is_some() || o.qos.adaptive { h.try_submit(req) } else { h.submit(req) };
            match res {
                Ok(_) => {
                    issued += 1;
                    class_out[class_idx(class)] += 1;
                }
                Err(nvmedl::Error::QueueFull) if arrival.is_some() => {
                    blocked += 1;
                    if let Some(c) = drawn {
                        class_open[class_idx(c)].1 += 1;
                    }
                    free.push(slot);
                }
                Err(nvmedl::Error::QueueFull) if o.qos.adaptive => {
                    free.push(slot);
                    break;
                }
                Err(e) => {
                    r.errors += 1;
                    r.first_error.get_or_insert(format!("submit: {e}"));
                    free.push(slot);
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        if completed == issued && (time_up || issued + blocked >= limit || stop.load(Ordering::Relaxed)) {
            break;
        }
        let n = match o.backoff {
            None => h.poll(&mut done),
            // Nothing outstanding (open loop between arrivals): sleep towards the next one.
            Some(b) if h.outstanding() == 0 => {
                if let Some(a) = arrivals.as_ref() {
                    let (due, now) = (t0 + a.due(), Instant::now());
                    if due > now {
                        std::thread::sleep((due - now).min(b.max_sleep));
                    }
                }
                0
            }
            Some(_) => match h.wait(&mut done) {
                Ok(n) => n,
                Err(e) => {
                    r.errors += issued - completed;
                    r.first_error.get_or_insert(format!("wait: {e}"));
                    break;
                }
            },
        };
        if n == 0 && o.yield_polls != 0 {
            empty_polls += 1;
            if empty_polls >= o.yield_polls {
                empty_polls = 0;
                std::thread::yield_now();
            }
        }
        for c in &done[..n] {
            let slot = c.tag as usize;
            let s = slots[slot];
            let ns = s.started.elapsed().as_nanos() as u64;
            r.hist.saturating_record(ns);
            r.class_hist[class_idx(s.class)].saturating_record(ns);
            class_out[class_idx(s.class)] = class_out[class_idx(s.class)].saturating_sub(1);
            if o.trace.is_some() {
                trace_hist.saturating_record(ns);
                trace_ios += 1;
            }
            completed += 1;
            r.bytes += s.len as u64;
            if s.read {
                r.reads += 1;
            } else {
                r.writes += 1;
            }
            match c.result {
                Err(e) => {
                    r.errors += 1;
                    r.first_error.get_or_insert(format!("LBA {}: {e}", s.lba));
                }
                Ok(()) if o.verify && s.read && !check(&bufs[slot], s.lba, s.len) => {
                    r.verify_errors += 1;
                    r.first_error.get_or_insert(format!("verify mismatch at LBA {}", s.lba));
                }
                Ok(()) => {}
            }
            free.push(slot);
        }
        if n > 0 {
            progress.fetch_add(n as u64, Ordering::Relaxed);
        }
        if let (Some(at), Some(step)) = (next_trace, o.trace) {
            let now = Instant::now();
            if now >= at && r.trace.len() < r.trace.capacity() {
                let p99 = if trace_ios == 0 { 0.0 } else { trace_hist.value_at_quantile(0.99) as f64 / 1000.0 };
                let t_ms = (now - t0).as_secs_f64() * 1000.0;
                r.trace.push(TracePoint { t_ms: round(t_ms, 1), iodepth: h.iodepth(), ios: trace_ios, p99_us: round(p99, 1) });
                trace_hist.reset();
                trace_ios = 0;
                next_trace = Some(at + step);
            }
        }
        if h.is_wedged() {
            r.errors += issued - completed;
            r.first_error.get_or_insert("engine timed out".into());
            break;
        }
    }
    r.elapsed = t0.elapsed();
    mark(o.markers, 2);
    r.cpu = thread_cpu().saturating_sub(cpu0);
    r.qos = QosReport::of(&h, o.qos.tenant_of(idx));
    r.class_open = o.class_depth.map(|_| class_open);
    r.open_loop = rate.map(|rate| OpenLoopJson {
        rate,
        offered,
        blocked,
        p_block: if offered == 0 { 0.0 } else { round(blocked as f64 / offered as f64, 5) },
    });
    Ok(r)
}

fn classes(o: &Opts, r: &JobResult) -> Vec<ClassJson> {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    (0..CLASSES)
        .filter(|&c| !r.class_hist[c].is_empty())
        .map(|c| ClassJson {
            priority: c as u16,
            ios: r.class_hist[c].len(),
            iops: round(r.class_hist[c].len() as f64 / secs, 1),
            lat_us: LatJson::of(&r.class_hist[c]),
            open_loop: r.class_open.map(|a| {
                let (offered, blocked) = a[c];
                let share = o.prio_mix.as_ref().map_or(0.0, |m| m.share(c as u16));
                OpenLoopJson {
                    rate: round(r.open_loop.map_or(0.0, |l| l.rate) * share, 1),
                    offered,
                    blocked,
                    p_block: if offered == 0 { 0.0 } else { round(blocked as f64 / offered as f64, 5) },
                }
            }),
        })
        .collect()
}

/// A job's CPU over its timed loop, in % of one core.
fn cpu_pct(r: &JobResult) -> f64 {
    100.0 * r.cpu.as_secs_f64() / r.elapsed.as_secs_f64().max(1e-9)
}

fn report(o: &Opts, results: &[JobResult], wall: Duration) -> bool {
    let mut all = latency_hist();
    // A job that could not even start (claim, buffers) has no result: the run failed.
    let mut ok = results.len() == o.cores.len();
    for r in results {
        // Same bounds: adding cannot fail.
        all.add(&r.hist).unwrap_or_else(|e| panic!("histogram merge: {e}"));
        ok &= r.errors == 0 && r.verify_errors == 0;
    }
    // Jobs run concurrently: the longest job's timed loop (prefill excluded) is the run time.
    let secs = results.iter().map(|r| r.elapsed).max().unwrap_or(wall).as_secs_f64().max(1e-9);
    let ios = all.len();
    let bytes: u64 = results.iter().map(|r| r.bytes).sum();
    let iops = ios as f64 / secs;
    let mbs = bytes as f64 / secs / 1e6;
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
                    bytes: r.bytes,
                    iops: round(r.hist.len() as f64 / s, 1),
                    mb_s: round(r.bytes as f64 / s / 1e6, 2),
                    cpu_pct: round(cpu_pct(r), 1),
                    lat_us: LatJson::of(&r.hist),
                    classes: classes(o, r),
                    qos: r.qos.clone(),
                    open_loop: r.open_loop,
                    trace: r.trace.clone(),
                    error: r.first_error.clone(),
                }
            })
            .collect();
        let run = RunJson {
            rw: format!("{:?}", o.mode),
            bs: o.sizes.bs,
            bs_dist: format!("{:?}", o.sizes.dist).to_lowercase(),
            bs_max: o.sizes.max,
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
        println!(
            "rw={:?} bs={} bs_dist={:?} iodepth={} jobs={} verify={}",
            o.mode,
            o.sizes.bs,
            o.sizes.dist,
            o.iodepth,
            results.len(),
            o.verify
        );
        for r in results {
            let lat = LatJson::of(&r.hist);
            println!(
                "  core {} prio {}: {} reads, {} writes, {:.0} IOPS, lat mean {:.1} us p99 {:.1} us, cpu {:.0}%, errors {} verify_errors {}{}",
                r.core,
                r.priority,
                r.reads,
                r.writes,
                r.hist.len() as f64 / r.elapsed.as_secs_f64().max(1e-9),
                lat.mean,
                lat.p99,
                cpu_pct(r),
                r.errors,
                r.verify_errors,
                r.first_error.as_ref().map_or(String::new(), |e| format!(" ({e})"))
            );
            if o.prio_mix.is_some() {
                for c in classes(o, r) {
                    println!("    class {}: {} I/Os, lat {}", c.priority, c.ios, c.lat_us.line());
                    if let Some(l) = c.open_loop {
                        println!("      open loop: {} arrivals, {} blocked (P_block {:.4})", l.offered, l.blocked, l.p_block);
                    }
                }
            }
            if let Some(l) = r.open_loop {
                println!("    open loop: {} arrivals at {:.0}/s, {} blocked (P_block {:.4})", l.offered, l.rate, l.blocked, l.p_block);
            }
            println!("    {}", r.qos.line());
        }
        println!("total: {ios} I/Os in {secs:.2} s: {iops:.0} IOPS, {mbs:.1} MB/s");
        println!("latency (us): {}", LatJson::of(&all).line());
        let cpu: f64 = results.iter().map(cpu_pct).sum();
        println!("cpu: {cpu:.0}% of one core over {} jobs (thread CPU time / timed loop)", results.len());
        println!("result: {}", if ok { "ok" } else { "FAILED" });
    }
    ok
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
