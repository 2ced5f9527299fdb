// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-ublk`: DirectNVM as a block device and an NVMe/TCP storage node.
//!
//! * `serve`: /dev/ublkbN served from libnvmedl, one ublk queue per claimed core
//!   (`--recover ID` resumes a device whose server was killed);
//! * `export` / `unexport`: the block device through the kernel NVMe-oF target over TCP;
//! * `del`: remove a device left by a killed server.
//!
//! Usage and guarantees: `docs/ublk.md`.

mod cli;
mod error;
mod export;
mod geometry;
mod queue;
mod serve;
mod signals;

use clap::Parser;
use cli::{Cli, Cmd};
use error::Result;

fn del(id: i32) -> Result<()> {
    if !std::path::Path::new(&format!("/dev/ublkc{id}")).exists() {
        return Err(error::UblkSrvError::NoSuchUblk(id));
    }
    serve::delete(&libublk::ctrl::UblkCtrl::new_simple(id)?, id)?;
    println!("nvmedl-ublk: ublk device {id} deleted");
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Serve(a) => serve::serve(a),
        Cmd::Export(a) => export::export(a),
        Cmd::Unexport(a) => export::unexport(a),
        Cmd::Del { id } => del(id),
    };
    if let Err(e) = r {
        eprintln!("nvmedl-ublk: {e}");
        std::process::exit(1);
    }
}
