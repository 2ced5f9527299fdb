// SPDX-License-Identifier: MIT OR Apache-2.0
//! The HDU register pages (user and privileged), the revision and capability words.

use super::sizes::DNVM_REV1_MAX_NREQS;

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

/// A register of the HDU user page: the typed form of the `HDU_REG_*` offsets above (the C
/// header keeps the numbers). Software and the model name registers with it, never with bare
/// offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HduReg {
    /// START (`HDU_REG_START`).
    Start,
    /// NREQS (`HDU_REG_NREQS`).
    Nreqs,
    /// REQBUF (`HDU_REG_REQBUF`).
    Reqbuf,
    /// STATUSBUF (`HDU_REG_STATUSBUF`).
    Statusbuf,
    /// DONE (`HDU_REG_DONE`).
    Done,
    /// ID (`HDU_REG_ID`).
    Id,
    /// CAPS (`HDU_REG_CAPS`).
    Caps,
    /// ERRORS (`HDU_REG_ERRORS`).
    Errors,
}

impl HduReg {
    /// Every user register, in offset order.
    pub const ALL: [HduReg; 8] =
        [HduReg::Start, HduReg::Nreqs, HduReg::Reqbuf, HduReg::Statusbuf, HduReg::Done, HduReg::Id, HduReg::Caps, HduReg::Errors];

    /// Byte offset in the user page.
    pub const fn offset(self) -> usize {
        match self {
            HduReg::Start => HDU_REG_START,
            HduReg::Nreqs => HDU_REG_NREQS,
            HduReg::Reqbuf => HDU_REG_REQBUF,
            HduReg::Statusbuf => HDU_REG_STATUSBUF,
            HduReg::Done => HDU_REG_DONE,
            HduReg::Id => HDU_REG_ID,
            HduReg::Caps => HDU_REG_CAPS,
            HduReg::Errors => HDU_REG_ERRORS,
        }
    }

    /// Index of the register's 64-bit slot (offset / 8), for a `*mut u64` page pointer.
    pub const fn slot(self) -> usize {
        self.offset() / 8
    }

    /// Name, as in docs/hardware.md and debugfs.
    pub const fn name(self) -> &'static str {
        match self {
            HduReg::Start => "START",
            HduReg::Nreqs => "NREQS",
            HduReg::Reqbuf => "REQBUF",
            HduReg::Statusbuf => "STATUSBUF",
            HduReg::Done => "DONE",
            HduReg::Id => "ID",
            HduReg::Caps => "CAPS",
            HduReg::Errors => "ERRORS",
        }
    }
}

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
    pub const REV1: HduCaps =
        HduCaps { engines: 1, queue_depth_log2: 5, max_nreqs: DNVM_REV1_MAX_NREQS, dispatch_depth: 64, max_xfer_pages: 1, start_queue: 0 };

    /// Pack into the register value.
    pub const fn to_reg(self) -> u64 {
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

/// A register of the HDU privileged page (rev 2): the typed form of the `HDU_PRIV_*` offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HduPrivReg {
    /// CTRL (`HDU_PRIV_CTRL`).
    Ctrl,
    /// DMA_BASE (`HDU_PRIV_DMA_BASE`).
    DmaBase,
    /// DMA_LIMIT (`HDU_PRIV_DMA_LIMIT`).
    DmaLimit,
    /// PSTATUS (`HDU_PRIV_STATUS`).
    Status,
}

impl HduPrivReg {
    /// Every privileged register, in offset order.
    pub const ALL: [HduPrivReg; 4] = [HduPrivReg::Ctrl, HduPrivReg::DmaBase, HduPrivReg::DmaLimit, HduPrivReg::Status];

    /// Byte offset in the privileged page.
    pub const fn offset(self) -> usize {
        match self {
            HduPrivReg::Ctrl => HDU_PRIV_CTRL,
            HduPrivReg::DmaBase => HDU_PRIV_DMA_BASE,
            HduPrivReg::DmaLimit => HDU_PRIV_DMA_LIMIT,
            HduPrivReg::Status => HDU_PRIV_STATUS,
        }
    }

    /// Name, as in docs/hardware.md and debugfs.
    pub const fn name(self) -> &'static str {
        match self {
            HduPrivReg::Ctrl => "CTRL",
            HduPrivReg::DmaBase => "DMA_BASE",
            HduPrivReg::DmaLimit => "DMA_LIMIT",
            HduPrivReg::Status => "PSTATUS",
        }
    }
}
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
