// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`'s latency statistics (the `hdrhistogram` crate) and the shapes of its
//! `--json` report.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::bench_qos::QosReport;

/// Histogram range: 1 ns .. 60 s.
pub const HIST_MAX_NS: u64 = 60_000_000_000;
/// Significant digits: 3 (0.1 % resolution).
pub const HIST_DIGITS: u8 = 3;

/// An empty latency histogram in nanoseconds (allocated once per job and class).
pub fn latency_hist() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts (checked by a test).
    Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_DIGITS).unwrap_or_else(|e| panic!("histogram bounds: {e}"))
}

/// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): the job's own CPU, which a
/// polling job spends even when the device is the bottleneck. Zero if the clock is missing.
pub fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the local it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Round to `digits` decimals (the JSON keeps the text report's precision).
pub fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

/// Latency summary in microseconds.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct LatJson {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Largest.
    pub max: f64,
}

impl LatJson {
    /// The summary of a histogram in nanoseconds.
    pub fn of(h: &Histogram<u64>) -> Self {
        let us = |v: f64| round(v / 1000.0, 2);
        if h.is_empty() {
            return LatJson { mean: 0.0, p50: 0.0, p99: 0.0, p999: 0.0, stddev: 0.0, max: 0.0 };
        }
        LatJson {
            mean: us(h.mean()),
            p50: us(h.value_at_quantile(0.50) as f64),
            p99: us(h.value_at_quantile(0.99) as f64),
            p999: us(h.value_at_quantile(0.999) as f64),
            stddev: us(h.stdev()),
            max: us(h.max() as f64),
        }
    }

    /// The text report's form.
    pub fn line(&self) -> String {
        format!(
            "mean {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} stddev {:.1} max {:.1}",
            self.mean, self.p50, self.p99, self.p999, self.stddev, self.max
        )
    }
}

/// One urgency class of a job (requests of that class only).
#[derive(Serialize, Clone, Debug)]
pub struct ClassJson {
    /// Urgency class (0 urgent .. 3 low).
    pub priority: u16,
    /// Completed requests.
    pub ios: u64,
    /// Completions per second (over the job's timed loop).
    pub iops: f64,
    /// Their latency.
    pub lat_us: LatJson,
    /// Open loop with `--prio-mix`: this class's arrivals (its share of `--rate`) and how many
    /// found `--class-depth` requests of the class outstanding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopJson>,
}

/// One `--trace-ms` sample of a job: the interval that ends at `t_ms`.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct TracePoint {
    /// Milliseconds since the job's timed loop began.
    pub t_ms: f64,
    /// In-flight limit in force (moves under `--adaptive`).
    pub iodepth: usize,
    /// Completions in the interval.
    pub ios: u64,
    /// Their p99 latency (µs; 0 with no completion).
    pub p99_us: f64,
}

/// The open-loop figures of a job (`--rate`).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct OpenLoopJson {
    /// Arrivals per second asked for.
    pub rate: f64,
    /// Arrivals generated.
    pub offered: u64,
    /// Arrivals that found `--iodepth` requests outstanding (dropped, not retried).
    pub blocked: u64,
    /// blocked / offered.
    pub p_block: f64,
}

/// One job of the `--json` report.
#[derive(Serialize)]
pub struct JobJson {
    /// Core.
    pub core: u32,
    /// Urgency class of the job (without `--prio-mix`).
    pub priority: u16,
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Failed requests.
    pub errors: u64,
    /// Verify mismatches.
    pub verify_errors: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Completions per second.
    pub iops: f64,
    /// MB (10^6 bytes) per second.
    pub mb_s: f64,
    /// The job thread's CPU time over its timed loop, in % of one core (`thread_cpu`).
    pub cpu_pct: f64,
    /// Latency of all requests (closed loop: submit to completion; open loop: arrival to
    /// completion).
    pub lat_us: LatJson,
    /// Per urgency class, classes with completions only.
    pub classes: Vec<ClassJson>,
    /// QoS summary.
    pub qos: QosReport,
    /// Open-loop figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopJson>,
    /// `--trace-ms` samples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TracePoint>,
    /// First error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `--json` report: one object on one line.
#[derive(Serialize)]
pub struct RunJson {
    /// I/O pattern.
    pub rw: String,
    /// Block size, or the mean of `--bs-dist exp`.
    pub bs: u64,
    /// Size distribution.
    pub bs_dist: String,
    /// Largest request.
    pub bs_max: u64,
    /// In-flight limit per job (the upper bound under `--adaptive`).
    pub iodepth: usize,
    /// Verified run.
    pub verify: bool,
    /// Length of the longest job's timed loop.
    pub seconds: f64,
    /// Completions.
    pub ios: u64,
    /// Completions per second.
    pub iops: f64,
    /// MB per second.
    pub mb_s: f64,
    /// Latency of every request.
    pub lat_us: LatJson,
    /// Every I/O succeeded.
    pub ok: bool,
    /// The jobs.
    pub jobs: Vec<JobJson>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_known_distribution() {
        let mut h = latency_hist();
        // 1..=1000 µs, one sample each.
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let s = LatJson::of(&h);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.002 + 0.01;
        assert!(near(s.mean, 500.5), "mean {}", s.mean);
        assert!(near(s.p50, 500.0), "p50 {}", s.p50);
        assert!(near(s.p99, 990.0), "p99 {}", s.p99);
        assert!(near(s.p999, 999.0), "p99.9 {}", s.p999);
        assert!(near(s.max, 1000.0), "max {}", s.max);
        // The standard deviation of a uniform 1..=1000 is 288.7.
        assert!((s.stddev - 288.7).abs() < 1.0, "stddev {}", s.stddev);
        assert!(s.line().starts_with("mean 500.5 p50 500.") && s.line().contains(" max 100"), "{}", s.line());
    }

    #[test]
    fn thread_cpu_advances_with_work() {
        let a = thread_cpu();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = thread_cpu() - a;
        // 20 ms of busy loop: the thread ran for most of it (a loaded host can steal some).
        assert!(used >= std::time::Duration::from_millis(2), "{used:?} after {x} spins");
        assert!(used <= t.elapsed() + std::time::Duration::from_millis(5), "{used:?}");
    }

    #[test]
    fn empty_and_out_of_range() {
        let mut h = latency_hist();
        assert_eq!(LatJson::of(&h).p99, 0.0);
        // Longer than the range: saturating_record keeps it at the top instead of failing.
        h.saturating_record(HIST_MAX_NS * 10);
        assert_eq!(h.len(), 1);
        assert!(LatJson::of(&h).max >= 59_000_000.0);
        assert_eq!(round(1.23456, 2), 1.23);
    }
}
