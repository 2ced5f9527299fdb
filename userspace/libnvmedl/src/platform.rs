// SPDX-License-Identifier: MIT OR Apache-2.0
//! The small interface between the I/O code and where the device lives.
//!
//! A [`Platform`] is the control path of one engine (what `/dev/directnvm` gives: info, layout,
//! claims). [`Platform::open_core`] claims a core and returns a [`CoreMapping`]: the HDU
//! register page and the core's staging, status and data regions, mapped, with their bus
//! addresses. The I/O path (`Handle`) only ever touches those pointers, so the same
//! submit/poll code runs against the kernel's character devices ([`crate::chardev`]) and
//! against the device model in the same process (the `nvmedl-inproc` crate in `qemu/inproc`, test code).

use directnvm_abi::{DnvmArbitration, DnvmInfo, DnvmLayout, DnvmRegion, HduInfo};

use crate::error::Result;

/// One mapped region of the carve-out.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    /// Start of the mapping in this process.
    pub ptr: *mut u8,
    /// Bus address the engines use for the first byte.
    pub bus: u64,
    /// Length in bytes.
    pub len: usize,
}

// SAFETY: a Region is a description of memory (pointer + length), not a borrow; the owner
// of the mapping decides who may touch it.
unsafe impl Send for Region {}

/// A claimed core: register page and regions, valid until the value is dropped (which
/// unmaps them and releases the claim).
pub trait CoreMapping: Send {
    /// The HDU user register page (4 KiB, uncached device memory); 64-bit registers.
    fn regs(&self) -> *mut u64;
    /// What the HDU driver reports (revision, caps).
    fn hdu_info(&self) -> HduInfo;
    /// Staging queue (24-byte entries).
    fn staging(&self) -> Region;
    /// Status-word array (rev 2; mapped but unused on rev 1).
    fn status(&self) -> Region;
    /// Data slice.
    fn data(&self) -> Region;
    /// Reset the engine (rev 2: abort the batch, clear DONE). `Error::Revision` on rev 1.
    fn reset(&self) -> Result<()>;
}

/// Control path of one DirectNVM engine.
pub trait Platform: Send + Sync {
    /// Device information (capacity, cores, flags).
    fn info(&self) -> Result<DnvmInfo>;
    /// Region layout.
    fn layout(&self) -> Result<DnvmLayout>;
    /// Claim `core` and map its HDU page and regions.
    fn open_core(&self, core: u32) -> Result<Box<dyn CoreMapping>>;
    /// HDU info of `core` without claiming the core (opens the HDU briefly).
    fn hdu_info(&self, core: u32) -> Result<HduInfo>;
    /// Reset the engine of `core` (rev 2) without claiming the core.
    fn reset_hdu(&self, core: u32) -> Result<()>;
    /// Program the NVMe arbitration burst and weights.
    fn set_arbitration(&self, a: DnvmArbitration) -> Result<()>;
    /// Re-initialise the NVMe controller (no core may be claimed, no HDU open) and put the
    /// engines' queue pointers back in step with the new queues (rev 2 queue reset).
    /// `Error::Revision` on rev 1 once I/O may have moved them (power-cycle instead).
    fn controller_init(&self) -> Result<()>;
}

/// The staging, status and data regions of `core` in `layout`.
pub fn core_regions(layout: &DnvmLayout, core: u32) -> Option<[DnvmRegion; 3]> {
    use directnvm_abi::{DNVM_REGION_DATA, DNVM_REGION_STAGING, DNVM_REGION_STATUS};
    let n = (layout.count as usize).min(layout.regions.len());
    let find = |kind| layout.regions[..n].iter().copied().find(|r| r.core == core && r.kind == kind);
    Some([find(DNVM_REGION_STAGING)?, find(DNVM_REGION_STATUS)?, find(DNVM_REGION_DATA)?])
}
