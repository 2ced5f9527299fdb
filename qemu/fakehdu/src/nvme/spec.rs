//! NVMe 1.3 constants and the 64-byte SQE / 16-byte CQE formats.

/// Controller Capabilities (64-bit).
pub const REG_CAP: u64 = 0x00;
/// Version.
pub const REG_VS: u64 = 0x08;
/// Interrupt mask set (accepted, no interrupts are raised).
pub const REG_INTMS: u64 = 0x0c;
/// Interrupt mask clear.
pub const REG_INTMC: u64 = 0x10;
/// Controller Configuration.
pub const REG_CC: u64 = 0x14;
/// Controller Status.
pub const REG_CSTS: u64 = 0x1c;
/// Admin Queue Attributes.
pub const REG_AQA: u64 = 0x24;
/// Admin SQ base (64-bit).
pub const REG_ASQ: u64 = 0x28;
/// Admin CQ base (64-bit).
pub const REG_ACQ: u64 = 0x30;
/// First doorbell (SQ0 tail).
pub const REG_DOORBELL: u64 = 0x1000;

/// NVMe version 1.3.0.
pub const NVME_VS_1_3: u32 = 0x0001_0300;

/// CC.EN.
pub const CC_EN: u32 = 1;
/// CC.AMS value for weighted round robin with urgent priority class.
pub const CC_AMS_WRR: u32 = 1;
/// CSTS.RDY.
pub const CSTS_RDY: u32 = 1;
/// CSTS.CFS (controller fatal status).
pub const CSTS_CFS: u32 = 1 << 1;
/// CSTS.SHST = shutdown processing occurring.
pub const CSTS_SHST_OCCURRING: u32 = 1 << 2;
/// CSTS.SHST = shutdown processing complete.
pub const CSTS_SHST_COMPLETE: u32 = 2 << 2;

/// CC field accessors.
pub fn cc_css(cc: u32) -> u32 { (cc >> 4) & 7 }
/// CC.MPS.
pub fn cc_mps(cc: u32) -> u32 { (cc >> 7) & 0xf }
/// CC.AMS.
pub fn cc_ams(cc: u32) -> u32 { (cc >> 11) & 7 }
/// CC.SHN.
pub fn cc_shn(cc: u32) -> u32 { (cc >> 14) & 3 }
/// CC.IOSQES.
pub fn cc_iosqes(cc: u32) -> u32 { (cc >> 16) & 0xf }
/// CC.IOCQES.
pub fn cc_iocqes(cc: u32) -> u32 { (cc >> 20) & 0xf }

/// Admin opcodes.
pub mod admin {
    /// Delete I/O Submission Queue.
    pub const DELETE_SQ: u8 = 0x00;
    /// Create I/O Submission Queue.
    pub const CREATE_SQ: u8 = 0x01;
    /// Get Log Page.
    pub const GET_LOG_PAGE: u8 = 0x02;
    /// Delete I/O Completion Queue.
    pub const DELETE_CQ: u8 = 0x04;
    /// Create I/O Completion Queue.
    pub const CREATE_CQ: u8 = 0x05;
    /// Identify.
    pub const IDENTIFY: u8 = 0x06;
    /// Abort.
    pub const ABORT: u8 = 0x08;
    /// Set Features.
    pub const SET_FEATURES: u8 = 0x09;
    /// Get Features.
    pub const GET_FEATURES: u8 = 0x0a;
    /// Asynchronous Event Request.
    pub const ASYNC_EVENT: u8 = 0x0c;
}

/// NVM command set opcodes.
pub mod io {
    /// Flush.
    pub const FLUSH: u8 = 0x00;
    /// Write.
    pub const WRITE: u8 = 0x01;
    /// Read.
    pub const READ: u8 = 0x02;
}

/// Feature identifiers.
pub mod feat {
    /// Arbitration.
    pub const ARBITRATION: u8 = 0x01;
    /// Volatile Write Cache.
    pub const VOLATILE_WC: u8 = 0x06;
    /// Number of Queues.
    pub const NUM_QUEUES: u8 = 0x07;
}

