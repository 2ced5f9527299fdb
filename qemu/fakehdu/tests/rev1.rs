// SPDX-License-Identifier: MIT OR Apache-2.0
//! Revision 1: the published RTL's rules.

mod common;

use common::*;
use directnvm_abi::*;
use fakehdu::test_support::{done_reg, start_batch, start_reg, write_entries};
use fakehdu::TimingMode;

#[test]
fn write_then_read_is_byte_exact() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    write_read_verify(&mut dev, 0, 0, 40, 1);
    write_read_verify(&mut dev, 3, 4096, 5, 2);
    assert_eq!(dev.stats().hdus[0].batches, 2);
}

#[test]
fn lbas_are_512_bytes() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    let data = pattern(7, 4096);
    dev.mem.write(DATA, &data).unwrap();
    run_batch(&mut dev, 0, &[entry(DNVM_OP_WRITE, DATA, 1)], None);
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA2, 0)], None);
    let back = read_vec(&dev.mem, DATA2, 4096);
    assert!(back[..512].iter().all(|&b| b == 0));
    assert_eq!(&back[512..], &data[..4096 - 512]);
}

#[test]
fn op_bit0_only_block_size_and_urgency_ignored() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    let data = pattern(3, 8192);
    dev.mem.write(DATA, &data).unwrap();
    // op 3 = write (bit 0), block_size 8192 ignored: only 4 KiB moves.
    let mut e = entry(3, DATA, 64);
    e.block_size = 8192;
    e.urgency = 3;
    run_batch(&mut dev, 0, &[e], None);
    dev.mem.fill(DATA2, 8192, 0xee).unwrap();
    // op 2 = read.
    run_batch(&mut dev, 0, &[DnvmEntry { op: 2, urgency: 1, block_size: 0, data_addr: DATA2, lba: 64 }], None);
    assert_eq!(read_vec(&dev.mem, DATA2, 4096), data[..4096]);
    assert!(read_vec(&dev.mem, DATA2 + 4096, 4096).iter().all(|&b| b == 0xee));
    assert_eq!(dev.stats().nvme.bytes_written, 4096);
}

#[test]
fn doorbells_are_one_per_subbatch_of_31() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    for n in [0usize, 1, 30, 31, 32, 62, 63, 100, 170] {
        let before = dev.stats().hdus[1].clone();
        let es: Vec<_> = (0..n).map(|i| entry(DNVM_OP_READ, DATA + 4096 * i as u64, 8 * i as u64)).collect();
        run_batch(&mut dev, 1, &es, None);
        let after = dev.stats().hdus[1].clone();
        let want = n.div_ceil(31).max(1) as u64;
        assert_eq!(after.sq_doorbells - before.sq_doorbells, want, "SQ doorbells for N={n}");
        assert_eq!(after.cq_doorbells - before.cq_doorbells, want, "CQ doorbells for N={n}");
        assert_eq!(after.entries - before.entries, n as u64);
    }
}

#[test]
fn nreqs_zero_rings_both_doorbells_and_sets_done() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    run_batch(&mut dev, 0, &[], None);
    let s = dev.stats();
    assert_eq!((s.hdus[0].sq_doorbells, s.hdus[0].cq_doorbells, s.nvme.io_commands), (1, 1, 0));
}

#[test]
fn done_is_a_level_cleared_by_the_next_start() {
    let mut dev = device(1, TimingMode::Virtual);
    bring_up(&mut dev);
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA, 0)], None);
    for _ in 0..100 {
        dev.step();
        assert_eq!(done_reg(&dev.mem, &dev.board, 0), HDU_DONE_BIT, "DONE stays set; reading does not clear it");
    }
    write_entries(&dev.mem, STAGING, &[entry(DNVM_OP_READ, DATA, 0)]).unwrap();
    start_batch(&dev.mem, &dev.board, 0, STAGING, 1, None).unwrap();
    dev.step(); // START accepted: DONE cleared before START reads 0; the read is at the SSD.
    assert_eq!(start_reg(&dev.mem, &dev.board, 0), 0);
    assert_eq!(done_reg(&dev.mem, &dev.board, 0), 0);
    dev.run_until_idle(100_000);
    assert_eq!(done_reg(&dev.mem, &dev.board, 0), HDU_DONE_BIT);
}

