// SPDX-License-Identifier: MIT OR Apache-2.0
//! The command line (clap derive).

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// List the ublk devices: id, state, server pid (and whether it lives), queues, depth.
    List,
    /// Delete a ublk device: one left behind by a killed server (instead of recovering it), or
    /// a served one (its server stops). Returns at once, even while a file system is mounted on
    /// the device; queued and new I/O fail with EIO.
    Del {
        /// ublk device id.
        id: i32,
    },
    /// Internal: STOP_DEV for a server, from a process of its own (see `stopper.rs`).
    #[command(hide = true)]
    StopDev {
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
    #[arg(long, value_name = "ID", conflicts_with = "recover_existing")]
    pub recover: Option<i32>,
    /// With --id N: if device N exists and its server is gone, recover it instead of refusing
    /// (what a service manager's restart after a crash wants).
    #[arg(long, requires = "id")]
    pub recover_existing: bool,
    /// DirectNVM control device.
    #[arg(long, default_value = "/dev/directnvm")]
    pub device: String,
    /// How a queue thread waits for the engine: adaptive (the library's backoff: spin, then
    /// yield, then sleep up to --backoff-max-sleep-us while nothing completes) or spin (poll
    /// without a break: one busy CPU per queue while I/O is in the engine).
    #[arg(long, value_enum, default_value = "adaptive")]
    pub backoff: BackoffMode,
    /// Spin phase of the adaptive wait in microseconds (after the last completion).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub backoff_spin_us: u64,
    /// Yield phase of the adaptive wait in microseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub backoff_yield_us: u64,
    /// Longest sleep of the adaptive wait in microseconds: the bound of its wake-up cost.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub backoff_max_sleep_us: u64,
}

/// How a queue thread waits for the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackoffMode {
    /// The library's backoff (spin, yield, sleep).
    Adaptive,
    /// Poll without a break.
    Spin,
}

impl ServeArgs {
    /// The library backoff of the queue handles (`None`: spin).
    pub fn backoff(&self) -> Option<nvmedl::Backoff> {
        if self.backoff == BackoffMode::Spin {
            return None;
        }
        let d = nvmedl::Backoff::default();
        let max_sleep = Duration::from_micros(self.backoff_max_sleep_us);
        Some(nvmedl::Backoff {
            spin: Duration::from_micros(self.backoff_spin_us),
            yield_for: Duration::from_micros(self.backoff_yield_us),
            min_sleep: d.min_sleep.min(max_sleep),
            max_sleep,
        })
    }
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
    /// Only this host NQN may connect (repeatable); without it every host may.
    #[arg(long = "allow-host", value_name = "HOSTNQN")]
    pub allow_hosts: Vec<String>,
}

#[derive(Debug, Args)]
pub struct UnexportArgs {
    /// ublk device id the export was made for.
    #[arg(long, default_value_t = 0)]
    pub dev: i32,
    /// Subsystem NQN (default: the subsystem whose namespace is /dev/ublkbID).
    #[arg(long)]
    pub nqn: Option<String>,
}

/// The default subsystem NQN of ublk device `dev`.
pub fn default_nqn(dev: i32) -> String {
    format!("nqn.2026-01.io.directnvm:ublk{dev}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(line: &str) -> ServeArgs {
        let cli = Cli::try_parse_from(std::iter::once("nvmedl-ublk serve").chain(line.split_whitespace())).unwrap();
        match cli.cmd {
            Cmd::Serve(a) => a,
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn queues_back_off_by_default() {
        let b = serve("serve").backoff().expect("adaptive by default");
        assert_eq!(b, nvmedl::Backoff::default());
        assert!(b.validate().is_ok());
        assert_eq!(serve("serve --backoff spin").backoff(), None);
        let b = serve("serve --backoff-max-sleep-us 5 --backoff-spin-us 0").backoff().unwrap();
        assert_eq!((b.spin, b.min_sleep, b.max_sleep), (Duration::ZERO, Duration::from_micros(5), Duration::from_micros(5)));
        assert!(b.validate().is_ok());
        let bad = Cli::try_parse_from(["nvmedl-ublk", "serve", "--backoff-max-sleep-us", "200000"]);
        assert!(bad.is_err(), "above the library's sleep bound");
    }
}
