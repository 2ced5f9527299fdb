// SPDX-License-Identifier: MIT OR Apache-2.0
//! Register accessors and the two barriers of the I/O path.
//!
//! Registers are aligned 64-bit volatile accesses (REQBUF must be one 64-bit store: the RTL
//! ignores WSTRB). Staging entries and status words are plain stores to the write-combining
//! mapping; `before_start` makes them visible to the non-snooping HDU before the START store,
//! `after_done` orders the reads of status words and data after the DONE read.

use std::sync::atomic::{fence, Ordering};

use directnvm_abi::HduReg;

/// Read the 64-bit register `reg` of the HDU page.
///
/// # Safety
/// `regs` must be the mapped HDU user page.
#[inline(always)]
pub unsafe fn rd(regs: *mut u64, reg: HduReg) -> u64 {
    // SAFETY: per the contract, an aligned register slot inside the mapped page.
    unsafe { core::ptr::read_volatile(regs.add(reg.slot())) }
}

/// Write the 64-bit register `reg` of the HDU page.
///
/// # Safety
/// As for [`rd`].
#[inline(always)]
pub unsafe fn wr(regs: *mut u64, reg: HduReg, v: u64) {
    // SAFETY: per the contract, an aligned register slot inside the mapped page.
    unsafe { core::ptr::write_volatile(regs.add(reg.slot()), v) }
}

/// Barrier between the staging/status stores and the START store.
#[inline(always)]
pub fn before_start() {
    fence(Ordering::SeqCst);
    // Outer-shareable store barrier: the Normal-NC (write-combining) entry stores reach the
    // point the HDU reads from before the Device-memory START store (docs/hardware.md §7.1).
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no memory or register effects beyond ordering.
    unsafe {
        core::arch::asm!("dmb oshst", options(nostack, preserves_flags))
    };
}

/// Barrier between observing DONE and reading status words or data buffers.
#[inline(always)]
pub fn after_done() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no memory or register effects beyond ordering.
    unsafe {
        core::arch::asm!("dmb oshld", options(nostack, preserves_flags))
    };
    fence(Ordering::SeqCst);
}
