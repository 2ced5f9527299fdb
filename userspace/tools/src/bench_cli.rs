// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`'s command line.

use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::bench_load::{PrioMix, SizeDist, Sizes};
use crate::parse_size;

/// The I/O pattern of every job.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum Mode {
    /// Sequential 4 KiB-aligned reads.
    #[value(name = "seq-read", alias = "read")]
    SeqRead,
    /// Sequential writes.
    #[value(name = "seq-write", alias = "write")]
    SeqWrite,
    /// Uniformly random reads.
    #[value(name = "rand-read", alias = "randread")]
    RandRead,
    /// Uniformly random writes.
    #[value(name = "rand-write", alias = "randwrite")]
    RandWrite,
    /// Random reads and writes, `--rwmix` percent reads.
    #[value(name = "mixed", alias = "randrw")]
    Mixed,
}

/// A small fio-like benchmark on libnvmedl: one job (one thread, one handle) per core.
///
/// Latency is submit to completion (arrival to completion with `--rate`), recorded into an
/// HDR histogram (hdrhistogram, 3 significant digits). Sizes take k/m/g suffixes (powers of
/// 1024) and 0x-hex.
/// Long runs print a progress line on standard error once a second.
#[derive(Parser, Debug, Clone)]
#[command(name = "nvmedl-bench", version, after_help = crate::EXIT_STATUS_HELP)]
pub struct BenchCli {
    /// I/O pattern.
    #[arg(long, value_enum, default_value = "rand-read")]
    pub rw: Mode,
    /// Percentage of reads in `--rw mixed` (values above 100 count as 100).
    #[arg(long, default_value = "70", value_parser = parse_size, value_name = "PERCENT")]
    pub rwmix: u64,
    /// Block size of every I/O: a non-zero multiple of 4096.
    #[arg(long, default_value = "4096", value_parser = parse_size, value_name = "BYTES")]
    pub bs: u64,
    /// Size distribution: fixed (every request `--bs`) or exp (exponential with mean `--bs`,
    /// rounded up to 4 KiB, at most `--bs-max`).
    #[arg(long, value_enum, default_value = "fixed")]
    pub bs_dist: SizeDist,
    /// Largest request of `--bs-dist exp` (a multiple of 4096; default 16 x `--bs`).
    #[arg(long, value_parser = parse_size, value_name = "BYTES")]
    pub bs_max: Option<u64>,
    /// Requests in flight per job.
    #[arg(long, default_value = "32", value_parser = parse_size, value_name = "N")]
    pub iodepth: u64,
    /// Cores to run one job on each (comma-separated).
    #[arg(long, default_value = "0", value_delimiter = ',', value_parser = parse_size, value_name = "CORE[,CORE..]")]
    pub cores: Vec<u64>,
    /// Urgency class of each job's requests, one per core in `--cores` order; the last one
    /// repeats for the remaining cores.
    #[arg(long, default_value = "1", value_delimiter = ',', value_parser = parse_size, value_name = "P[,P..]")]
    pub priority: Vec<u64>,
    /// Urgency class of every request drawn from CLASS:WEIGHT pairs (replaces `--priority`),
    /// e.g. `0:1,3:4` = 20 % class 0, 80 % class 3. The report adds per-class latency.
    #[arg(long, value_parser = PrioMix::parse, value_name = "P:W[,P:W..]")]
    pub prio_mix: Option<PrioMix>,
    /// Open loop: Poisson arrivals at this many requests per second per job, one rate per core
    /// in `--cores` order (the last one repeats for the remaining cores). An arrival that
    /// finds `--iodepth` requests outstanding is blocked (counted, dropped, not retried);
    /// latency runs from the arrival. The M/D/1/K measurement of `nvmedl advise` (one rate
    /// per urgency class, with `--priority`, for its WRR classes).
    #[arg(long, value_delimiter = ',', value_name = "IOPS[,IOPS..]")]
    pub rate: Vec<f64>,
    /// Open loop with `--prio-mix`: at most N requests of each urgency class outstanding; an
    /// arrival of a class that has N is blocked (counted per class: the JSON `classes[]`
    /// `open_loop`). One job then drives one M/D/1/K per class (the WRR model of `nvmedl
    /// advise --classes`); `--iodepth` must be at least N times the number of classes.
    #[arg(long, value_parser = parse_size, value_name = "N")]
    pub class_depth: Option<u64>,
    /// Every MS milliseconds record the in-flight limit, the completions and their p99
    /// (the JSON report's `trace` of each job).
    #[arg(long, value_parser = parse_size, value_name = "MS")]
    pub trace_ms: Option<u64>,
    /// Seconds of I/O per job (fractions allowed). The last of `--runtime`/`--ios` given wins.
    #[arg(long, default_value = "5", value_name = "SECONDS", overrides_with = "ios")]
    pub runtime: f64,
    /// Stop after N I/Os per job instead of after `--runtime`.
    #[arg(long, value_parser = parse_size, value_name = "N", overrides_with = "runtime")]
    pub ios: Option<u64>,
    /// Bytes of the namespace per job (job i uses the i-th range of this size).
    #[arg(long, default_value = "8M", value_parser = parse_size, value_name = "BYTES")]
    pub size: u64,
    /// Write an LBA-dependent pattern (pre-filling the range for read and mixed jobs) and check
    /// every byte read.
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON object (run totals and a `jobs` array) instead of text.
    #[arg(long)]
    pub json: bool,
    /// The engine's character device.
    #[arg(long, value_name = "PATH", default_value = nvmedl::chardev::DEFAULT_DEVICE)]
    pub device: String,
    /// Set the library's `yield_spins` and call sched_yield after N empty polls in a row
    /// (0: pure polling, no system call).
    #[arg(long = "yield", default_value = "0", value_parser = parse_size, value_name = "N")]
    pub yield_polls: u64,
    /// How the job waits for completions: spin (poll without a break, the default; no system
    /// call while I/O flows) or adaptive (the library's backoff: spin --backoff-spin-us after
    /// the last completion, then sched_yield for --backoff-yield-us, then sleep from
    /// --backoff-min-sleep-us doubling up to --backoff-max-sleep-us, the bound of the wake-up
    /// cost). With --rate an adaptive job also sleeps until the next arrival when nothing is
    /// outstanding.
    #[arg(long, value_enum, default_value = "spin")]
    pub backoff: BackoffMode,
    /// Spin phase of --backoff adaptive in microseconds (0..=1000000).
    #[arg(long, default_value = "50", value_parser = parse_size, value_name = "US")]
    pub backoff_spin_us: u64,
    /// Yield phase of --backoff adaptive in microseconds (0..=1000000).
    #[arg(long, default_value = "200", value_parser = parse_size, value_name = "US")]
    pub backoff_yield_us: u64,
    /// First sleep of --backoff adaptive in microseconds (1..=--backoff-max-sleep-us).
    #[arg(long, default_value = "10", value_parser = parse_size, value_name = "US")]
    pub backoff_min_sleep_us: u64,
    /// Longest sleep of --backoff adaptive in microseconds (..=100000): the bound of the
    /// wake-up cost.
    #[arg(long, default_value = "1000", value_parser = parse_size, value_name = "US")]
    pub backoff_max_sleep_us: u64,
    /// Start a batch once N requests are staged (the library's `batch`; 1 <= N <= iodepth).
    #[arg(long, default_value = "1", value_parser = parse_size, value_name = "N")]
    pub batch: u64,
    /// Bracket each job's timed I/O loop with prctl(0x444e564d, 1) and prctl(0x444e564d, 2)
    /// (EINVAL, no effect) so a tracer can count the loop's system calls.
    #[arg(long)]
    pub syscall_markers: bool,
    /// QoS (docs/qos.md).
    #[command(flatten)]
    pub qos: crate::bench_qos::QosArgs,
}

