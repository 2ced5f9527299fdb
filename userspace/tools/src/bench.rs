//! `nvmedl-bench`: a small fio-like benchmark on libnvmedl.
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

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvmedl::{Buffer, Completion, Device, HandleOptions, Request};

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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    SeqRead,
    SeqWrite,
    RandRead,
    RandWrite,
    Mixed,
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
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        mode: Mode::RandRead,
        rwmix: 70,
        bs: 4096,
        iodepth: 32,
        cores: vec![0],
        priority: vec![1],
        runtime: Some(Duration::from_secs(5)),
        ios: None,
        size: 8 << 20,
        verify: false,
        json: false,
        device: nvmedl::chardev::DEFAULT_DEVICE.into(),
        inproc: None,
        yield_polls: 0,
        batch: 1,
        markers: false,
    };
    let mut it = std::env::args().skip(1);
    let list = |s: &str| -> Result<Vec<u64>, String> { s.split(',').map(|x| num(x).ok_or(format!("bad number '{x}'"))).collect() };
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--rw" => {
                o.mode = match val()?.as_str() {
                    "seq-read" | "read" => Mode::SeqRead,
                    "seq-write" | "write" => Mode::SeqWrite,
                    "rand-read" | "randread" => Mode::RandRead,
                    "rand-write" | "randwrite" => Mode::RandWrite,
                    "mixed" | "randrw" => Mode::Mixed,
                    m => return Err(format!("unknown --rw {m}")),
                }
            }
            "--rwmix" => o.rwmix = num(&val()?).ok_or("bad --rwmix")?.min(100) as u32,
            "--bs" => o.bs = num(&val()?).ok_or("bad --bs")? as usize,
            "--iodepth" => o.iodepth = num(&val()?).ok_or("bad --iodepth")? as usize,
            "--batch" => o.batch = num(&val()?).ok_or("bad --batch")? as usize,
            "--cores" => o.cores = list(&val()?)?.into_iter().map(|c| c as u32).collect(),
            "--priority" => o.priority = list(&val()?)?.into_iter().map(|c| c as u16).collect(),
            "--runtime" => {
                o.runtime = Some(Duration::from_secs_f64(val()?.parse::<f64>().map_err(|_| "bad --runtime")?));
                o.ios = None;
            }
            "--ios" => {
                o.ios = Some(num(&val()?).ok_or("bad --ios")?);
                o.runtime = None;
            }
            "--size" => o.size = num(&val()?).ok_or("bad --size")?,
            "--verify" => o.verify = true,
            "--json" => o.json = true,
            "--device" => o.device = val()?,
            "--inproc" => o.inproc = Some(num(&val()?).ok_or("bad --inproc")? as u32),
            "--yield" => o.yield_polls = num(&val()?).ok_or("bad --yield")?.min(u64::from(u32::MAX)) as u32,
            "--syscall-markers" => o.markers = true,
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown option {a}")),
        }
    }
    if o.bs == 0
        || !o.bs.is_multiple_of(4096)
        || o.iodepth == 0
        || o.batch == 0
        || o.batch > o.iodepth
        || o.cores.is_empty()
        || o.size < o.bs as u64
    {
        return Err("bs must be a non-zero multiple of 4096, iodepth >= 1, 1 <= batch <= iodepth, size >= bs".into());
    }
    Ok(o)
}

fn num(s: &str) -> Option<u64> {
    let (s, mul) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1 << 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let v = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    v.checked_mul(mul)
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
    let opts = HandleOptions {
        capacity: o.iodepth.max(1) * 2,
        iodepth: o.iodepth,
        priority,
        yield_spins: o.yield_polls,
        batch: o.batch,
        ..HandleOptions::default()
    };
    let mut h = dev.handle_with(core, opts).map_err(|e| format!("core {core}: handle: {e}"))?;
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
    Ok(r)
}

fn open_device(o: &Opts) -> Result<Device, String> {
    match o.inproc {
        #[cfg(feature = "inproc")]
        Some(rev) => {
            let ip = nvmedl::inproc::InProc::start(nvmedl::inproc::InProcConfig::new(rev)).map_err(|e| e.to_string())?;
            Device::from_platform(ip).map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "inproc"))]
        Some(_) => Err("built without the inproc feature".into()),
        None => Device::open_path(&o.device).map_err(|e| format!("{}: {e}", o.device)),
    }
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
        let jobs: Vec<String> = results
            .iter()
            .map(|r| {
                let s = r.elapsed.as_secs_f64().max(1e-9);
                format!(
                    "{{\"core\":{},\"priority\":{},\"reads\":{},\"writes\":{},\"errors\":{},\"verify_errors\":{},\"iops\":{:.1},\"mb_s\":{:.2},\"lat_us\":{{\"mean\":{:.2},\"p50\":{:.2},\"p99\":{:.2},\"p999\":{:.2},\"stddev\":{:.2},\"max\":{:.2}}}{}}}",
                    r.core, r.priority, r.reads, r.writes, r.errors, r.verify_errors,
                    r.hist.n as f64 / s, r.hist.n as f64 * o.bs as f64 / s / 1e6,
                    us(r.hist.mean()), us(r.hist.percentile(50.0) as f64), us(r.hist.percentile(99.0) as f64),
                    us(r.hist.percentile(99.9) as f64), us(r.hist.stddev()), us(r.hist.max as f64),
                    r.first_error.as_ref().map_or(String::new(), |e| format!(",\"error\":\"{}\"", e.replace('"', "'")))
                )
            })
            .collect();
        println!(
            "{{\"rw\":\"{:?}\",\"bs\":{},\"iodepth\":{},\"verify\":{},\"seconds\":{:.3},\"ios\":{},\"iops\":{:.1},\"mb_s\":{:.2},\"lat_us\":{{\"mean\":{:.2},\"p50\":{:.2},\"p99\":{:.2},\"p999\":{:.2},\"stddev\":{:.2},\"max\":{:.2}}},\"ok\":{},\"jobs\":[{}]}}",
            o.mode, o.bs, o.iodepth, o.verify, secs, ios, iops, mbs,
            us(all.mean()), us(all.percentile(50.0) as f64), us(all.percentile(99.0) as f64),
            us(all.percentile(99.9) as f64), us(all.stddev()), us(all.max as f64), ok, jobs.join(",")
        );
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
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("nvmedl-bench: {e}");
            }
            eprintln!("usage: nvmedl-bench [--rw seq-read|seq-write|rand-read|rand-write|mixed] [--rwmix P] [--bs N] [--iodepth N] [--cores 0,1] [--priority P[,P..]] [--runtime S | --ios N] [--size BYTES] [--verify] [--json] [--device PATH] [--inproc REV] [--yield N] [--batch N] [--syscall-markers]");
            return ExitCode::from(2);
        }
    };
    let dev = match open_device(&o) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("nvmedl-bench: {e}");
            return ExitCode::from(1);
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
        ExitCode::from(1)
    }
}
