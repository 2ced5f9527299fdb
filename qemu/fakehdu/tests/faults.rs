// SPDX-License-Identifier: MIT OR Apache-2.0
//! Fault injection paths.

mod common;

use common::*;
use directnvm_abi::*;
use fakehdu::control::{parse_line, ControlOp};
use fakehdu::test_support::{done_reg, start_batch, write_entries};
use fakehdu::TimingMode;

#[test]
fn io_error_rule_fails_commands_and_disarms() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    dev.control(parse_line("fault io 16 24 0x281 any 1").unwrap()).unwrap();
    dev.mem.fill(DATA2, 3 * 4096, 0x33).unwrap();
    let es: Vec<_> = (0..3u64).map(|i| entry(DNVM_OP_READ, DATA2 + 4096 * i, 8 * i)).collect();
    run_batch(&mut dev, 0, &es, None);
    assert_eq!(dev.stats().nvme.io_errors, 1, "rev 1 still sets DONE; the error is only counted");
    assert!(read_vec(&dev.mem, DATA2 + 2 * 4096, 4096).iter().all(|&b| b == 0x33), "failed read moved no data");
    run_batch(&mut dev, 0, &es, None);
    assert_eq!(dev.stats().nvme.io_errors, 1, "count-limited rule disarmed");
    assert!(dev.faults.io.is_empty());
}

#[test]
fn io_error_reaches_rev2_status() {
    let mut dev = device(2, TimingMode::None);
    bring_up(&mut dev);
    open_window(&dev);
    dev.control(ControlOp::IoError(fakehdu::faults::IoFault { lba_start: 0, lba_end: 8, opcode: Some(1), status: 0x280, remaining: None }))
        .unwrap();
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA, 0), entry(DNVM_OP_WRITE, DATA, 0)], Some(STATUS));
    assert_eq!(dev.mem.load32(STATUS).unwrap(), DNVM_STATUS_DONE);
    assert_eq!(dnvm_status_nvme(dev.mem.load32(STATUS + 4).unwrap()), 0x280);
}

#[test]
fn dropped_start_leaves_stale_done() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA, 0)], None);
    dev.control(parse_line("fault drop-start 0 1").unwrap()).unwrap();
    write_entries(&dev.mem, STAGING, &[entry(DNVM_OP_READ, DATA, 8)]).unwrap();
    start_batch(&dev.mem, &dev.board, 0, STAGING, 1, None).unwrap();
    dev.run_until_idle(1000);
    let s = dev.stats().hdus[0].clone();
    assert_eq!((s.starts, s.dropped_starts, s.entries), (1, 1, 1));
    // The hazard: DONE of the previous batch is still 1 although this START did nothing.
    assert_eq!(done_reg(&dev.mem, &dev.board, 0), HDU_DONE_BIT);
    start_batch(&dev.mem, &dev.board, 0, STAGING, 1, None).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(dev.stats().hdus[0].entries, 2);
}

#[test]
fn stuck_engine_never_sets_done_until_cleared_or_reset() {
    let mut dev = device(1, TimingMode::None);
    bring_up(&mut dev);
    dev.control(parse_line("fault stuck 0 on").unwrap()).unwrap();
    write_entries(&dev.mem, STAGING, &[entry(DNVM_OP_READ, DATA, 0)]).unwrap();
    start_batch(&dev.mem, &dev.board, 0, STAGING, 1, None).unwrap();
    dev.run_until_idle(10_000);
    assert_eq!(done_reg(&dev.mem, &dev.board, 0), 0);
    start_batch(&dev.mem, &dev.board, 0, STAGING, 1, None).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(dev.stats().hdus[0].dropped_starts, 1, "stuck HDU is busy");
    dev.control(parse_line("faults clear").unwrap()).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(done_reg(&dev.mem, &dev.board, 0), HDU_DONE_BIT);

    let mut dev = device(2, TimingMode::None);
    bring_up(&mut dev);
    open_window(&dev);
    dev.control(ControlOp::Stuck { hdu: 1, on: true }).unwrap();
    write_entries(&dev.mem, STAGING, &[entry(DNVM_OP_READ, DATA, 0)]).unwrap();
    start_batch(&dev.mem, &dev.board, 1, STAGING, 1, None).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(done_reg(&dev.mem, &dev.board, 1), HDU_BUSY_BIT);
    let p = dev.board.hdus[1].privileged.unwrap();
    dev.mem.store64(p + HDU_PRIV_CTRL as u64, HDU_CTRL_RESET).unwrap();
    dev.run_until_idle(1000);
    assert_eq!(done_reg(&dev.mem, &dev.board, 1), 0);
    assert!(!dev.hdus[1].busy());
}

#[test]
fn slow_device_scales_time() {
    let run = |permille: u64| {
        let mut dev = device(1, TimingMode::Virtual);
        bring_up(&mut dev);
        dev.control(ControlOp::Slow { permille }).unwrap();
        let es: Vec<_> = (0..62u64).map(|i| entry(DNVM_OP_READ, DATA + 4096 * i, 8 * i)).collect();
        let t0 = dev.clock.now();
        run_batch(&mut dev, 0, &es, None);
        dev.clock.now() - t0
    };
    let (t1, t3) = (run(1000), run(3000));
    let ratio = t3 as f64 / t1 as f64;
    assert!((2.9..3.1).contains(&ratio), "ratio {ratio}");
}

#[test]
fn forced_window_violation() {
    let mut dev = device(2, TimingMode::None);
    bring_up(&mut dev);
    open_window(&dev);
    dev.control(parse_line("fault window 0 1").unwrap()).unwrap();
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA, 0), entry(DNVM_OP_READ, DATA, 0)], Some(STATUS));
    assert_eq!(dnvm_status_hdu(dev.mem.load32(STATUS).unwrap()), DNVM_HDU_ERR_WINDOW);
    assert_eq!(dev.mem.load32(STATUS + 4).unwrap(), DNVM_STATUS_DONE);
    assert_eq!(dev.stats().hdus[0].window_faults, 1);
}

#[test]
fn control_parser_rejects_garbage() {
    for bad in ["", "fault", "fault io 1", "fault io 5 1 0x2", "fault stuck 9 on", "fault slow 0", "bogus", "fault drop-start x 1"] {
        let mut dev = device(1, TimingMode::None);
        let r = parse_line(bad).and_then(|op| dev.control(op));
        assert!(r.is_err(), "'{bad}' accepted");
    }
}
