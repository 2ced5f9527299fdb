// SPDX-License-Identifier: MIT OR Apache-2.0
//! The guest test groups of the DirectNVM virtual board and the kit they share (TAP output,
//! system calls, the test mailbox, fio and `nvmedl-ublk` drivers). Two binaries use it: the
//! test binary `dnvm-guest-tests` (src/main.rs: the suites, each case an assertion) and the
//! experiments binary `dnvm-guest-lab` (qemu/guest-lab: figures, not assertions).

pub mod drivers;
pub mod errtable;
pub mod faults;
pub mod fio;
pub mod fixtures;
pub mod fuzz;
pub mod isolation;
pub mod kdrv;
pub mod klog;
pub mod known_bugs;
pub mod library;
pub mod lifecycle;
pub mod rawio;
pub mod soak;
pub mod stress;
pub mod summary;
pub mod sys;
#[cfg(test)]
mod syzlang;
pub mod tap;
pub mod ublk;
pub mod ublk_net;
pub mod ublk_stop;
pub mod ublk_unit;
