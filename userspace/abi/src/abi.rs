// SPDX-License-Identifier: MIT OR Apache-2.0
// DirectNVM ABI. This file is included verbatim by the kernel modules (`include!`), by the
// userspace crates (through `directnvm-abi`) and by the device model. Keep it free of inner
// attributes, `use` of std/alloc, and anything that is not `core`. Every public item has a doc
// comment (the kernel builds with -Wmissing_docs). Layout tests are in tests.rs; the C header
// is generated from this file by cbindgen (scripts/gen-headers.sh).

// ----------------------------------------------------------------------------------------------
// Versions and sizes
// ----------------------------------------------------------------------------------------------

/// Version of the ioctl ABI described in this file. Bumped on any incompatible change.
pub const DNVM_ABI_VERSION: u32 = 1;
/// Size of one register page and the mmap granule this ABI assumes (4 KiB).
pub const DNVM_PAGE_SIZE: u64 = 4096;
/// Logical block size the engines address, in bytes (the RTL hard-codes 512-byte LBAs).
pub const DNVM_LBA_SIZE: u32 = 512;
/// Bytes moved by one rev 1 command (fixed at synthesis in the RTL).
pub const DNVM_REV1_BLOCK_SIZE: u32 = 4096;
/// Largest NREQS a rev 1 HDU handles safely from a 4 KiB-aligned staging queue: entry 171 makes
/// the sixth 768-byte fetch burst cross a 4 KiB boundary (an AXI4 protocol violation).
pub const DNVM_REV1_MAX_NREQS: u32 = 170;
/// Commands a rev 1 engine keeps in flight per sub-batch (32-entry SQ minus one).
pub const DNVM_REV1_SUBBATCH: u32 = 31;
/// Maximum number of HDUs (cores) one engine node may describe.
pub const DNVM_MAX_CORES: usize = 8;
/// Maximum number of engines (urgency classes) per HDU.
pub const DNVM_MAX_ENGINES: usize = 4;
/// Number of NVMe urgency classes (urgent, high, medium, low).
pub const DNVM_URGENCY_CLASSES: u32 = 4;

// ----------------------------------------------------------------------------------------------
// HDU user register page (mappable by the owner of /dev/hduN). Offsets in bytes; each register
// is a 64-bit slot. Rev 1 decodes writes to 0x00..0x18 and reads of 0x00,0x08,0x10,0x20 only.
// ----------------------------------------------------------------------------------------------

/// START: write 1 to start a batch (one-cycle pulse; lost if the HDU is busy).
pub const HDU_REG_START: usize = 0x00;
/// NREQS: number of 24-byte entries the next START fetches (low 32 bits used).
pub const HDU_REG_NREQS: usize = 0x08;
/// REQBUF: bus address of the staging array; must be written with one 64-bit store.
pub const HDU_REG_REQBUF: usize = 0x10;
/// STATUSBUF (rev 2): bus address of the status-word array (one u32 per entry).
/// In rev 1 this slot is a write-only scratch register that drives nothing.
pub const HDU_REG_STATUSBUF: usize = 0x18;
/// DONE: bit 0 is 1 once every entry of the last batch completed; cleared by the next START.
pub const HDU_REG_DONE: usize = 0x20;
/// ID (rev 2): `HDU_ID_MAGIC` in bits 31:0, revision in bits 47:32. Rev 1 reads 0.
pub const HDU_REG_ID: usize = 0x28;
/// CAPS (rev 2): capability word, see the `HDU_CAPS_*` accessors. Rev 1 reads 0.
pub const HDU_REG_CAPS: usize = 0x30;
/// ERRORS (rev 2): number of entries completed with a non-zero status since reset.
pub const HDU_REG_ERRORS: usize = 0x38;
/// Bytes of the user register block (the page is 4 KiB; the block aliases within it in rev 1).
pub const HDU_USER_REGS_SIZE: usize = 0x40;

/// DONE register bit: batch complete.
pub const HDU_DONE_BIT: u64 = 1 << 0;
/// DONE register bit (rev 2): the engine is executing a batch.
pub const HDU_BUSY_BIT: u64 = 1 << 1;
/// DONE register bit (rev 2 with `HduCaps::start_queue` > 0): a START is queued behind the
/// running batch, so the next START would be lost. Only the device clears it, so software that
/// reads it as 0 knows its next START will be accepted.
pub const HDU_QUEUED_BIT: u64 = 1 << 2;
/// START value that starts a batch.
pub const HDU_START_GO: u64 = 1;

