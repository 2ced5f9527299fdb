// SPDX-License-Identifier: MIT OR Apache-2.0
//! The NVMe controller model: registers, admin commands, status codes, PRPs, arbitration.

mod common;

use common::*;
use fakehdu::nvme::spec::{self, admin, feat, io, sc as s, Sqe};
use fakehdu::test_support::{bringup, Controller};
use fakehdu::timing::{MediaOp, Ssd, SsdParams};
use fakehdu::{Device, TimingMode};

fn admin_status(dev: &mut Device, host: &mut Controller, sqe: Sqe) -> u16 {
    sc(admin(dev, host, sqe).status)
}

#[test]
fn registers_and_identify() {
    let mut dev = device(1, TimingMode::Virtual);
    let id = bring_up(&mut dev);
    let bar = dev.board.nvme_bar;
    let cap = dev.mem.load64(bar + spec::r(spec::reg::CAP)).unwrap();
    assert_eq!(cap & 0xffff, 4095, "MQES");
    assert_eq!((cap >> 16) & 1, 1, "CQR");
    assert_eq!((cap >> 17) & 3, 1, "AMS: WRR with urgent class");
    assert_eq!((cap >> 24) & 0xff, 10, "TO");
    assert_eq!((cap >> 32) & 0xf, 0, "DSTRD");
    assert_eq!((cap >> 48) & 0xf, 0, "MPSMIN");
    assert_eq!(dev.mem.load32(bar + spec::r(spec::reg::VS)).unwrap(), 0x0001_0300);
    assert_eq!(String::from_utf8_lossy(&id.model).trim(), "DirectNVM virtual SSD");
    assert_eq!(id.max_transfer, 4096 << 5, "MDTS 5");
    assert_eq!(id.capacity_lbas, (64 << 20) / 512);
    assert_eq!(id.lba_size, 512, "LBADS 9");
    assert_eq!(id.num_queues, 3 | (3 << 16), "NSQA, NCQA");
    assert_eq!(dev.stats().nvme.enables, 1);
}

#[test]
fn admin_status_codes() {
    let mut dev = device(1, TimingMode::None);
    let mut h = bring_up_host_queues(&mut dev, false);
    let h = &mut h;
    let buf = 0x7b00_8000;
    let q = |qid: u32, size: u32| qid | ((size - 1) << 16);
    assert_eq!(admin_status(&mut dev, h, Sqe { opcode: 0x7f, ..Default::default() }), s::INVALID_OPCODE);
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::IDENTIFY, prp1: buf, cdw: [0x10, 0, 0, 0, 0, 0], ..Default::default() }),
        s::INVALID_FIELD
    );
    assert_eq!(admin_status(&mut dev, h, Sqe { opcode: admin::IDENTIFY, nsid: 2, prp1: buf, ..Default::default() }), s::INVALID_NAMESPACE);
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::IDENTIFY, nsid: 0, prp1: buf, cdw: [2, 0, 0, 0, 0, 0], ..Default::default() }),
        s::SUCCESS
    );
    assert_eq!(dev.mem.load32(buf).unwrap(), 1, "active namespace list = [1]");
    let cq = HOSTQ + 0x10000;
    // Create I/O CQ: QID 0, bad size, PC = 0, misaligned, too big.
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::CREATE_CQ, prp1: cq, cdw: [q(0, 16), 1, 0, 0, 0, 0], ..Default::default() }),
        s::INVALID_QID
    );
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::CREATE_CQ, prp1: cq, cdw: [q(9, 1), 1, 0, 0, 0, 0], ..Default::default() }),
        s::INVALID_QSIZE
    );
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::CREATE_CQ, prp1: cq, cdw: [q(9, 8192), 1, 0, 0, 0, 0], ..Default::default() }),
        s::INVALID_QSIZE
    );
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::CREATE_CQ, prp1: cq, cdw: [q(9, 16), 0, 0, 0, 0, 0], ..Default::default() }),
        s::INVALID_FIELD
    );
    assert_eq!(
        admin_status(&mut dev, h, Sqe { opcode: admin::CREATE_CQ, prp1: cq + 8, cdw: [q(9, 16), 1, 0, 0, 0, 0], ..Default::default() }),
        s::INVALID_PRP_OFFSET
    );
    // Create I/O SQ on a missing CQ.
    assert_eq!(
        admin_status(
            &mut dev,
            h,
            Sqe { opcode: admin::CREATE_SQ, prp1: HOSTQ, cdw: [q(9, 16), 1 | (9 << 16), 0, 0, 0, 0], ..Default::default() }
        ),
        s::CQ_INVALID
    );
    // Delete missing SQ / CQ.
    assert_eq!(admin_status(&mut dev, h, Sqe { opcode: admin::DELETE_SQ, cdw: [9, 0, 0, 0, 0, 0], ..Default::default() }), s::INVALID_QID);
    assert_eq!(admin_status(&mut dev, h, Sqe { opcode: admin::DELETE_CQ, cdw: [0, 0, 0, 0, 0, 0], ..Default::default() }), s::INVALID_QID);
    // Number of queues: 0xffff is invalid; after queues exist it is a sequence error.
    assert_eq!(
        admin_status(
            &mut dev,
            h,
            Sqe { opcode: admin::SET_FEATURES, cdw: [feat::NUM_QUEUES as u32, 0xffff, 0, 0, 0, 0], ..Default::default() }
        ),
        s::INVALID_FIELD
    );
    // Saveable features are not supported.
    assert_eq!(
        admin_status(
            &mut dev,
            h,
            Sqe { opcode: admin::SET_FEATURES, cdw: [feat::ARBITRATION as u32 | 1 << 31, 0, 0, 0, 0, 0], ..Default::default() }
        ),
        s::FEATURE_NOT_SAVEABLE
    );
    assert_eq!(
        admin_status(
            &mut dev,
            h,
            Sqe { opcode: admin::GET_LOG_PAGE, prp1: buf, cdw: [0x02 | (127 << 16), 0, 0, 0, 0, 0], ..Default::default() }
        ),
        s::SUCCESS
    );
    assert_eq!(
        admin_status(
            &mut dev,
            h,
            Sqe { opcode: admin::GET_LOG_PAGE, prp1: buf, cdw: [0x7f | (127 << 16), 0, 0, 0, 0, 0], ..Default::default() }
        ),
        s::INVALID_LOG_PAGE
    );
}

