// SPDX-License-Identifier: MIT OR Apache-2.0
//! Board description, persistence, control socket, test mailbox, threaded use, robustness.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use directnvm_abi::*;
use fakehdu::socket::ControlSocket;
use fakehdu::test_support::{bringup, nvme_config, program_window, start_batch, write_entries, ModelHost};
use fakehdu::{Board, Config, Device, DiskSource, FakeHdu, GuestMem, MemorySource, TimingMode};

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fakehdu-test-{}-{name}", std::process::id()))
}

#[test]
fn default_board_equals_the_overlay() {
    let dtso = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dts/qemu-virt-directnvm.dtso");
    let out = tmp("overlay.dtb");
    let st = std::process::Command::new("dtc").args(["-@", "-q", "-I", "dts", "-O", "dtb", "-o"]).arg(&out).arg(dtso).status();
    match st {
        Ok(s) if s.success() => {}
        _ => {
            eprintln!("SKIP: dtc not available");
            return;
        }
    }
    let blob = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    assert_eq!(Board::from_dtb(&blob).unwrap(), Board::qemu_default());
}

/// The committed overlay is the one rendered from `Board::qemu_default` (scripts/gen-headers.sh
/// regenerates it), and run.sh's map agrees with the board.
#[test]
fn overlay_and_run_map_are_generated_from_the_board() {
    let dtso = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dts/qemu-virt-directnvm.dtso");
    let board = Board::qemu_default();
    assert_eq!(std::fs::read_to_string(dtso).unwrap(), board.overlay_dts(), "run scripts/gen-headers.sh");
    let map = board.shell_map();
    assert!(map.contains("DNVM_RAM_BASE=0x40000000\n"), "{map}");
    assert!(map.contains("DNVM_KERNEL_MEM_MB=1008\n"), "the PL window is the top 16 MiB: {map}");
    assert!(map.contains(&format!("DNVM_ENGINE_NODE=/directnvm@{:x}\n", board.nvme_bar)), "{map}");
}

#[test]
fn bad_dtb_is_an_error_not_a_panic() {
    assert!(Board::from_dtb(&[0u8; 64]).is_err());
    assert!(Board::from_dtb(&[]).is_err());
}

#[test]
fn disk_image_survives_restart() {
    let img = tmp("persist.img");
    let _ = std::fs::remove_file(&img);
    let data = pattern(99, 8 * 4096);
    let cfg = |rev| {
        let mut c = Config::in_process(rev);
        c.disk = DiskSource::File(img.clone());
        c
    };
    {
        let mut dev = Device::new(cfg(1)).unwrap();
        bring_up(&mut dev);
        dev.mem.write(DATA, &data).unwrap();
        let es: Vec<_> = (0..8u64).map(|i| entry(DNVM_OP_WRITE, DATA + 4096 * i, 1000 + 8 * i)).collect();
        run_batch(&mut dev, 0, &es, None);
        dev.flush();
    }
    let mut dev = Device::new(cfg(2)).unwrap();
    bring_up(&mut dev);
    open_window(&dev);
    let es: Vec<_> = (0..8u64).map(|i| entry(DNVM_OP_READ, DATA2 + 4096 * i, 1000 + 8 * i)).collect();
    run_batch(&mut dev, 0, &es, Some(STATUS));
    assert!(read_vec(&dev.mem, DATA2, 8 * 4096) == data);
    let meta = std::fs::metadata(&img).unwrap();
    assert_eq!(meta.len(), 64 << 20);
    drop(dev);
    let _ = std::fs::remove_file(&img);
}

#[test]
fn shared_memory_file_is_guest_ram() {
    let f = tmp("ram");
    let _ = std::fs::remove_file(&f);
    let mut cfg = Config::in_process(1);
    cfg.memory = MemorySource::File { path: f.clone(), offset: 0 };
    let mut dev = Device::new(cfg).unwrap();
    bring_up(&mut dev);
    write_read_verify(&mut dev, 0, 0, 4, 8);
    // A second mapping of the same file (as QEMU has) sees the device's registers.
    let other = GuestMem::from_file(&f, 0x4000_0000, 0x4000_0000, 0).unwrap();
    assert_eq!(other.load64(0x7f00_0000 + HDU_REG_DONE as u64).unwrap(), HDU_DONE_BIT);
    assert_eq!(other.load32(TESTDEV_MAILBOX_PHYS).unwrap(), TESTDEV_MAGIC);
    drop(dev);
    let _ = std::fs::remove_file(&f);
}

