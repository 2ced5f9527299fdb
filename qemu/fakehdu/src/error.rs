// SPDX-License-Identifier: MIT OR Apache-2.0
//! The model's error type: what went wrong setting up or driving the fake device.

use std::fmt::Display;

/// An error of the fake device (setup, control commands, the host-side bring-up helper).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on a named object failed (file, socket, thread).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, e.g. the path.
        what: String,
        /// The system error.
        source: std::io::Error,
    },
    /// Guest memory could not be set up or accessed.
    #[error("guest memory: {0}")]
    Memory(String),
    /// The board device tree is malformed or lacks a node the model needs.
    #[error("bad DTB: {0}")]
    Dtb(String),
    /// The configuration is inconsistent (revision, engines, queue depth, address overlaps).
    #[error("bad configuration: {0}")]
    Config(String),
    /// A control command is malformed or names something that does not exist.
    #[error("{0}")]
    Control(String),
    /// A bad command line of the `fake-hdu` program.
    #[error("{0}")]
    Usage(String),
    /// A test_support helper (guest memory, HDU lookup) failed.
    #[error("bring-up: {0}")]
    BringUp(String),
}

/// Result of the model's fallible operations.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// `map_err` adapter for an I/O error on `what`.
    pub fn io(what: impl Display) -> impl FnOnce(std::io::Error) -> Error {
        move |source| Error::Io { what: what.to_string(), source }
    }
}
