// SPDX-License-Identifier: MIT OR Apache-2.0
//! The QoS evidence runs through the tools (`make qos-evidence`, `make qos-advise`):
//!
//! * `mix`: `nvmedl-bench` 70/30 random read/write, exponentially distributed sizes (mean
//!   8 KiB, at most 64 KiB) at fixed depths 8, 16, 32, 64, 128 and with the adaptive
//!   controller (upper bound 128) at four delay targets, and with slow start (`--slow-start`,
//!   labels `adaptive-ss-*`) at the two largest, `QOS_REPEAT` rounds (default 2) of
//!   `QOS_MIX_SECS` seconds (default 5) each, in interleaved order; the bench's `--trace-ms
//!   100` gives the depth over time.
//! * `advise`: the M/D/1/K validation. The service time D is measured as 1/IOPS of a
//!   saturated closed loop (QD 16, 4 KiB random reads; `make qos-advise` runs the SSD model
//!   with one command in flight, so the device is one deterministic server); then for
//!   offered loads ρ = 0.7, 0.95, 1.3 `nvmedl advise --service-us D --rate ρ/D` prints the
//!   model and `nvmedl-bench --rate ρ/D --iodepth K` (open loop, Poisson arrivals, arrivals
//!   that find K outstanding are blocked) measures K = 1, 2, 4, 8, 16.
//!
//! * `advise_wrr`: the same per urgency class under the NVMe controller's WRR arbitration
//!   (`make qos-advise-wrr`, see `advise_wrr`).
//!
//! Output lines: `# qos-json <exp> <label> <bench JSON>`, `# qos-advise <rho> <line of the
//! model table>` and `# qos-advise-wrr <load> <model JSON>`, for `scripts/qos-plot.py`.

use dnvm_guest_tests::sys::sh;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Run `nvmedl-bench ARGS --json`; the JSON line.
fn bench(args: &str) -> Result<String, String> {
    let cmd = format!("/bin/nvmedl-bench {args} --json");
    let (ok, out) = sh(&cmd);
    let line = out.lines().find(|l| l.starts_with('{')).unwrap_or("").to_string();
    if ok && line.contains("\"ok\":true") {
        Ok(line)
    } else {
        Err(format!("`{cmd}` failed: {}", out.lines().rev().take(3).collect::<Vec<_>>().join(" | ")))
    }
}

fn emit(exp: &str, label: &str, r: Result<String, String>) -> bool {
    match r {
        Ok(line) => {
            println!("# qos-json {exp} {label} {line}");
            true
        }
        Err(e) => {
            println!("qos: {exp} {label}: {e}");
            false
        }
    }
}

/// The 70/30 mix at fixed depths and adaptive.
pub fn mix() -> bool {
    let secs = env("QOS_MIX_SECS", 5);
    let repeat = env("QOS_REPEAT", 2);
    // The library's default target (50 µs: no queueing to speak of on this device) and three
    // targets in the range of its service times (`make qos-evidence` runs the SSD model at
    // 12/6 MB/s: 2.7 ms per page and channel, so a 4 KiB read takes 2.8 ms and a 64 KiB write
    // 11 ms unqueued; fixed QD8 queues ~10 ms, QD128 ~150 ms).
    let targets = [env("QOS_TARGET_US", 50), env("QOS_TARGET2_US", 5_000), env("QOS_TARGET3_US", 20_000), env("QOS_TARGET4_US", 50_000)];
    let common = format!("--rw mixed --rwmix 70 --bs 8k --bs-dist exp --bs-max 64k --cores 0 --size 256M --trace-ms 100 --runtime {secs}");
    let mut ok = true;
    for round in 1..=repeat {
        for qd in [8, 16, 32, 64, 128] {
            ok &= emit("mix", &format!("fixed-{qd}/{round}"), bench(&format!("{common} --iodepth {qd}")));
        }
        for t in targets {
            ok &=
                emit("mix", &format!("adaptive-{t}us/{round}"), bench(&format!("{common} --iodepth 128 --adaptive --target-delay-us {t}")));
        }
        // Slow start (`--slow-start`) at the two targets where the limit has far to grow.
        for t in &targets[2..] {
            ok &= emit(
                "mix",
                &format!("adaptive-ss-{t}us/{round}"),
                bench(&format!("{common} --iodepth 128 --adaptive --slow-start --target-delay-us {t}")),
            );
        }
    }
    ok
}

/// The run's total IOPS from a bench JSON line (serde_json).
fn total_iops(json: &str) -> Option<f64> {
    serde_json::from_str::<serde_json::Value>(json).ok()?.get("iops")?.as_f64().filter(|&v| v > 0.0)
}