fn mailbox(dev: &mut Device, cmd: u32, args: &[u64]) -> (u32, Vec<u64>) {
    let m = dev.mem.clone();
    let b = TESTDEV_MAILBOX_PHYS;
    m.store32(b + TESTDEV_REG_CMD as u64, cmd).unwrap();
    for i in 0..TESTDEV_NARGS {
        m.store64(b + (TESTDEV_REG_ARGS + 8 * i) as u64, args.get(i).copied().unwrap_or(0)).unwrap();
    }
    let seq = m.load32(b + TESTDEV_REG_ACK_SEQ as u64).unwrap().wrapping_add(1);
    m.store32(b + TESTDEV_REG_REQ_SEQ as u64, seq).unwrap();
    dev.step();
    assert_eq!(m.load32(b + TESTDEV_REG_ACK_SEQ as u64).unwrap(), seq);
    let res = (0..TESTDEV_STAT_COUNT).map(|i| m.load64(b + (TESTDEV_REG_RESULT + 8 * i) as u64).unwrap()).collect();
    (m.load32(b + TESTDEV_REG_STATUS as u64).unwrap(), res)
}

#[test]
fn test_mailbox_speaks_the_socket_operations() {
    let mut dev = device(1, TimingMode::None);
    assert_eq!(dev.mem.load32(TESTDEV_MAILBOX_PHYS).unwrap(), TESTDEV_MAGIC);
    assert_eq!(dev.mem.load32(TESTDEV_MAILBOX_PHYS + 4).unwrap(), TESTDEV_VERSION);
    bring_up(&mut dev);
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_PING, &[]).0, TESTDEV_STATUS_OK);
    assert_eq!(mailbox(&mut dev, 99, &[]).0, TESTDEV_STATUS_BAD_CMD);
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_SET_FAULT, &[TESTDEV_FAULT_DROP_START, 7, 1]).0, TESTDEV_STATUS_BAD_ARG);
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_SET_FAULT, &[TESTDEV_FAULT_IO_ERROR, 0, 8, 0x281, 0xff, 0]).0, TESTDEV_STATUS_OK);
    run_batch(&mut dev, 0, &[entry(DNVM_OP_READ, DATA, 0), entry(DNVM_OP_READ, DATA, 8)], None);
    let (st, r) = mailbox(&mut dev, TESTDEV_CMD_GET_STATS, &[0]);
    assert_eq!(st, TESTDEV_STATUS_OK);
    assert_eq!(r[TESTDEV_STAT_STARTS], 1);
    assert_eq!(r[TESTDEV_STAT_ENTRIES], 2);
    assert_eq!(r[TESTDEV_STAT_IO_ERRORS], 1);
    assert_eq!(r[TESTDEV_STAT_SQ_DOORBELLS], 1);
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_CLEAR_FAULTS, &[]).0, TESTDEV_STATUS_OK);
    assert!(dev.faults.io.is_empty());
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_QUIESCE, &[]).0, TESTDEV_STATUS_OK);
    assert!(dev.quiesced);
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_RESUME, &[]).0, TESTDEV_STATUS_OK);
    assert_eq!(mailbox(&mut dev, TESTDEV_CMD_GET_STATS, &[9]).0, TESTDEV_STATUS_BAD_ARG);
}

