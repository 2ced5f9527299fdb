// SPDX-License-Identifier: MIT OR Apache-2.0
//! `dnvm-guest-lab libbench` (`make bench-guest`, docs/performance.md §4): `nvmedl-bench`
//! figures on the guest, then the library's CPU per I/O on the guest's CPU. Figures, not
//! assertions: a run fails only when a command fails.

use dnvm_guest_tests::library::{figures, run_ok};
use dnvm_guest_tests::tap::{Case, Tap};

/// The library's CPU per I/O on the guest's CPU: `nvmedl-cpubench lib` (a null HDU in the
/// process: no device, no emulated shared memory), rev 1 and 2 at QD1 and QD32. Against the
/// guest figures this separates the library's share of a guest I/O from the emulation's
/// (docs/performance.md §4). Each line is printed with a `# cpubench` prefix.
fn guest_cpubench() -> Case {
    for (rev, qd) in [(1, 1), (2, 1), (1, 32), (2, 32)] {
        let out = run_ok(&format!("/bin/busybox timeout 120 /bin/nvmedl-cpubench --ios 100000 --reps 3 lib --rev {rev} --qd {qd}"))?;
        let line = out.lines().find(|l| l.starts_with("libnvmedl rev")).ok_or_else(|| format!("rev {rev} QD{qd}: {out}"))?;
        println!("# cpubench {line}");
    }
    Ok(())
}

/// `dnvm-guest-lab libbench` (`make bench-guest`): the figures with 5-second runs, then the
/// library's CPU per I/O on the guest's CPU.
pub fn bench_mode() -> bool {
    let mut t = Tap::default();
    t.case("library: nvmedl-bench figures, 5 s per run", || figures(5));
    if std::env::var("DNVM_BENCH_RUNS").is_err() {
        t.case("library: nvmedl-cpubench on the guest CPU (null HDU, rev 1/2, QD1/QD32)", guest_cpubench);
    }
    t.finish()
}