/// Magic in the low half of the rev 2 ID register ("DNVM" little-endian).
pub const HDU_ID_MAGIC: u32 = 0x4D56_4E44;
/// Revision 1: the published RTL exactly.
pub const HDU_REV1: u32 = 1;
/// Revision 2: per-request status, urgency routing, privileged page.
pub const HDU_REV2: u32 = 2;

/// Decode the revision from the value of `HDU_REG_ID` (0 means rev 1).
pub const fn hdu_revision(id: u64) -> u32 {
    if (id & 0xffff_ffff) as u32 == HDU_ID_MAGIC {
        ((id >> 32) & 0xffff) as u32
    } else {
        HDU_REV1
    }
}

/// An HDU revision this ABI knows. What a revision can do is a method, so code asks for the
/// capability (`has_status`, `can_reset`, ...) and never compares revision numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revision {
    /// The published RTL exactly: one engine, DONE only, no ID/CAPS/ERRORS registers.
    Rev1,
    /// Per-request status words, urgency routing, START queue, privileged page with reset and
    /// DMA window.
    Rev2,
}

impl Revision {
    /// The revision of an `HDU_REG_ID` value; `None` for a revision this ABI does not know.
    pub const fn from_id(id: u64) -> Option<Revision> {
        Revision::from_number(hdu_revision(id))
    }

    /// The revision numbered `n` (`HduInfo::revision`); `None` if unknown.
    pub const fn from_number(n: u32) -> Option<Revision> {
        match n {
            HDU_REV1 => Some(Revision::Rev1),
            HDU_REV2 => Some(Revision::Rev2),
            _ => None,
        }
    }

    /// The revision number (`HduInfo::revision`, sysfs `revision`).
    pub const fn number(self) -> u32 {
        match self {
            Revision::Rev1 => HDU_REV1,
            Revision::Rev2 => HDU_REV2,
        }
    }

    /// Per-entry status words, the ERRORS register and DONE's BUSY bit (rev 1 reports nothing
    /// but DONE: a batch that ends counts as all-success).
    pub const fn has_status(self) -> bool {
        matches!(self, Revision::Rev2)
    }

    /// ID and CAPS registers (rev 1 has neither: `HduCaps::REV1` describes it).
    pub const fn has_caps(self) -> bool {
        matches!(self, Revision::Rev2)
    }

    /// A privileged page with the engine reset (CTRL) and the DMA window.
    pub const fn has_privileged_page(self) -> bool {
        matches!(self, Revision::Rev2)
    }

    /// The engine can be reset (`HDU_IOC_RESET`, `HDU_IOC_RESET_QUEUES`).
    pub const fn can_reset(self) -> bool {
        self.has_privileged_page()
    }

    /// DMA addresses are checked against a window (`HDU_ERR_WINDOW`).
    pub const fn has_dma_window(self) -> bool {
        self.has_privileged_page()
    }

    /// The Flush command (`DNVM_OP_FLUSH`); a rev 1 engine would issue a read.
    pub const fn has_flush(self) -> bool {
        matches!(self, Revision::Rev2)
    }

    /// Entries carry their transfer size and urgency class (rev 1 moves 4 KiB per entry and
    /// has one engine).
    pub const fn has_sized_entries(self) -> bool {
        matches!(self, Revision::Rev2)
    }
}

impl core::fmt::Display for Revision {
    /// The revision number, as sysfs and the logs print it.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// Build the ID register value of a rev 2 (or later) HDU.
pub const fn hdu_id(revision: u32) -> u64 {
    HDU_ID_MAGIC as u64 | ((revision as u64 & 0xffff) << 32)
}

/// Capabilities of an HDU, packed in `HDU_REG_CAPS`.
///
/// Bits: 3:0 engines (urgency classes served), 7:4 STARTs held behind the running batch,
/// 15:8 log2 of the I/O queue depth per engine, 31:16 max NREQS per START, 47:32 dispatch FIFO
/// depth, 63:48 max transfer in 4 KiB pages.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HduCaps {
    /// Engines behind this HDU (1, 2 or 4).
    pub engines: u32,
    /// log2 of each engine's NVMe I/O queue depth.
    pub queue_depth_log2: u32,
    /// Largest NREQS one START accepts.
    pub max_nreqs: u32,
    /// Entries in the dispatch FIFO between HDU and engines.
    pub dispatch_depth: u32,
    /// Largest transfer of one entry, in 4 KiB pages.
    pub max_xfer_pages: u32,
    /// STARTs the HDU accepts while a batch runs (0: a START while busy is lost, as in rev 1;
    /// 1: one batch can wait behind the running one, `HDU_QUEUED_BIT` tells when it does).
    pub start_queue: u32,
}

