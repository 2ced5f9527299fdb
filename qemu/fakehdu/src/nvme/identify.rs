// SPDX-License-Identifier: MIT OR Apache-2.0
//! Identify data structures (controller CNS 01h, namespace CNS 00h, active NS list CNS 02h).

use super::spec::VS_1_3;

/// PCI vendor id reported in Identify (Red Hat, Inc., as QEMU's virtual devices use).
pub const VID: u16 = 0x1b36;
/// Model number string.
pub const MODEL: &str = "DirectNVM virtual SSD";
/// Firmware revision string.
pub const FIRMWARE: &str = "DNVM0.1";

fn put_str(buf: &mut [u8], s: &str) {
    buf.fill(b' ');
    let n = s.len().min(buf.len());
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Identify Controller data.
pub fn controller(serial: &str, mdts: u8) -> [u8; 4096] {
    let mut b = [0u8; 4096];
    b[0..2].copy_from_slice(&VID.to_le_bytes());
    b[2..4].copy_from_slice(&VID.to_le_bytes());
    put_str(&mut b[4..24], serial);
    put_str(&mut b[24..64], MODEL);
    put_str(&mut b[64..72], FIRMWARE);
    b[72] = 6; // RAB
    b[77] = mdts;
    b[78..80].copy_from_slice(&1u16.to_le_bytes()); // CNTLID
    b[80..84].copy_from_slice(&VS_1_3.to_le_bytes());
    b[111] = 1; // CNTRLTYPE: I/O controller
    b[258] = 3; // ACL (0's based)
    b[259] = 3; // AERL (0's based)
    b[260] = 0x02; // FRMW: one firmware slot
    b[266..268].copy_from_slice(&343u16.to_le_bytes()); // WCTEMP
    b[268..270].copy_from_slice(&373u16.to_le_bytes()); // CCTEMP
    b[512] = 0x66; // SQES: 64 bytes
    b[513] = 0x44; // CQES: 16 bytes
    b[516..520].copy_from_slice(&1u32.to_le_bytes()); // NN
    b[525] = 1; // VWC present
    b[2048..2050].copy_from_slice(&600u16.to_le_bytes()); // PSD0 max power 6.00 W
    b
}

/// Identify Namespace data for a namespace of `blocks` 512-byte LBAs.
pub fn namespace(blocks: u64) -> [u8; 4096] {
    let mut b = [0u8; 4096];
    b[0..8].copy_from_slice(&blocks.to_le_bytes()); // NSZE
    b[8..16].copy_from_slice(&blocks.to_le_bytes()); // NCAP
    b[16..24].copy_from_slice(&blocks.to_le_bytes()); // NUSE
    b[25] = 0; // NLBAF: one format
    b[26] = 0; // FLBAS: format 0, no metadata
    b[130] = 9; // LBAF0.LBADS: 2^9 = 512 bytes
    b
}

/// Active namespace id list: ids greater than `after`.
pub fn active_ns_list(after: u32) -> [u8; 4096] {
    let mut b = [0u8; 4096];
    if after < 1 {
        b[0..4].copy_from_slice(&1u32.to_le_bytes());
    }
    b
}
