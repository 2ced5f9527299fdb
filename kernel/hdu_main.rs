// SPDX-License-Identifier: GPL-2.0-only
//! hdu.ko, the DirectNVM Hardware Dispatch Unit driver: the crate root.
//!
//! It names everything the module compiles: the driver (`hdu_drv/`), the kernel shim
//! (`kshim.rs`) and the parts of the protocol crate (`abi/`, cargo's `directnvm-abi`) the driver
//! uses, as modules of this crate (docs/design.md, "Kernel build"). No NVMe code: that is
//! directnvm.ko's.

/// The protocol crate's modules this driver uses. Its items are `pub` for the crate's other
/// users; cargo formats, lints and tests these files with their crate (hence `rustfmt::skip`).
#[rustfmt::skip]
#[allow(dead_code, unreachable_pub)]
mod abi {
    pub mod sizes;
    pub mod dt;
    pub mod hdu;
    pub mod ioctl;
    pub use self::{dt::*, hdu::*, ioctl::*, sizes::*};
}

/// The unsafe shim (shared with directnvm.ko; hdu.ko uses part of it).
#[allow(dead_code)]
mod kshim;

/// The driver: probe, `/dev/hduN`, sysfs and debugfs.
mod hdu_drv;

/// The module, with `shared_readonly` of type `$flag` (default `$off`): a `bool` from 7.3 on; a
/// byte (0 or 1; `shared_readonly=1` works on both) before 7.3, whose kernel crate has no `bool`
/// parameters.
macro_rules! hdu_module {
    ($flag:ident, $off:tt) => {
        kernel::module_platform_driver! {
            type: hdu_drv::HduDriver,
            name: "hdu",
            authors: ["DirectNVM-rs developers"],
            description: "DirectNVM Hardware Dispatch Unit driver",
            license: "GPL",
            params: {
                shared_readonly: $flag {
                    default: $off,
                    description: "Allow any number of read-only (O_RDONLY) opens of /dev/hduN beside the exclusive owner, for diagnostics: GET_INFO/GET_STATS only, no mmap, no reset",
                },
            },
        }
    };
}

#[cfg(not(dnvm_pre_7_3))]
hdu_module!(bool, false);
#[cfg(dnvm_pre_7_3)]
hdu_module!(u8, 0);
