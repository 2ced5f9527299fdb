// SPDX-License-Identifier: GPL-2.0-only OR MIT
//! Carve-out partitioning: pure arithmetic over `core` only, computed once at probe.
//!
//! The carve-out is split, in order, into the kernel-only admin region (admin SQ, admin CQ,
//! identify/PRP page) and, per core, a staging queue, a status-word array and a data slice.
//! Every region starts on a page boundary and is a whole number of pages, so a claim can be
//! enforced per mapping. directnvm.ko computes it at probe (KUnit tests below) and the
//! in-process backend (qemu/inproc) uses the same module, so both partition identically.

use super::dt::DNVM_MAX_STAGING_ENTRIES;
use super::entry::DNVM_ENTRY_SIZE;
use super::ioctl::{
    DnvmInfo, DnvmLayout, DnvmRegion, DNVM_CACHE_CACHED, DNVM_CACHE_NONE, DNVM_CACHE_WC, DNVM_INFO_COHERENT, DNVM_MAX_REGIONS,
    DNVM_NO_CORE, DNVM_REGION_ADMIN, DNVM_REGION_DATA, DNVM_REGION_STAGING, DNVM_REGION_STATUS,
};
use super::sizes::{DNVM_ABI_VERSION, DNVM_LBA_SIZE, DNVM_MAX_CORES, DNVM_MAX_ENGINES, DNVM_REV1_BLOCK_SIZE};

/// Pages of the admin region: admin SQ, admin CQ, identify/data page.
pub const ADMIN_PAGES: u64 = 3;
/// Page index of the admin SQ inside the admin region.
pub const ADMIN_SQ_PAGE: u64 = 0;
/// Page index of the admin CQ inside the admin region.
pub const ADMIN_CQ_PAGE: u64 = 1;
/// Page index of the identify/data page inside the admin region.
pub const ADMIN_DATA_PAGE: u64 = 2;

/// What the device tree asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutParams {
    /// Physical base of the carve-out.
    pub base: u64,
    /// Size of the carve-out in bytes.
    pub size: u64,
    /// Page size of the running kernel.
    pub page: u64,
    /// Number of cores (HDUs).
    pub cores: u32,
    /// Engines per HDU.
    pub engines: u32,
    /// Staging-queue entries per core.
    pub staging_entries: u32,
    /// Data bytes per core; 0 = split what is left evenly.
    pub data_size: u64,
    /// The engine path is coherent: user mappings may be cached.
    pub coherent: bool,
}

/// Why a configuration does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Base or size is not page aligned.
    Unaligned,
    /// `cores` is 0 or above `DNVM_MAX_CORES`.
    BadCores,
    /// `engines` is not 1, 2 or 4.
    BadEngines,
    /// `staging_entries` is 0 or too large.
    BadEntries,
    /// The carve-out is too small; the payload is the number of bytes needed.
    TooSmall(u64),
}

/// One core's regions (indices into `Layout::regions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CoreRegions {
    /// Staging queue.
    pub staging: DnvmRegion,
    /// Status words.
    pub status: DnvmRegion,
    /// Data buffers.
    pub data: DnvmRegion,
}

/// The computed partition.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Parameters it was computed from.
    pub params: LayoutParams,
    /// Kernel-only admin region.
    pub admin: DnvmRegion,
    /// Per-core regions; entries past `params.cores` are unused.
    pub cores: [CoreRegions; DNVM_MAX_CORES],
}

fn round_up(v: u64, page: u64) -> Option<u64> {
    v.checked_add(page - 1).map(|x| x / page * page)
}

impl Layout {
    /// Partition the carve-out.
    pub fn compute(p: LayoutParams) -> Result<Layout, LayoutError> {
        if p.page == 0 || !p.page.is_power_of_two() || !p.base.is_multiple_of(p.page) || !p.size.is_multiple_of(p.page) {
            return Err(LayoutError::Unaligned);
        }
        if p.cores == 0 || p.cores as usize > DNVM_MAX_CORES {
            return Err(LayoutError::BadCores);
        }
        if !matches!(p.engines, 1 | 2 | 4) || p.engines as usize > DNVM_MAX_ENGINES {
            return Err(LayoutError::BadEngines);
        }
        if p.staging_entries == 0 || p.staging_entries > DNVM_MAX_STAGING_ENTRIES {
            return Err(LayoutError::BadEntries);
        }
        let too_big = LayoutError::TooSmall(u64::MAX);
        let cores = u64::from(p.cores);
        let admin_size = ADMIN_PAGES * p.page;
        let staging = round_up(u64::from(p.staging_entries) * DNVM_ENTRY_SIZE as u64, p.page).ok_or(too_big)?;
        let status = round_up(u64::from(p.staging_entries) * 4, p.page).ok_or(too_big)?;
        let fixed = admin_size + cores * (staging + status);
        let data = if p.data_size != 0 {
            round_up(p.data_size, p.page).ok_or(too_big)?
        } else {
            p.size.saturating_sub(fixed) / cores / p.page * p.page
        };
        let need = data.checked_mul(cores).and_then(|d| d.checked_add(fixed)).ok_or(too_big)?;
        if data < p.page || need > p.size {
            return Err(LayoutError::TooSmall(need.max(fixed + cores * p.page)));
        }
        let user_cache = if p.coherent { DNVM_CACHE_CACHED } else { DNVM_CACHE_WC };
        let region = |offset: u64, size: u64, kind: u32, core: u32, cache: u32| DnvmRegion {
            offset,
            phys: p.base + offset,
            size,
            kind,
            core,
            cache,
            reserved: 0,
        };
        let admin = region(0, admin_size, DNVM_REGION_ADMIN, DNVM_NO_CORE, DNVM_CACHE_NONE);
        let mut out = Layout { params: p, admin, cores: [CoreRegions::default(); DNVM_MAX_CORES] };
        let mut off = admin_size;
        for c in 0..p.cores {
            let r = &mut out.cores[c as usize];
            // The staging queue is read by the HDU without snooping: never cached.
            r.staging = region(off, staging, DNVM_REGION_STAGING, c, DNVM_CACHE_WC);
            off += staging;
            r.status = region(off, status, DNVM_REGION_STATUS, c, DNVM_CACHE_WC);
            off += status;
            r.data = region(off, data, DNVM_REGION_DATA, c, user_cache);
            off += data;
        }
        Ok(out)
    }