fn with_queues(dev: &mut Device) -> IoQ {
    let mut h = bring_up_host_queues(dev, false);
    IoQ::create(dev, &mut h, 9, HOSTQ, 64, 0)
}

#[test]
fn queue_lifecycle_status_codes() {
    let mut dev = device(1, TimingMode::None);
    bring_up_with(&mut dev, |c| (c.cores, c.engines, c.io_queue_depth, c.allow_wrr) = (1, 1, 32, false));
    // Restart the controller: features return to defaults and queues are gone.
    let cfg = bringup_cfg(&dev);
    let mut h = with_host(&mut dev, |host| bringup::enable(host, cfg)).unwrap();
    let h = &mut h;
    let d = &mut dev;
    let c = admin(d, h, Sqe::set_features(feat::NUM_QUEUES, 3 | (3 << 16)));
    assert_eq!((c.status, c.dw0), (0, 3 | (3 << 16)));
    admin_ok(d, h, Sqe::set_features(feat::ARBITRATION, 0x0704_0203));
    let dw0 = admin_ok(d, h, Sqe::new(admin::GET_FEATURES, feat::ARBITRATION as u32, 0));
    assert_eq!(dw0, 0x0704_0203);
    IoQ::create(d, h, 1, HOSTQ, 16, 0);
    // QID beyond the granted number of queues.
    let c =
        admin(d, h, Sqe { opcode: admin::CREATE_CQ, prp1: HOSTQ + 0x10000, cdw: [5 | (15 << 16), 1, 0, 0, 0, 0], ..Default::default() });
    assert_eq!(sc(c.status), s::INVALID_QID);
    // Existing QID.
    let c =
        admin(d, h, Sqe { opcode: admin::CREATE_CQ, prp1: HOSTQ + 0x10000, cdw: [1 | (15 << 16), 1, 0, 0, 0, 0], ..Default::default() });
    assert_eq!(sc(c.status), s::INVALID_QID);
    let c = admin(d, h, Sqe { opcode: admin::SET_FEATURES, cdw: [feat::NUM_QUEUES as u32, 0, 0, 0, 0, 0], ..Default::default() });
    assert_eq!(sc(c.status), s::COMMAND_SEQUENCE);
    let c = admin(d, h, Sqe { opcode: admin::DELETE_CQ, cdw: [1, 0, 0, 0, 0, 0], ..Default::default() });
    assert_eq!(sc(c.status), s::INVALID_QUEUE_DELETION);
    admin_ok(d, h, Sqe { opcode: admin::DELETE_SQ, cdw: [1, 0, 0, 0, 0, 0], ..Default::default() });
    admin_ok(d, h, Sqe { opcode: admin::DELETE_CQ, cdw: [1, 0, 0, 0, 0, 0], ..Default::default() });
}

