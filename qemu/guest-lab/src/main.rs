// SPDX-License-Identifier: MIT OR Apache-2.0
//! The experiments of the DirectNVM virtual board: figures, not assertions. A static aarch64
//! binary in the QEMU guest's initramfs beside the test binary (`dnvm-guest-tests`, the
//! suites), started by the init script for `qemu/run.sh --lab MODE`. Exit status 0 when every
//! run completed (every I/O succeeded, every tool exited 0); the figures are not judged.
//!
//! Usage: `dnvm-guest-lab MODE` with MODE
//! * `wrr`: the arbitration experiment, Figure 13 (`make wrr`);
//! * `qos`: the QoS evidence (`make qos-evidence`: two tiers under a burst, tenant boosting,
//!   the 70/30 mix at fixed depths vs adaptive); `qosadvise`: the M/D/1/K model next to a
//!   measured depth sweep (`make qos-advise`); `qosadvisewrr`: the same per urgency class
//!   under the controller's WRR (`make qos-advise-wrr`);
//! * `figures`: the paper's fio jobs or the kernel-stack baseline (DNVM_FIGURES), fio's JSON
//!   between console markers (`make figures`);
//! * `fiojob`: one fio job file (DNVM_FIO_JOB) through the engine, figures on stdout;
//! * `libbench`: library figures (`make bench-guest`);
//! * `ublkbench`: libnvmedl vs ublk vs NVMe/TCP figures;
//! * `info`: what the stack sees (`make demo`).

mod bench;
mod figures;
mod fiojob;
mod info;
mod qos_mix;
mod qos_runs;
mod ublk_bench;
mod wrr;

/// `make qos-evidence`: the three QoS experiments. `QOS_PARTS` (default
/// `tiers,tenants,mix`) picks some: the make target runs the mix on a slower SSD model than
/// the two level-1 experiments, in two boots.
fn qos_evidence() -> bool {
    let parts = std::env::var("QOS_PARTS").unwrap_or_else(|_| "tiers,tenants,mix".into());
    let want = |p: &str| parts.split(',').any(|x| x == p);
    let mut ok = true;
    if want("tiers") || want("tenants") {
        let d = match nvmedl::Device::open() {
            Ok(d) => d,
            Err(e) => {
                println!("qos: open /dev/directnvm: {e}");
                return false;
            }
        };
        if want("tiers") {
            ok &= qos_mix::tiers(&d);
        }
        if want("tenants") {
            ok &= qos_mix::tenants(&d);
        }
    }
    if want("mix") {
        ok &= qos_runs::mix();
    }
    ok
}

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if arg != "info" {
        println!("# kernel {}, lab mode {arg}", release.trim());
    }
    let ok = match arg.as_str() {
        "wrr" => wrr::run(),
        "qos" => qos_evidence(),
        "qosadvise" => qos_runs::advise(),
        "qosadvisewrr" => qos_runs::advise_wrr(),
        "fiojob" => fiojob::job_mode(),
        "figures" => figures::run(),
        "libbench" => bench::bench_mode(),
        "ublkbench" => ublk_bench::run(),
        "info" => info::show(),
        other => {
            eprintln!("usage: dnvm-guest-lab [wrr|qos|qosadvise|qosadvisewrr|fiojob|figures|libbench|ublkbench|info] (got {other:?})");
            std::process::exit(2);
        }
    };
    std::process::exit(if ok { 0 } else { 1 });
}
