// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl`'s command line.

use clap::{Parser, Subcommand};

use crate::parse_num;
use crate::progress::ProgressMode;

/// Inspect and administer a DirectNVM engine, and move LBAs between the SSD and files.
#[derive(Parser, Debug)]
#[command(name = "nvmedl", version, after_help = crate::EXIT_STATUS_HELP)]
pub struct NvmedlCli {
    /// The engine's character device.
    #[arg(long, short = 'd', global = true, value_name = "PATH", default_value = nvmedl::chardev::DEFAULT_DEVICE)]
    pub device: String,
    /// Progress of read/write/verify on standard error: auto (when it is a terminal), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ProgressMode::Auto, value_name = "WHEN")]
    pub progress: ProgressMode,
    #[command(subcommand)]
    pub command: Command,
}

/// `nvmedl`'s subcommands. Numbers are decimal or 0x-hex; LBAs are 512-byte units.
#[derive(Subcommand, Debug, PartialEq)]
pub enum Command {
    /// Engine, namespace and per-HDU information.
    Info {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check the board for libnvmedl: device tree and carve-out, modules, drivers, device nodes and access, HDU revision, controller, cores in use; says how to fix each problem (exit status 1 if any). Reads only: no module is loaded, no core claimed.
    Doctor {
        /// Print the findings as one JSON array instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The carve-out layout: every region's kind, core, mmap offset, physical address, size, caching.
    Layout,
    /// The controller's identify data (model, serial, firmware, NVMe version, arbitration).
    Identify,
    /// Read BYTES from the SSD at LBA through CORE into FILE.
    Read {
        /// Core (HDU) whose staging queue and data slice carry the I/O.
        #[arg(value_parser = parse_num)]
        core: u64,
        /// First LBA (512-byte units).
        #[arg(value_parser = parse_num)]
        lba: u64,
        /// Number of bytes to read.
        #[arg(value_parser = parse_num)]
        bytes: u64,
        /// Output file (created or truncated).
        file: String,
    },
    /// Write FILE to the SSD at LBA through CORE (the last block is padded with zeros to 4 KiB).
    Write {
        /// Core (HDU) whose staging queue and data slice carry the I/O.
        #[arg(value_parser = parse_num)]
        core: u64,
        /// First LBA (512-byte units).
        #[arg(value_parser = parse_num)]
        lba: u64,
        /// Input file.
        file: String,
    },
    /// Compare the SSD at LBA with FILE (exit status 1 on a mismatch).
    Verify {
        /// Core (HDU) whose staging queue and data slice carry the I/O.
        #[arg(value_parser = parse_num)]
        core: u64,
        /// First LBA (512-byte units).
        #[arg(value_parser = parse_num)]
        lba: u64,
        /// File holding the expected data.
        file: String,
    },
    /// Reset one HDU's engine (`reset CORE`, rev 2) or re-initialise the NVMe controller and every engine's queues (`reset controller`).
    Reset {
        /// A core number, or the word `controller`.
        #[arg(value_name = "CORE|controller", value_parser = parse_reset_target)]
        target: ResetTarget,
    },
    /// Set the NVMe weighted round robin arbitration: burst (log2) and the high/medium/low weights minus one.
    Arbitration {
        /// Arbitration burst, log2 of the number of commands.
        #[arg(value_parser = parse_num)]
        burst: u64,
        /// High-priority weight minus one.
        #[arg(value_parser = parse_num)]
        high: u64,
        /// Medium-priority weight minus one.
        #[arg(value_parser = parse_num)]
        medium: u64,
        /// Low-priority weight minus one.
        #[arg(value_parser = parse_num)]
        low: u64,
    },
    /// Depth advisor (no device needed): the M/D/1/K blocking probability and throughput per
    /// depth, per WRR class, and the smallest depth within a fraction of saturation.
    Advise {
        /// Measured service time of one command in microseconds (e.g. the QD1 latency).
        #[arg(long, value_name = "US")]
        service_us: f64,
        /// Total arrival rate in requests per second.
        #[arg(long, value_name = "PER_SECOND")]
        rate: f64,
        /// WRR classes as RATE:WEIGHT pairs (comma-separated), e.g. 20000:128,20000:1.
        #[arg(long, value_delimiter = ',', value_parser = parse_class, value_name = "RATE:WEIGHT[,..]")]
        classes: Vec<Class>,
        /// Recommend the smallest depth within this fraction (0 < f <= 1) of the throughput at --max-depth.
        #[arg(long, default_value = "0.99")]
        fraction: f64,
        /// Largest depth considered (1..=1024).
        #[arg(long, default_value = "256", value_parser = parse_num)]
        max_depth: u64,
        /// Print the table as one JSON object (per depth and class: P_block, IOPS, W_us, rho).
        #[arg(long)]
        json: bool,
    },
}

/// One WRR class of `nvmedl advise`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Class {
    /// Arrival rate (requests per second).
    pub rate: f64,
    /// WRR weight.
    pub weight: f64,
}

fn parse_class(s: &str) -> Result<Class, String> {
    let (r, w) = s.split_once(':').ok_or_else(|| format!("{s}: expected RATE:WEIGHT"))?;
    let num = |v: &str| v.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0);
    match (num(r), num(w)) {
        (Some(rate), Some(weight)) => Ok(Class { rate, weight }),
        _ => Err(format!("{s}: rate and weight must be positive numbers")),
    }
}

