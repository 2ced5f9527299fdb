// SPDX-License-Identifier: MIT OR Apache-2.0
//! The command line (clap derive).

use clap::{Args, Parser, Subcommand};

/// DirectNVM as a block device (/dev/ublkbN) and an NVMe/TCP storage node.
#[derive(Debug, Parser)]
#[command(name = "nvmedl-ublk", version)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Serve /dev/ublkbN from libnvmedl until SIGTERM/SIGINT (one ublk queue per core).
    Serve(ServeArgs),
    /// Export /dev/ublkbN through the kernel NVMe-oF target over TCP (configfs).
    Export(ExportArgs),
    /// Tear down an export made by `export`.
    Unexport(UnexportArgs),
    /// Delete a ublk device left behind by a killed server (instead of recovering it).
    Del {
        /// ublk device id.
        id: i32,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// DirectNVM cores to claim, comma separated; one ublk queue per core.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub cores: Vec<u32>,
    /// Urgency class of every request (0 urgent .. 3 low).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(0..=3))]
    pub urgency: u16,
    /// ublk queue depth (default: what the data slice holds, at most 64).
    #[arg(long)]
    pub depth: Option<u32>,
    /// ublk device id to create (default: the kernel picks).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    pub id: i32,
    /// Resume ublk device ID left by a killed server (ublk user recovery).
    #[arg(long, value_name = "ID")]
    pub recover: Option<i32>,
    /// DirectNVM control device.
    #[arg(long, default_value = "/dev/directnvm")]
    pub device: String,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// ublk device id (/dev/ublkbID).
    #[arg(long, default_value_t = 0)]
    pub dev: i32,
    /// Address and port to listen on, e.g. 127.0.0.1:4420.
    #[arg(long)]
    pub tcp: String,
    /// Subsystem NQN (default: nqn.2026-01.io.directnvm:ublkID).
    #[arg(long)]
    pub nqn: Option<String>,
}

#[derive(Debug, Args)]
pub struct UnexportArgs {
    /// ublk device id the export was made for.
    #[arg(long, default_value_t = 0)]
    pub dev: i32,
    /// Subsystem NQN (default: nqn.2026-01.io.directnvm:ublkID).
    #[arg(long)]
    pub nqn: Option<String>,
}

/// The default subsystem NQN of ublk device `dev`.
pub fn default_nqn(dev: i32) -> String {
    format!("nqn.2026-01.io.directnvm:ublk{dev}")
}
