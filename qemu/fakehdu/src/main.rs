// SPDX-License-Identifier: MIT OR Apache-2.0
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

/// Timing of the device model.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Timing {
    /// Real time (nanoseconds since the model started).
    Wallclock,
    /// No timing: every command completes at the next step.
    None,
    /// Virtual time: advances only when the model is idle, to the next pending event.
    Virtual,
}

/// Fake DirectNVM device (HDUs, NVMe controller, SSD model) serving a QEMU guest's shared RAM.
///
/// Sizes accept K/M/G suffixes; numbers may be 0x-hex. Exits cleanly (disk flushed, socket
/// removed, threads joined) on SIGTERM/SIGINT or the control socket's `shutdown`.
#[derive(clap::Parser, Debug)]
#[command(name = "fake-hdu", version, after_help = "Exit status: 0 clean stop, 1 error, 2 usage error.")]
struct Cli {
    /// The guest RAM file QEMU shares (memory-backend-file mem-path).
    #[arg(long, value_name = "PATH", required_unless_present_any = ["print_overlay", "print_board_map"])]
    mem_file: Option<PathBuf>,
    /// Guest-physical base of the RAM (default: the board's).
    #[arg(long, value_name = "ADDR", value_parser = parse_num)]
    ram_base: Option<u64>,
    /// Size of the guest RAM (default: the board's).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    ram_size: Option<u64>,
    /// Offset of guest RAM inside the memory file.
    #[arg(long, value_name = "OFF", default_value = "0", value_parser = size)]
    mem_offset: u64,
    /// The guest's device tree blob: HDU, engine and BAR addresses come from it.
    #[arg(long, value_name = "FILE")]
    dtb: Option<PathBuf>,
    /// HDU revision to model: 1 (published RTL) or 2.
    #[arg(long, default_value = "1", value_parser = parse_num)]
    revision: u64,
    /// Engines per HDU (1, 2 or 4; default: the revision's).
    #[arg(long, value_parser = parse_num)]
    engines: Option<u64>,
    /// Sparse disk image backing the namespace, kept across runs (default: an unlinked temporary file).
    #[arg(long, value_name = "IMG")]
    disk: Option<PathBuf>,
    /// Namespace size.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = size)]
    disk_size: u64,
    /// Serve the control socket (faults, stats, shutdown) at PATH.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Timing mode.
    #[arg(long, value_enum, default_value = "wallclock")]
    timing: Timing,
    /// Commands in flight inside the SSD model at most.
    #[arg(long, value_name = "N", value_parser = parse_num)]
    max_inflight: Option<u64>,
    /// Rev 2 STARTs held behind the running batch (0 or 1; default 1).
    #[arg(long, value_name = "0|1", value_parser = parse_num)]
    start_queue: Option<u64>,
    /// Keep polling this long after the last activity before sleeping (default 200); "forever"
    /// never sleeps (a device with a host CPU of its own, like the FPGA: `run.sh --pin-device`).
    #[arg(long, value_name = "US|forever", value_parser = idle_spin)]
    idle_spin_us: Option<Duration>,
    /// SSD model parameters, KEY=N[,KEY=N..]; keys: channels read_iops write_iops read_bw
    /// write_bw read_latency_ns write_latency_ns flush_latency_ns. Repeatable.
    #[arg(long, value_name = "KEY=N[,KEY=N..]")]
    ssd: Vec<String>,
    /// Print the QEMU board's DT overlay (dts/qemu-virt-directnvm.dtso) and exit.
    #[arg(long, conflicts_with = "print_board_map")]
    print_overlay: bool,
    /// Print the QEMU board's map as shell assignments (what qemu/run.sh boots with) and exit.
    #[arg(long)]
    print_board_map: bool,
}

fn parse_num(s: &str) -> Result<u64> {
    num(s)
}

fn idle_spin(s: &str) -> Result<Duration> {
    if s == "forever" {
        return Ok(Duration::MAX);
    }
    Ok(Duration::from_micros(num(s)?))
}

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

fn run(cli: Cli) -> Result<()> {
    if cli.print_overlay || cli.print_board_map {
        let b = Board::qemu_default();
        print!("{}", if cli.print_overlay { b.overlay_dts() } else { b.shell_map() });
        return Ok(());
    }
    let mem_file = cli.mem_file.ok_or_else(|| usage("--mem-file is required".into()))?;
    let mut cfg = Config::in_process(1);
    cfg.timing = match cli.timing {
        Timing::Wallclock => TimingMode::WallClock,
        Timing::None => TimingMode::None,
        Timing::Virtual => TimingMode::Virtual,
    };
    cfg.disk_size = cli.disk_size;
    cfg.revision = cli.revision as u32;
    if let Some(e) = cli.engines {
        cfg.engines = Some(e as u32);
    }
    if let Some(d) = cli.disk {
        cfg.disk = DiskSource::File(d);
    }
    if let Some(q) = cli.start_queue {
        cfg.start_queue = q as u32;
    }
    if let Some(d) = cli.idle_spin_us {
        cfg.idle_spin = d;
    }
    if let Some(n) = cli.max_inflight {
        cfg.nvme.max_inflight = (n as usize).max(1);
    }
    for spec in &cli.ssd {
        ssd_params(&mut cfg.nvme.ssd, spec)?;
    }
    let (dtb, ram_base, ram_size, socket) = (cli.dtb, cli.ram_base, cli.ram_size, cli.socket);
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
    cfg.memory = MemorySource::File { path: mem_file, offset: cli.mem_offset };

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
    let cli = <Cli as clap::Parser>::parse();
    if let Err(e) = run(cli) {
        eprintln!("fake-hdu: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_spin_values() {
        assert_eq!(idle_spin("forever").unwrap(), Duration::MAX);
        assert_eq!(idle_spin("50").unwrap(), Duration::from_micros(50));
        assert!(idle_spin("soon").is_err());
        let cli = <Cli as clap::Parser>::try_parse_from(["fake-hdu", "--mem-file", "/x", "--idle-spin-us", "forever"]).unwrap();
        assert_eq!(cli.idle_spin_us, Some(Duration::MAX));
    }
}
