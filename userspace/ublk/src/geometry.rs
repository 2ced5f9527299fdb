// SPDX-License-Identifier: MIT OR Apache-2.0
//! The block device's shape, taken from the DirectNVM handle: capacity, largest I/O, depth,
//! and the ublk parameters that say what the block layer may send (no discard, no
//! write-zeroes: the engine has neither, so the block layer refuses them itself).

use crate::error::{Result, UblkSrvError};
use libublk::sys;

/// The engine's transfer granule: LBAs and lengths must be 4 KiB aligned.
pub const GRANULE: u64 = 4096;
/// Room for the read-modify-write of a request that is not 4 KiB aligned (head + tail).
pub const RMW_PAD: u64 = 2 * GRANULE;
/// Largest I/O advertised to the block layer (ublk's copy mode limit is far above it).
pub const MAX_IO_CAP: u64 = 512 * 1024;
/// Default queue depth, halved until each tag gets at least [`MIN_DEFAULT_BUF`] bytes.
pub const DEFAULT_DEPTH: u32 = 32;
/// Smallest per-tag buffer the default depth settles for (16 KiB of I/O plus the pad).
pub const MIN_DEFAULT_BUF: u64 = 16 * 1024 + RMW_PAD;

/// What one queue (one core) and the block device look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Capacity in 512-byte sectors.
    pub sectors: u64,
    /// Largest block-layer request in bytes (multiple of 4 KiB).
    pub max_io: u64,
    /// Bytes of DMA slice per tag: `max_io` plus the read-modify-write pad.
    pub buf_bytes: u64,
    /// ublk tags per queue.
    pub depth: u32,
    /// The SSD has a volatile write cache the engine can flush (rev 2).
    pub flush: bool,
}

fn round_down(v: u64) -> u64 {
    v / GRANULE * GRANULE
}

impl Geometry {
    /// Fit `depth` buffers (default: [`DEFAULT_DEPTH`], fewer on a small slice) into a `slice`-byte
    /// data slice whose engine moves at most `max_request` bytes per request.
    pub fn fit(sectors: u64, max_request: u64, slice: usize, depth: Option<u32>, flush: bool) -> Result<Geometry> {
        let buf_cap = round_down(max_request.min(MAX_IO_CAP + RMW_PAD));
        let depth = match depth {
            Some(d) => d,
            None => {
                let mut d = DEFAULT_DEPTH;
                while d > 1 && (slice as u64 / u64::from(d)) < MIN_DEFAULT_BUF {
                    d /= 2;
                }
                d
            }
        };
        let buf_bytes = round_down(buf_cap.min(slice as u64 / u64::from(depth.max(1))));
        if depth == 0 || buf_bytes < RMW_PAD + GRANULE {
            return Err(UblkSrvError::DepthTooLarge { depth, max_io: GRANULE, slice });
        }
        Ok(Geometry { sectors, max_io: buf_bytes - RMW_PAD, buf_bytes, depth, flush })
    }

    /// The ublk parameters: 512-byte logical blocks, 4 KiB physical, no discard/write-zeroes.
    pub fn params(&self) -> sys::ublk_params {
        sys::ublk_params {
            types: sys::UBLK_PARAM_TYPE_BASIC,
            basic: sys::ublk_param_basic {
                attrs: if self.flush { sys::UBLK_ATTR_VOLATILE_CACHE } else { 0 },
                logical_bs_shift: 9,
                physical_bs_shift: 12,
                io_opt_shift: 12,
                io_min_shift: 12,
                max_sectors: (self.max_io >> 9) as u32,
                dev_sectors: self.sectors,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

/// The 4 KiB-aligned extent around `bytes` at `sector`: (first engine LBA, offset of the
/// request inside it, aligned length).
pub fn align(sector: u64, bytes: u64) -> (u64, u64, u64) {
    let start = sector * 512;
    let first = start / GRANULE * GRANULE;
    let end = (start + bytes).div_ceil(GRANULE) * GRANULE;
    (first / 512, start - first, end - first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_request_is_unchanged() {
        assert_eq!(align(8, 8192), (8, 0, 8192));
    }

    #[test]
    fn unaligned_request_is_widened_to_granules() {
        // 1 KiB at sector 9 (byte 4608): the granule at byte 4096, offset 512, one granule.
        assert_eq!(align(9, 1024), (8, 512, 4096));
        // 4 KiB at sector 7 straddles two granules.
        assert_eq!(align(7, 4096), (0, 3584, 8192));
    }

    #[test]
    fn default_depth_fills_the_slice() {
        let g = Geometry::fit(1 << 20, 1 << 20, 4 << 20, None, true).unwrap();
        assert_eq!(g.depth, DEFAULT_DEPTH);
        assert_eq!(g.buf_bytes, (4 << 20) / u64::from(DEFAULT_DEPTH));
        assert!(u64::from(g.depth) * g.buf_bytes <= 4 << 20);
        assert_eq!(g.max_io % GRANULE, 0);
        // A small slice halves the default depth rather than starving the buffers.
        let small = Geometry::fit(1 << 20, 1 << 20, 256 << 10, None, true).unwrap();
        assert_eq!(small.depth, 8);
        assert!(small.buf_bytes >= MIN_DEFAULT_BUF);
    }

    #[test]
    fn requested_depth_shrinks_the_buffers() {
        let g = Geometry::fit(1 << 20, 1 << 20, 4 << 20, Some(128), false).unwrap();
        assert_eq!(g.depth, 128);
        assert_eq!(g.buf_bytes, 32 * 1024);
        assert_eq!(g.max_io, 24 * 1024);
    }

    #[test]
    fn too_deep_for_the_slice_is_an_error() {
        assert!(Geometry::fit(1 << 20, 1 << 20, 64 * 1024, Some(64), false).is_err());
    }

    #[test]
    fn params_refuse_discard_and_write_zeroes() {
        let g = Geometry::fit(2048, 1 << 20, 4 << 20, None, false).unwrap();
        let p = g.params();
        assert_eq!(p.types, sys::UBLK_PARAM_TYPE_BASIC);
        assert_eq!(p.basic.dev_sectors, 2048);
        assert_eq!(p.basic.logical_bs_shift, 9);
        assert_eq!(p.basic.attrs & sys::UBLK_ATTR_VOLATILE_CACHE, 0);
        assert_eq!(p.discard.max_discard_sectors, 0);
        assert_eq!(p.discard.max_write_zeroes_sectors, 0);
    }
}