#[test]
fn threaded_device_socket_and_host_pointers() {
    let mut cfg = Config::in_process(2);
    cfg.timing = TimingMode::WallClock;
    let dev = Arc::new(FakeHdu::start(cfg).unwrap());
    let board = dev.board().clone();
    let mem = dev.mem().clone();
    bringup::bring_up(&ModelHost::sleeping(&mem, board.nvme_bar, board.carveout), nvme_config(&board)).unwrap();
    program_window(&mem, &board, 0, board.carveout, board.carveout + board.carveout_size).unwrap();
    // Drive HDU 0 through raw host pointers, as the userspace library will.
    let regs = dev.hdu_regs(0).unwrap();
    let carve = dev.carveout().unwrap();
    let data = pattern(4, 4096);
    // SAFETY: `carve` maps the whole carve-out and the data buffer lies inside it.
    unsafe {
        let d = carve.add((DATA - board.carveout) as usize);
        for (i, b) in data.iter().enumerate() {
            d.add(i).write_volatile(*b);
        }
    }
    write_entries(&mem, STAGING, &[entry(DNVM_OP_WRITE, DATA, 0), entry(DNVM_OP_READ, DATA2, 0)]).unwrap();
    mem.fill(STATUS, 8, 0).unwrap();
    // SAFETY: `regs` maps HDU 0's user register page; each offset is one of its registers.
    unsafe {
        let r = regs as *mut u64;
        r.add(HDU_REG_REQBUF / 8).write_volatile(STAGING);
        r.add(HDU_REG_STATUSBUF / 8).write_volatile(STATUS);
        r.add(HDU_REG_NREQS / 8).write_volatile(1);
        r.add(HDU_REG_START / 8).write_volatile(HDU_START_GO);
        let t0 = Instant::now();
        while r.add(HDU_REG_START / 8).read_volatile() != 0 || r.add(HDU_REG_DONE / 8).read_volatile() & HDU_DONE_BIT == 0 {
            assert!(t0.elapsed() < Duration::from_secs(5), "DONE timeout");
            std::hint::spin_loop();
        }
    }
    start_batch(&mem, &board, 0, STAGING + 24, 1, Some(STATUS + 4)).unwrap();
    let t0 = Instant::now();
    while mem.load32(STATUS + 4).unwrap() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "status timeout");
        std::thread::sleep(Duration::from_micros(20));
    }
    assert_eq!(mem.load32(STATUS).unwrap(), DNVM_STATUS_DONE);
    assert_eq!(read_vec(&mem, DATA2, 4096), data);

    let sock = tmp("ctl.sock");
    let ctl = ControlSocket::serve(&sock, dev.clone()).unwrap();
    let s = UnixStream::connect(&sock).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut ask = |cmd: &str| {
        writeln!(&s, "{cmd}").unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        line.trim().to_string()
    };
    assert_eq!(ask("ping"), "ok");
    let stats = ask("stats");
    assert!(stats.starts_with("ok ") && stats.contains("hdu0.batches=2"), "{stats}");
    assert_eq!(ask("fault slow 2000"), "ok");
    assert!(ask("nonsense").starts_with("err "));
    assert_eq!(ask("quiesce"), "ok");
    assert_eq!(ask("resume"), "ok");
    assert_eq!(ask("shutdown"), "ok");
    assert!(dev.shutdown_requested());
    drop(ctl);
    assert!(!sock.exists(), "socket removed");
}

/// A malicious guest scribbling over every register and queue must not crash the model.
#[test]
fn garbage_from_the_guest_never_panics() {
    for rev in [1, 2] {
        let mut dev = device(rev, TimingMode::Virtual);
        bring_up(&mut dev);
        let m = dev.mem.clone();
        let b = dev.board.clone();
        let mut x = 0x1234_5678_9abc_def1u64 ^ rev as u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..3000 {
            let v = match rnd() % 4 {
                0 => rnd(),
                1 => rnd() % 0x1_0000,
                2 => b.carveout + rnd() % b.carveout_size,
                _ => u64::MAX - rnd() % 64,
            };
            let target = match rnd() % 6 {
                0 => b.hdus[(rnd() % 4) as usize].user + 8 * (rnd() % 8),
                1 => b.hdus[(rnd() % 4) as usize].privileged.unwrap() + 8 * (rnd() % 4),
                2 => b.nvme_bar + 4 * (rnd() % 16),
                3 => b.nvme_bar + 0x1000 + 4 * (rnd() % 16),
                4 => b.queue_window + 8 * (rnd() % (b.queue_window_size / 8)),
                _ => STAGING + 8 * (rnd() % 512),
            };
            if target % 8 == 0 {
                let _ = m.store64(target, v);
            } else {
                let _ = m.store32(target, v as u32);
            }
            if round % 7 == 0 {
                let h = (rnd() % 4) as usize;
                let _ = start_batch(&m, &b, h, v & !7, (rnd() % 5000) as u32, Some(rnd() & !3));
            }
            dev.step();
            if round % 50 == 0 {
                dev.run_until_idle(200);
            }
        }
        let _ = dev.stats();
    }
}