impl HduCaps {
    /// Capabilities of a rev 1 HDU (fixed at synthesis; the register reads 0).
    pub const REV1: HduCaps = HduCaps {
        engines: 1,
        queue_depth_log2: 5,
        max_nreqs: DNVM_REV1_MAX_NREQS,
        dispatch_depth: 64,
        max_xfer_pages: 1,
        start_queue: 0,
    };

    /// Pack into the register value.
    pub const fn to_reg(&self) -> u64 {
        (self.engines as u64 & 0xf)
            | ((self.start_queue as u64 & 0xf) << 4)
            | ((self.queue_depth_log2 as u64 & 0xff) << 8)
            | ((self.max_nreqs as u64 & 0xffff) << 16)
            | ((self.dispatch_depth as u64 & 0xffff) << 32)
            | ((self.max_xfer_pages as u64 & 0xffff) << 48)
    }

    /// Unpack a register value.
    pub const fn from_reg(v: u64) -> HduCaps {
        HduCaps {
            engines: (v & 0xf) as u32,
            start_queue: ((v >> 4) & 0xf) as u32,
            queue_depth_log2: ((v >> 8) & 0xff) as u32,
            max_nreqs: ((v >> 16) & 0xffff) as u32,
            dispatch_depth: ((v >> 32) & 0xffff) as u32,
            max_xfer_pages: ((v >> 48) & 0xffff) as u32,
        }
    }
}

// ----------------------------------------------------------------------------------------------
// HDU privileged page (rev 2; mapped by hdu_drv only, never by userspace).
// ----------------------------------------------------------------------------------------------

/// CTRL: write `HDU_CTRL_RESET` to abort the batch, clear DONE, the FIFO and the counters.
pub const HDU_PRIV_CTRL: usize = 0x00;
/// DMA_BASE: lowest bus address entries may reference (staging, status and data).
pub const HDU_PRIV_DMA_BASE: usize = 0x08;
/// DMA_LIMIT: one past the highest bus address entries may reference; 0 disables the HDU.
pub const HDU_PRIV_DMA_LIMIT: usize = 0x10;
/// PSTATUS: bit 0 reset in progress, bit 1 window violation seen since reset.
pub const HDU_PRIV_STATUS: usize = 0x18;
/// Bytes of the privileged register block.
pub const HDU_PRIV_REGS_SIZE: usize = 0x20;
/// CTRL bit: reset the engine (self-clearing).
pub const HDU_CTRL_RESET: u64 = 1 << 0;
/// PSTATUS bit: reset still in progress.
pub const HDU_PSTATUS_RESETTING: u64 = 1 << 0;
/// PSTATUS bit: a request violated the DMA window since the last reset.
pub const HDU_PSTATUS_WINDOW_FAULT: u64 = 1 << 1;
/// CTRL bit (with `HDU_CTRL_RESET`): also return the engines' SQ tail, CQ head and phase to the
/// state of freshly created I/O queues and zero the CQ rings. Use it after (re)creating the
/// engines' NVMe I/O queue pairs; a plain reset keeps the queue pointers.
pub const HDU_CTRL_QRESET: u64 = 1 << 1;
/// PSTATUS bit: a START was rejected as a whole (NREQS above `max_nreqs`, or a REQBUF/STATUSBUF
/// that is misaligned or outside the DMA window) since the last reset.
pub const HDU_PSTATUS_BAD_BATCH: u64 = 1 << 2;

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
    if engines == 0 { 0 } else { u * engines / DNVM_URGENCY_CLASSES }
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

