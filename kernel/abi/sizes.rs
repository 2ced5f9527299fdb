// SPDX-License-Identifier: MIT OR Apache-2.0
//! Versions and sizes: the ABI version, page and block sizes, the rev 1 batch limits and the
//! largest counts of cores and engines.

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