/// The M/D/1/K model next to the measured depth sweep.
pub fn advise() -> bool {
    let secs = env("QOS_ADVISE_SECS", 3);
    let sat = match bench(&format!("--rw rand-read --cores 0 --iodepth 16 --runtime {secs}")) {
        Ok(l) => l,
        Err(e) => {
            println!("qos: advise: saturation run: {e}");
            return false;
        }
    };
    let Some(iops) = total_iops(&sat) else {
        println!("qos: advise: no IOPS in {sat}");
        return false;
    };
    let service_us = 1e6 / iops;
    println!("# qos-json advise saturation {sat}");
    println!("# qos-advise service_us {service_us:.2}");
    let mut ok = true;
    for rho in [0.7, 0.95, 1.3] {
        let rate = rho / service_us * 1e6;
        let (aok, table) = sh(&format!("/bin/nvmedl advise --service-us {service_us:.2} --rate {rate:.0} --max-depth 16"));
        ok &= aok;
        for l in table.lines() {
            println!("# qos-advise {rho} {l}");
        }
        for k in [1, 2, 4, 8, 16] {
            ok &= emit(
                "advise",
                &format!("rho{rho}-K{k}"),
                bench(&format!("--rw rand-read --cores 0 --iodepth {k} --rate {rate:.0} --runtime {secs}")),
            );
        }
    }
    ok
}

/// The WRR sweep's jobs (`QOS_WRR_HANDLES`). On rev 2 with `--engines 4` each urgency class
/// has its own engine and NVMe submission queue on every HDU.
/// * 2 (default): one job (thread, handle, HDU) per class: high (1) on core 0, low (3) on
///   core 1, each with its own rate and depth K. Each HDU runs its own batches, so the
///   controller's WRR chooses between two queues that are fed independently.
/// * 1: one job on core 0 whose arrivals are high or low in proportion to the rates
///   (`--prio-mix`), at most K of each class outstanding (`--class-depth`). Both classes
///   share one HDU, whose batches complete as a whole (one running, one queued behind it),
///   so a high request waits for the low ones of the batch in flight.
fn wrr_jobs(handles: u64) -> &'static str {
    if handles == 1 {
        "--rw rand-read --cores 0"
    } else {
        "--rw rand-read --cores 0,1 --priority 1,3"
    }
}

/// `nvmedl-bench` arguments of the saturation run (closed loop): 16 per class, or 32 with the
/// classes drawn 1:1 on one handle.
fn wrr_saturation_args(handles: u64, secs: u64) -> String {
    if handles == 1 {
        format!("{} --iodepth 32 --prio-mix 1:1,3:1 --runtime {secs}", wrr_jobs(1))
    } else {
        format!("{} --iodepth 16 --runtime {secs}", wrr_jobs(2))
    }
}

/// How the WRR sweep splits a total offered load between the classes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Split {
    /// In proportion to the weights: every class offers the same per-class load λ_c·D·Σw/w_c
    /// as the total, so ρ > 1 backlogs both (the condition of the paper's model).
    Weights,
    /// Equal rates: the high class offers less than its share, the low class more.
    Even,
}

/// The loads of the WRR sweep: (label, total ρ, split).
const WRR_LOADS: [(&str, f64, Split); 3] =
    [("prop-rho1.3", 1.3, Split::Weights), ("prop-rho0.7", 0.7, Split::Weights), ("even-rho1.3", 1.3, Split::Even)];

/// Arrival rates (per second) of the high and low class for total load `rho` on a server of
/// service time `service_us`, weights `w` (high, low).
fn wrr_rates(rho: f64, service_us: f64, w: (u64, u64), split: Split) -> (f64, f64) {
    let total = rho / service_us * 1e6;
    match split {
        Split::Weights => {
            let hi = total * w.0 as f64 / (w.0 + w.1) as f64;
            (hi, total - hi)
        }
        Split::Even => (total / 2.0, total / 2.0),
    }
}

/// `nvmedl advise` for the two classes at depths up to 16, as JSON.
fn wrr_advise_cmd(service_us: f64, rates: (f64, f64), w: (u64, u64)) -> String {
    format!(
        "/bin/nvmedl advise --service-us {service_us:.2} --rate {:.0} --classes {:.0}:{},{:.0}:{} --max-depth 16 --json",
        rates.0 + rates.1,
        rates.0,
        w.0,
        rates.1,
        w.1
    )
}

/// `--prio-mix` of the high and low class at these rates (weights in arrivals per second).
fn wrr_mix(rates: (f64, f64)) -> String {
    format!("1:{:.0},3:{:.0}", rates.0, rates.1)
}

