// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-ublk`: DirectNVM as a block device and an NVMe/TCP storage node.
//!
//! * `serve`: /dev/ublkbN served from libnvmedl, one ublk queue per claimed core
//!   (`--recover ID` resumes a device whose server was killed);
//! * `export` / `unexport`: the block device through the kernel NVMe-oF target over TCP;
//! * `del`: remove a device (left by a killed server, or served: its server stops);
//! * `list`: the devices, their state and server.
//!
//! Usage and guarantees: `docs/ublk.md`.

mod error;
mod export;
mod geometry;
mod queue;
mod serve;
mod signals;
mod stopper;

use clap::Parser;
use error::Result;
use nvmedl_ublk::cli::{self, Cli, Cmd};

fn del(id: i32) -> Result<()> {
    if !std::path::Path::new(&format!("/dev/ublkc{id}")).exists() {
        return Err(error::UblkSrvError::NoSuchUblk(id));
    }
    serve::delete(&libublk::ctrl::UblkCtrl::new_simple(id)?, id)?;
    println!("nvmedl-ublk: ublk device {id} deleted");
    Ok(())
}

/// One line per ublk device, for finding the id to `--recover` or `del` after a crash.
fn list() -> Result<()> {
    let mut ids: Vec<i32> = std::fs::read_dir("/sys/class/ublk-char")
        .map(|r| r.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("ublkc")?.parse().ok()).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    println!("{:<4} {:<10} {:<8} {:>6} {:>6} {:>10}  next step", "id", "state", "server", "queues", "depth", "max io");
    for id in ids {
        let Ok(ctrl) = libublk::ctrl::UblkCtrl::new_simple(id) else { continue };
        let i = ctrl.dev_info();
        let state = match u32::from(i.state) {
            libublk::sys::UBLK_S_DEV_LIVE => "live",
            libublk::sys::UBLK_S_DEV_DEAD => "stopped",
            libublk::sys::UBLK_S_DEV_QUIESCED => "quiesced",
            libublk::sys::UBLK_S_DEV_FAIL_IO => "fail-io",
            _ => "?",
        };
        let alive = i.ublksrv_pid > 0 && std::path::Path::new(&format!("/proc/{}", i.ublksrv_pid)).exists();
        let server = if alive { i.ublksrv_pid.to_string() } else { "-".to_string() };
        // Without a live server the device waits: give the two ways out.
        let next = if alive { String::new() } else { format!("serve --cores <{} cores> --recover {id}, or del {id}", i.nr_hw_queues) };
        println!("{id:<4} {state:<10} {server:<8} {:>6} {:>6} {:>10}  {next}", i.nr_hw_queues, i.queue_depth, i.max_io_buf_bytes);
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Serve(a) => serve::serve(a),
        Cmd::Export(a) => export::export(a),
        Cmd::Unexport(a) => export::unexport(a),
        Cmd::Del { id } => del(id),
        Cmd::List => list(),
        Cmd::StopDev { id } => stopper::stop_dev(id),
    };
    if let Err(e) = r {
        eprintln!("nvmedl-ublk: {e}");
        std::process::exit(1);
    }
}