#[test]
fn start_while_busy_is_lost() {
    let mut dev = device(1, TimingMode::Virtual);
    bring_up(&mut dev);
    let es: Vec<_> = (0..10).map(|i| entry(DNVM_OP_READ, DATA + 4096 * i, 8 * i)).collect();
    write_entries(&dev.mem, STAGING, &es).unwrap();
    start_batch(&dev.mem, &dev.board, 0, STAGING, 10, None).unwrap();
    dev.step();
    assert!(dev.hdus[0].busy());
    start_batch(&dev.mem, &dev.board, 0, STAGING, 5, None).unwrap();
    dev.step();
    assert_eq!(start_reg(&dev.mem, &dev.board, 0), 0, "a lost START still reads 0");
    dev.run_until_idle(100_000);
    let s = dev.stats().hdus[0].clone();
    assert_eq!((s.starts, s.dropped_starts, s.entries, s.batches), (1, 1, 10, 1));
}

#[test]
fn phase_tags_wrap_over_many_batches() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    // 60 batches of 7 = 420 commands: the 32-entry CQ wraps 13 times.
    for b in 0..60u64 {
        write_read_verify(&mut dev, 2, b * 56, 7, 100 + b);
    }
    let s = dev.stats();
    assert_eq!(s.hdus[2].entries, 60 * 14);
    assert_eq!(s.nvme.io_errors, 0);
}

#[test]
fn nreqs_170_is_safe() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    write_read_verify(&mut dev, 0, 0, 170, 9);
    assert_eq!(dev.stats().hdus[0].protocol_violations, 0);
}

#[test]
fn nreqs_171_crosses_4k_and_corrupts_the_fetch() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    dev.mem.fill(DATA2, 171 * 4096, 0x5a).unwrap();
    let es: Vec<_> = (0..171).map(|i| entry(DNVM_OP_READ, DATA2 + 4096 * i as u64, 8 * i as u64)).collect();
    run_batch(&mut dev, 0, &es, None);
    let s = dev.stats();
    // Burst 5 (entries 160..170) crosses byte 4096 of the staging page: one violation, and
    // entry 170's last beat (its LBA) wraps to page offset 0 = entry 0's op/urgency/size,
    // i.e. LBA 4096 << 32: out of range, which rev 1 cannot report.
    assert_eq!(s.hdus[0].protocol_violations, 1);
    assert_eq!(s.hdus[0].entries, 171);
    assert_eq!(s.nvme.io_errors, 1);
    assert!(read_vec(&dev.mem, DATA2 + 170 * 4096, 4096).iter().all(|&b| b == 0x5a), "entry 170 moved no data");
    assert!(read_vec(&dev.mem, DATA2, 4096).iter().all(|&b| b == 0), "entry 0 read zeros from the fresh disk");
}

#[test]
fn rev1_has_no_id_caps_errors_and_no_status() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    let u = dev.board.hdus[0].user;
    for off in [HDU_REG_ID, HDU_REG_CAPS, HDU_REG_ERRORS] {
        dev.mem.store64(u + off as u64, 0xdead).unwrap();
    }
    dev.step();
    for off in [HDU_REG_ID, HDU_REG_CAPS, HDU_REG_ERRORS] {
        assert_eq!(dev.mem.load64(u + off as u64).unwrap(), 0);
    }
    assert_eq!(hdu_revision(dev.mem.load64(u + HDU_REG_ID as u64).unwrap()), HDU_REV1);
    // An out-of-range LBA fails at the SSD, yet the batch completes with DONE and no status.
    dev.mem.fill(STATUS, 16, 0).unwrap();
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA, u64::MAX / 2)], Some(STATUS));
    assert_eq!(dev.stats().nvme.io_errors, 1);
    assert!(read_vec(&dev.mem, STATUS, 16).iter().all(|&b| b == 0), "rev 1 writes no status words");
}
