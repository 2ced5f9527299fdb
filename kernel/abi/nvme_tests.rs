// SPDX-License-Identifier: MIT OR Apache-2.0
//! The NVMe codecs against the byte positions of the NVMe 1.3 specification.
use crate::nvme::*;

#[test]
fn sqe_round_trips_and_places_fields_per_spec() {
    let s = Sqe { opcode: 0x02, fuse: 1, psdt: 0, cid: 0xbeef, nsid: 1, mptr: 7, prp1: 0x1000, prp2: 0x2000, cdw: [1, 2, 3, 4, 5, 6] };
    let b = s.to_bytes();
    assert_eq!(b[0], 0x02);
    assert_eq!(b[1], 1, "FUSE in CDW0 9:8");
    assert_eq!(&b[2..4], &0xbeefu16.to_le_bytes(), "CID in CDW0 31:16");
    assert_eq!(&b[24..32], &0x1000u64.to_le_bytes(), "PRP1 at byte 24");
    assert_eq!(&b[40..44], &1u32.to_le_bytes(), "CDW10 at byte 40");
    assert_eq!(Sqe::from_bytes(&b), s);
}

#[test]
fn admin_command_constructors() {
    let cq = Sqe::create_io_cq(3, 32, 0x4000);
    assert_eq!((cq.opcode, cq.cdw10(), cq.cdw11(), cq.prp1), (admin::CREATE_CQ, (31 << 16) | 3, 1, 0x4000));
    assert_eq!((cq.queue_id(), cq.queue_entries()), (3, 32));
    let sq = Sqe::create_io_sq(3, 32, 2, 0x8000);
    assert_eq!(sq.cdw11(), (3 << 16) | (2 << 1) | 1, "CQID 31:16, QPRIO 2:1, PC 0");
    let id = Sqe::identify(1, 0, 0x9000);
    assert_eq!((id.opcode, id.cdw10(), id.nsid, id.prp1), (admin::IDENTIFY, 1, 0, 0x9000));
    let nq = Sqe::set_features(feat::NUM_QUEUES, num_queues(8, 8));
    assert_eq!((nq.feature_id(), nq.cdw11()), (feat::NUM_QUEUES, 7 | (7 << 16)));
    assert_eq!(num_queues_granted(num_queues(4, 6)), 4);
    assert_eq!(arbitration(3, 7, 31, 127), 3 | (7 << 8) | (31 << 16) | (127 << 24));
}

#[test]
fn cqe_round_trips_with_phase() {
    let c = Cqe { dw0: 9, sqhd: 5, sqid: 2, cid: 0x1234, status: 0x281 };
    let (head, dw3) = c.encode(true);
    let mut b = [0u8; CQE_SIZE];
    b[..CQE_DW3].copy_from_slice(&head);
    b[CQE_DW3..].copy_from_slice(&dw3.to_le_bytes());
    assert!(cqe_phase(dw3));
    assert_eq!(dw3 >> 17, 0x281, "status in DW3 31:17");
    assert_eq!(Cqe::decode(&b), (c, true));
    let (_, dw3) = c.encode(false);
    assert!(!cqe_phase(dw3));
}

#[test]
fn register_fields() {
    let cap = cap_encode(4096, 10, CAP_CQR | CAP_AMS_WRR | CAP_CSS_NVM);
    assert_eq!(cap_max_entries(cap), 4096);
    assert_eq!(cap_timeout_ms(cap), 5000);
    assert_eq!((cap_dstrd(cap), cap_mpsmin(cap)), (0, 0));
    assert_ne!(cap & CAP_AMS_WRR, 0);
    assert_eq!(cap_max_entries(cap_encode(1 << 20, 0, 0)), 65536, "MQES clamps to 16 bits");
    assert_eq!(cap_timeout_ms(0), 500, "CAP.TO 0 still waits one unit");
    let cc = cc_enable(true);
    assert_eq!((cc & CC_EN, cc_ams(cc), cc_iosqes(cc), cc_iocqes(cc), cc_css(cc), cc_mps(cc)), (1, CC_AMS_WRR, 6, 4, 0, 0));
    assert_eq!(cc_ams(cc_enable(false)), 0);
    assert_eq!(cc_shn(cc_with_shn(cc, CC_SHN_NORMAL)), CC_SHN_NORMAL);
    assert_eq!(cc_with_shn(cc_with_shn(cc, CC_SHN_NORMAL), 0), cc);
    assert_eq!(aqa_entries(aqa(64)), (64, 64));
    assert_eq!(doorbell(0, false, 0), 0x1000);
    assert_eq!(doorbell(1, true, 0), 0x100c);
    assert_eq!(doorbell(1, true, 1), 0x1018, "stride 8 with DSTRD 1");
}

#[test]
fn identify_encoding_decodes_at_the_spec_offsets() {
    let mut b = [0xffu8; IDENTIFY_SIZE];
    IdentifyController { vid: 0x1b36, serial: "SN1", model: "M", firmware: "F", mdts: 5, namespaces: 1, vwc: true }.encode(&mut b);
    assert_eq!(&b[id_ctrl::SN..id_ctrl::SN + 4], b"SN1 ");
    assert_eq!(b[id_ctrl::MN + id_ctrl::MN_LEN - 1], b' ', "space padded");
    assert_eq!(b[id_ctrl::MDTS], 5);
    assert_eq!(mdts_bytes(b[id_ctrl::MDTS]), 128 << 10);
    assert_eq!((b[id_ctrl::SQES], b[id_ctrl::CQES]), (0x66, 0x44));
    assert_eq!(b[4095], 0, "rest of the page zeroed");
    identify_namespace(&mut b, 1000, 9);
    assert_eq!(u64::from_le_bytes(b[id_ns::NSZE..id_ns::NSZE + 8].try_into().unwrap()), 1000);
    let off = id_ns_lbaf(b[id_ns::FLBAS]);
    let lbaf = u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
    assert_eq!((lbaf_lbads(lbaf), lbaf_ms(lbaf)), (9, 0));
    let mut s = *b"ab\x00\x7fc";
    ascii_clean(&mut s);
    assert_eq!(&s, b"ab  c");
}
