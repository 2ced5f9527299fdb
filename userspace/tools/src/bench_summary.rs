// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`'s summary of a run: the text lines or the one JSON line (`--json`) built from
//! the jobs' results (the JSON types and histograms: `bench_report.rs`).

use std::time::Duration;

use crate::bench_job::JobResult;
use crate::bench_report::{latency_hist, round, ClassJson, JobJson, LatJson, OpenLoopJson, RunJson};
use crate::bench_run::{Opts, CLASSES};

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

pub(crate) fn report(o: &Opts, results: &[JobResult], wall: Duration) -> bool {
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
