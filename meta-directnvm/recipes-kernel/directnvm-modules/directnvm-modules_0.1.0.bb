# SPDX-License-Identifier: MIT OR Apache-2.0
SUMMARY = "DirectNVM kernel modules (directnvm.ko, hdu.ko)"
DESCRIPTION = "Rust-for-Linux platform drivers of the DirectNVM FPGA NVMe host engine: \
directnvm_drv (compatible directnvm,engine) and hdu_drv (directnvm,hdu), and the udev rule \
that gives group directnvm the device nodes. The kernel must be built with CONFIG_RUST=y by \
the same rustc; see docs/yocto.md."
SECTION = "kernel"
LICENSE = "GPL-2.0-only"
LIC_FILES_CHKSUM = "file://LICENSE;md5=91b01d0e22624a1420e635588d061274 \
                    file://LICENSES/GPL-2.0-only.txt;md5=b234ee4d69f5fce4486a80fdaf4a4263"

inherit directnvm_source directnvm_module_rust useradd

# module.bbclass runs the top-level Makefile with KERNEL_SRC, O=, the kernel's CC/LD and the
# build's rustc: it builds against that tree with that toolchain (targets modules and
# modules_install).

do_install:append() {
    install -d ${D}${nonarch_base_libdir}/udev/rules.d
    install -m 0644 ${S}/docs/petalinux/99-directnvm.rules ${D}${nonarch_base_libdir}/udev/rules.d/
}

# Group that may open /dev/directnvm and /dev/hdu* (99-directnvm.rules).
USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "-r directnvm"

FILES:${PN} += "${nonarch_base_libdir}/udev/rules.d/99-directnvm.rules"

# Not loaded at boot by default: the engine's registers exist only once the bitstream is
# loaded, and udev loads the modules when the device-tree nodes appear (their OF modaliases).
# A board whose bitstream is in the boot image may load them at boot from local.conf:
#   KERNEL_MODULE_AUTOLOAD += "directnvm hdu"
