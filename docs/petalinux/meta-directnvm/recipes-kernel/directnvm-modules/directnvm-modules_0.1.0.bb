# SPDX-License-Identifier: MIT OR Apache-2.0
SUMMARY = "DirectNVM kernel modules (directnvm.ko, hdu.ko)"
DESCRIPTION = "Rust-for-Linux platform drivers of the DirectNVM FPGA NVMe host engine: \
directnvm_drv (compatible directnvm,engine) and hdu_drv (directnvm,hdu), and the udev rule \
that gives group directnvm the device nodes. The kernel must be built with CONFIG_RUST=y and \
the same rustc; see docs/board.md."
HOMEPAGE = "${DIRECTNVM_HOMEPAGE}"
SECTION = "kernel"
LICENSE = "GPL-2.0-only"
LIC_FILES_CHKSUM = "file://LICENSE;md5=f0b55479ec39333f7acea812a3f2c154 \
                    file://LICENSES/GPL-2.0-only.txt;md5=b234ee4d69f5fce4486a80fdaf4a4263"

# The sources are the checkout this layer lives in (EXTERNALSRC); nothing is fetched.
SRC_URI = ""

inherit externalsrc module useradd

EXTERNALSRC = "${DIRECTNVM_TOP}"

# module.bbclass passes the kernel's own CC/LD/AR; the top-level Makefile adds M= and
# builds against the staged kernel build tree (LLVM empty: the kernel's tools as passed).
EXTRA_OEMAKE += "KDIR=${STAGING_KERNEL_BUILDDIR} LLVM="

do_install:append() {
    install -d ${D}${sysconfdir}/udev/rules.d
    install -m 0644 ${S}/docs/petalinux/99-directnvm.rules ${D}${sysconfdir}/udev/rules.d/
}

# Group that may open /dev/directnvm and /dev/hdu* (99-directnvm.rules).
USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "-r directnvm"

FILES:${PN} += "${sysconfdir}/udev/rules.d/99-directnvm.rules"
# Load at boot (drop this to load by hand during bring-up).
KERNEL_MODULE_AUTOLOAD += "directnvm hdu"