// ----------------------------------------------------------------------------------------------
// Test mailbox of the fake HDU device (QEMU board only; absent on hardware). One 4 KiB page a
// guest test maps through /dev/mem. Protocol: fill CMD and ARGS, then store REQ_SEQ = ACK_SEQ + 1;
// the model executes the command, writes STATUS and RESULT, then stores ACK_SEQ = REQ_SEQ.
// ----------------------------------------------------------------------------------------------

/// Guest-physical address of the mailbox page (PL window, outside the carve-out).
pub const TESTDEV_MAILBOX_PHYS: u64 = 0x7f40_0000;
/// Offset of the u32 magic the model writes when it is up (`TESTDEV_MAGIC`).
pub const TESTDEV_REG_MAGIC: usize = 0x00;
/// Offset of the u32 mailbox layout version (`TESTDEV_VERSION`).
pub const TESTDEV_REG_VERSION: usize = 0x04;
/// Offset of the u32 request sequence number, written last by the guest.
pub const TESTDEV_REG_REQ_SEQ: usize = 0x08;
/// Offset of the u32 acknowledge sequence number, written last by the model.
pub const TESTDEV_REG_ACK_SEQ: usize = 0x0c;
/// Offset of the u32 command code (`TESTDEV_CMD_*`).
pub const TESTDEV_REG_CMD: usize = 0x10;
/// Offset of the u32 command status (`TESTDEV_STATUS_*`), valid once ACK_SEQ == REQ_SEQ.
pub const TESTDEV_REG_STATUS: usize = 0x14;
/// Offset of the argument array: `TESTDEV_NARGS` u64 values.
pub const TESTDEV_REG_ARGS: usize = 0x18;
/// Number of u64 arguments.
pub const TESTDEV_NARGS: usize = 8;
/// Offset of the result array: `TESTDEV_NRESULTS` u64 values.
pub const TESTDEV_REG_RESULT: usize = 0x100;
/// Number of u64 results.
pub const TESTDEV_NRESULTS: usize = 64;
/// Mailbox magic ("DNVT" little-endian).
pub const TESTDEV_MAGIC: u32 = 0x5456_4E44;
/// Mailbox layout version.
pub const TESTDEV_VERSION: u32 = 1;

/// Command: do nothing, answer `TESTDEV_STATUS_OK` (liveness check).
pub const TESTDEV_CMD_PING: u32 = 1;
/// Command: remove every injected fault.
pub const TESTDEV_CMD_CLEAR_FAULTS: u32 = 2;
/// Command: inject a fault; ARGS[0] = `TESTDEV_FAULT_*`, ARGS[1..] as documented per kind.
pub const TESTDEV_CMD_SET_FAULT: u32 = 3;
/// Command: statistics of HDU ARGS[0] (RESULT[`TESTDEV_STAT_*`]).
pub const TESTDEV_CMD_GET_STATS: u32 = 4;
/// Command: stop servicing HDUs and the controller (the mailbox stays live).
pub const TESTDEV_CMD_QUIESCE: u32 = 5;
/// Command: resume after `TESTDEV_CMD_QUIESCE`.
pub const TESTDEV_CMD_RESUME: u32 = 6;
/// Command: restart the whole device as after a power cycle (FPGA reconfigured, SSD power
/// cycled): every HDU, engine and controller register back to its power-on value, queues and
/// commands in flight lost, injected faults and counters cleared; the namespace data that
/// completed writes stored survives. Software must bring the controller up again.
pub const TESTDEV_CMD_RESTART: u32 = 7;

/// Status: the command succeeded.
pub const TESTDEV_STATUS_OK: u32 = 0;
/// Status: unknown command code.
pub const TESTDEV_STATUS_BAD_CMD: u32 = 1;
/// Status: an argument is out of range.
pub const TESTDEV_STATUS_BAD_ARG: u32 = 2;

/// Fault: NVMe I/O commands touching LBAs [ARGS[1], ARGS[2]) complete with NVMe status field
/// ARGS[3] (SC | SCT << 8 | DNR << 14) and move no data; ARGS[4] = opcode or 0xff for any;
/// ARGS[5] = number of hits before the fault disarms, 0 = forever.
pub const TESTDEV_FAULT_IO_ERROR: u64 = 1;
/// Fault: the next ARGS[2] STARTs on HDU ARGS[1] are dropped as if the HDU were busy.
pub const TESTDEV_FAULT_DROP_START: u64 = 2;
/// Fault: HDU ARGS[1] never sets DONE (ARGS[2] = 1 on, 0 off) until cleared or reset.
pub const TESTDEV_FAULT_STUCK: u64 = 3;
/// Fault: every SSD time is multiplied by ARGS[1] / 1000.
pub const TESTDEV_FAULT_SLOW: u64 = 4;
/// Fault (rev 2): the next ARGS[2] entries fetched by HDU ARGS[1] fail the DMA window check.
pub const TESTDEV_FAULT_WINDOW: u64 = 5;

