// SPDX-License-Identifier: MIT OR Apache-2.0
//! One error type for the server and the export commands: every variant prints as one line.

use thiserror::Error;

/// What can stop `nvmedl-ublk`.
#[derive(Debug, Error)]
pub enum UblkSrvError {
    #[error("directnvm: {0}")]
    Device(#[from] nvmedl::Error),
    #[error("core {core}: {err}")]
    Core { core: u32, err: nvmedl::Error },
    #[error("core {0} given twice")]
    DuplicateCore(u32),
    #[error("no cores given")]
    NoCores,
    #[error("core {core} does not exist: the engine has {cores} cores (0-{last})", last = cores.saturating_sub(1))]
    NoSuchCore { core: u32, cores: u32 },
    #[error("ublk: {0}")]
    Ublk(String),
    #[error("ublk device {0} does not exist")]
    NoSuchUblk(i32),
    #[error("ublk device {id} already exists (served by pid {pid})")]
    UblkExists { id: i32, pid: i32 },
    #[error("ublk device {id} is live (served by pid {pid}); nothing to recover")]
    UblkLive { id: i32, pid: i32 },
    #[error("queue depth {depth} with {max_io}-byte I/Os does not fit the {slice}-byte data slice")]
    DepthTooLarge { depth: u32, max_io: u64, slice: usize },
    #[error("recovered device has {have} queues, {want} cores given")]
    QueueMismatch { have: u16, want: usize },
    #[error("nvmet: {0}")]
    Nvmet(String),
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
}

impl From<libublk::UblkError> for UblkSrvError {
    fn from(e: libublk::UblkError) -> Self {
        UblkSrvError::Ublk(e.to_string())
    }
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, UblkSrvError>;

/// An `Io` error naming the path.
pub fn io_err(path: impl Into<String>, err: std::io::Error) -> UblkSrvError {
    UblkSrvError::Io { path: path.into(), err }
}
