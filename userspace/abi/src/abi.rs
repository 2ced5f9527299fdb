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
