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
//! * `isolation`: the mapping-isolation races alone;
//! * `knownbugs`: what raw ioctls still allow without the re-init protocol (not in `suite`);
//! * `fio`: Debian's fio through the directnvm ioengine (`make fio`);
//! * `ublk`: nvmedl-ublk: block device, ext4, fio verify, kill/recover, NVMe/TCP export.
//!
//! Every mode ends with the kernel-log check and the summary. The experiments (figures, not
//! assertions: `make wrr`, `figures`, `qos-evidence`, `bench-guest`, ...) are another binary,
//! `dnvm-guest-lab` (qemu/guest-lab).

use dnvm_guest_tests::fixtures::ublk_srv;
use dnvm_guest_tests::{
    drivers, errtable, faults, fio, fuzz, isolation, kdrv, klog, known_bugs, library, lifecycle, rawio, soak, stress, summary, tap, ublk,
};

/// The modes of the experiments binary (`dnvm-guest-lab`), named in the usage error.
const LAB_MODES: &str = "wrr|qos|qosadvise|qosadvisewrr|fiojob|figures|libbench|ublkbench|info";

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
        // The mapping-isolation races alone.
        "isolation" => {
            errtable::run(&mut t);
            isolation::run(&mut t, 1);
        }
        // fio through the directnvm ioengine: verification and bad-job refusals.
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
        "ublk" => ublk::run_mode(&mut t),
        other => {
            eprintln!("usage: dnvm-guest-tests [suite|reliability|isolation|knownbugs|fio|soak|fuzz|ublk] (got {other})");
            if LAB_MODES.split('|').any(|m| m == other) {
                eprintln!("{other} is an experiment: dnvm-guest-lab {other} (qemu/run.sh --lab {other})");
            }
            std::process::exit(2);
        }
    }
    klog::run(&mut t);
    summary::print(&t, t0.elapsed().as_secs_f64());
    let ok = t.finish();
    std::process::exit(if ok { 0 } else { 1 });
}
