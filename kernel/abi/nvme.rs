// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVMe 1.3 spec codecs: the only encoding of register fields, SQEs, CQEs and Identify data in
//! the tree, shared by the kernel's bring-up (`bringup`), the controller model
//! (qemu/fakehdu/src/nvme) and the test hosts. Not part of the C header.

/// Controller register offsets in the BAR (§3.1).
pub mod reg {
    /// Controller Capabilities (64-bit).
    pub const CAP: usize = 0x00;
    /// Version.
    pub const VS: usize = 0x08;
    /// Interrupt Mask Set.
    pub const INTMS: usize = 0x0c;
    /// Interrupt Mask Clear.
    pub const INTMC: usize = 0x10;
    /// Controller Configuration.
    pub const CC: usize = 0x14;
    /// Controller Status.
    pub const CSTS: usize = 0x1c;
    /// Admin Queue Attributes.
    pub const AQA: usize = 0x24;
    /// Admin SQ base address (64-bit).
    pub const ASQ: usize = 0x28;
    /// Admin CQ base address (64-bit).
    pub const ACQ: usize = 0x30;
    /// First doorbell (SQ 0 tail); queue y's SQ tail is at DOORBELL + 2y * (4 << CAP.DSTRD),
    /// its CQ head one stride further.
    pub const DOORBELL: usize = 0x1000;
}

/// Admin command opcodes (§5).
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

/// NVM command set opcodes (§6).
pub mod io {
    /// Flush.
    pub const FLUSH: u8 = 0x00;
    /// Write.
    pub const WRITE: u8 = 0x01;
    /// Read.
    pub const READ: u8 = 0x02;
}

/// Feature identifiers (§5.21.1).
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

// ----------------------------------------------------------------------------------------------
// Register fields: CAP (§3.1.1), CC (§3.1.5), CSTS (§3.1.6), AQA (§3.1.8), doorbells (§3.1.10)
// ----------------------------------------------------------------------------------------------

/// NVMe version 1.3.0 (VS register value).
pub const VS_1_3: u32 = 0x0001_0300;
/// CAP.CQR bit 16: I/O queues must be physically contiguous.
pub const CAP_CQR: u64 = 1 << 16;
/// CAP.AMS bit 17: weighted round robin with urgent priority class supported.
pub const CAP_AMS_WRR: u64 = 1 << 17;
/// CAP.CSS bit 37: NVM command set supported.
pub const CAP_CSS_NVM: u64 = 1 << 37;

/// CAP value of a controller with queues of up to `max_entries` entries (CAP.MQES + 1, clamped
/// to 2..=65536), CAP.TO = `timeout_500ms`, and the `flags` (`CAP_CQR`, `CAP_AMS_WRR`,
/// `CAP_CSS_NVM`); DSTRD = 0 and MPSMIN = MPSMAX = 0 (4 KiB pages).
pub const fn cap_encode(max_entries: u32, timeout_500ms: u8, flags: u64) -> u64 {
    let e = if max_entries < 2 {
        2
    } else if max_entries > 65536 {
        65536
    } else {
        max_entries
    };
    (e as u64 - 1) | ((timeout_500ms as u64) << 24) | flags
}
/// CAP.MQES + 1: the largest queue size in entries.
pub const fn cap_max_entries(cap: u64) -> u32 {
    (cap & 0xffff) as u32 + 1
}
/// CAP.TO in milliseconds (at least 500: a controller reporting 0 still gets one unit).
pub const fn cap_timeout_ms(cap: u64) -> u32 {
    let to = ((cap >> 24) & 0xff) as u32;
    (if to == 0 { 1 } else { to }) * 500
}
/// CAP.DSTRD: doorbell stride is `4 << dstrd` bytes.
pub const fn cap_dstrd(cap: u64) -> u32 {
    ((cap >> 32) & 0xf) as u32
}
/// CAP.MPSMIN: smallest memory page size is `4096 << mpsmin`.
pub const fn cap_mpsmin(cap: u64) -> u32 {
    ((cap >> 48) & 0xf) as u32
}

/// CC.EN.
pub const CC_EN: u32 = 1;
/// Shift of the CC.AMS field (bits 13:11).
pub const CC_AMS_SHIFT: u32 = 11;
/// CC.AMS field value: weighted round robin with urgent priority class.
pub const CC_AMS_WRR: u32 = 1;
/// Shift of the CC.SHN field (bits 15:14).
pub const CC_SHN_SHIFT: u32 = 14;
/// CC.SHN field value: normal shutdown.
pub const CC_SHN_NORMAL: u32 = 1;
/// CC.IOSQES (bits 19:16) and CC.IOCQES (bits 23:20) for 64-byte SQEs and 16-byte CQEs.
pub const CC_IOQES: u32 = (6 << 16) | (4 << 20);

