// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-cpubench batch`: the START (doorbell) batch sweep. For the library's batch
//! threshold B in 1, 2, 4 .. 64, rev 1 and rev 2, QD1 and QD32, the libnvmedl case of
//! `make bench` (rounds of QD reads on the null HDU, the device step counted against the
//! library) prints CPU and wall ns per I/O and the mean entries per START.
//!
//! The threshold starts a batch once B requests are staged while the engine is idle; whatever
//! is staged when the engine goes idle again starts at the next poll, whatever B is. So at QD1
//! every START carries one entry (B only moves the START from `submit` to `poll` when B > 1),
//! and at QD32 a round is one START of B and one of 32 - B (one START of 32 for B ≥ 32).

use directnvm_abi::{HDU_REV1, HDU_REV2};

use crate::cases::{measure, LibCase};

/// The thresholds swept.
pub const BATCHES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Print the sweep table; false if a case failed.
pub fn batch_sweep(ios: u64, reps: u32) -> bool {
    println!("# START batch sweep: libnvmedl on the null HDU, rounds of QD 4 KiB reads, best of {reps} x {ios} I/Os");
    println!("| rev | QD | batch | CPU ns/IO | wall ns/IO | entries/START | STARTs/round |");
    println!("|----:|---:|------:|----------:|-----------:|--------------:|-------------:|");
    let mut ok = true;
    for rev in [HDU_REV1, HDU_REV2] {
        for qd in [1usize, 32] {
            for b in BATCHES {
                let r = LibCase::new(rev, qd, b).and_then(|mut c| {
                    let (w, cpu) = measure(reps, ios, |n| c.run(n))?;
                    let s = c.stats();
                    let starts = s.batches.max(1) as f64;
                    Ok((w, cpu, s.entries as f64 / starts, starts * qd as f64 / s.completed.max(1) as f64))
                });
                match r {
                    Ok((w, cpu, per, rounds)) => println!("| {rev} | {qd} | {b} | {cpu:.1} | {w:.1} | {per:.1} | {rounds:.2} |"),
                    Err(e) => {
                        println!("| {rev} | {qd} | {b} | unavailable: {e} | | | |");
                        ok = false;
                    }
                }
            }
        }
    }
    ok
}