/// The test bring-up configuration of one round-robin engine queue pair.
fn bringup_cfg(dev: &fakehdu::Device) -> fakehdu::test_support::NvmeConfig {
    let mut c = fakehdu::test_support::nvme_config(&dev.board);
    (c.cores, c.engines, c.io_queue_depth, c.allow_wrr) = (1, 1, 32, false);
    c
}

#[test]
fn io_status_codes() {
    let mut dev = device(1, TimingMode::None);
    let mut q = with_queues(&mut dev);
    let nblocks = (64u64 << 20) / 512;
    let c = q.exec(&mut dev, &rw(io::READ, nblocks - 7, 8, DATA, 0));
    assert_eq!(sc(c.status), s::LBA_OUT_OF_RANGE);
    assert_eq!(c.status & s::DNR, s::DNR);
    let mut bad_ns = rw(io::READ, 0, 8, DATA, 0);
    bad_ns.nsid = 2;
    assert_eq!(sc(q.exec(&mut dev, &bad_ns).status), s::INVALID_NAMESPACE);
    assert_eq!(sc(q.exec(&mut dev, &rw(0x7e, 0, 8, DATA, 0)).status), s::INVALID_OPCODE);
    // 33 pages > MDTS (32 pages).
    assert_eq!(sc(q.exec(&mut dev, &rw(io::READ, 0, 33 * 8, DATA, DATA2)).status), s::INVALID_FIELD);
    // PRP2 must be page aligned for a two-page transfer.
    assert_eq!(sc(q.exec(&mut dev, &rw(io::READ, 0, 16, DATA, DATA2 + 512)).status), s::INVALID_PRP_OFFSET);
    // Data outside guest RAM: data transfer error at completion.
    assert_eq!(sc(q.exec(&mut dev, &rw(io::READ, 0, 8, 0x1000, 0)).status), s::DATA_TRANSFER_ERROR);
    let flush = Sqe { opcode: io::FLUSH, nsid: 1, ..Default::default() };
    assert_eq!(q.exec(&mut dev, &flush).status, 0);
    assert_eq!(dev.stats().nvme.flushes, 1);
}

#[test]
fn prp2_prp_lists_and_offsets_move_exact_bytes() {
    let mut dev = device(1, TimingMode::None);
    let mut q = with_queues(&mut dev);
    let mem = dev.mem.clone();
    // 128 KiB write described by a PRP list of scattered pages (in reverse order).
    let pages: Vec<u64> = (0..32u64).map(|i| DATA + 0x10_0000 - 4096 * (i + 1)).collect();
    let data = pattern(42, 32 * 4096);
    for (i, p) in pages.iter().enumerate() {
        mem.write(*p, &data[i * 4096..(i + 1) * 4096]).unwrap();
    }
    let list = 0x7b00_c000;
    for (i, p) in pages[1..].iter().enumerate() {
        mem.store64(list + 8 * i as u64, *p).unwrap();
    }
    assert_eq!(q.exec(&mut dev, &rw(io::WRITE, 800, 256, pages[0], list)).status, 0);
    // Read it back: PRP1 with an offset (0x200 into a page) and a chained PRP list that starts
    // 16 bytes before a page end (2 entries, then a chain pointer).
    let dst = DATA2 + 0x200;
    let list2 = 0x7b00_dff0;
    let list3 = 0x7b00_f000;
    // Contiguous destination: PRP1 = dst (3584 bytes), then pages dst_page+1.. (32 more pages).
    let base = DATA2;
    let mut entries: Vec<u64> = (1..=32u64).map(|i| base + 4096 * i).collect();
    // list2 holds 2 qwords before the page end: entry 0, then chain -> list3.
    mem.store64(list2, entries.remove(0)).unwrap();
    mem.store64(list2 + 8, list3).unwrap();
    for (i, e) in entries.iter().enumerate() {
        mem.store64(list3 + 8 * i as u64, *e).unwrap();
    }
    mem.fill(DATA2, 34 * 4096, 0).unwrap();
    let c = q.exec(&mut dev, &rw(io::READ, 800, 256, dst, list2));
    assert_eq!(c.status, 0);
    assert!(read_vec(&mem, dst, 32 * 4096) == data, "PRP list read back");
    assert!(read_vec(&mem, DATA2, 0x200).iter().all(|&b| b == 0), "bytes before PRP1 untouched");
    // 8 KiB with PRP2.
    mem.fill(DATA2, 8192, 0).unwrap();
    assert_eq!(q.exec(&mut dev, &rw(io::READ, 800, 16, DATA2, DATA2 + 0x3000)).status, 0);
    assert_eq!(read_vec(&mem, DATA2, 4096), data[..4096]);
    assert_eq!(read_vec(&mem, DATA2 + 0x3000, 4096), data[4096..8192]);
    // A self-referencing PRP chain is rejected, not looped on.
    let evil = 0x7b00_eff8;
    mem.store64(evil, evil).unwrap();
    assert_ne!(q.exec(&mut dev, &rw(io::READ, 0, 64, DATA2, evil)).status, 0);
}

