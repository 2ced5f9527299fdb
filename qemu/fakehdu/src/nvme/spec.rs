// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVMe 1.3 constants and the 64-byte SQE / 16-byte CQE formats.

// The numbers (register offsets, opcodes, feature ids, status codes, register bits) are the
// shared ABI's `nvme` module, the same copy the kernel's bring-up uses.
pub use directnvm_abi::nvme::*;

/// Byte offset of register `off` (an `nvme::reg` offset) as a bus-address delta.
pub const fn r(off: usize) -> u64 {
    off as u64
}

/// CC field accessors.
pub fn cc_css(cc: u32) -> u32 {
    (cc >> 4) & 7
}
/// CC.MPS.
pub fn cc_mps(cc: u32) -> u32 {
    (cc >> 7) & 0xf
}
/// CC.AMS.
pub fn cc_ams(cc: u32) -> u32 {
    (cc >> CC_AMS_SHIFT) & 7
}
/// CC.SHN.
pub fn cc_shn(cc: u32) -> u32 {
    (cc >> CC_SHN_SHIFT) & 3
}
/// CC.IOSQES.
pub fn cc_iosqes(cc: u32) -> u32 {
    (cc >> 16) & 0xf
}
/// CC.IOCQES.
pub fn cc_iocqes(cc: u32) -> u32 {
    (cc >> 20) & 0xf
}

/// A submission queue entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sqe {
    /// Opcode (CDW0 7:0).
    pub opcode: u8,
    /// FUSE (CDW0 9:8).
    pub fuse: u8,
    /// PSDT (CDW0 15:14).
    pub psdt: u8,
    /// Command identifier (CDW0 31:16).
    pub cid: u16,
    /// Namespace id.
    pub nsid: u32,
    /// Metadata pointer.
    pub mptr: u64,
    /// PRP entry 1.
    pub prp1: u64,
    /// PRP entry 2.
    pub prp2: u64,
    /// CDW10..CDW15.
    pub cdw: [u32; 6],
}

fn le32(b: &[u8; 64], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn le64(b: &[u8; 64], off: usize) -> u64 {
    u64::from(le32(b, off)) | (u64::from(le32(b, off + 4)) << 32)
}

impl Sqe {
    /// Decode 64 bytes.
    pub fn from_bytes(b: &[u8; 64]) -> Self {
        let dw0 = le32(b, 0);
        let mut cdw = [0u32; 6];
        for (i, c) in cdw.iter_mut().enumerate() {
            *c = le32(b, 40 + 4 * i);
        }
        Self {
            opcode: dw0 as u8,
            fuse: ((dw0 >> 8) & 3) as u8,
            psdt: ((dw0 >> 14) & 3) as u8,
            cid: (dw0 >> 16) as u16,
            nsid: le32(b, 4),
            mptr: le64(b, 16),
            prp1: le64(b, 24),
            prp2: le64(b, 32),
            cdw,
        }
    }

    /// Encode 64 bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        let dw0 = u32::from(self.opcode) | (u32::from(self.fuse & 3) << 8) | (u32::from(self.psdt & 3) << 14) | (u32::from(self.cid) << 16);
        b[0..4].copy_from_slice(&dw0.to_le_bytes());
        b[4..8].copy_from_slice(&self.nsid.to_le_bytes());
        b[16..24].copy_from_slice(&self.mptr.to_le_bytes());
        b[24..32].copy_from_slice(&self.prp1.to_le_bytes());
        b[32..40].copy_from_slice(&self.prp2.to_le_bytes());
        for (i, c) in self.cdw.iter().enumerate() {
            b[40 + 4 * i..44 + 4 * i].copy_from_slice(&c.to_le_bytes());
        }
        b
    }

    /// CDW10.
    pub fn cdw10(&self) -> u32 {
        self.cdw[0]
    }
    /// CDW11.
    pub fn cdw11(&self) -> u32 {
        self.cdw[1]
    }
    /// CDW12.
    pub fn cdw12(&self) -> u32 {
        self.cdw[2]
    }
    /// Starting LBA of a read/write (CDW11:CDW10).
    pub fn slba(&self) -> u64 {
        u64::from(self.cdw[0]) | (u64::from(self.cdw[1]) << 32)
    }
    /// Number of logical blocks, 1-based (CDW12 15:0 plus one).
    pub fn nblocks(&self) -> u32 {
        (self.cdw[2] & 0xffff) + 1
    }
}

/// A completion queue entry (without the phase tag, which the queue owner adds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// DW0, command specific.
    pub dw0: u32,
    /// SQ head pointer.
    pub sqhd: u16,
    /// SQ identifier.
    pub sqid: u16,
    /// Command identifier.
    pub cid: u16,
    /// Status field (15 bits).
    pub status: u16,
}

impl Cqe {
    /// The first 12 bytes and DW3 (with `phase`), written DW3 last.
    pub fn encode(&self, phase: bool) -> ([u8; 12], u32) {
        let mut b = [0u8; 12];
        b[0..4].copy_from_slice(&self.dw0.to_le_bytes());
        b[8..10].copy_from_slice(&self.sqhd.to_le_bytes());
        b[10..12].copy_from_slice(&self.sqid.to_le_bytes());
        let dw3 = u32::from(self.cid) | (u32::from(phase) << 16) | (u32::from(self.status & 0x7fff) << 17);
        (b, dw3)
    }

    /// Decode 16 bytes; returns the entry and its phase tag.
    pub fn decode(b: &[u8; 16]) -> (Self, bool) {
        let dw = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        let dw2 = dw(2);
        let dw3 = dw(3);
        (Self { dw0: dw(0), sqhd: dw2 as u16, sqid: (dw2 >> 16) as u16, cid: dw3 as u16, status: (dw3 >> 17) as u16 }, (dw3 >> 16) & 1 == 1)
    }
}

/// Address of the SQ `qid` tail doorbell (stride 4 bytes, CAP.DSTRD = 0).
pub fn sq_doorbell(bar: u64, qid: u16) -> u64 {
    bar + r(reg::DOORBELL) + 8 * u64::from(qid)
}

/// Address of the CQ `qid` head doorbell.
pub fn cq_doorbell(bar: u64, qid: u16) -> u64 {
    bar + r(reg::DOORBELL) + 8 * u64::from(qid) + 4
}
