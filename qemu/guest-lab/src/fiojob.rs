// SPDX-License-Identifier: MIT OR Apache-2.0
//! `dnvm-guest-lab fiojob`: one fio job file through the directnvm ioengine, figures on stdout.

use dnvm_guest_tests::fio::{fio, jobs};

/// `dnvm-guest-lab fiojob`: run the job file `DNVM_FIO_JOB` (e.g.
/// /usr/share/directnvm/fio-jobs/paper/qd1-latency.fio) through the engine, print fio's JSON
/// report and one `fio:` line per job and direction (IOPS, mean/p99 clat, stddev); true when
/// fio exited 0. A figure tool, not a test.
pub fn job_mode() -> bool {
    let Some(path) = std::env::var("DNVM_FIO_JOB").ok() else {
        println!("fiojob: set DNVM_FIO_JOB to a job file");
        return false;
    };
    let job = match std::fs::read_to_string(&path) {
        Ok(j) => j,
        Err(e) => {
            println!("fiojob: {path}: {e}");
            return false;
        }
    };
    let r = match fio("job", &job) {
        Ok(r) => r,
        Err(e) => {
            println!("fiojob: {e}");
            return false;
        }
    };
    print!("{}", r.stderr);
    if let Some(j) = &r.json {
        println!("{j}");
    }
    for j in jobs(&r).map(|v| v.as_slice()).unwrap_or(&[]) {
        for dir in ["read", "write"] {
            let d = &j[dir];
            if d["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let c = &d["clat_ns"];
            println!(
                "fio: {} {dir}: iops {:.0} clat mean {:.0} ns p99 {} ns stddev {:.0} ns",
                j["jobname"].as_str().unwrap_or("?"),
                d["iops"].as_f64().unwrap_or(0.0),
                c["mean"].as_f64().unwrap_or(0.0),
                c["percentile"]["99.000000"].as_u64().unwrap_or(0),
                c["stddev"].as_f64().unwrap_or(0.0)
            );
        }
    }
    r.code == 0
}