#[test]
fn disable_reset_and_shutdown() {
    let mut dev = device(1, TimingMode::Virtual);
    bring_up(&mut dev);
    let bar = dev.board.nvme_bar;
    let m = dev.mem.clone();
    let cc = m.load32(bar + spec::r(spec::reg::CC)).unwrap();
    m.store32(bar + spec::r(spec::reg::CC), cc | (1 << 14)).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(m.load32(bar + spec::r(spec::reg::CSTS)).unwrap() & 0xc, spec::CSTS_SHST_COMPLETE);
    m.store32(bar + spec::r(spec::reg::CC), 0).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(m.load32(bar + spec::r(spec::reg::CSTS)).unwrap(), 0);
    // Bad admin queue alignment: controller fatal status.
    m.store64(bar + spec::r(spec::reg::ASQ), 0x7b00_0100).unwrap();
    m.store32(bar + spec::r(spec::reg::CC), 1 | (6 << 16) | (4 << 20)).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(m.load32(bar + spec::r(spec::reg::CSTS)).unwrap() & spec::CSTS_CFS, spec::CSTS_CFS);
    m.store32(bar + spec::r(spec::reg::CC), 0).unwrap();
    dev.run_until_idle(1000);
    bring_up(&mut dev);
    write_read_verify_ok(&mut dev);
}

fn write_read_verify_ok(dev: &mut Device) {
    // Queues were re-created at tail 0, the rev 1 engine's pointers happen to be 0 too (no I/O
    // yet), so I/O works.
    write_read_verify(dev, 0, 0, 3, 5);
}

/// Keep three SQs (high, medium, low) full and measure the completion shares.
#[test]
fn wrr_shares_follow_weights_under_saturation() {
    let mut dev = device_with(1, TimingMode::Virtual, |c| c.nvme.max_inflight = 64);
    // Weights 8:4:2 (0's based 7, 3, 1), burst 2^1.
    let arb = 1 | (1 << 8) | (3 << 16) | (7 << 24);
    let mut h = bring_up_host_queues(&mut dev, true);
    admin_ok(&mut dev, &mut h, Sqe::set_features(feat::ARBITRATION, arb));
    let mut qs: Vec<IoQ> =
        (0..3u16).map(|i| IoQ::create(&mut dev, &mut h, 10 + i, HOSTQ + 0x2_0000 * u64::from(i), 256, u32::from(i) + 1)).collect();
    let mem = dev.mem.clone();
    let fill = |q: &mut IoQ, n: usize| {
        for k in 0..n {
            q.submit(&mem, &rw(io::READ, 8 * (k as u64 % 1000), 8, DATA + 4096 * u64::from(q.qid), 0), false);
        }
        q.ring(&mem);
    };
    for q in qs.iter_mut() {
        fill(q, 255);
    }
    let mut done = [0u64; 3];
    let mut total = 0;
    while total < 14_000 {
        dev.step();
        if let Some(t) = dev.next_event() {
            dev.clock.advance_to(t);
        }
        for (i, q) in qs.iter_mut().enumerate() {
            let mut n = 0;
            while let Some(c) = q.poll(&mem) {
                assert_eq!(c.status, 0);
                n += 1;
            }
            if n > 0 {
                if total > 2000 {
                    done[i] += n as u64;
                }
                total += n;
                fill(q, n);
            }
        }
    }
    let sum: u64 = done.iter().sum();
    for (i, w) in [8.0, 4.0, 2.0].iter().enumerate() {
        let share = done[i] as f64 / sum as f64;
        let want = w / 14.0;
        assert!((share - want).abs() / want < 0.05, "class {i}: share {share:.3}, want {want:.3} ({done:?})");
    }
}

