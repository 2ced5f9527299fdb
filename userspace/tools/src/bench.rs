// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`: a small fio-like benchmark on libnvmedl, on the engine's character device
//! (the command line: `bench_cli.rs`; the engine: `bench_run.rs`, whose docs describe the
//! options).

use std::process::ExitCode;

use clap::Parser;
use nvmedl::Device;
use nvmedl_tools::bench_cli::BenchCli;

fn main() -> ExitCode {
    // Parsing never opens the device: --help, --version and usage errors work anywhere.
    let cli = BenchCli::parse();
    nvmedl_tools::bench_run::run(&cli, |path| Device::open_path(path).map_err(|e| format!("{path}: {e}")))
}