#[test]
fn restart_is_a_power_cycle_that_keeps_the_data() {
    for rev in [1, 2] {
        let mut dev = device(rev, TimingMode::None);
        bring_up(&mut dev);
        if rev == 2 {
            open_window(&dev);
        }
        let st = (rev == 2).then_some(STATUS);
        let data = pattern(7, 4 * 4096);
        dev.mem.write(DATA, &data).unwrap();
        let es: Vec<_> = (0..4u64).map(|i| entry(DNVM_OP_WRITE, DATA + 4096 * i, 64 + 8 * i)).collect();
        run_batch(&mut dev, 0, &es, st);
        // A batch left in flight (the model is quiesced, so nothing of it runs) and a fault armed.
        assert_eq!(mailbox(&mut dev, TESTDEV_CMD_QUIESCE, &[]).0, TESTDEV_STATUS_OK);
        assert_eq!(mailbox(&mut dev, TESTDEV_CMD_SET_FAULT, &[TESTDEV_FAULT_STUCK, 1, 1]).0, TESTDEV_STATUS_OK);
        start_batch(&dev.mem, &dev.board, 0, STAGING, 4, st).unwrap();

        let (status, _) = mailbox(&mut dev, TESTDEV_CMD_RESTART, &[]);
        assert_eq!(status, TESTDEV_STATUS_OK, "rev {rev}: restart answered");
        assert_eq!(dev.restarts, 1);
        assert!(!dev.quiesced && !dev.faults.is_stuck(1), "rev {rev}: restart clears quiesce and faults");
        dev.run_until_idle(1000);
        let mb = |off: usize| dev.mem.load32(TESTDEV_MAILBOX_PHYS + off as u64).unwrap();
        assert_eq!(mb(TESTDEV_REG_MAGIC), TESTDEV_MAGIC, "rev {rev}: the mailbox survives the restart");
        assert_eq!(mb(TESTDEV_REG_ACK_SEQ), mb(TESTDEV_REG_REQ_SEQ), "rev {rev}: no request pending after the restart");
        let bar = dev.board.nvme_bar;
        assert_eq!(dev.mem.load32(bar + nvme::reg::CC as u64).unwrap(), 0, "rev {rev}: CC back to 0");
        assert_eq!(dev.mem.load32(bar + nvme::reg::CSTS as u64).unwrap() & 1, 0, "rev {rev}: CSTS.RDY 0 after restart");
        assert_ne!(dev.mem.load64(bar).unwrap(), 0, "rev {rev}: CAP is there again");
        assert_eq!(dev.mem.load64(dev.board.hdus[0].user + HDU_REG_START as u64).unwrap(), 0);
        assert_eq!(dev.mem.load64(dev.board.hdus[0].user + HDU_REG_DONE as u64).unwrap(), 0, "rev {rev}: DONE at power-on");
        if rev == 2 {
            let p = dev.board.hdus[0].privileged.unwrap();
            assert_eq!(dev.mem.load64(p + HDU_PRIV_DMA_LIMIT as u64).unwrap(), 0, "DMA window cleared");
            assert_eq!(dev.mem.load64(dev.board.hdus[0].user + HDU_REG_ID as u64).unwrap(), hdu_id(2));
        }
        let (_, s) = mailbox(&mut dev, TESTDEV_CMD_GET_STATS, &[0]);
        assert_eq!(s[TESTDEV_STAT_STARTS], 0, "rev {rev}: counters start again");

        // Software brings the device up again; the data written before the restart is there.
        bring_up(&mut dev);
        if rev == 2 {
            open_window(&dev);
        }
        dev.mem.fill(DATA2, 4 * 4096, 0).unwrap();
        let es: Vec<_> = (0..4u64).map(|i| entry(DNVM_OP_READ, DATA2 + 4096 * i, 64 + 8 * i)).collect();
        run_batch(&mut dev, 0, &es, st);
        assert!(read_vec(&dev.mem, DATA2, 4 * 4096) == data, "rev {rev}: data survives the restart");
    }
}

#[test]
fn restart_over_the_control_socket() {
    let dev = Arc::new(FakeHdu::start(Config::in_process(1)).unwrap());
    let sock = tmp("restart.sock");
    let _srv = ControlSocket::serve(&sock, dev.clone()).unwrap();
    let mut s = UnixStream::connect(&sock).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    writeln!(s, "restart").unwrap();
    r.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ok");
    assert_eq!(dev.device().restarts, 1);
}

#[test]
fn a_device_that_never_sleeps_still_stops() {
    // `--idle-spin-us forever` (run.sh --pin-device): the polling thread never sleeps, and
    // stop() must still join it promptly.
    let cfg = Config { idle_spin: Duration::MAX, ..Config::in_process(2) };
    let mut dev = FakeHdu::start(cfg).unwrap();
    assert_eq!(dev.device().idle_spin(), Duration::MAX);
    std::thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    dev.stop();
    assert!(t.elapsed() < Duration::from_secs(2), "stop took {:?}", t.elapsed());
    assert_eq!(Config::in_process(1).idle_spin, fakehdu::runner::SPIN_WINDOW);
}
