// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl doctor`: one command that checks what a board needs before libnvmedl can run (the
//! device tree's carve-out and nodes, the modules, the bound drivers, the device nodes and the
//! caller's access to them, the bitstream's HDU revision, the controller) and says, for each
//! problem, what is wrong and how to fix it. Like SPDK's `setup.sh status`, it only reads: it
//! never loads a module, opens a device for I/O or claims a core.
//!
//! The checks read the filesystem below a root (`/` on a board; a directory tree in the tests),
//! so every diagnosis is tested on the host with a fabricated board (`tests`).

mod board;
mod checks;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub use board::Board;

/// How a check came out.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// As it should be.
    Ok,
    /// Works, but worth knowing (a core in use, a revision without reset support).
    Warn,
    /// libnvmedl cannot run until this is fixed.
    Fail,
    /// Not checked: an earlier failure hides it.
    Skip,
}

/// One check's result: what was looked at, what was found and, if wrong, how to fix it.
#[derive(Serialize, Clone, Debug)]
pub struct Finding {
    /// Short name of the check (`modules`, `device-nodes`...).
    pub check: &'static str,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do about it (empty when nothing needs doing).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

impl Finding {
    fn new(check: &'static str, status: Status, detail: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding { check, status, detail: detail.into(), fix: fix.into() }
    }
}

/// Every check, in dependency order (a later one is skipped when what it needs failed).
pub fn diagnose(board: &Board) -> Vec<Finding> {
    checks::run(board)
}

/// Whether the board can run libnvmedl (no check failed).
pub fn healthy(findings: &[Finding]) -> bool {
    findings.iter().all(|f| f.status != Status::Fail)
}

/// The report as text: one line per check, the fix indented below a problem.
pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let tag = match f.status {
            Status::Ok => "ok  ",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        };
        out.push_str(&format!("{tag} {:<14} {}\n", f.check, f.detail));
        if !f.fix.is_empty() {
            out.push_str(&format!("     {:<14} fix: {}\n", "", f.fix));
        }
    }
    let fails = findings.iter().filter(|f| f.status == Status::Fail).count();
    out.push_str(&if fails == 0 {
        "board ready for libnvmedl\n".to_string()
    } else {
        format!("{fails} problem(s) to fix before libnvmedl can run\n")
    });
    out
}