/// What `nvmedl reset` resets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetTarget {
    /// One HDU's engine.
    Core(u64),
    /// The controller and every engine's queue pointers.
    Controller,
}

fn parse_reset_target(s: &str) -> Result<ResetTarget, String> {
    if s == "controller" {
        Ok(ResetTarget::Controller)
    } else {
        parse_num(s).map(ResetTarget::Core).map_err(|e| format!("{e}; expected a core number or `controller`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    fn parse(args: &[&str]) -> Result<NvmedlCli, clap::Error> {
        NvmedlCli::try_parse_from(std::iter::once("nvmedl").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        NvmedlCli::command().debug_assert();
    }

    #[test]
    fn the_command_lines_the_guest_suite_and_demo_use() {
        assert_eq!(parse(&["info"]).unwrap().command, Command::Info { json: false });
        assert_eq!(parse(&["info", "--json"]).unwrap().command, Command::Info { json: true });
        assert_eq!(parse(&["doctor"]).unwrap().command, Command::Doctor { json: false });
        assert_eq!(parse(&["doctor", "--json"]).unwrap().command, Command::Doctor { json: true });
        assert_eq!(parse(&["layout"]).unwrap().command, Command::Layout);
        assert_eq!(parse(&["identify"]).unwrap().command, Command::Identify);
        assert_eq!(
            parse(&["read", "1", "65536", "135168", "/tmp/o"]).unwrap().command,
            Command::Read { core: 1, lba: 65536, bytes: 135168, file: "/tmp/o".into() }
        );
        assert_eq!(parse(&["write", "0", "0x10", "/tmp/i"]).unwrap().command, Command::Write { core: 0, lba: 16, file: "/tmp/i".into() });
        assert_eq!(parse(&["verify", "1", "65544", "f"]).unwrap().command, Command::Verify { core: 1, lba: 65544, file: "f".into() });
        assert_eq!(parse(&["reset", "controller"]).unwrap().command, Command::Reset { target: ResetTarget::Controller });
        assert_eq!(parse(&["reset", "3"]).unwrap().command, Command::Reset { target: ResetTarget::Core(3) });
        assert_eq!(
            parse(&["arbitration", "3", "127", "7", "0"]).unwrap().command,
            Command::Arbitration { burst: 3, high: 127, medium: 7, low: 0 }
        );
        assert_eq!(
            parse(&["advise", "--service-us", "20", "--rate", "45000", "--classes", "20000:128,20000:1"]).unwrap().command,
            Command::Advise {
                service_us: 20.0,
                rate: 45000.0,
                classes: vec![Class { rate: 20000.0, weight: 128.0 }, Class { rate: 20000.0, weight: 1.0 }],
                fraction: 0.99,
                max_depth: 256,
                json: false
            }
        );
        let c = parse(&["advise", "--service-us", "170", "--rate", "7600", "--classes", "5700:3,1900:1", "--max-depth", "16", "--json"]);
        assert!(matches!(c.unwrap().command, Command::Advise { json: true, max_depth: 16, .. }));
        assert!(parse(&["advise", "--service-us", "20", "--rate", "1", "--classes", "5"]).is_err());
        assert!(parse(&["advise", "--service-us", "20", "--rate", "1", "--classes", "5:-1"]).is_err());
        // --device before (the old form) or after the subcommand.
        assert_eq!(parse(&["--device", "/dev/x", "info"]).unwrap().device, "/dev/x");
        assert_eq!(parse(&["info", "--device", "/dev/y"]).unwrap().device, "/dev/y");
        assert_eq!(parse(&["info"]).unwrap().device, nvmedl::chardev::DEFAULT_DEVICE);
    }

    #[test]
    fn usage_errors_exit_2_and_help_exits_0() {
        for bad in [&[][..], &["frobnicate"], &["read", "1", "2"], &["reset", "x"], &["write", "a", "0", "f"], &["info", "extra"]] {
            let e = parse(bad).expect_err("must be rejected");
            assert_eq!(e.exit_code(), crate::EXIT_USAGE as i32, "{bad:?}");
        }
        for ok in [&["--help"][..], &["--version"], &["read", "--help"], &["help"]] {
            let e = parse(ok).expect_err("help/version are reported as an early exit");
            assert_eq!(e.exit_code(), 0, "{ok:?}");
        }
    }
}
