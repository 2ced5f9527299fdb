// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVMe 1.3 numbers and encodings, and bus addresses of the model's registers.

// The numbers and codecs (register fields, opcodes, status codes, SQE, CQE, Identify) are the
// shared ABI's `nvme` module, the same copy the kernel's bring-up uses.
pub use directnvm_abi::nvme::*;

/// Byte offset of register `off` (an `nvme::reg` offset) as a bus-address delta.
pub const fn r(off: usize) -> u64 {
    off as u64
}

/// Address of the SQ `qid` tail doorbell (the model's CAP.DSTRD is 0).
pub fn sq_doorbell(bar: u64, qid: u16) -> u64 {
    bar + r(doorbell(qid, false, 0))
}

/// Address of the CQ `qid` head doorbell.
pub fn cq_doorbell(bar: u64, qid: u16) -> u64 {
    bar + r(doorbell(qid, true, 0))
}
