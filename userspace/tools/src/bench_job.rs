// SPDX-License-Identifier: MIT OR Apache-2.0
//! One `nvmedl-bench` job: the timed I/O loop of one core (one thread, one handle), its verify
//! pattern and its result (the engine and its options: `bench_run.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::bench_cli::Mode;
use crate::bench_load::{Arrivals, Rng, SIZE_UNIT};
use crate::bench_qos::QosReport;
use crate::bench_report::{latency_hist, round, thread_cpu, OpenLoopJson, TracePoint};
use crate::bench_run::{Opts, CLASSES, SYSCALL_MARK};
use hdrhistogram::Histogram;
use nvmedl::{Buffer, Completion, Device, HandleOptions, Request};

fn mark(on: bool, which: u64) {
    if on {
        // SAFETY: prctl with an unknown option only returns EINVAL.
        unsafe { libc::prctl(SYSCALL_MARK, which, 0u64, 0u64, 0u64) };
    }
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

pub(crate) struct JobResult {
    pub(crate) core: u32,
    pub(crate) priority: u16,
    pub(crate) hist: Histogram<u64>,
    /// Per urgency class.
    pub(crate) class_hist: Vec<Histogram<u64>>,
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) bytes: u64,
    pub(crate) errors: u64,
    pub(crate) verify_errors: u64,
    pub(crate) first_error: Option<String>,
    pub(crate) elapsed: Duration,
    /// The job thread's CPU time over the timed loop.
    pub(crate) cpu: Duration,
    pub(crate) qos: QosReport,
    pub(crate) open_loop: Option<OpenLoopJson>,
    /// Per urgency class with `--class-depth`: (arrivals, blocked).
    pub(crate) class_open: Option<[(u64, u64); CLASSES]>,
    pub(crate) trace: Vec<TracePoint>,
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

pub(crate) fn job(dev: &Device, o: &Opts, idx: usize, progress: &AtomicU64, stop: &AtomicBool) -> Result<JobResult, String> {
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