/// RESULT index: STARTs accepted.
pub const TESTDEV_STAT_STARTS: usize = 0;
/// RESULT index: STARTs dropped (busy or injected).
pub const TESTDEV_STAT_DROPPED_STARTS: usize = 1;
/// RESULT index: batches that signalled DONE.
pub const TESTDEV_STAT_BATCHES: usize = 2;
/// RESULT index: entries executed or failed.
pub const TESTDEV_STAT_ENTRIES: usize = 3;
/// RESULT index: SQ tail doorbells written by the HDU's engines.
pub const TESTDEV_STAT_SQ_DOORBELLS: usize = 4;
/// RESULT index: CQ head doorbells written by the HDU's engines.
pub const TESTDEV_STAT_CQ_DOORBELLS: usize = 5;
/// RESULT index: staging fetch bursts that crossed a 4 KiB boundary (rev 1 NREQS >= 171).
pub const TESTDEV_STAT_PROTOCOL_VIOLATIONS: usize = 6;
/// RESULT index: entries completed with a non-zero status (rev 2).
pub const TESTDEV_STAT_ERRORS: usize = 7;
/// RESULT index: DMA window violations (rev 2).
pub const TESTDEV_STAT_WINDOW_FAULTS: usize = 8;
/// RESULT index: entries aborted by a reset (rev 2).
pub const TESTDEV_STAT_ABORTED: usize = 9;
/// RESULT index: NVMe I/O commands completed by the controller (whole device).
pub const TESTDEV_STAT_IO_COMMANDS: usize = 10;
/// RESULT index: NVMe I/O commands completed with an error (whole device).
pub const TESTDEV_STAT_IO_ERRORS: usize = 11;
/// RESULT index: NVMe admin commands completed (whole device).
pub const TESTDEV_STAT_ADMIN_COMMANDS: usize = 12;
/// RESULT index: bytes read from the SSD (whole device).
pub const TESTDEV_STAT_BYTES_READ: usize = 13;
/// RESULT index: bytes written to the SSD (whole device).
pub const TESTDEV_STAT_BYTES_WRITTEN: usize = 14;
/// Number of RESULT slots GET_STATS fills.
pub const TESTDEV_STAT_COUNT: usize = 15;

// ----------------------------------------------------------------------------------------------
// ioctl encoding (asm-generic: arm64, x86_64, riscv). Computed here so userspace and the kernel
// share one definition; the kernel modules assert equality with kernel::ioctl at build time.
// ----------------------------------------------------------------------------------------------

/// ioctl direction: none.
pub const DNVM_IOC_NONE: u32 = 0;
/// ioctl direction: userspace writes (kernel reads).
pub const DNVM_IOC_WRITE: u32 = 1;
/// ioctl direction: userspace reads (kernel writes).
pub const DNVM_IOC_READ: u32 = 2;

/// Encode an ioctl number like the kernel's `_IOC(dir, type, nr, size)`.
pub const fn dnvm_ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32 & 0x3fff) << 16) | (ty << 8) | nr
}
/// Type byte of the `/dev/directnvm` ioctls.
pub const DNVM_IOC_MAGIC: u32 = 0xDB;
/// Type byte of the `/dev/hduN` ioctls.
pub const HDU_IOC_MAGIC: u32 = 0xDC;

/// Size field of an ioctl number.
pub const fn dnvm_ioc_size(cmd: u32) -> usize {
    ((cmd >> 16) & 0x3fff) as usize
}
/// Number field of an ioctl number.
pub const fn dnvm_ioc_nr(cmd: u32) -> u32 {
    cmd & 0xff
}
/// Type field of an ioctl number.
pub const fn dnvm_ioc_type(cmd: u32) -> u32 {
    (cmd >> 8) & 0xff
}

// ----------------------------------------------------------------------------------------------
// /dev/directnvm
// ----------------------------------------------------------------------------------------------

