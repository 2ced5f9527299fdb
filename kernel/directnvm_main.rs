// SPDX-License-Identifier: GPL-2.0-only
//! directnvm.ko, the DirectNVM reserved-memory and queue manager: the crate root.
//!
//! It names everything the module compiles: the driver (`directnvm_drv/`), the kernel shim
//! (`kshim.rs`) and the parts of the protocol crate (`abi/`, cargo's `directnvm-abi`) the driver
//! uses, as modules of this crate (docs/design.md, "Kernel build").

/// The protocol crate's modules this driver uses. Its items are `pub` for the crate's other
/// users; cargo formats, lints and tests these files with their crate (hence `rustfmt::skip`).
#[rustfmt::skip]
#[allow(dead_code, unreachable_pub)]
mod abi {
    pub mod sizes;
    pub mod dt;
    pub mod entry;
    pub mod ioctl;
    pub mod nvme;
    pub mod bringup;
    pub mod layout;
    pub use self::{dt::*, ioctl::*, sizes::*};
}

/// The unsafe shim (shared with hdu.ko, which uses other parts of it).
#[allow(dead_code)]
mod kshim;

/// The driver: probe, `/dev/directnvm`, debugfs.
mod directnvm_drv;

kernel::module_platform_driver! {
    type: directnvm_drv::DnvmDriver,
    name: "directnvm",
    authors: ["DirectNVM-rs developers"],
    description: "DirectNVM reserved-memory and queue manager",
    license: "GPL",
}
