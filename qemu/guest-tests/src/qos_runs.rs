// SPDX-License-Identifier: MIT OR Apache-2.0
//! Issue 17's evidence runs through the tools (`make qos-evidence`, `make qos-advise`):
//!
//! * `mix`: `nvmedl-bench` 70/30 random read/write, exponentially distributed sizes (mean
//!   8 KiB, at most 64 KiB) at fixed depths 8, 16, 32, 64, 128 and with the adaptive
//!   controller (upper bound 128) at four delay targets, `QOS_REPEAT` rounds (default 2) of `QOS_MIX_SECS`
//!   seconds (default 5) each, in interleaved order; the bench's `--trace-ms 100` gives the
//!   depth over time.
//! * `advise`: the M/D/1/K validation. The service time D is measured as 1/IOPS of a
//!   saturated closed loop (QD 16, 4 KiB random reads; `make qos-advise` runs the SSD model
//!   with one command in flight, so the device is one deterministic server); then for
//!   offered loads ρ = 0.7, 0.95, 1.3 `nvmedl advise --service-us D --rate ρ/D` prints the
//!   model and `nvmedl-bench --rate ρ/D --iodepth K` (open loop, Poisson arrivals, arrivals
//!   that find K outstanding are blocked) measures K = 1, 2, 4, 8, 16.
//!
//! Output lines: `# qos-json <exp> <label> <bench JSON>` and `# qos-advise <rho> <line of the
//! model table>`, for `scripts/qos-plot.py`.

use crate::sys::sh;

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
    }
    ok
}

/// Mean of a JSON number field `"key":<number>` (the first occurrence).
fn field(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let end = json[at..].find([',', '}']).map(|e| at + e)?;
    json[at..end].parse().ok()
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
    let Some(iops) = field(&sat, "iops").filter(|&v| v > 0.0) else {
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

#[cfg(test)]
mod tests {
    #[test]
    fn field_reads_the_first_number() {
        let j = r#"{"rw":"RandRead","iops":1234.5,"lat_us":{"mean":3.0},"jobs":[{"iops":1.0}]}"#;
        assert_eq!(super::field(j, "iops"), Some(1234.5));
        assert_eq!(super::field(j, "mean"), Some(3.0));
        assert_eq!(super::field(j, "nope"), None);
    }
}
