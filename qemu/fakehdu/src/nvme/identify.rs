// SPDX-License-Identifier: MIT OR Apache-2.0
//! The model's Identify data (controller CNS 01h, namespace CNS 00h, active NS list CNS 02h),
//! encoded by the shared `directnvm_abi::nvme` codecs.

use super::spec::{identify_active_ns_list, identify_namespace, IdentifyController, IDENTIFY_SIZE};

/// PCI vendor id reported in Identify (Red Hat, Inc., as QEMU's virtual devices use).
pub const VID: u16 = 0x1b36;
/// Model number string.
pub const MODEL: &str = "DirectNVM virtual SSD";
/// Firmware revision string.
pub const FIRMWARE: &str = "DNVM0.1";

/// Identify Controller data.
pub fn controller(serial: &str, mdts: u8) -> [u8; IDENTIFY_SIZE] {
    let mut b = [0u8; IDENTIFY_SIZE];
    IdentifyController { vid: VID, serial, model: MODEL, firmware: FIRMWARE, mdts, namespaces: 1, vwc: true }.encode(&mut b);
    b
}

/// Identify Namespace data for a namespace of `blocks` 512-byte LBAs.
pub fn namespace(blocks: u64) -> [u8; IDENTIFY_SIZE] {
    let mut b = [0u8; IDENTIFY_SIZE];
    identify_namespace(&mut b, blocks, 9);
    b
}

/// Active namespace id list: ids greater than `after`.
pub fn active_ns_list(after: u32) -> [u8; IDENTIFY_SIZE] {
    let mut b = [0u8; IDENTIFY_SIZE];
    identify_active_ns_list(&mut b, after);
    b
}