    /// The `DNVM_IOC_GET_INFO` reply before the controller is up (no capacity, flags only
    /// COHERENT); `nvme::Controller::describe` adds what bring-up learned.
    pub fn info(&self, io_queue_depth: u32) -> DnvmInfo {
        let p = &self.params;
        DnvmInfo {
            abi_version: DNVM_ABI_VERSION,
            reserved: 0,
            cores: p.cores,
            engines: p.engines,
            staging_entries: p.staging_entries,
            io_queue_depth,
            lba_size: DNVM_LBA_SIZE,
            max_transfer: DNVM_REV1_BLOCK_SIZE,
            capacity_lbas: 0,
            carveout_phys: p.base,
            carveout_size: p.size,
            flags: if p.coherent { DNVM_INFO_COHERENT } else { 0 },
            nvme_version: 0,
            serial: [0; 20],
            model: [0; 40],
            firmware: [0; 8],
            arbitration: [0; 4],
        }
    }

    /// The layout as the `DNVM_IOC_GET_LAYOUT` reply.
    pub fn to_abi(self) -> DnvmLayout {
        let mut l = DnvmLayout { count: 0, reserved: 0, regions: [DnvmRegion::default(); DNVM_MAX_REGIONS] };
        l.regions[0] = self.admin;
        let mut n = 1;
        for c in &self.cores[..self.params.cores as usize] {
            for r in [c.staging, c.status, c.data] {
                l.regions[n] = r;
                n += 1;
            }
        }
        l.count = n as u32;
        l
    }

    /// The user-mappable region that contains `[offset, offset + len)` entirely, if any.
    /// Admin pages are never returned.
    pub fn find_user_region(&self, offset: u64, len: u64) -> Option<DnvmRegion> {
        let end = offset.checked_add(len)?;
        if len == 0 || !offset.is_multiple_of(self.params.page) {
            return None;
        }
        self.cores[..self.params.cores as usize]
            .iter()
            .flat_map(|c| [c.staging, c.status, c.data])
            .find(|r| offset >= r.offset && end <= r.offset + r.size)
    }
}

// KUnit at module load in the kernel; the same cases are host `#[test]`s where userspace
// includes this file (libnvmedl's in-process backend, `cargo test`).
#[cfg(any(test, CONFIG_KUNIT = "y"))]
#[cfg_attr(CONFIG_KUNIT = "y", kernel::prelude::kunit_tests(directnvm_layout))]
mod tests {
    use super::*;

    fn params() -> LayoutParams {
        LayoutParams {
            base: 0x7b00_0000,
            size: 64 << 20,
            page: 4096,
            cores: 4,
            engines: 1,
            staging_entries: 170,
            data_size: 0,
            coherent: false,
        }
    }

    #[test]
    fn regions_are_page_aligned_and_disjoint() {
        let l = Layout::compute(params()).unwrap();
        let abi = l.to_abi();
        assert_eq!(abi.count, 13);
        let mut end = 0;
        for r in &abi.regions[..abi.count as usize] {
            assert_eq!(r.offset % 4096, 0);
            assert_eq!(r.size % 4096, 0);
            assert!(r.offset >= end);
            assert_eq!(r.phys, 0x7b00_0000 + r.offset);
            end = r.offset + r.size;
        }
        assert!(end <= 64 << 20);
    }

    #[test]
    fn too_small_and_bad_params_are_refused() {
        let mut p = params();
        p.size = 8 * 4096;
        assert!(matches!(Layout::compute(p), Err(LayoutError::TooSmall(_))));
        let mut p = params();
        p.engines = 3;
        assert_eq!(Layout::compute(p).err(), Some(LayoutError::BadEngines));
        let mut p = params();
        p.cores = 0;
        assert_eq!(Layout::compute(p).err(), Some(LayoutError::BadCores));
        let mut p = params();
        p.base += 1;
        assert_eq!(Layout::compute(p).err(), Some(LayoutError::Unaligned));
        let mut p = params();
        p.data_size = 64 << 20;
        assert!(matches!(Layout::compute(p), Err(LayoutError::TooSmall(_))));
    }

    #[test]
    fn user_regions_never_include_admin() {
        let l = Layout::compute(params()).unwrap();
        assert!(l.find_user_region(0, 4096).is_none());
        let s = l.cores[1].staging;
        assert_eq!(l.find_user_region(s.offset, s.size), Some(s));
        assert!(l.find_user_region(s.offset, s.size + 4096).is_none());
        assert!(l.find_user_region(s.offset + 1, 4096).is_none());
        assert!(l.find_user_region(s.offset, 0).is_none());
        assert!(l.find_user_region(u64::MAX - 4095, 4096).is_none());
    }
}