/// How a job waits for completions.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum BackoffMode {
    /// Poll without a break.
    Spin,
    /// The library's backoff (spin, yield, sleep) with the --backoff-* thresholds.
    Adaptive,
}

impl BenchCli {
    /// Check the combinations clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.bs == 0 || !self.bs.is_multiple_of(4096) {
            return Err(format!("--bs {} is not a non-zero multiple of 4096", self.bs));
        }
        if self.iodepth == 0 || self.batch == 0 || self.batch > self.iodepth {
            return Err(format!("need 1 <= --batch ({}) <= --iodepth ({})", self.batch, self.iodepth));
        }
        let sizes = self.sizes()?;
        if self.size < sizes.max {
            return Err(format!("--size {} is smaller than the largest request {}", self.size, sizes.max));
        }
        if self.rate.iter().any(|&r| !(r.is_finite() && r > 0.0 && r <= 1e8)) {
            return Err("--rate is a number of requests per second in (0, 1e8] (one per core)".into());
        }
        if self.rate.len() > self.cores.len() {
            return Err(format!("--rate has {} values for {} cores", self.rate.len(), self.cores.len()));
        }
        if let Some(n) = self.class_depth {
            let classes = self.prio_mix.as_ref().map_or(0, |m| m.classes().count() as u64);
            if self.rate.is_empty() || classes == 0 {
                return Err("--class-depth needs --rate and --prio-mix".into());
            }
            if n == 0 || n.saturating_mul(classes) > self.iodepth {
                return Err(format!("need 1 <= --class-depth ({n}) and {classes} x --class-depth <= --iodepth ({})", self.iodepth));
            }
        }
        if self.trace_ms == Some(0) {
            return Err("--trace-ms needs at least 1 ms".into());
        }
        if self.cores.is_empty() || self.priority.is_empty() {
            return Err("--cores and --priority need at least one value".into());
        }
        if self.cores.iter().any(|&c| c > u64::from(u32::MAX)) || self.priority.iter().any(|&p| p > u64::from(u16::MAX)) {
            return Err("a core or priority is out of range".into());
        }
        if !(self.runtime.is_finite() && self.runtime >= 0.0) {
            return Err(format!("--runtime {} is not a number of seconds", self.runtime));
        }
        self.backoff()?;
        self.qos.validate()
    }

    /// The library backoff of `--backoff adaptive` (`None` for spin).
    pub fn backoff(&self) -> Result<Option<nvmedl::Backoff>, String> {
        if self.backoff == BackoffMode::Spin {
            return Ok(None);
        }
        let us = |v: u64| Duration::from_micros(v.min(u64::from(u32::MAX)));
        let b = nvmedl::Backoff {
            spin: us(self.backoff_spin_us),
            yield_for: us(self.backoff_yield_us),
            min_sleep: us(self.backoff_min_sleep_us),
            max_sleep: us(self.backoff_max_sleep_us),
        };
        b.validate().map_err(|_| {
            "--backoff-spin-us and --backoff-yield-us are at most 1000000, 1 <= --backoff-min-sleep-us <= --backoff-max-sleep-us <= 100000".to_string()
        })?;
        Ok(Some(b))
    }

    /// The request sizes.
    pub fn sizes(&self) -> Result<Sizes, String> {
        Sizes::new(self.bs_dist, self.bs, self.bs_max.unwrap_or(self.bs.saturating_mul(16)))
    }

    /// Job `idx`'s open-loop arrival rate (`None`: closed loop).
    pub fn rate_of(&self, idx: usize) -> Option<f64> {
        self.rate.get(idx).or(self.rate.last()).copied()
    }

    /// The time limit, unless `--ios` replaces it.
    pub fn time_limit(&self) -> Option<Duration> {
        match self.ios {
            Some(_) => None,
            None => Some(Duration::from_secs_f64(self.runtime)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(line: &str) -> Result<BenchCli, clap::Error> {
        BenchCli::try_parse_from(std::iter::once("nvmedl-bench").chain(line.split_whitespace()))
    }

    #[test]
    fn definition_is_consistent() {
        BenchCli::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let o = parse("").unwrap();
        assert_eq!((o.rw, o.rwmix, o.bs, o.iodepth, o.size, o.batch, o.yield_polls), (Mode::RandRead, 70, 4096, 32, 8 << 20, 1, 0));
        assert_eq!((o.cores.clone(), o.priority.clone()), (vec![0], vec![1]));
        assert_eq!(o.time_limit(), Some(Duration::from_secs(5)));
        assert!(!o.verify && !o.json && !o.syscall_markers);
        assert!(o.prio_mix.is_none() && o.rate.is_empty() && o.trace_ms.is_none() && o.class_depth.is_none());
        assert_eq!(o.rate_of(0), None);
        assert_eq!(o.sizes().unwrap(), Sizes { dist: SizeDist::Fixed, bs: 4096, max: 4096 });
        assert!(o.validate().is_ok());
        assert_eq!((o.backoff, o.backoff().unwrap()), (BackoffMode::Spin, None));
    }

    #[test]
    fn backoff_flags() {
        let o = parse("--backoff adaptive").unwrap();
        assert_eq!(o.backoff().unwrap(), Some(nvmedl::Backoff::default()), "the flag defaults are the library's");
        let o = parse("--backoff adaptive --backoff-spin-us 5 --backoff-yield-us 0 --backoff-min-sleep-us 20 --backoff-max-sleep-us 100")
            .unwrap();
        let b = o.backoff().unwrap().unwrap();
        let us = Duration::from_micros;
        assert_eq!((b.spin, b.yield_for, b.min_sleep, b.max_sleep), (us(5), us(0), us(20), us(100)));
        o.validate().unwrap();
        for bad in ["--backoff-max-sleep-us 200000", "--backoff-min-sleep-us 0", "--backoff-min-sleep-us 2000", "--backoff-spin-us 2000000"]
        {
            let o = parse(&format!("--backoff adaptive {bad}")).unwrap();
            assert!(o.validate().is_err(), "{bad}");
        }
        assert!(parse("--backoff sometimes").is_err());
    }

    #[test]
    fn the_qos_evidence_command_lines() {
        let o = parse("--rw mixed --rwmix 70 --bs 16k --bs-dist exp --iodepth 128 --adaptive --trace-ms 100 --json").unwrap();
        assert_eq!(o.sizes().unwrap(), Sizes { dist: SizeDist::Exp, bs: 16 << 10, max: 256 << 10 });
        assert_eq!((o.trace_ms, o.qos.adaptive), (Some(100), true));
        o.validate().unwrap();
        let o = parse("--bs-dist exp --bs 8k --bs-max 64k --prio-mix 0:1,3:4 --rate 900 --iodepth 4").unwrap();
        assert_eq!(o.sizes().unwrap().max, 64 << 10);
        assert_eq!(o.prio_mix.clone().unwrap(), PrioMix::parse("0:1,3:4").unwrap());
        assert_eq!((o.rate.clone(), o.rate_of(0), o.rate_of(3)), (vec![900.0], Some(900.0), Some(900.0)));
        o.validate().unwrap();
    }

    #[test]
    fn class_depth_needs_an_open_loop_class_mix_that_fits_the_iodepth() {
        let o = parse("--cores 0 --rate 1000 --prio-mix 1:3,3:1 --class-depth 4 --iodepth 8").unwrap();
        o.validate().unwrap();
        assert_eq!(o.class_depth, Some(4));
        for bad in [
            "--rate 1000 --prio-mix 1:3,3:1 --class-depth 4 --iodepth 7",
            "--rate 1000 --prio-mix 1:3,3:1 --class-depth 0 --iodepth 8",
            "--prio-mix 1:3,3:1 --class-depth 4 --iodepth 8",
            "--rate 1000 --class-depth 4 --iodepth 8",
        ] {
            assert!(parse(bad).unwrap().validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn one_rate_per_class_for_the_wrr_sweep() {
        // `make qos-advise-wrr`: one job per urgency class, each with its own arrival rate.
        let o = parse("--rw rand-read --cores 0,1 --priority 1,3 --iodepth 4 --rate 4500,1500 --runtime 4 --json").unwrap();
        o.validate().unwrap();
        assert_eq!((o.rate_of(0), o.rate_of(1), o.rate_of(2)), (Some(4500.0), Some(1500.0), Some(1500.0)));
        assert_eq!(o.priority, vec![1, 3]);
        let o = parse("--cores 0,1,2 --rate 100,200").unwrap();
        o.validate().unwrap();
        assert_eq!(o.rate_of(2), Some(200.0), "the last rate repeats");
        assert!(parse("--cores 0 --rate 100,200").unwrap().validate().is_err(), "more rates than jobs");
        assert!(parse("--cores 0,1 --rate 100,0").unwrap().validate().is_err(), "every rate is checked");
        assert!(parse("--rate 100,x").is_err());
    }

    #[test]
    fn the_command_lines_the_guest_suite_and_demo_use() {
        let o = parse("--rw mixed --cores 2 --iodepth 32 --ios 3000 --size 4M --verify --json").unwrap();
        assert_eq!((o.rw, o.cores.clone(), o.ios, o.size, o.verify, o.json), (Mode::Mixed, vec![2], Some(3000), 4 << 20, true, true));
        assert_eq!(o.time_limit(), None);
        let o = parse("--rw seq-read --cores 0,1,2,3 --bs 128k --iodepth 64 --size 16M --batch 16 --runtime 5").unwrap();
        assert_eq!((o.rw, o.cores.clone(), o.bs, o.iodepth, o.batch), (Mode::SeqRead, vec![0, 1, 2, 3], 128 << 10, 64, 16));
        assert_eq!(o.time_limit(), Some(Duration::from_secs(5)));
        let o = parse("--rw rand-read --cores 0 --iodepth 32 --size 8M --ios 100000 --syscall-markers --yield 64").unwrap();
        assert!(o.syscall_markers);
        assert_eq!((o.ios, o.yield_polls), (Some(100000), 64));
        let o = parse("--rw rand-read --cores 0 --iodepth 32 --runtime 1").unwrap();
        assert_eq!(o.time_limit(), Some(Duration::from_secs(1)));
        let o = parse("--priority 0,3 --cores 0,1 --device /dev/d --rw randwrite").unwrap();
        assert_eq!((o.priority.clone(), o.device.as_str(), o.rw), (vec![0, 3], "/dev/d", Mode::RandWrite));
        // The in-process model is the host rig's (nvmedl-bench-inproc), not an option here.
        assert!(parse("--inproc 2").is_err());
        assert_eq!(parse("--runtime 0.5").unwrap().time_limit(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn last_of_runtime_and_ios_wins() {
        assert_eq!(parse("--runtime 2 --ios 10").unwrap().time_limit(), None);
        let o = parse("--ios 10 --runtime 2").unwrap();
        assert_eq!((o.ios, o.time_limit()), (None, Some(Duration::from_secs(2))));
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in ["--rw sideways", "--bs x", "--cores 0,a", "--frob", "--runtime", "--iodepth -1"] {
            assert_eq!(parse(bad).expect_err(bad).exit_code(), crate::EXIT_USAGE as i32, "{bad}");
        }
        assert!(parse("--prio-mix 5:1").is_err());
        for bad in [
            "--bs 1000",
            "--bs 0",
            "--iodepth 0",
            "--batch 33",
            "--size 1k",
            "--priority 70000",
            "--runtime=-1",
            "--runtime nan",
            "--bs-dist exp --bs 8k --bs-max 4k",
            "--bs-dist exp --bs-max 6000",
            "--bs-dist exp --bs 1m --size 8m",
            "--rate 0",
            "--rate=-5",
            "--rate inf",
            "--trace-ms 0",
        ] {
            assert!(parse(bad).unwrap().validate().is_err(), "{bad}");
        }
        for ok in ["--help", "--version", "-h", "-V"] {
            assert_eq!(parse(ok).expect_err(ok).exit_code(), 0, "{ok}");
        }
    }
}
