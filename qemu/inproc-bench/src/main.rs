// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench-inproc`: `nvmedl-bench` on the in-process device model (host rig). The same
//! benchmark engine as the shipped tool (`nvmedl_tools::bench_run`), on a `Device` whose
//! platform is the fakehdu model running in this process (`nvmedl-inproc`) instead of the
//! engine's character device. Test code: the tools never link the model.
//!
//! ```text
//! nvmedl-bench-inproc [--rev 1|2] [--timing none|wall] [nvmedl-bench options]
//! cargo run --release -p nvmedl-bench-inproc -- --rev 2 --timing wall --rw mixed --iodepth 128 --adaptive
//! ```

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use nvmedl::Device;
use nvmedl_inproc::{InProc, InProcConfig};
use nvmedl_tools::bench_cli::BenchCli;

/// SSD timing of the in-process model.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
enum Timing {
    /// No timing: commands complete at once (the software path alone).
    None,
    /// The model's real-time SSD timing (latency and QoS figures need it).
    Wall,
}

/// nvmedl-bench on the in-process device model.
#[derive(Parser, Debug)]
#[command(name = "nvmedl-bench-inproc", version)]
struct Cli {
    /// HDU revision of the model: 1 (the published RTL) or 2.
    #[arg(long, default_value = "2", value_parser = clap::value_parser!(u32).range(1..=2))]
    rev: u32,
    /// SSD timing of the model.
    #[arg(long, value_enum, default_value = "none")]
    timing: Timing,
    /// The benchmark (`--device` is ignored: the device is the model).
    #[command(flatten)]
    bench: BenchCli,
}

fn open(rev: u32, timing: Timing) -> Result<Device, String> {
    let timing = match timing {
        Timing::None => fakehdu::TimingMode::None,
        Timing::Wall => fakehdu::TimingMode::WallClock,
    };
    let cfg = InProcConfig { timing, ..InProcConfig::new(rev) };
    let ip = InProc::start(cfg).map_err(|e| e.to_string())?;
    Device::from_platform(ip).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    nvmedl_tools::bench_run::run(&cli.bench, |_| open(cli.rev, cli.timing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("nvmedl-bench-inproc").chain(args.split_whitespace()))
    }

    #[test]
    fn rig_options_and_the_benchmark_options_parse_together() {
        let c = parse("").unwrap();
        assert_eq!((c.rev, c.timing), (2, Timing::None));
        let c = parse("--rev 1 --timing wall --rw rand-write --iodepth 8 --cores 0,1").unwrap();
        assert_eq!((c.rev, c.timing, c.bench.iodepth, c.bench.cores.clone()), (1, Timing::Wall, 8, vec![0, 1]));
        assert!(parse("--rev 3").is_err());
    }

    #[test]
    fn a_short_run_on_the_model_succeeds() {
        let c = parse("--rev 2 --ios 2000 --iodepth 8 --verify --rw mixed").unwrap();
        assert_eq!(nvmedl_tools::bench_run::run(&c.bench, |_| open(c.rev, c.timing)), ExitCode::SUCCESS);
    }
}