/// `DnvmInfo::flags`: the NVMe controller is up and the I/O queues exist.
pub const DNVM_INFO_READY: u32 = 1 << 0;
/// `DnvmInfo::flags`: the controller arbitrates with weighted round robin + urgent class.
pub const DNVM_INFO_WRR: u32 = 1 << 1;
/// `DnvmInfo::flags`: staging/data regions are mapped cached (the DT declared a coherent path).
pub const DNVM_INFO_COHERENT: u32 = 1 << 2;
/// `DnvmInfo::flags`: a core has been claimed since the I/O queues were last created, so the
/// engines may have advanced their queue pointers. Re-creating the queues then needs an engine
/// queue reset (`HDU_IOC_RESET_QUEUES`, rev 2); rev 1 engines cannot follow (docs/hardware.md §6).
pub const DNVM_INFO_QUEUES_USED: u32 = 1 << 3;

/// Reply of `DNVM_IOC_GET_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DnvmInfo {
    /// `DNVM_ABI_VERSION` of the driver.
    pub abi_version: u32,
    /// Reserved, 0 (the HDU revision is read from each HDU: `HDU_IOC_GET_INFO`).
    pub reserved: u32,
    /// Number of cores (HDUs) with a staging queue.
    pub cores: u32,
    /// Engines per HDU.
    pub engines: u32,
    /// Entries per staging queue.
    pub staging_entries: u32,
    /// NVMe I/O queue depth of each engine.
    pub io_queue_depth: u32,
    /// Namespace LBA size in bytes.
    pub lba_size: u32,
    /// Largest transfer per entry in bytes.
    pub max_transfer: u32,
    /// Namespace capacity in LBAs (0 until the controller is up).
    pub capacity_lbas: u64,
    /// Physical base of the reserved-memory carve-out.
    pub carveout_phys: u64,
    /// Size of the carve-out in bytes.
    pub carveout_size: u64,
    /// `DNVM_INFO_*` flags.
    pub flags: u32,
    /// NVMe VS register of the controller (0 until up).
    pub nvme_version: u32,
    /// Controller serial number (ASCII, space padded, from Identify).
    pub serial: [u8; 20],
    /// Controller model number (ASCII, space padded).
    pub model: [u8; 40],
    /// Firmware revision (ASCII).
    pub firmware: [u8; 8],
    /// Arbitration: burst (log2), high, medium, low weights currently programmed.
    pub arbitration: [u8; 4],
}

/// Region kinds reported by `DNVM_IOC_GET_LAYOUT`.
pub const DNVM_REGION_ADMIN: u32 = 0;
/// Per-core staging queue (24-byte entries).
pub const DNVM_REGION_STAGING: u32 = 1;
/// Per-core status-word array (rev 2; present but unused on rev 1).
pub const DNVM_REGION_STATUS: u32 = 2;
/// Per-core data buffers.
pub const DNVM_REGION_DATA: u32 = 3;

/// Cache mode of a region mapping: write-combining (Normal non-cacheable on arm64).
pub const DNVM_CACHE_WC: u32 = 0;
/// Cache mode: cached (only when the DT declares the engine path coherent).
pub const DNVM_CACHE_CACHED: u32 = 1;
/// Cache mode: not mappable by userspace (kernel-only region).
pub const DNVM_CACHE_NONE: u32 = 2;

/// `DnvmRegion::core` of regions that belong to no core.
pub const DNVM_NO_CORE: u32 = 0xffff_ffff;

/// One region of the carve-out. `offset` is also the mmap offset on /dev/directnvm.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DnvmRegion {
    /// Byte offset inside the carve-out (page aligned); pass it as the mmap offset.
    pub offset: u64,
    /// Physical (bus) address of the region, as the engines see it.
    pub phys: u64,
    /// Size in bytes (page multiple).
    pub size: u64,
    /// `DNVM_REGION_*`.
    pub kind: u32,
    /// Owning core, or `DNVM_NO_CORE`.
    pub core: u32,
    /// `DNVM_CACHE_*` mode of a userspace mapping.
    pub cache: u32,
    /// Reserved, 0.
    pub reserved: u32,
}

/// Most regions one layout reports.
pub const DNVM_MAX_REGIONS: usize = 1 + 3 * DNVM_MAX_CORES;

