// SPDX-License-Identifier: MIT OR Apache-2.0
//! DirectNVM shared ABI: register offsets, staging-entry layout, status words and the ioctl
//! interface of `/dev/directnvm` and `/dev/hduN`.
//!
//! The items live in `abi.rs`, which the kernel modules `include!` verbatim; this crate wraps the
//! same file for userspace and the device model. `docs/hardware.md` explains every number.
#![no_std]
#![deny(missing_docs)]

include!("abi.rs");

#[cfg(test)]
mod tests;

#[cfg(test)]
mod nvme_tests;
