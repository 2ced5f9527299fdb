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

#[test]
fn entry_packing_matches_the_struct_layout() {
    let e = DnvmEntry { op: DNVM_OP_WRITE, urgency: 3, block_size: 8192, data_addr: 0x1234_5000, lba: 0x1_0000_0008 };
    let b = e.to_bytes();
    // On a little-endian host the packing is the repr(C) struct's bytes (what libnvmedl stores).
    // SAFETY: DnvmEntry is repr(C), 24 bytes without padding (entry_layout_matches_the_rtl).
    let raw: [u8; DNVM_ENTRY_SIZE] = unsafe { core::mem::transmute(e) };
    if cfg!(target_endian = "little") {
        assert_eq!(b, raw);
    }
    assert_eq!(&b[8..16], &0x1234_5000u64.to_le_bytes(), "data_addr in beat 1");
    assert_eq!(DnvmEntry::from_bytes(&b), Some(e));
    assert_eq!(DnvmEntry::from_bytes(&b[..23]), None);
}

#[test]
fn typed_registers_match_the_offsets() {
    let offs: [usize; 8] = HduReg::ALL.map(HduReg::offset);
    assert_eq!(
        offs,
        [HDU_REG_START, HDU_REG_NREQS, HDU_REG_REQBUF, HDU_REG_STATUSBUF, HDU_REG_DONE, HDU_REG_ID, HDU_REG_CAPS, HDU_REG_ERRORS]
    );
    assert!(HduReg::ALL.iter().all(|r| r.offset() < HDU_USER_REGS_SIZE && r.slot() * 8 == r.offset()));
    assert_eq!(HduReg::Done.name(), "DONE");
    let p: [usize; 4] = HduPrivReg::ALL.map(HduPrivReg::offset);
    assert_eq!(p, [HDU_PRIV_CTRL, HDU_PRIV_DMA_BASE, HDU_PRIV_DMA_LIMIT, HDU_PRIV_STATUS]);
    assert!(HduPrivReg::ALL.iter().all(|r| r.offset() < HDU_PRIV_REGS_SIZE));
}
