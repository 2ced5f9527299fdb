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

// The ABI by concept, in the order of the generated C header (scripts/gen-headers.sh expands
// these top-level includes for cbindgen).
include!("hdu.rs");
include!("entry.rs");
include!("testdev.rs");
include!("ioctl.rs");

// ----------------------------------------------------------------------------------------------
// Device-tree compatibles, property names and defaults shared by the drivers, the binding
// (dts/bindings/) and the device model. C strings, so the kernel's OF and property APIs take
// them as they are; userspace reads them with `to_str()` / `to_bytes()`.
// ----------------------------------------------------------------------------------------------

/// Compatible of the engine node (directnvm_drv).
pub const DT_COMPAT_ENGINE: &core::ffi::CStr = c"directnvm,engine";
/// Compatible of an HDU node (hdu_drv).
pub const DT_COMPAT_HDU: &core::ffi::CStr = c"directnvm,hdu";
/// Engine node: number of HDUs (cores) served (required, 1..=`DNVM_MAX_CORES`).
pub const DT_PROP_CORES: &core::ffi::CStr = c"directnvm,cores";
/// Engine node: NVMe I/O queue engines behind each HDU (1, 2 or 4).
pub const DT_PROP_ENGINES_PER_HDU: &core::ffi::CStr = c"directnvm,engines-per-hdu";
/// Default of `DT_PROP_ENGINES_PER_HDU` (the published RTL).
pub const DT_DEFAULT_ENGINES_PER_HDU: u32 = 1;
/// Engine node: entries of each core's staging queue (1..=`DNVM_MAX_STAGING_ENTRIES`).
pub const DT_PROP_STAGING_ENTRIES: &core::ffi::CStr = c"directnvm,staging-entries";
/// Default of `DT_PROP_STAGING_ENTRIES`: the most a rev 1 HDU fetches safely.
pub const DT_DEFAULT_STAGING_ENTRIES: u32 = DNVM_REV1_MAX_NREQS;
/// Largest `DT_PROP_STAGING_ENTRIES`: NREQS per START is a 16-bit field of CAPS.
pub const DNVM_MAX_STAGING_ENTRIES: u32 = 65535;
/// Engine node: entries of each engine's NVMe I/O queue.
pub const DT_PROP_IO_QUEUE_DEPTH: &core::ffi::CStr = c"directnvm,io-queue-depth";
/// Default of `DT_PROP_IO_QUEUE_DEPTH` (the published RTL).
pub const DT_DEFAULT_IO_QUEUE_DEPTH: u32 = 32;
/// Engine node: data buffer bytes per core (0 or absent: share the rest of the carve-out).
pub const DT_PROP_DATA_BUFFER_SIZE: &core::ffi::CStr = c"directnvm,data-buffer-size";
/// Engine node: bus base and size of the engines' queue memory (two u64).
pub const DT_PROP_QUEUE_WINDOW: &core::ffi::CStr = c"directnvm,queue-window";
/// Engine node: bus range the engines can reach (two u64; optional).
pub const DT_PROP_DMA_WINDOW: &core::ffi::CStr = c"directnvm,dma-window";
/// HDU node: instance index N of `/dev/hduN` (required, 0..`DNVM_MAX_CORES`).
pub const DT_PROP_INDEX: &core::ffi::CStr = c"directnvm,index";

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
