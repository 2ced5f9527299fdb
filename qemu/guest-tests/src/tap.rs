// SPDX-License-Identifier: MIT OR Apache-2.0
//! Minimal TAP producer: one `ok`/`not ok` line per case, then `N passed, N failed`.

use std::fmt::Display;

/// Result of one case: `Err` carries the reason.
pub type Case = Result<(), String>;

/// Collects results and prints them as they come.
#[derive(Default)]
pub struct Tap {
    n: u32,
    passed: u32,
    failed: u32,
}

impl Tap {
    /// Run one named case and report it.
    pub fn case(&mut self, name: &str, f: impl FnOnce() -> Case) -> bool {
        self.n += 1;
        let r = f();
        match &r {
            Ok(()) => {
                self.passed += 1;
                println!("ok {} - {}", self.n, name);
            }
            Err(why) => {
                self.failed += 1;
                println!("not ok {} - {} # {}", self.n, name, why.replace('\n', " | "));
            }
        }
        r.is_ok()
    }

    /// Cases passed so far.
    pub fn passed(&self) -> u32 {
        self.passed
    }

    /// Cases failed so far.
    pub fn failed(&self) -> u32 {
        self.failed
    }

    /// Print the plan and the closing line; true if everything passed.
    pub fn finish(&self) -> bool {
        println!("1..{}", self.n);
        println!("{} passed, {} failed", self.passed, self.failed);
        self.failed == 0
    }
}

/// `Err` unless `cond`, with a formatted reason.
pub fn check(cond: bool, why: impl Display) -> Case {
    if cond {
        Ok(())
    } else {
        Err(why.to_string())
    }
}

/// `Err` unless `a == b`.
pub fn eq<T: PartialEq + std::fmt::Debug>(a: T, b: T, what: &str) -> Case {
    if a == b {
        Ok(())
    } else {
        Err(format!("{what}: got {a:?}, want {b:?}"))
    }
}
