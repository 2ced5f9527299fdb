// SPDX-License-Identifier: MIT OR Apache-2.0
//! Prints the part of `include/directnvm_abi.h` that cbindgen cannot derive: the ioctl numbers
//! (computed by `dnvm_ioc`) and a size check of every struct against the Rust definition, so a
//! C compiler refuses a header that drifted from the ABI. Run by `scripts/gen-headers.sh`.

use core::mem::size_of;
use directnvm_abi::*;

fn main() {
    println!("/* ioctl numbers (asm-generic encoding), from DNVM_IOCTLS in kernel/abi/ioctl.rs */");
    for (name, nr) in DNVM_IOCTLS {
        println!("#define {name} 0x{nr:08x}u");
    }
    println!();
    println!("/* The structs as the kernel sees them. */");
    let sizes = [
        ("dnvm_entry", size_of::<DnvmEntry>()),
        ("dnvm_info", size_of::<DnvmInfo>()),
        ("dnvm_region", size_of::<DnvmRegion>()),
        ("dnvm_layout", size_of::<DnvmLayout>()),
        ("dnvm_claim", size_of::<DnvmClaim>()),
        ("dnvm_arbitration", size_of::<DnvmArbitration>()),
        ("dnvm_stats", size_of::<DnvmStats>()),
        ("hdu_info", size_of::<HduInfo>()),
        ("hdu_stats", size_of::<HduStats>()),
        ("hdu_caps", size_of::<HduCaps>()),
    ];
    for (name, size) in sizes {
        println!("_Static_assert(sizeof(struct {name}) == {size}, \"struct {name} differs from the kernel ABI\");");
    }
}
