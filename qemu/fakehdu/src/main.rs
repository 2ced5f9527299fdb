//! `fake-hdu`: run the fake DirectNVM device against a QEMU guest's shared RAM file.
//!
//! ```text
//! fake-hdu --mem-file /dev/shm/dnvm-ram [--ram-base 0x40000000] [--ram-size 1G]
//!          [--mem-offset 0] [--dtb board.dtb] [--revision 1|2] [--engines 1|2|4]
//!          [--disk disk.img] [--disk-size 1G] [--socket /tmp/fake-hdu.sock]
//!          [--timing wallclock|none|virtual] [--max-inflight N] [--start-queue 0|1]
//!          [--ssd read_iops=N,write_iops=N,read_bw=N,write_bw=N,read_latency_ns=N,...]
//! ```
//! Exits cleanly (disk flushed, socket removed, threads joined) on SIGTERM/SIGINT or the
//! control socket's `shutdown`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fakehdu::control::num;
use fakehdu::socket::ControlSocket;
use fakehdu::{Board, Config, DiskSource, Error, FakeHdu, MemorySource, Result, TimingMode};

const USAGE: &str = "usage: fake-hdu --mem-file PATH [--ram-base ADDR] [--ram-size SIZE] [--mem-offset OFF]
                [--dtb FILE] [--revision 1|2] [--engines 1|2|4] [--disk IMG] [--disk-size SIZE]
                [--socket PATH] [--timing wallclock|none|virtual] [--max-inflight N] [--start-queue 0|1]
                [--ssd KEY=N[,KEY=N..]]   (SSD model: channels read_iops write_iops read_bw
                 write_bw read_latency_ns write_latency_ns flush_latency_ns)
SIZE accepts K/M/G suffixes; numbers may be 0x-hex.";

fn usage(msg: String) -> Error {
    Error::Usage(msg)
}

fn size(s: &str) -> Result<u64> {
    let (n, mul) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num(n)?.checked_mul(mul).ok_or_else(|| usage(format!("size '{s}' overflows")))
}

/// Apply `key=value[,key=value..]` to the SSD timing model.
fn ssd_params(p: &mut fakehdu::timing::SsdParams, spec: &str) -> Result<()> {
    for kv in spec.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| usage(format!("--ssd: '{kv}' is not KEY=N")))?;
        let v = num(v)?;
        match k {
            "channels" => p.channels = v.max(1) as u32,
            "read_iops" => p.read_iops = v.max(1),
            "write_iops" => p.write_iops = v.max(1),
            "read_bw" => p.read_bw = v.max(1),
            "write_bw" => p.write_bw = v.max(1),
            "read_latency_ns" => p.read_latency_ns = v,
            "write_latency_ns" => p.write_latency_ns = v,
            "flush_latency_ns" => p.flush_latency_ns = v,
            _ => return Err(usage(format!("--ssd: unknown key '{k}'"))),
        }
    }
    Ok(())
}

fn run() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut mem_file: Option<PathBuf> = None;
    let mut ram_base = None;
    let mut ram_size = None;
    let mut mem_offset = 0;
    let mut dtb: Option<PathBuf> = None;
    let mut cfg = Config::in_process(1);
    cfg.timing = TimingMode::WallClock;
    cfg.disk_size = 1 << 30;
    let mut socket: Option<PathBuf> = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| usage(format!("{a} needs a value\n{USAGE}")));
        match a.as_str() {
            "--mem-file" => mem_file = Some(val()?.into()),
            "--ram-base" => ram_base = Some(num(&val()?)?),
            "--ram-size" => ram_size = Some(size(&val()?)?),
            "--mem-offset" => mem_offset = size(&val()?)?,
            "--dtb" => dtb = Some(val()?.into()),
            "--revision" => cfg.revision = num(&val()?)? as u32,
            "--engines" => cfg.engines = Some(num(&val()?)? as u32),
            "--disk" => cfg.disk = DiskSource::File(val()?.into()),
            "--disk-size" => cfg.disk_size = size(&val()?)?,
            "--socket" => socket = Some(val()?.into()),
            "--timing" => {
                cfg.timing = match val()?.as_str() {
                    "wallclock" => TimingMode::WallClock,
                    "none" => TimingMode::None,
                    "virtual" => TimingMode::Virtual,
                    t => return Err(usage(format!("unknown timing '{t}'"))),
                }
            }
            "--start-queue" => cfg.start_queue = num(&val()?)? as u32,
            "--max-inflight" => cfg.nvme.max_inflight = (num(&val()?)? as usize).max(1),
            "--ssd" => ssd_params(&mut cfg.nvme.ssd, &val()?)?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => return Err(usage(format!("unknown argument '{a}'\n{USAGE}"))),
        }
    }
    let mut board = match &dtb {
        Some(p) => Board::from_dtb(&std::fs::read(p).map_err(Error::io(p.display()))?)?,
        None => Board::qemu_default(),
    };
    if let Some(b) = ram_base {
        board.ram_base = b;
    }
    if let Some(s) = ram_size {
        board.ram_size = s;
    }
    cfg.board = board;
    cfg.memory =
        MemorySource::File { path: mem_file.ok_or_else(|| usage(format!("--mem-file is required\n{USAGE}")))?, offset: mem_offset };

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).map_err(Error::io("signal handler"))?;
    }
    let dev = Arc::new(FakeHdu::start(cfg.clone())?);
    let ctl = match &socket {
        Some(p) => Some(ControlSocket::serve(p, dev.clone())?),
        None => None,
    };
    eprintln!(
        "fake-hdu: rev {} with {} HDU(s), RAM {:#x}+{:#x}, NVMe BAR {:#x}, timing {:?}{}",
        cfg.revision,
        cfg.board.hdus.len(),
        cfg.board.ram_base,
        cfg.board.ram_size,
        cfg.board.nvme_bar,
        cfg.timing,
        socket.as_ref().map(|p| format!(", socket {}", p.display())).unwrap_or_default()
    );
    while !stop.load(Ordering::Relaxed) && !dev.shutdown_requested() {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(ctl);
    match Arc::try_unwrap(dev) {
        Ok(mut d) => d.stop(),
        Err(d) => d.device().flush(),
    }
    eprintln!("fake-hdu: stopped");
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("fake-hdu: {e}");
        std::process::exit(1);
    }
}