/// CC that enables a controller: NVM command set, 4 KiB pages, 64-byte SQEs, 16-byte CQEs,
/// arbitration WRR with urgent class if `wrr` (else round robin).
pub const fn cc_enable(wrr: bool) -> u32 {
    CC_IOQES | if wrr { CC_AMS_WRR << CC_AMS_SHIFT } else { 0 } | CC_EN
}
/// `cc` with CC.SHN set to `shn` (`CC_SHN_NORMAL`, or 0 to clear).
pub const fn cc_with_shn(cc: u32, shn: u32) -> u32 {
    (cc & !(3 << CC_SHN_SHIFT)) | ((shn & 3) << CC_SHN_SHIFT)
}
/// CC.CSS.
pub const fn cc_css(cc: u32) -> u32 {
    (cc >> 4) & 7
}
/// CC.MPS.
pub const fn cc_mps(cc: u32) -> u32 {
    (cc >> 7) & 0xf
}
/// CC.AMS.
pub const fn cc_ams(cc: u32) -> u32 {
    (cc >> CC_AMS_SHIFT) & 7
}
/// CC.SHN.
pub const fn cc_shn(cc: u32) -> u32 {
    (cc >> CC_SHN_SHIFT) & 3
}
/// CC.IOSQES.
pub const fn cc_iosqes(cc: u32) -> u32 {
    (cc >> 16) & 0xf
}
/// CC.IOCQES.
pub const fn cc_iocqes(cc: u32) -> u32 {
    (cc >> 20) & 0xf
}

/// CSTS.RDY.
pub const CSTS_RDY: u32 = 1;
/// CSTS.CFS (controller fatal status).
pub const CSTS_CFS: u32 = 1 << 1;
/// CSTS.SHST mask (bits 3:2).
pub const CSTS_SHST_MASK: u32 = 3 << 2;
/// CSTS.SHST = shutdown processing occurring.
pub const CSTS_SHST_OCCURRING: u32 = 1 << 2;
/// CSTS.SHST = shutdown processing complete.
pub const CSTS_SHST_COMPLETE: u32 = 2 << 2;

/// AQA value for admin queues of `entries` entries each.
pub const fn aqa(entries: u32) -> u32 {
    (entries - 1) | ((entries - 1) << 16)
}
/// AQA.ASQS + 1 and AQA.ACQS + 1: the admin SQ and CQ sizes in entries.
pub const fn aqa_entries(aqa: u32) -> (u32, u32) {
    ((aqa & 0xfff) + 1, ((aqa >> 16) & 0xfff) + 1)
}

/// Byte offset in the BAR of queue `qid`'s SQ tail doorbell (`cq` = false) or CQ head doorbell
/// (`cq` = true), with doorbell stride CAP.DSTRD = `dstrd`.
pub const fn doorbell(qid: u16, cq: bool, dstrd: u32) -> usize {
    reg::DOORBELL + (2 * qid as usize + cq as usize) * (4usize << dstrd)
}

// ----------------------------------------------------------------------------------------------
// Submission queue entry (§4.2)
// ----------------------------------------------------------------------------------------------

/// Size of a submission queue entry.
pub const SQE_SIZE: usize = 64;

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

const fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

const fn le64(b: &[u8], off: usize) -> u64 {
    le32(b, off) as u64 | ((le32(b, off + 4) as u64) << 32)
}