/// `nvmedl-bench` arguments of one point of the sweep: Poisson arrivals per class, at most
/// `k` of each class outstanding. Two handles: a rate and depth per job. One handle: arrivals
/// at the sum of the rates, each of class high or low in proportion to its rate
/// (`--class-depth k`; `--iodepth` 2k, so only the class limits block).
fn wrr_bench_args(handles: u64, k: u64, rates: (f64, f64), secs: u64) -> String {
    if handles == 1 {
        format!(
            "{} --iodepth {} --rate {:.0} --prio-mix {} --class-depth {k} --runtime {secs}",
            wrr_jobs(1),
            2 * k,
            rates.0 + rates.1,
            wrr_mix(rates)
        )
    } else {
        format!("{} --iodepth {k} --rate {:.0},{:.0} --runtime {secs}", wrr_jobs(2), rates.0, rates.1)
    }
}

/// Per-class (urgency, IOPS) of a bench JSON line: per job when there are several, else the
/// first job's `classes`.
fn class_iops(json: &str) -> Vec<(u64, f64)> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    let jobs = v["jobs"].as_array().cloned().unwrap_or_default();
    let list = if jobs.len() > 1 { jobs } else { v["jobs"][0]["classes"].as_array().cloned().unwrap_or_default() };
    list.iter().filter_map(|c| Some((c["priority"].as_u64()?, c["iops"].as_f64()?))).collect()
}