#[test]
fn urgent_class_has_strict_priority() {
    let mut dev = device_with(1, TimingMode::Virtual, |c| c.nvme.max_inflight = 16);
    let mut h = bring_up_host_queues(&mut dev, true);
    admin_ok(&mut dev, &mut h, Sqe::set_features(feat::ARBITRATION, 0));
    let mut urgent = IoQ::create(&mut dev, &mut h, 10, HOSTQ, 256, 0);
    let mut high = IoQ::create(&mut dev, &mut h, 11, HOSTQ + 0x2_0000, 256, 1);
    let mem = dev.mem.clone();
    for k in 0..200u64 {
        urgent.submit(&mem, &rw(io::READ, 8 * k, 8, DATA, 0), false);
        high.submit(&mem, &rw(io::READ, 8 * k, 8, DATA2, 0), false);
    }
    high.ring(&mem);
    urgent.ring(&mem);
    let mut order = Vec::new();
    for _ in 0..100_000 {
        if order.len() == 400 {
            break;
        }
        dev.step();
        if let Some(t) = dev.next_event() {
            dev.clock.advance_to(t);
        }
        while urgent.poll(&mem).is_some() {
            order.push(0);
        }
        while high.poll(&mem).is_some() {
            order.push(1);
        }
    }
    assert_eq!(order.len(), 400);
    // Only the commands fetched before the urgent doorbell was seen may precede urgent ones.
    let first_high = order.iter().position(|&c| c == 1).unwrap();
    let last_urgent = order.iter().rposition(|&c| c == 0).unwrap();
    assert!(last_urgent < first_high + 16, "urgent starved by high: first high {first_high}, last urgent {last_urgent}");
}

#[test]
fn round_robin_without_wrr_is_fair() {
    let mut dev = device_with(1, TimingMode::Virtual, |c| c.nvme.max_inflight = 8);
    let mut h = bring_up_host_queues(&mut dev, false);
    admin_ok(&mut dev, &mut h, Sqe::set_features(feat::ARBITRATION, 0));
    let mut a = IoQ::create(&mut dev, &mut h, 10, HOSTQ, 256, 3);
    let mut b = IoQ::create(&mut dev, &mut h, 11, HOSTQ + 0x2_0000, 256, 0);
    let mem = dev.mem.clone();
    for k in 0..100u64 {
        a.submit(&mem, &rw(io::READ, 8 * k, 8, DATA, 0), false);
        b.submit(&mem, &rw(io::READ, 8 * k, 8, DATA2, 0), false);
    }
    a.ring(&mem);
    b.ring(&mem);
    let (mut na, mut nb) = (0, 0);
    while na + nb < 100 {
        dev.step();
        if let Some(t) = dev.next_event() {
            dev.clock.advance_to(t);
        }
        while a.poll(&mem).is_some() {
            na += 1;
        }
        while b.poll(&mem).is_some() {
            nb += 1;
        }
    }
    assert!((na as i64 - nb as i64).abs() <= 8, "RR ignores QPRIO: {na} vs {nb}");
}

#[test]
fn timing_model_matches_the_data_sheet() {
    let mut ssd = Ssd::new(SsdParams::default());
    // QD1 4 KiB random read latency ~ 50-60 us.
    let t = ssd.schedule(0, MediaOp::Read, 0, 4096);
    assert!((45_000..65_000).contains(&t), "QD1 read {t} ns");
    // 10,000 back-to-back 4 KiB reads: ~250k IOPS.
    let mut ssd = Ssd::new(SsdParams::default());
    let end = (0..10_000u64).map(|i| ssd.schedule(0, MediaOp::Read, i * 8 * 7919 % 100_000, 4096)).max().unwrap();
    let iops = 10_000.0 / (end as f64 / 1e9);
    assert!((iops - 250_000.0).abs() / 250_000.0 < 0.05, "read IOPS {iops}");
    // 1,000 sequential 128 KiB reads: ~3,500 MB/s.
    let mut ssd = Ssd::new(SsdParams::default());
    let end = (0..1000u64).map(|i| ssd.schedule(0, MediaOp::Read, i * 256, 131072)).max().unwrap();
    let bw = 1000.0 * 131072.0 / (end as f64 / 1e9);
    assert!((bw - 3.5e9).abs() / 3.5e9 < 0.05, "read bandwidth {bw}");
    let mut ssd = Ssd::new(SsdParams::default());
    let end = (0..1000u64).map(|i| ssd.schedule(0, MediaOp::Write, i * 256, 131072)).max().unwrap();
    let bw = 1000.0 * 131072.0 / (end as f64 / 1e9);
    assert!((bw - 2.3e9).abs() / 2.3e9 < 0.05, "write bandwidth {bw}");
    let mut ssd = Ssd::new(SsdParams::default());
    let end = (0..10_000u64).map(|i| ssd.schedule(0, MediaOp::Write, i * 8, 4096)).max().unwrap();
    let iops = 10_000.0 / (end as f64 / 1e9);
    assert!((iops - 550_000.0).abs() / 550_000.0 < 0.05, "write IOPS {iops}");
}