impl Sqe {
    /// Decode 64 bytes.
    pub fn from_bytes(b: &[u8; SQE_SIZE]) -> Self {
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
    pub fn to_bytes(self) -> [u8; SQE_SIZE] {
        let mut b = [0u8; SQE_SIZE];
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

    /// An admin or I/O command with CDW10 and CDW11; every other field zero.
    pub const fn new(opcode: u8, cdw10: u32, cdw11: u32) -> Self {
        Self { opcode, fuse: 0, psdt: 0, cid: 0, nsid: 0, mptr: 0, prp1: 0, prp2: 0, cdw: [cdw10, cdw11, 0, 0, 0, 0] }
    }

    /// Identify (CNS `cns`: 0 namespace `nsid`, 1 controller, 2 active namespace list) into the
    /// 4 KiB page at `prp1`.
    pub const fn identify(cns: u32, nsid: u32, prp1: u64) -> Self {
        let mut s = Self::new(admin::IDENTIFY, cns, 0);
        s.nsid = nsid;
        s.prp1 = prp1;
        s
    }

    /// Set Features `fid` with value `cdw11`.
    pub const fn set_features(fid: u8, cdw11: u32) -> Self {
        Self::new(admin::SET_FEATURES, fid as u32, cdw11)
    }

    /// Create I/O Completion Queue `qid` of `entries` entries at `prp1` (physically
    /// contiguous, interrupts off: the engines poll).
    pub const fn create_io_cq(qid: u16, entries: u32, prp1: u64) -> Self {
        let mut s = Self::new(admin::CREATE_CQ, queue_cdw10(qid, entries), 1);
        s.prp1 = prp1;
        s
    }

    /// Create I/O Submission Queue `qid` of `entries` entries at `prp1`, completing to CQ `qid`,
    /// with priority class `qprio` (0 urgent .. 3 low; WRR only).
    pub const fn create_io_sq(qid: u16, entries: u32, qprio: u32, prp1: u64) -> Self {
        let mut s = Self::new(admin::CREATE_SQ, queue_cdw10(qid, entries), ((qid as u32) << 16) | ((qprio & 3) << 1) | 1);
        s.prp1 = prp1;
        s
    }

    /// CDW10.
    pub const fn cdw10(&self) -> u32 {
        self.cdw[0]
    }
    /// CDW11.
    pub const fn cdw11(&self) -> u32 {
        self.cdw[1]
    }
    /// CDW12.
    pub const fn cdw12(&self) -> u32 {
        self.cdw[2]
    }
    /// Starting LBA of a read/write (CDW11:CDW10).
    pub const fn slba(&self) -> u64 {
        self.cdw[0] as u64 | ((self.cdw[1] as u64) << 32)
    }
    /// Number of logical blocks, 1-based (CDW12 15:0 plus one).
    pub const fn nblocks(&self) -> u32 {
        (self.cdw[2] & 0xffff) + 1
    }
    /// Queue identifier of a Create/Delete I/O queue command (CDW10 15:0).
    pub const fn queue_id(&self) -> u16 {
        self.cdw[0] as u16
    }
    /// Queue size in entries of a Create I/O queue command (CDW10 31:16 plus one).
    pub const fn queue_entries(&self) -> u32 {
        (self.cdw[0] >> 16) + 1
    }
    /// Feature identifier of a Set/Get Features command (CDW10 7:0).
    pub const fn feature_id(&self) -> u8 {
        self.cdw[0] as u8
    }
}

/// CDW10 of Create I/O CQ/SQ: QSIZE (0's based) in 31:16, QID in 15:0.
pub const fn queue_cdw10(qid: u16, entries: u32) -> u32 {
    ((entries - 1) << 16) | qid as u32
}

/// Set Features Number of Queues CDW11 (and its DW0 reply): `nsq` and `ncq` queues (1-based).
pub const fn num_queues(nsq: u32, ncq: u32) -> u32 {
    (nsq - 1) | ((ncq - 1) << 16)
}
/// Number of I/O queue pairs a Number of Queues value grants (the smaller half, 1-based).
pub const fn num_queues_granted(v: u32) -> u32 {
    let (s, c) = (v & 0xffff, v >> 16);
    (if s < c { s } else { c }) + 1
}

/// Set Features Arbitration CDW11: arbitration burst log2 `burst` (2:0), low / medium / high
/// priority weights minus one in bits 15:8 / 23:16 / 31:24.
pub const fn arbitration(burst: u32, low: u32, medium: u32, high: u32) -> u32 {
    (burst & 7) | ((low & 0xff) << 8) | ((medium & 0xff) << 16) | ((high & 0xff) << 24)
}

// ----------------------------------------------------------------------------------------------
// Completion queue entry (§4.6)
// ----------------------------------------------------------------------------------------------

/// Size of a completion queue entry.
pub const CQE_SIZE: usize = 16;
/// Byte offset of DW3 (command id, phase tag, status) in a CQE; the producer writes it last.
pub const CQE_DW3: usize = 12;

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
    pub fn encode(&self, phase: bool) -> ([u8; CQE_DW3], u32) {
        let mut b = [0u8; CQE_DW3];
        b[0..4].copy_from_slice(&self.dw0.to_le_bytes());
        b[8..10].copy_from_slice(&self.sqhd.to_le_bytes());
        b[10..12].copy_from_slice(&self.sqid.to_le_bytes());
        let dw3 = u32::from(self.cid) | (u32::from(phase) << 16) | (u32::from(self.status & 0x7fff) << 17);
        (b, dw3)
    }

    /// Decode 16 bytes; returns the entry and its phase tag.
    pub fn decode(b: &[u8; CQE_SIZE]) -> (Self, bool) {
        let dw2 = le32(b, 8);
        let dw3 = le32(b, CQE_DW3);
        (Self { dw0: le32(b, 0), sqhd: dw2 as u16, sqid: (dw2 >> 16) as u16, cid: dw3 as u16, status: (dw3 >> 17) as u16 }, cqe_phase(dw3))
    }
}

/// Phase tag of a CQE's DW3.
pub const fn cqe_phase(dw3: u32) -> bool {
    (dw3 >> 16) & 1 == 1
}

/// Identify data (§5.15): the field offsets, encoders and decoders.
mod identify;
pub use identify::*;