/// The per-class (WRR) M/D/1/K model next to a measured depth sweep (`make qos-advise-wrr`):
/// rev 2 with one engine per urgency class, the SSD model with one command in flight, so the
/// NVMe controller's WRR arbitration among the engines' submission queues decides who is
/// served; a high and a low class (`wrr_jobs`) at weights `QOS_WRR_HIGH`:`QOS_WRR_LOW`
/// (default 3:1), open-loop Poisson arrivals per class, depths 1..16 per class, `QOS_ADVISE_SECS`
/// (default 4) seconds per point. D = 1/IOPS of both classes saturated together (closed loop,
/// `wrr_saturation_args`), measured before each load. Output: `# qos-json advise-wrr saturation-<load>
/// <bench JSON>`, `# qos-json advise-wrr <load>-K<k> <bench JSON>` and `# qos-advise-wrr <load>
/// <nvmedl advise --json>`.
pub fn advise_wrr() -> bool {
    let secs = env("QOS_ADVISE_SECS", 4);
    let w = (env("QOS_WRR_HIGH", 3).clamp(1, 256), env("QOS_WRR_LOW", 1).clamp(1, 256));
    let handles = env("QOS_WRR_HANDLES", 2).clamp(1, 2);
    println!("# qos-advise-wrr-info handles {handles}");
    // Burst 2^0: one command per arbitration turn; the ABI's weights are the weight minus one.
    let (aok, out) = sh(&format!("/bin/nvmedl arbitration 0 {} 0 {}", w.0 - 1, w.1 - 1));
    let (_, info) = sh("/bin/nvmedl info");
    let wrr = info.lines().any(|l| l.starts_with("arbitration") && l.contains("weighted round robin"));
    if !aok || !wrr {
        println!("qos: advise-wrr: needs weighted round robin (rev 2, --engines 4): {} | {info}", out.trim());
        return false;
    }
    // The weights read back from the controller (`identify`: Get Features Arbitration).
    let (_, ident) = sh("/bin/nvmedl identify");
    for l in info.lines().chain(ident.lines()).filter(|l| l.starts_with("arbitration")) {
        println!("# qos-advise-wrr-info {l}");
    }
    let mut ok = true;
    for (label, rho, split) in WRR_LOADS {
        // D again before every load: on the shared host the device's rate drifts with the
        // load of the other users, and the model of a load should use the D of its time.
        let sat = match bench(&wrr_saturation_args(handles, secs)) {
            Ok(l) => l,
            Err(e) => {
                println!("qos: advise-wrr: {label}: saturation run: {e}");
                ok = false;
                continue;
            }
        };
        let Some(iops) = total_iops(&sat) else {
            println!("qos: advise-wrr: {label}: no IOPS in {sat}");
            ok = false;
            continue;
        };
        let service_us = 1e6 / iops;
        println!("# qos-json advise-wrr saturation-{label} {sat}");
        println!(
            "qos: advise-wrr: {label}: D {service_us:.1} us, saturated (class, IOPS) = {:?} (weights {}:{})",
            class_iops(&sat),
            w.0,
            w.1
        );
        let rates = wrr_rates(rho, service_us, w, split);
        let (mok, model) = sh(&wrr_advise_cmd(service_us, rates, w));
        match model.lines().find(|l| l.starts_with('{')) {
            Some(line) if mok => println!("# qos-advise-wrr {label} {line}"),
            _ => {
                println!("qos: advise-wrr: {label}: nvmedl advise failed: {}", model.trim());
                ok = false;
            }
        }
        for k in [1, 2, 4, 8, 16] {
            ok &= emit("advise-wrr", &format!("{label}-K{k}"), bench(&wrr_bench_args(handles, k, rates, secs)));
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn total_iops_reads_the_run_total() {
        let j = r#"{"rw":"RandRead","iops":1234.5,"lat_us":{"mean":3.0},"jobs":[{"iops":1.0,"classes":[{"priority":1,"iops":900.5},{"priority":3,"iops":300}]}]}"#;
        assert_eq!(total_iops(j), Some(1234.5));
        assert_eq!(class_iops(j), vec![(1, 900.5), (3, 300.0)]);
        // Two jobs (one per class): the jobs' own figures.
        let j2 = r#"{"iops":5.0,"jobs":[{"priority":1,"iops":3.5,"classes":[{"priority":1,"iops":3.5}]},{"priority":3,"iops":1.5,"classes":[]}]}"#;
        assert_eq!(class_iops(j2), vec![(1, 3.5), (3, 1.5)]);
        assert_eq!(total_iops(r#"{"iops":0}"#), None);
        assert_eq!(total_iops("not json"), None);
        assert!(class_iops("{}").is_empty());
    }

    #[test]
    fn wrr_loads_split_by_weight_or_evenly() {
        // D = 200 µs, ρ = 1.3: 6500 arrivals per second in all.
        let (hi, lo) = wrr_rates(1.3, 200.0, (3, 1), Split::Weights);
        assert!((hi - 4875.0).abs() < 1e-6 && (lo - 1625.0).abs() < 1e-6, "{hi} {lo}");
        // Split by weight, each class's own load λ_c·D·Σw/w_c equals the total: both backlogged.
        for (rate, wc) in [(hi, 3.0), (lo, 1.0)] {
            assert!((rate * 200e-6 * 4.0 / wc - 1.3).abs() < 1e-9);
        }
        let (hi, lo) = wrr_rates(0.7, 100.0, (3, 1), Split::Even);
        assert!(hi == lo && (hi - 3500.0).abs() < 1e-6, "{hi} {lo}");
        // The sweep has one load with both classes backlogged and one below saturation.
        assert!(WRR_LOADS.iter().any(|l| l.1 > 1.0 && l.2 == Split::Weights));
        assert!(WRR_LOADS.iter().any(|l| l.1 < 1.0));
    }

    /// The command lines the sweep runs parse with the tools' own clap definitions.
    #[test]
    fn wrr_command_lines_parse_with_the_tools() {
        use nvmedl_tools::bench_cli::BenchCli;
        use nvmedl_tools::nvmedl_cli::{Command, NvmedlCli};
        let bench = |args: &str| {
            let b = BenchCli::try_parse_from(std::iter::once("nvmedl-bench").chain(args.split_whitespace())).unwrap();
            b.validate().unwrap();
            b
        };
        let rates = wrr_rates(1.3, 170.0, (3, 1), Split::Weights);
        // One handle: the class mix splits the arrivals 3:1, as the weights.
        let b = bench(&wrr_bench_args(1, 4, rates, 4));
        assert_eq!((b.cores.clone(), b.iodepth, b.class_depth), (vec![0], 8, Some(4)));
        assert_eq!(b.rate_of(0), Some((rates.0 + rates.1).round()));
        let m = b.prio_mix.unwrap();
        assert!((m.share(1) - 0.75).abs() < 1e-3 && (m.share(3) - 0.25).abs() < 1e-3, "{} {}", m.share(1), m.share(3));
        // Two handles: a job per class with its own rate.
        let b = bench(&wrr_bench_args(2, 4, rates, 4));
        assert_eq!((b.cores.clone(), b.priority.clone(), b.iodepth, b.class_depth), (vec![0, 1], vec![1, 3], 4, None));
        assert_eq!((b.rate_of(0), b.rate_of(1)), (Some(rates.0.round()), Some(rates.1.round())));
        for h in [1, 2] {
            let b = bench(&wrr_saturation_args(h, 4));
            assert!(b.rate.is_empty(), "the saturation run is a closed loop");
        }
        let cmd = wrr_advise_cmd(170.0, rates, (3, 1));
        let a = NvmedlCli::try_parse_from(cmd.split_whitespace()).unwrap();
        match a.command {
            Command::Advise { service_us, classes, max_depth, json, .. } => {
                assert_eq!((service_us, max_depth, json), (170.0, 16, true));
                assert_eq!(classes.iter().map(|c| c.weight).collect::<Vec<_>>(), vec![3.0, 1.0]);
            }
            other => panic!("{other:?}"),
        }
    }
}
