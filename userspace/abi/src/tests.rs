// SPDX-License-Identifier: MIT OR Apache-2.0
use super::*;
use core::mem::{align_of, offset_of, size_of};

#[test]
fn entry_layout_matches_the_rtl() {
    assert_eq!(size_of::<DnvmEntry>(), DNVM_ENTRY_SIZE);
    assert_eq!(offset_of!(DnvmEntry, op), 0);
    assert_eq!(offset_of!(DnvmEntry, urgency), 2);
    assert_eq!(offset_of!(DnvmEntry, block_size), 4);
    assert_eq!(offset_of!(DnvmEntry, data_addr), 8);
    assert_eq!(offset_of!(DnvmEntry, lba), 16);
    assert_eq!(align_of::<DnvmEntry>(), 8);
}

#[test]
fn ioctl_structs_have_no_padding() {
    assert_eq!(size_of::<DnvmInfo>(), 8 * 4 + 3 * 8 + 2 * 4 + 20 + 40 + 8 + 4);
    assert_eq!(size_of::<DnvmRegion>(), 40);
    assert_eq!(size_of::<DnvmLayout>(), 8 + 40 * DNVM_MAX_REGIONS);
    assert_eq!(size_of::<DnvmClaim>(), 8);
    assert_eq!(size_of::<DnvmArbitration>(), 16);
    assert_eq!(size_of::<DnvmStats>(), 48);
    assert_eq!(size_of::<HduInfo>(), 56);
    assert_eq!(size_of::<HduStats>(), 40);
}

#[test]
fn ioctl_numbers_decode() {
    assert_eq!(dnvm_ioc_type(DNVM_IOC_GET_INFO), DNVM_IOC_MAGIC);
    assert_eq!(dnvm_ioc_nr(DNVM_IOC_CLAIM), 3);
    assert_eq!(dnvm_ioc_size(DNVM_IOC_GET_LAYOUT), size_of::<DnvmLayout>());
    assert_eq!(DNVM_IOC_CONTROLLER_INIT >> 30, DNVM_IOC_NONE);
    // _IOR('x', 1, u32) on asm-generic is 0x80047801.
    assert_eq!(dnvm_ioc(DNVM_IOC_READ, b'x' as u32, 1, 4), 0x8004_7801);
}

#[test]
fn revision_detection() {
    assert_eq!(hdu_revision(0), HDU_REV1);
    assert_eq!(hdu_revision(hdu_id(2)), HDU_REV2);
    assert_eq!(hdu_revision(0xdead_beef), HDU_REV1);
}

#[test]
fn caps_round_trip() {
    let c = HduCaps { engines: 4, queue_depth_log2: 6, max_nreqs: 1024, dispatch_depth: 64, max_xfer_pages: 32, start_queue: 1 };
    assert_eq!(HduCaps::from_reg(c.to_reg()), c);
    assert_eq!(HduCaps::from_reg(HduCaps::REV1.to_reg()), HduCaps::REV1);
}

#[test]
fn urgency_routing() {
    for u in 0..4u16 {
        assert_eq!(dnvm_engine_for_urgency(u, 4), u as u32);
        assert_eq!(dnvm_engine_for_urgency(u, 1), 0);
    }
    assert_eq!(dnvm_engine_for_urgency(1, 2), 0);
    assert_eq!(dnvm_engine_for_urgency(2, 2), 1);
    assert_eq!(dnvm_engine_for_urgency(9, 4), 3);
    assert_eq!(dnvm_engine_qprio(1, 2), 2);
    assert_eq!(dnvm_qid(0, 0, 1), 1);
    assert_eq!(dnvm_qid(3, 0, 1), 4);
    assert_eq!(dnvm_qid(1, 2, 4), 7);
}

#[test]
fn status_word() {
    let w = dnvm_status(0x0280, DNVM_HDU_ERR_NONE);
    assert_eq!(w & DNVM_STATUS_DONE, 1);
    assert_eq!(dnvm_status_nvme(w), 0x0280);
    assert_eq!(dnvm_status_hdu(dnvm_status(0, DNVM_HDU_ERR_WINDOW)), DNVM_HDU_ERR_WINDOW);
}

#[test]
fn queue_window_and_mailbox_layout() {
    const { assert!(DNVM_QWIN_PRP_OFFSET + DNVM_QWIN_PRP_SIZE <= DNVM_QWIN_CQ_OFFSET) };
    const { assert!(DNVM_QWIN_CQ_OFFSET < DNVM_QWIN_QUEUE_STRIDE) };
    const { assert!(TESTDEV_REG_ARGS + 8 * TESTDEV_NARGS <= TESTDEV_REG_RESULT) };
    const { assert!(TESTDEV_REG_RESULT + 8 * TESTDEV_NRESULTS <= DNVM_PAGE_SIZE as usize) };
    const { assert!(TESTDEV_STAT_COUNT <= TESTDEV_NRESULTS) };
    assert_eq!(TESTDEV_MAILBOX_PHYS % DNVM_PAGE_SIZE, 0);
    assert_eq!(HDU_CTRL_QRESET & HDU_CTRL_RESET, 0);
}

#[test]
fn revision_capabilities() {
    assert_eq!(Revision::from_id(0), Some(Revision::Rev1));
    assert_eq!(Revision::from_id(hdu_id(HDU_REV2)), Some(Revision::Rev2));
    assert_eq!(Revision::from_id(hdu_id(3)), None);
    assert_eq!(Revision::from_number(0), None);
    for r in [Revision::Rev1, Revision::Rev2] {
        assert_eq!(Revision::from_number(r.number()), Some(r));
    }
    let rev1 = Revision::Rev1;
    assert!(!rev1.has_status() && !rev1.has_caps() && !rev1.can_reset() && !rev1.has_flush() && !rev1.has_dma_window());
    let rev2 = Revision::Rev2;
    assert!(rev2.has_status() && rev2.has_caps() && rev2.can_reset() && rev2.has_flush() && rev2.has_dma_window());
}
