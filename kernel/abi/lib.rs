// SPDX-License-Identifier: MIT OR Apache-2.0
//! DirectNVM protocol crate: everything the kernel modules, the device model, the library and the
//! tools must agree on. Register offsets, staging-entry layout, status words, the ioctl interface
//! of `/dev/directnvm` and `/dev/hduN`, device-tree names, the NVMe codecs and admin bring-up,
//! and the carve-out layout. `docs/hardware.md` explains every number.
//!
//! `core` only. The kernel modules compile these files as modules of their own crates (each
//! crate root in `kernel/` declares the modules it uses, `mod abi { pub mod hdu; .. }`), so a
//! module refers to its siblings as `super::name`, never through `crate::`, and has no inner
//! attributes but its `//!` doc; every public item has a doc comment (the kernel builds with
//! `-Wmissing_docs`).
#![no_std]
#![deny(missing_docs)]

// The C ABI by concept, in the order of the generated C header (scripts/gen-headers.sh).
pub mod dt;
pub mod entry;
pub mod hdu;
pub mod ioctl;
pub mod sizes;
pub mod testdev;

pub use dt::*;
pub use entry::*;
pub use hdu::*;
pub use ioctl::*;
pub use sizes::*;
pub use testdev::*;

// Not part of the C header.
pub mod bringup;
pub mod layout;
pub mod nvme;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod nvme_tests;
