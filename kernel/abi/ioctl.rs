// SPDX-License-Identifier: MIT OR Apache-2.0
//! The ioctl interface of `/dev/directnvm` and `/dev/hduN`: encoding, numbers and structs.

use super::sizes::DNVM_MAX_CORES;

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
pub const DNVM_IOC_SET_ARBITRATION: u32 = dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x06, core::mem::size_of::<DnvmArbitration>());
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
