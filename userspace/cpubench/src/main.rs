// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-cpubench`: host CPU per 4 KiB I/O on libnvmedl's software path vs io_uring, side by
//! side in one run on the same machine (DESIGN.md §6: "submit + complete, null device").
//!
//! ```text
//! nvmedl-cpubench [--ios N] [--reps R]            libnvmedl vs io_uring (make bench)
//! nvmedl-cpubench batch [--ios N] [--reps R]      the START batch sweep, 1..64 (make bench-batch)
//! nvmedl-cpubench idle [--trials N]               backoff: idle CPU and first-I/O-after-idle
//! nvmedl-cpubench lib --rev R --qd N [--batch B]  one libnvmedl case (for perf record)
//! ```
//!
//! * **libnvmedl** runs its real I/O path (`Handle::submit` → staging entries, barrier, START
//!   store; `Handle::poll` → START/DONE reads, rev 2 status words, completions) against a *null
//!   HDU*: register page, staging, status and data regions in ordinary memory and a device step
//!   that completes a started batch at once (START → 0, DONE → 1, rev 2 status words → done).
//!   The step runs on the same thread between polls, so its cost is counted against the
//!   library (conservative), and no second thread or scheduler noise is involved.
//! * **io_uring** (the `io-uring` crate, no SQPOLL): `IORING_OP_NOP` (the cheapest possible
//!   io_uring request) and `IORING_OP_READ` of 4 KiB from `/dev/null`, submitted and reaped with
//!   `io_uring_enter`. `pread(2)` of 4 KiB from `/dev/null` is printed as the plain-syscall
//!   reference.
//!
//! Each case runs `--ios` I/Os, `--reps` times; the best repetition is printed as wall ns per
//! I/O and thread CPU ns per I/O (`CLOCK_THREAD_CPUTIME_ID`, user + kernel). Figures, not a test.
//!
//! `batch` (sweep.rs) and `idle` (idle.rs) are described in their modules.

mod cases;
mod idle;
mod nullhdu;
mod sweep;

use cases::{measure, pread_run, uring_run, LibCase, UringOp};
use directnvm_abi::{HDU_REV1, HDU_REV2};
use nvmedl::HandleOptions;

/// Host CPU per 4 KiB I/O: libnvmedl's submit+complete path on a null HDU vs io_uring, side
/// by side (figures, not a test).
#[derive(clap::Parser, Debug)]
#[command(name = "nvmedl-cpubench", version, after_help = "Exit status: 0 every case ran, 1 a case was unavailable, 2 usage error.")]
struct Cli {
    /// I/Os per case and repetition.
    #[arg(long, default_value = "1000000", value_parser = clap::value_parser!(u64).range(1..))]
    ios: u64,
    /// Repetitions per case; the best one is printed.
    #[arg(long, default_value = "3", value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// The START batch sweep: CPU per I/O and entries per START for batch 1..64, rev 1 and
    /// rev 2, QD1 and QD32 (uses --ios and --reps).
    Batch,
    /// Backoff of a waiting handle: its CPU while the device holds one I/O for N ms, and how
    /// late it sees the completion (spin vs the default backoff).
    Idle(idle::IdleArgs),
    /// One libnvmedl case (a target for `perf record`): best CPU ns/IO of --reps x --ios.
    Lib {
        /// HDU revision (1 or 2).
        #[arg(long, default_value = "2", value_parser = clap::value_parser!(u32).range(1..=2))]
        rev: u32,
        /// Requests per round.
        #[arg(long, default_value = "32", value_parser = clap::value_parser!(u64).range(1..=256))]
        qd: u64,
        /// The library's batch threshold (default: the library's default).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=512))]
        batch: Option<u64>,
    },
}

fn main() -> std::process::ExitCode {
    let Cli { ios, reps, cmd } = <Cli as clap::Parser>::parse();
    let ok = match cmd {
        None => compare(ios, reps),
        Some(Cmd::Batch) => sweep::batch_sweep(ios, reps),
        Some(Cmd::Idle(a)) => idle::idle(&a),
        Some(Cmd::Lib { rev, qd, batch }) => {
            let batch = batch.map_or(HandleOptions::default().batch, |b| b as usize);
            let r = LibCase::new(rev, qd as usize, batch).and_then(|mut c| measure(reps, ios, |n| c.run(n)));
            match r {
                Ok((w, c)) => {
                    println!("libnvmedl rev {rev} null HDU, QD{qd}, batch {batch}: wall {w:.1} ns/IO, CPU {c:.1} ns/IO");
                    true
                }
                Err(e) => {
                    println!("unavailable: {e}");
                    false
                }
            }
        }
    };
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}

/// libnvmedl vs io_uring and pread (`make bench`); false if a case was unavailable.
fn compare(ios: u64, reps: u32) -> bool {
    println!("# host CPU per 4 KiB I/O, submit + complete, best of {reps} x {ios} I/Os (thread CPU = user + kernel)");
    println!("{:<44} {:>10} {:>10}", "case", "wall ns/IO", "CPU ns/IO");
    let mut failed = false;
    let mut row = |name: &str, r: Result<(f64, f64), String>| -> Option<f64> {
        match r {
            Ok((w, c)) => {
                println!("{name:<44} {w:>10.1} {c:>10.1}");
                Some(c)
            }
            Err(e) => {
                println!("{name:<44} {:>21}", format!("unavailable: {e}"));
                failed = true;
                None
            }
        }
    };
    let mut lib = Vec::new();
    let mut uring = Vec::new();
    let mut uring_read = Vec::new();
    for qd in [1usize, 32] {
        for rev in [HDU_REV1, HDU_REV2] {
            let r = LibCase::new(rev, qd, qd).and_then(|mut c| measure(reps, ios, |n| c.run(n)));
            if let Some(c) = row(&format!("libnvmedl rev {rev} null HDU, QD{qd}"), r) {
                lib.push((qd, c));
            }
        }
        let r = uring_run(UringOp::Nop, qd).and_then(|f| measure(reps, ios, f));
        if let Some(c) = row(&format!("io_uring NOP, QD{qd}"), r) {
            uring.push((qd, c));
        }
        let r = uring_run(UringOp::ReadDevNull, qd).and_then(|f| measure(reps, ios, f));
        if let Some(c) = row(&format!("io_uring 4 KiB read /dev/null, QD{qd}"), r) {
            uring_read.push((qd, c));
        }
    }
    row("pread(2) 4 KiB /dev/null (syscall reference)", pread_run().and_then(|f| measure(reps, ios, f)));
    for qd in [1usize, 32] {
        let worst_lib = lib.iter().filter(|(q, _)| *q == qd).map(|(_, c)| *c).fold(0.0, f64::max);
        for (what, list) in [("NOP", &uring), ("4 KiB read /dev/null", &uring_read)] {
            if let Some((_, u)) = list.iter().find(|(q, _)| *q == qd) {
                if worst_lib > 0.0 {
                    println!("ratio QD{qd}: io_uring {what} CPU / libnvmedl CPU (slower revision) = {:.1}x", u / worst_lib);
                }
            }
        }
    }
    !failed
}
