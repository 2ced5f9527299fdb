// SPDX-License-Identifier: MIT OR Apache-2.0
//! Identify data of NVMe 1.3 (re-exported by `nvme`): the one encoding of the Identify
//! Controller / Namespace fields the bring-up reads and the controller model writes.

use super::VS_1_3;

// ----------------------------------------------------------------------------------------------
// Identify data (§5.15): Identify Controller (CNS 01h), Namespace (CNS 00h), NS list (CNS 02h)
// ----------------------------------------------------------------------------------------------

/// Size of an Identify data structure.
pub const IDENTIFY_SIZE: usize = 4096;

/// Byte offsets (and lengths) of the Identify Controller fields DirectNVM uses.
pub mod id_ctrl {
    /// PCI Vendor ID (2 bytes).
    pub const VID: usize = 0;
    /// PCI Subsystem Vendor ID (2 bytes).
    pub const SSVID: usize = 2;
    /// Serial Number (ASCII, space padded).
    pub const SN: usize = 4;
    /// Length of SN.
    pub const SN_LEN: usize = 20;
    /// Model Number (ASCII, space padded).
    pub const MN: usize = 24;
    /// Length of MN.
    pub const MN_LEN: usize = 40;
    /// Firmware Revision (ASCII, space padded).
    pub const FR: usize = 64;
    /// Length of FR.
    pub const FR_LEN: usize = 8;
    /// Recommended Arbitration Burst.
    pub const RAB: usize = 72;
    /// Maximum Data Transfer Size (log2 of units of the minimum page size; 0 = no limit).
    pub const MDTS: usize = 77;
    /// Controller ID (2 bytes).
    pub const CNTLID: usize = 78;
    /// Version (4 bytes).
    pub const VER: usize = 80;
    /// Controller Type.
    pub const CNTRLTYPE: usize = 111;
    /// Abort Command Limit (0's based).
    pub const ACL: usize = 258;
    /// Asynchronous Event Request Limit (0's based).
    pub const AERL: usize = 259;
    /// Firmware Updates.
    pub const FRMW: usize = 260;
    /// Warning Composite Temperature Threshold (2 bytes, kelvin).
    pub const WCTEMP: usize = 266;
    /// Critical Composite Temperature Threshold (2 bytes, kelvin).
    pub const CCTEMP: usize = 268;
    /// SQ Entry Size (required 3:0, maximum 7:4, log2).
    pub const SQES: usize = 512;
    /// CQ Entry Size.
    pub const CQES: usize = 513;
    /// Number of Namespaces (4 bytes).
    pub const NN: usize = 516;
    /// Volatile Write Cache.
    pub const VWC: usize = 525;
    /// Power State 0 Descriptor: maximum power in centiwatts (2 bytes).
    pub const PSD0_MP: usize = 2048;
}

/// Byte offsets of the Identify Namespace fields DirectNVM uses.
pub mod id_ns {
    /// Namespace Size in LBAs (8 bytes).
    pub const NSZE: usize = 0;
    /// Namespace Capacity (8 bytes).
    pub const NCAP: usize = 8;
    /// Namespace Utilization (8 bytes).
    pub const NUSE: usize = 16;
    /// Number of LBA Formats (0's based).
    pub const NLBAF: usize = 25;
    /// Formatted LBA Size: format index in 3:0.
    pub const FLBAS: usize = 26;
    /// LBA Format 0 (4 bytes; format n at LBAF0 + 4n).
    pub const LBAF0: usize = 128;
}

/// Byte offset of the LBA Format descriptor that FLBAS `flbas` selects.
pub const fn id_ns_lbaf(flbas: u8) -> usize {
    id_ns::LBAF0 + 4 * (flbas & 0xf) as usize
}
/// LBA Format descriptor: LBADS (log2 of the LBA data size).
pub const fn lbaf_lbads(lbaf: u32) -> u32 {
    (lbaf >> 16) & 0xff
}
/// LBA Format descriptor: MS (metadata bytes per LBA).
pub const fn lbaf_ms(lbaf: u32) -> u32 {
    lbaf & 0xffff
}
/// Maximum transfer in bytes for MDTS `mdts` with 4 KiB pages (0 = no limit; values above 20,
/// 4 GiB and more, also mean no limit here).
pub const fn mdts_bytes(mdts: u8) -> u32 {
    if mdts == 0 || mdts > 20 {
        0
    } else {
        4096u32 << mdts
    }
}

