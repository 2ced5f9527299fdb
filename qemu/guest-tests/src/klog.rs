// SPDX-License-Identifier: MIT OR Apache-2.0
//! Kernel-log checks: KUnit results of the modules and no splat of any kind.

use crate::sys::sh;
use crate::tap::{check, Tap};

/// Lines that mean the kernel found a bug (lockdep, KASAN, refcount, list debugging, oops...).
pub const SPLATS: &[&str] = &[
    "WARNING:",
    "BUG:",
    "Oops",
    "KASAN",
    "kernel BUG",
    "possible circular locking",
    "possible recursive locking",
    "inconsistent lock state",
    "suspicious RCU usage",
    "refcount_t:",
    "list_add corruption",
    "list_del corruption",
    "Call trace:",
    "UBSAN",
    "unreferenced object",
    "rust_panic",
    "panicked at",
];

/// Scan dmesg.
pub fn run(t: &mut Tap) {
    let (_, log) = sh("dmesg");
    t.case("KUnit suites of the modules ran and passed", || {
        // KTAP suite result line: "ok N directnvm_layout".
        let ran = log.lines().any(|l| {
            let l = l.split("] ").last().unwrap_or(l).trim();
            l.starts_with("ok ") && l.ends_with(" directnvm_layout")
        });
        let failed: Vec<&str> = log.lines().filter(|l| l.contains("not ok") && l.contains("directnvm")).collect();
        check(ran, "no passing KUnit result line for directnvm_layout in dmesg")?;
        check(failed.is_empty(), format!("KUnit failures: {failed:?}"))
    });
    // kmemleak reports after an explicit scan (auto-scan is off in the test kernel).
    let _ = std::fs::write("/sys/kernel/debug/kmemleak", "scan");
    let leaks = std::fs::read_to_string("/sys/kernel/debug/kmemleak").unwrap_or_default();
    t.case("kmemleak finds no leaked object", || {
        check(!leaks.contains("unreferenced object"), format!("kmemleak: {}", leaks.lines().take(12).collect::<Vec<_>>().join(" / ")))
    });
    let (_, log) = sh("dmesg");
    t.case("dmesg has no WARNING/BUG/Oops/KASAN/lockdep report", || {
        let bad: Vec<&str> = log.lines().filter(|l| SPLATS.iter().any(|s| l.contains(s))).take(20).collect();
        check(bad.is_empty(), format!("kernel reports: {}", bad.join(" / ")))
    });
}
