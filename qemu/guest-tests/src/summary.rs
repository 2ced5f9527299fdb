// SPDX-License-Identifier: MIT OR Apache-2.0
//! Counters of the reliability groups and the summary printed at the end of a run: cases
//! passed/failed, I/Os verified, faults injected and survived, fuzz iterations, kernel
//! warnings seen (dmesg lines matching `klog::SPLATS`; must be 0).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::tap::Tap;

/// I/Os (reads and writes) whose data was checked against the LBA + generation pattern.
pub static IOS_VERIFIED: AtomicU64 = AtomicU64::new(0);
/// Data mismatches found by any verified I/O (must stay 0).
pub static MISMATCHES: AtomicU64 = AtomicU64::new(0);
/// Faults injected through the fake device's test mailbox (or by killing/unbinding).
pub static FAULTS_INJECTED: AtomicU64 = AtomicU64::new(0);
/// Injected faults after which the stack did verified I/O again.
pub static FAULTS_SURVIVED: AtomicU64 = AtomicU64::new(0);
/// Fuzzer iterations (ioctl/mmap calls) executed.
pub static FUZZ_ITERS: AtomicU64 = AtomicU64::new(0);
/// Module load/unload cycles.
pub static RELOADS: AtomicU64 = AtomicU64::new(0);

/// Add `n` to a counter.
pub fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Relaxed);
}

/// dmesg lines that are kernel splats.
pub fn kernel_warnings() -> usize {
    let (_, log) = crate::sys::sh("dmesg");
    log.lines().filter(|l| crate::klog::SPLATS.iter().any(|s| l.contains(s))).count()
}

/// Print the summary block (TAP comments, before the plan line).
pub fn print(t: &Tap, secs: f64) {
    let g = |c: &AtomicU64| c.load(Relaxed);
    println!("# ---- summary ----");
    println!("# cases: {} passed, {} failed ({secs:.1} s)", t.passed(), t.failed());
    println!("# I/Os verified: {} (mismatches: {})", g(&IOS_VERIFIED), g(&MISMATCHES));
    println!("# faults injected: {}, survived: {}", g(&FAULTS_INJECTED), g(&FAULTS_SURVIVED));
    println!("# fuzz iterations: {}", g(&FUZZ_ITERS));
    println!("# module reload cycles: {}", g(&RELOADS));
    println!("# kernel warnings seen: {}", kernel_warnings());
}