/// Reply of `DNVM_IOC_GET_LAYOUT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DnvmLayout {
    /// Number of valid entries in `regions`.
    pub count: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The regions, in offset order.
    pub regions: [DnvmRegion; DNVM_MAX_REGIONS],
}

/// Argument of `DNVM_IOC_CLAIM` and `DNVM_IOC_RELEASE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DnvmClaim {
    /// Core index, 0..cores.
    pub core: u32,
    /// Reserved, must be 0.
    pub flags: u32,
}

/// Argument of `DNVM_IOC_SET_ARBITRATION` (NVMe Set Features, Arbitration).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DnvmArbitration {
    /// Arbitration burst, log2 of commands (0..6, 7 = unlimited).
    pub burst: u32,
    /// High-priority weight minus one (0..255).
    pub high: u32,
    /// Medium-priority weight minus one.
    pub medium: u32,
    /// Low-priority weight minus one.
    pub low: u32,
}

/// Reply of `DNVM_IOC_GET_STATS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DnvmStats {
    /// Admin commands submitted since load.
    pub admin_commands: u64,
    /// Admin commands that completed with an error or timed out.
    pub admin_errors: u64,
    /// Successful claims since load.
    pub claims: u64,
    /// Successful mmaps since load.
    pub mmaps: u64,
    /// Controller (re)initialisations since load.
    pub controller_inits: u64,
    /// Bitmask of cores currently claimed.
    pub claimed_mask: u64,
}

/// Get `DnvmInfo`.
pub const DNVM_IOC_GET_INFO: u32 = dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, core::mem::size_of::<DnvmInfo>());
/// Get `DnvmLayout`.
pub const DNVM_IOC_GET_LAYOUT: u32 = dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x02, core::mem::size_of::<DnvmLayout>());
/// Claim a core for this open file (EBUSY if another file holds it).
pub const DNVM_IOC_CLAIM: u32 = dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x03, core::mem::size_of::<DnvmClaim>());
/// Release a core held by this open file.
pub const DNVM_IOC_RELEASE: u32 = dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x04, core::mem::size_of::<DnvmClaim>());
/// Reset and bring the NVMe controller up again (EBUSY while any core is claimed). This
/// re-creates the engines' I/O queues: on rev 2 every HDU then needs `HDU_IOC_RESET_QUEUES`
/// before its next START; rev 1 engines keep their queue pointers, so once
/// `DNVM_INFO_QUEUES_USED` is set a rev 1 board needs a power cycle instead (libnvmedl's
/// `Device::controller_init` does both checks; docs/design.md "Controller re-init").
pub const DNVM_IOC_CONTROLLER_INIT: u32 = dnvm_ioc(DNVM_IOC_NONE, DNVM_IOC_MAGIC, 0x05, 0);
/// Program the arbitration burst and weights.
pub const DNVM_IOC_SET_ARBITRATION: u32 =
    dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x06, core::mem::size_of::<DnvmArbitration>());
/// Get `DnvmStats`.
pub const DNVM_IOC_GET_STATS: u32 = dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x07, core::mem::size_of::<DnvmStats>());

// ----------------------------------------------------------------------------------------------
// /dev/hduN
// ----------------------------------------------------------------------------------------------

/// Reply of `HDU_IOC_GET_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HduInfo {
    /// `DNVM_ABI_VERSION` of the driver.
    pub abi_version: u32,
    /// Instance index N of /dev/hduN.
    pub index: u32,
    /// Detected revision (1 or 2).
    pub revision: u32,
    /// Engines behind this HDU.
    pub engines: u32,
    /// Raw CAPS register (rev 1: `HduCaps::REV1` packed).
    pub caps: u64,
    /// Physical address of the user register page.
    pub user_phys: u64,
    /// Physical address of the privileged page (0 if none).
    pub priv_phys: u64,
    /// DMA window base programmed at probe (rev 2; 0 on rev 1).
    pub dma_base: u64,
    /// DMA window limit, exclusive (rev 2; 0 on rev 1).
    pub dma_limit: u64,
}

/// Reply of `HDU_IOC_GET_STATS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HduStats {
    /// Opens of /dev/hduN since probe.
    pub opens: u64,
    /// Successful mmaps since probe.
    pub mmaps: u64,
    /// Engine resets since probe.
    pub resets: u64,
    /// ERRORS register at the time of the call (rev 2; 0 on rev 1).
    pub errors: u64,
    /// DONE register at the time of the call.
    pub done: u64,
}

