// SPDX-License-Identifier: MIT OR Apache-2.0
//! The staging-queue entry, the status word and the engine queue window.

use super::sizes::DNVM_URGENCY_CLASSES;

// ----------------------------------------------------------------------------------------------
// Staging-queue entry (24 bytes, little-endian) and status word.
// ----------------------------------------------------------------------------------------------

/// One request in a staging queue, exactly as the HDU fetches it (three 64-bit beats).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DnvmEntry {
    /// Operation: `DNVM_OP_READ`, `DNVM_OP_WRITE` (rev 1 uses bit 0 only), `DNVM_OP_FLUSH` (rev 2).
    pub op: u16,
    /// Urgency class 0 urgent, 1 high, 2 medium, 3 low (rev 2 routes by it; rev 1 ignores it).
    pub urgency: u16,
    /// Transfer size in bytes (rev 2: multiple of 4096, 0 means 4096; rev 1 ignores it).
    pub block_size: u32,
    /// Bus address of the data buffer, 4 KiB aligned.
    pub data_addr: u64,
    /// Starting LBA in 512-byte units.
    pub lba: u64,
}

/// Size of one staging entry in bytes.
pub const DNVM_ENTRY_SIZE: usize = 24;

impl DnvmEntry {
    /// The 24 bytes the HDU fetches: op, urgency, block_size, data_addr, lba, little-endian.
    /// Writers that cannot store the `repr(C)` struct directly (a byte-addressed mapping, the
    /// model's guest memory) use this, the one packing of the entry.
    pub fn to_bytes(self) -> [u8; DNVM_ENTRY_SIZE] {
        let mut b = [0u8; DNVM_ENTRY_SIZE];
        b[0..2].copy_from_slice(&self.op.to_le_bytes());
        b[2..4].copy_from_slice(&self.urgency.to_le_bytes());
        b[4..8].copy_from_slice(&self.block_size.to_le_bytes());
        b[8..16].copy_from_slice(&self.data_addr.to_le_bytes());
        b[16..24].copy_from_slice(&self.lba.to_le_bytes());
        b
    }

    /// Decode the first 24 bytes of `b` (as the HDU's fetch does); `None` if `b` is shorter.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < DNVM_ENTRY_SIZE {
            return None;
        }
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        Some(Self { op: u16_at(0), urgency: u16_at(2), block_size: u32_at(4), data_addr: u64_at(8), lba: u64_at(16) })
    }
}
/// Read from the SSD into the data buffer.
pub const DNVM_OP_READ: u16 = 0;
/// Write the data buffer to the SSD.
pub const DNVM_OP_WRITE: u16 = 1;
/// Flush the volatile write cache (rev 2 only; a rev 1 engine would issue a read).
pub const DNVM_OP_FLUSH: u16 = 2;
/// Urgency class: urgent (served before every WRR class).
pub const DNVM_URGENCY_URGENT: u16 = 0;
/// Urgency class: high.
pub const DNVM_URGENCY_HIGH: u16 = 1;
/// Urgency class: medium.
pub const DNVM_URGENCY_MEDIUM: u16 = 2;
/// Urgency class: low.
pub const DNVM_URGENCY_LOW: u16 = 3;

/// Engine of an HDU with `engines` engines that serves urgency class `urgency` (rev 2 routing).
pub const fn dnvm_engine_for_urgency(urgency: u16, engines: u32) -> u32 {
    let u = if urgency as u32 >= DNVM_URGENCY_CLASSES { DNVM_URGENCY_CLASSES - 1 } else { urgency as u32 };
    if engines == 0 {
        0
    } else {
        u * engines / DNVM_URGENCY_CLASSES
    }
}

/// Urgency class (NVMe QPRIO) of engine `engine` of an HDU with `engines` engines.
pub const fn dnvm_engine_qprio(engine: u32, engines: u32) -> u32 {
    match (engine * DNVM_URGENCY_CLASSES).checked_div(engines) {
        Some(class) => class,
        None => 0,
    }
}

/// NVMe I/O queue id used by engine `engine` of HDU `hdu` (lane i of the RTL is QID i+1).
pub const fn dnvm_qid(hdu: u32, engine: u32, engines: u32) -> u16 {
    (hdu * engines + engine + 1) as u16
}

/// Status word (rev 2), one little-endian u32 per entry at STATUSBUF + 4*i.
/// Bit 0: done. Bits 15:1: the NVMe status field of the CQE (DW3 bits 31:17: SC 8:1,
/// SCT 11:9, CRD 13:12, M 14, DNR 15). Bits 23:16: HDU error code (`DNVM_HDU_ERR_*`).
pub const DNVM_STATUS_DONE: u32 = 1 << 0;
/// Shift of the NVMe status field inside the status word.
pub const DNVM_STATUS_NVME_SHIFT: u32 = 1;
/// Mask of the NVMe status field (after shifting).
pub const DNVM_STATUS_NVME_MASK: u32 = 0x7fff;
/// Shift of the HDU error code inside the status word.
pub const DNVM_STATUS_HDU_SHIFT: u32 = 16;
/// No HDU-level error.
pub const DNVM_HDU_ERR_NONE: u32 = 0;
/// An address of the entry lies outside the DMA window; no data moved.
pub const DNVM_HDU_ERR_WINDOW: u32 = 1;
/// The entry was aborted by an engine reset.
pub const DNVM_HDU_ERR_ABORTED: u32 = 2;
/// The entry is malformed (unknown op, bad block size, misaligned buffer).
pub const DNVM_HDU_ERR_INVALID: u32 = 3;
/// The NVMe controller did not complete the command in time.
pub const DNVM_HDU_ERR_TIMEOUT: u32 = 4;

/// Build a status word.
pub const fn dnvm_status(nvme_status: u16, hdu_err: u32) -> u32 {
    DNVM_STATUS_DONE
        | (((nvme_status as u32) & DNVM_STATUS_NVME_MASK) << DNVM_STATUS_NVME_SHIFT)
        | ((hdu_err & 0xff) << DNVM_STATUS_HDU_SHIFT)
}
/// NVMe status field (SC | SCT<<8 | CRD<<11 | M<<13 | DNR<<14) of a status word.
pub const fn dnvm_status_nvme(word: u32) -> u16 {
    ((word >> DNVM_STATUS_NVME_SHIFT) & DNVM_STATUS_NVME_MASK) as u16
}
/// HDU error code of a status word.
pub const fn dnvm_status_hdu(word: u32) -> u32 {
    (word >> DNVM_STATUS_HDU_SHIFT) & 0xff
}

// ----------------------------------------------------------------------------------------------
// Engine queue window: memory of the NVMe I/O queues the engines own (BRAM on the board).
// ----------------------------------------------------------------------------------------------

/// Bytes of queue-window memory per engine queue; queue q (= QID - 1) starts at q * this.
pub const DNVM_QWIN_QUEUE_STRIDE: u64 = 0x2_0000;
/// Offset of the I/O submission queue inside a queue's memory.
pub const DNVM_QWIN_SQ_OFFSET: u64 = 0x0;
/// Offset of the PRP lists the rev 2 engine builds (one slot per command tag).
pub const DNVM_QWIN_PRP_OFFSET: u64 = 0x8000;
/// Bytes reserved for PRP lists per queue.
pub const DNVM_QWIN_PRP_SIZE: u64 = 0x8000;
/// Offset of the I/O completion queue inside a queue's memory.
pub const DNVM_QWIN_CQ_OFFSET: u64 = 0x1_0000;
