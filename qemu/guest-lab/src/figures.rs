// SPDX-License-Identifier: MIT OR Apache-2.0
//! `dnvm-guest-lab figures` (`make figures`): runs fio job files and prints each
//! run's JSON report (and fio's IOPS logs, where a job writes them) on the console between
//! marker lines, for the host's scripts/figures.py:
//!
//! ```text
//! DNVM-FIG-BEGIN <run> json            DNVM-FIG-BEGIN <run> log <file>
//! <fio's JSON report, one line>        <the log file's lines>
//! DNVM-FIG-END <run>                   DNVM-FIG-END <run>
//! ```
//!
//! `DNVM_FIGURES` picks the set:
//! * `baseline`: paper/baseline-cpu.fio, the directnvm engine vs the kernel nvme driver on
//!   QEMU's emulated NVMe (io_uring hipri, libaio, psync); boot it with the fake SSD's timing
//!   off (`--fake-arg --timing --fake-arg none`) so only the software paths are compared;
//! * `paper` (rev 2, 4 engines per HDU): the paper's jobs at the SSD model's default timing and
//!   configuration (boot it without `--max-inflight`: a cap of 8 commands inside the model
//!   would be the depth sweep's ceiling, not the engine);
//! * `arbitration` (rev 2, 4 engines per HDU, booted with `--fake-arg --max-inflight
//!   --fake-arg 8` as `make wrr`, so the controller's arbitration decides who is served): with
//!   the model slowed through the test mailbox (`DNVM_FIG_SLOW` permille, default 62500: 250k
//!   -> 4000 random-read IOPS, so the device is the bottleneck), the urgency job at WRR weights
//!   8:4:1 and the foreground/background job at WRR 1:1, 8:1 and 128:1. First, as a control,
//!   the depth sweep at the model's default speed under this boot's cap (`depth-sweep-capped`).
//!
//! A figure tool, not a test: true when every fio run exited 0 with a JSON report.

use directnvm_abi::{DnvmArbitration, TESTDEV_CMD_CLEAR_FAULTS, TESTDEV_CMD_SET_FAULT, TESTDEV_FAULT_SLOW};
use nvmedl::Device;

use dnvm_guest_tests::fio;
use dnvm_guest_tests::fixtures::mailbox::Mailbox;

const JOBS: &str = "/usr/share/directnvm/fio-jobs/paper";

/// Run `<JOBS>/<file>.fio` as run `run`; print its report and IOPS logs between markers.
fn run_job(run: &str, file: &str) -> bool {
    let path = format!("{JOBS}/{file}.fio");
    let job = match std::fs::read_to_string(&path) {
        Ok(j) => j,
        Err(e) => {
            println!("figures: {path}: {e}");
            return false;
        }
    };
    remove_logs();
    let r = match fio::fio(run, &job) {
        Ok(r) => r,
        Err(e) => {
            println!("figures: {run}: {e}");
            return false;
        }
    };
    print!("{}", r.stderr);
    let Some(j) = &r.json else {
        println!("figures: {run}: fio exit {} without a JSON report", r.code);
        return false;
    };
    println!("DNVM-FIG-BEGIN {run} json\n{j}\nDNVM-FIG-END {run}");
    for (name, text) in logs() {
        println!("DNVM-FIG-BEGIN {run} log {name}\n{}DNVM-FIG-END {run}", text);
    }
    if r.code != 0 {
        println!("figures: {run}: fio exit {}", r.code);
    }
    r.code == 0
}

/// fio's per-job IOPS logs (`write_iops_log=<prefix>` -> /tmp/<prefix>_iops.<n>.log).
fn logs() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir("/tmp")
        .map(|d| d.flatten().filter_map(|e| e.file_name().into_string().ok()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.contains("_iops.") && n.ends_with(".log"))
        .filter_map(|n| std::fs::read_to_string(format!("/tmp/{n}")).ok().map(|t| (n, t)))
        .collect();
    out.sort();
    out
}

fn remove_logs() {
    for (n, _) in logs() {
        let _ = std::fs::remove_file(format!("/tmp/{n}"));
    }
}

/// Weights as the ratio high:medium:low (the ABI takes each minus one), burst 8 commands.
fn weights(d: &Device, high: u32, medium: u32, low: u32) -> Result<(), String> {
    let a = DnvmArbitration { burst: 3, high: high - 1, medium: medium - 1, low: low - 1 };
    d.set_arbitration(a).map_err(|e| format!("set arbitration {high}:{medium}:{low}: {e}"))?;
    println!("figures: WRR weights high:medium:low = {high}:{medium}:{low}");
    Ok(())
}

/// The rev 2 device with one engine per urgency class, its faults cleared.
fn rev2_engines4() -> Result<(Device, Mailbox), String> {
    let d = Device::open().map_err(|e| format!("open /dev/directnvm: {e}"))?;
    if d.hdu_info(0).map(|i| i.engines).unwrap_or(1) < 4 {
        return Err("needs a rev 2 device with 4 engines per HDU (--revision 2 --engines 4)".into());
    }
    let mb = Mailbox::open()?;
    mb.cmd(TESTDEV_CMD_CLEAR_FAULTS, &[])?;
    Ok((d, mb))
}

fn paper() -> Result<bool, String> {
    let _dev = rev2_engines4()?;
    let mut ok = true;
    for file in ["qd1-latency", "depth-sweep", "staging-sweep", "four-cores", "latency-stddev", "mix-70-30"] {
        ok &= run_job(file, file);
    }
    Ok(ok)
}

fn arbitration() -> Result<bool, String> {
    let (d, mb) = rev2_engines4()?;
    // Control run: the depth sweep again at the model's default speed, now under this boot's
    // cap on commands in flight (the paper boot's sweep has no cap).
    let mut ok = run_job("depth-sweep-capped", "depth-sweep");
    let slow = std::env::var("DNVM_FIG_SLOW").ok().and_then(|v| v.parse().ok()).unwrap_or(62_500u64);
    mb.cmd(TESTDEV_CMD_SET_FAULT, &[TESTDEV_FAULT_SLOW, slow])?;
    println!("figures: SSD model slowed to {slow} permille of its default speed");
    weights(&d, 8, 4, 1)?;
    ok &= run_job("urgency", "urgency");
    for (run, high) in [("wrr-1-1", 1), ("wrr-8-1", 8), ("wrr-128-1", 128)] {
        weights(&d, high, 1, 1)?;
        ok &= run_job(run, "wrr-fg-bg");
    }
    mb.cmd(TESTDEV_CMD_CLEAR_FAULTS, &[])?;
    weights(&d, 1, 1, 1)?;
    Ok(ok)
}

pub fn run() -> bool {
    let set = std::env::var("DNVM_FIGURES").unwrap_or_else(|_| "paper".into());
    let r = match set.as_str() {
        "baseline" => {
            if std::path::Path::new("/dev/nvme0n1").exists() {
                Ok(run_job("baseline-cpu", "baseline-cpu"))
            } else {
                Err("/dev/nvme0n1 missing (boot with qemu/run.sh --nvme)".into())
            }
        }
        "paper" => paper(),
        "arbitration" => arbitration(),
        other => Err(format!("DNVM_FIGURES={other}: expected paper, arbitration or baseline")),
    };
    match r {
        Ok(ok) => ok,
        Err(e) => {
            println!("figures: {e}");
            false
        }
    }
}