/// Get `HduInfo`.
pub const HDU_IOC_GET_INFO: u32 = dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x01, core::mem::size_of::<HduInfo>());
/// Reset the engine, keeping its queue pointers (rev 2; EOPNOTSUPP on rev 1; EPERM on a
/// shared read-only open).
pub const HDU_IOC_RESET: u32 = dnvm_ioc(DNVM_IOC_NONE, HDU_IOC_MAGIC, 0x02, 0);
/// Get `HduStats`.
pub const HDU_IOC_GET_STATS: u32 = dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x03, core::mem::size_of::<HduStats>());
/// Reset the engine and its queue pointers (`HDU_CTRL_RESET | HDU_CTRL_QRESET`), for use right
/// after `DNVM_IOC_CONTROLLER_INIT` re-created the I/O queues and before the next START.
/// Rev 2 only (EOPNOTSUPP on rev 1); EPERM on a shared read-only open (only the owner resets).
pub const HDU_IOC_RESET_QUEUES: u32 = dnvm_ioc(DNVM_IOC_NONE, HDU_IOC_MAGIC, 0x04, 0);
/// Highest `/dev/hduN` ioctl number (a known number with a wrong size is EINVAL).
pub const HDU_IOC_MAX_NR: u32 = 0x04;

/// Every ioctl number of both devices by name: the C header's `#define`s are generated from this
/// table (cbindgen cannot evaluate `dnvm_ioc`), and tests check it lists every `*_IOC_*` command.
pub const DNVM_IOCTLS: &[(&str, u32)] = &[
    ("DNVM_IOC_GET_INFO", DNVM_IOC_GET_INFO),
    ("DNVM_IOC_GET_LAYOUT", DNVM_IOC_GET_LAYOUT),
    ("DNVM_IOC_CLAIM", DNVM_IOC_CLAIM),
    ("DNVM_IOC_RELEASE", DNVM_IOC_RELEASE),
    ("DNVM_IOC_CONTROLLER_INIT", DNVM_IOC_CONTROLLER_INIT),
    ("DNVM_IOC_SET_ARBITRATION", DNVM_IOC_SET_ARBITRATION),
    ("DNVM_IOC_GET_STATS", DNVM_IOC_GET_STATS),
    ("HDU_IOC_GET_INFO", HDU_IOC_GET_INFO),
    ("HDU_IOC_RESET", HDU_IOC_RESET),
    ("HDU_IOC_GET_STATS", HDU_IOC_GET_STATS),
    ("HDU_IOC_RESET_QUEUES", HDU_IOC_RESET_QUEUES),
];

// ----------------------------------------------------------------------------------------------
// Device-tree property names shared by the drivers, the binding and the device model.
// ----------------------------------------------------------------------------------------------

/// Compatible of the engine node (directnvm_drv).
pub const DT_COMPAT_ENGINE: &str = "directnvm,engine";
/// Compatible of an HDU node (hdu_drv).
pub const DT_COMPAT_HDU: &str = "directnvm,hdu";

// ----------------------------------------------------------------------------------------------
// NVMe 1.3 spec codecs (nvme.rs): the one encoding of SQEs, CQEs, Identify data and the CAP/CC/
// CSTS fields, shared by the kernel's bring-up (bringup.rs), the controller model
// (qemu/fakehdu/src/nvme) and the test hosts. Not part of the C header (the kernel ABI).
// ----------------------------------------------------------------------------------------------

/// NVMe 1.3 register offsets and fields, opcodes, feature ids, status codes, and the SQE, CQE
/// and Identify encodings.
pub mod nvme {
    include!("nvme.rs");
}

// ----------------------------------------------------------------------------------------------
// NVMe admin bring-up (bringup.rs) over the `NvmeHost` trait: the one NVMe host of the tree, run
// by directnvm.ko at probe and by the test hosts over the controller model.
// ----------------------------------------------------------------------------------------------

/// NVMe controller bring-up (reset, admin queues, identify, the engines' I/O queue pairs,
/// arbitration, shutdown) over an `NvmeHost`.
pub mod bringup {
    include!("bringup.rs");
}
