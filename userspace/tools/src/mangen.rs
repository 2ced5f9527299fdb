// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-mangen DIR`: write `nvmedl.1` (with one page per subcommand, `nvmedl-info.1`, ...)
//! `nvmedl-bench.1` and `nvmedl-ublk.1` (one page per subcommand too) into DIR from the tools'
//! clap definitions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;
use nvmedl_tools::{bench_cli::BenchCli, nvmedl_cli::NvmedlCli};

fn write_page(dir: &Path, cmd: clap::Command) -> std::io::Result<()> {
    let path = dir.join(format!("{}.1", cmd.get_display_name().unwrap_or(cmd.get_name())));
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    std::fs::write(&path, out)?;
    println!("{}", path.display());
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help" && !s.is_hide_set()) {
        let name = format!("{}-{}", cmd.get_name(), sub.get_name());
        write_page(dir, sub.clone().name(name.clone()).display_name(name))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: nvmedl-mangen DIR");
        return ExitCode::from(2);
    };
    let result = std::fs::create_dir_all(&dir).and_then(|_| {
        let mut nvmedl = NvmedlCli::command();
        nvmedl.build();
        write_page(&dir, nvmedl)?;
        write_page(&dir, BenchCli::command())?;
        let mut ublk = nvmedl_ublk::cli::Cli::command();
        ublk.build();
        write_page(&dir, ublk)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvmedl-mangen: {}: {e}", dir.display());
            ExitCode::from(1)
        }
    }
}
