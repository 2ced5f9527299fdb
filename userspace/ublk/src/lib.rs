// SPDX-License-Identifier: MIT OR Apache-2.0
//! The command-line definition of `nvmedl-ublk`, as a library so that `nvmedl-mangen`
//! (userspace/tools, feature `man`) writes its man pages from the same clap definitions.

pub mod cli;