/// Replace every byte of an Identify string that is not printable ASCII by a space.
pub fn ascii_clean(b: &mut [u8]) {
    for c in b.iter_mut() {
        if !(0x20..0x7f).contains(c) {
            *c = b' ';
        }
    }
}

fn put_str(buf: &mut [u8], s: &str) {
    buf.fill(b' ');
    let n = if s.len() < buf.len() { s.len() } else { buf.len() };
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// What an Identify Controller page says (the fields DirectNVM's controller reports; the rest
/// of the page is zero).
#[derive(Clone, Copy, Debug)]
pub struct IdentifyController<'a> {
    /// PCI vendor id (also the subsystem vendor id).
    pub vid: u16,
    /// Serial number.
    pub serial: &'a str,
    /// Model number.
    pub model: &'a str,
    /// Firmware revision.
    pub firmware: &'a str,
    /// MDTS (see `mdts_bytes`).
    pub mdts: u8,
    /// Number of namespaces.
    pub namespaces: u32,
    /// A volatile write cache is present.
    pub vwc: bool,
}

impl IdentifyController<'_> {
    /// Encode into `b` (at least `IDENTIFY_SIZE` bytes; the page is zeroed first).
    pub fn encode(&self, b: &mut [u8]) {
        use id_ctrl::*;
        b[..IDENTIFY_SIZE].fill(0);
        b[VID..VID + 2].copy_from_slice(&self.vid.to_le_bytes());
        b[SSVID..SSVID + 2].copy_from_slice(&self.vid.to_le_bytes());
        put_str(&mut b[SN..SN + SN_LEN], self.serial);
        put_str(&mut b[MN..MN + MN_LEN], self.model);
        put_str(&mut b[FR..FR + FR_LEN], self.firmware);
        b[RAB] = 6;
        b[MDTS] = self.mdts;
        b[CNTLID..CNTLID + 2].copy_from_slice(&1u16.to_le_bytes());
        b[VER..VER + 4].copy_from_slice(&VS_1_3.to_le_bytes());
        b[CNTRLTYPE] = 1; // I/O controller
        b[ACL] = 3;
        b[AERL] = 3;
        b[FRMW] = 0x02; // one firmware slot
        b[WCTEMP..WCTEMP + 2].copy_from_slice(&343u16.to_le_bytes());
        b[CCTEMP..CCTEMP + 2].copy_from_slice(&373u16.to_le_bytes());
        b[SQES] = 0x66; // 64 bytes
        b[CQES] = 0x44; // 16 bytes
        b[NN..NN + 4].copy_from_slice(&self.namespaces.to_le_bytes());
        b[VWC] = u8::from(self.vwc);
        b[PSD0_MP..PSD0_MP + 2].copy_from_slice(&600u16.to_le_bytes()); // 6.00 W
    }
}

/// Encode an Identify Namespace page for a namespace of `blocks` LBAs of `1 << lbads` bytes
/// without metadata (one LBA format) into `b` (at least `IDENTIFY_SIZE` bytes).
pub fn identify_namespace(b: &mut [u8], blocks: u64, lbads: u8) {
    use id_ns::*;
    b[..IDENTIFY_SIZE].fill(0);
    b[NSZE..NSZE + 8].copy_from_slice(&blocks.to_le_bytes());
    b[NCAP..NCAP + 8].copy_from_slice(&blocks.to_le_bytes());
    b[NUSE..NUSE + 8].copy_from_slice(&blocks.to_le_bytes());
    b[NLBAF] = 0;
    b[FLBAS] = 0;
    b[LBAF0..LBAF0 + 4].copy_from_slice(&(u32::from(lbads) << 16).to_le_bytes());
}

/// Encode an active namespace id list (CNS 02h) of namespace 1 into `b`: the ids greater than
/// `after`.
pub fn identify_active_ns_list(b: &mut [u8], after: u32) {
    b[..IDENTIFY_SIZE].fill(0);
    if after < 1 {
        b[0..4].copy_from_slice(&1u32.to_le_bytes());
    }
}