/// Status field values (15 bits: SC | SCT << 8 | CRD << 11 | M << 13 | DNR << 14).
pub mod sc {
    /// Successful completion.
    pub const SUCCESS: u16 = 0x00;
    /// Invalid Command Opcode.
    pub const INVALID_OPCODE: u16 = 0x01;
    /// Invalid Field in Command.
    pub const INVALID_FIELD: u16 = 0x02;
    /// Data Transfer Error.
    pub const DATA_TRANSFER_ERROR: u16 = 0x04;
    /// Internal Error.
    pub const INTERNAL_ERROR: u16 = 0x06;
    /// Command Abort Requested.
    pub const ABORT_REQUESTED: u16 = 0x07;
    /// Command Aborted due to SQ Deletion.
    pub const ABORTED_SQ_DELETION: u16 = 0x08;
    /// Invalid Namespace or Format.
    pub const INVALID_NAMESPACE: u16 = 0x0b;
    /// Command Sequence Error.
    pub const COMMAND_SEQUENCE: u16 = 0x0c;
    /// Invalid PRP Offset.
    pub const INVALID_PRP_OFFSET: u16 = 0x13;
    /// LBA Out of Range.
    pub const LBA_OUT_OF_RANGE: u16 = 0x80;
    /// Command specific (SCT 1): Completion Queue Invalid.
    pub const CQ_INVALID: u16 = 0x100;
    /// Command specific: Invalid Queue Identifier.
    pub const INVALID_QID: u16 = 0x101;
    /// Command specific: Invalid Queue Size.
    pub const INVALID_QSIZE: u16 = 0x102;
    /// Command specific: Asynchronous Event Request Limit Exceeded.
    pub const AER_LIMIT: u16 = 0x105;
    /// Command specific: Invalid Log Page.
    pub const INVALID_LOG_PAGE: u16 = 0x109;
    /// Command specific: Invalid Queue Deletion.
    pub const INVALID_QUEUE_DELETION: u16 = 0x10c;
    /// Command specific: Feature Identifier Not Saveable.
    pub const FEATURE_NOT_SAVEABLE: u16 = 0x10d;
    /// Media error (SCT 2): Write Fault.
    pub const WRITE_FAULT: u16 = 0x280;
    /// Media error: Unrecovered Read Error.
    pub const UNRECOVERED_READ: u16 = 0x281;
    /// Do Not Retry bit.
    pub const DNR: u16 = 1 << 14;
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
        let dw0 = u32::from(self.opcode)
            | (u32::from(self.fuse & 3) << 8)
            | (u32::from(self.psdt & 3) << 14)
            | (u32::from(self.cid) << 16);
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
    pub fn cdw10(&self) -> u32 { self.cdw[0] }
    /// CDW11.
    pub fn cdw11(&self) -> u32 { self.cdw[1] }
    /// CDW12.
    pub fn cdw12(&self) -> u32 { self.cdw[2] }
    /// Starting LBA of a read/write (CDW11:CDW10).
    pub fn slba(&self) -> u64 { u64::from(self.cdw[0]) | (u64::from(self.cdw[1]) << 32) }
    /// Number of logical blocks, 1-based (CDW12 15:0 plus one).
    pub fn nblocks(&self) -> u32 { (self.cdw[2] & 0xffff) + 1 }
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
        (
            Self { dw0: dw(0), sqhd: dw2 as u16, sqid: (dw2 >> 16) as u16, cid: dw3 as u16, status: (dw3 >> 17) as u16 },
            (dw3 >> 16) & 1 == 1,
        )
    }
}

/// Address of the SQ `qid` tail doorbell (stride 4 bytes, CAP.DSTRD = 0).
pub fn sq_doorbell(bar: u64, qid: u16) -> u64 {
    bar + REG_DOORBELL + 8 * u64::from(qid)
}

/// Address of the CQ `qid` head doorbell.
pub fn cq_doorbell(bar: u64, qid: u16) -> u64 {
    bar + REG_DOORBELL + 8 * u64::from(qid) + 4
}
