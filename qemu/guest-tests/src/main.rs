// SPDX-License-Identifier: MIT OR Apache-2.0
//! Guest-side test suite of the DirectNVM virtual board. Runs as a static aarch64 binary in the
//! QEMU guest's initramfs after the init script loaded directnvm.ko and hdu.ko; prints TAP and
//! ends with `N passed, N failed`. Exit status 0 only if every case passed.
//!
//! Usage: `dnvm-guest-tests MODE` with MODE
//! * `suite` (default): everything, reliability groups in their short forms;
//! * `soak`: `make soak` (SOAK_SECS, SOAK_MB, SOAK_DEPTH, SOAK_SEED);
//! * `fuzz`: `make fuzz` (FUZZ_ITERS, FUZZ_SEED) plus the concurrency races scaled up;
//! * `reliability`: only the reliability groups, in their suite forms;
//! * `knownbugs`: what raw ioctls still allow without the re-init protocol (not in `suite`);
//! * `libbench`: library figures (`make bench-guest`);
//! * `wrr`: the arbitration experiment (`make wrr`);
//! * `qos`: issue 17's QoS evidence (`make qos-evidence`: the 70/30 mix at fixed depths vs
//!   adaptive, two tiers under a burst, tenant boosting); `qosadvise`: the M/D/1/K model next
//!   to a measured depth sweep (`make qos-advise`); `qosadvisewrr`: the same per urgency class
//!   under the controller's WRR (`make qos-advise-wrr`);
//! * `fio`: Debian's fio through the directnvm ioengine (`make fio`; issue 15);
//! * `fiojob`: one fio job file (DNVM_FIO_JOB) through the engine, figures on stdout;
//! * `figures`: the paper's fio jobs or the kernel-stack baseline (DNVM_FIGURES), fio's JSON
//!   between console markers (`make figures`);
//! * `ublk`: nvmedl-ublk: block device, ext4, fio verify, kill/recover, NVMe/TCP export (issue 16);
//! * `ublkbench`: libnvmedl vs ublk vs NVMe/TCP figures (not in `make check`);
//! * `info`: demo output.
//!
//! Every mode that touches the kernel ends with the kernel-log check and the summary.

mod drivers;
mod errtable;
mod faults;
mod figures;
mod fio;
mod fuzz;
mod isolation;
mod kdrv;
mod klog;
mod known_bugs;
mod library;
mod lifecycle;
mod qos_mix;
mod qos_runs;
mod rawio;
mod soak;
mod stress;
mod summary;
mod sys;
#[cfg(test)]
mod syzlang;
mod tap;
mod ublk;
mod ublk_bench;
mod ublk_net;
mod ublk_srv;
mod ublk_stop;
mod ublk_unit;
mod wrr;

/// The reliability groups in their suite forms.
fn reliability(t: &mut tap::Tap) {
    soak::run_short(t);
    faults::run(t);
    stress::run(t, 1);
    isolation::run(t, 1);
    lifecycle::run_unbind(t);
    fuzz::run(t, 3000);
    known_bugs::run_fixed(t);
    // Last: reloads re-create the NVMe I/O queues under the engines (see lifecycle.rs).
    lifecycle::run_reload(t);
}

/// `make qos-evidence`: the three experiments of issue 17 item 5 (figures, not assertions).
/// `QOS_PARTS` (default `tiers,tenants,mix`) picks some: the make target runs the mix on a
/// slower SSD model than the two level-1 experiments, in two boots.
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
    let arg = std::env::args().nth(1).unwrap_or_else(|| "suite".into());
    // A writer process of the `ublk` mode (not a mode of its own: no TAP, no kernel checks).
    if arg == "ublk-writer" {
        let rest: Vec<String> = std::env::args().skip(2).collect();
        std::process::exit(ublk_srv::writer_main(&rest));
    }
    let t0 = std::time::Instant::now();
    // Which kernel this boot runs (make check boots 7.3 and, for the compat run, 7.2).
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    println!("# kernel {}, mode {arg}", release.trim());
    let mut t = tap::Tap::default();
    match arg.as_str() {
        "suite" => {
            drivers::run(&mut t);
            rawio::run(&mut t);
            kdrv::run(&mut t);
            library::run(&mut t);
            errtable::run(&mut t);
            reliability(&mut t);
        }
        // The reliability groups alone, in their suite forms (quicker to iterate on).
        "reliability" => reliability(&mut t),
        // The mapping-isolation races alone (issue 14).
        "isolation" => {
            errtable::run(&mut t);
            isolation::run(&mut t, 1);
        }
        // fio through the directnvm ioengine: verification and bad-job refusals (issue 15).
        "fio" => fio::run(&mut t),
        // Reproducers of the module bugs these groups found (fail or hang until fixed).
        "knownbugs" => known_bugs::run(&mut t),
        "soak" => {
            soak::run_soak(&mut t);
        }
        "fuzz" => {
            fuzz::run(&mut t, 200_000);
            stress::run(&mut t, 10);
            isolation::run(&mut t, 5);
        }
        // Benchmarks: figures on stdout, exit status = whether every I/O succeeded.
        "wrr" => std::process::exit(if wrr::run() { 0 } else { 1 }),
        "qos" => std::process::exit(if qos_evidence() { 0 } else { 1 }),
        "qosadvise" => std::process::exit(if qos_runs::advise() { 0 } else { 1 }),
        "qosadvisewrr" => std::process::exit(if qos_runs::advise_wrr() { 0 } else { 1 }),
        "fiojob" => std::process::exit(if fio::job_mode() { 0 } else { 1 }),
        "figures" => std::process::exit(if figures::run() { 0 } else { 1 }),
        "libbench" => std::process::exit(if library::bench_mode() { 0 } else { 1 }),
        "ublk" => ublk::run_mode(&mut t),
        "ublkbench" => std::process::exit(if ublk_bench::run() { 0 } else { 1 }),
        "info" => std::process::exit(if drivers::show() { 0 } else { 1 }),
        other => {
            eprintln!(
                "usage: dnvm-guest-tests [suite|reliability|isolation|knownbugs|fio|fiojob|figures|soak|fuzz|libbench|wrr|qos|qosadvise|qosadvisewrr|ublk|ublkbench|info] (got {other})"
            );
            std::process::exit(2);
        }
    }
    klog::run(&mut t);
    summary::print(&t, t0.elapsed().as_secs_f64());
    let ok = t.finish();
    std::process::exit(if ok { 0 } else { 1 });
}
