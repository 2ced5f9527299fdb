# SPDX-License-Identifier: GPL-2.0-only OR MIT
SUMMARY = "DirectNVM-rs kernel modules (directnvm.ko, hdu.ko), Rust-for-Linux platform drivers"
DESCRIPTION = "directnvm_drv (compatible directnvm,engine) and hdu_drv (directnvm,hdu). \
Out-of-tree Rust modules: the kernel recipe must be built with CONFIG_RUST=y, with clang/LLVM, \
and with exactly the rustc and bindgen this recipe's build sees. See docs/board.md."
LICENSE = "GPL-2.0-only"
LIC_FILES_CHKSUM = "file://LICENSE;md5=CHANGEME"

# Assumptions (check them against your layers):
#  - the repo is fetched as-is (git or a local tarball) and its top-level Makefile builds both
#    modules with `make KDIR=<kernel build dir> ARCH=arm64 LLVM=1`;
#  - the kernel recipe is clang-built with Rust (e.g. meta-clang TOOLCHAIN:pn-linux-xlnx =
#    "clang", plus a rustc/bindgen/rust-src in the kernel's build environment); the
#    rustc that built the kernel's rust/ libraries must be the one on PATH here, or the
#    build fails with E0514 (incompatible libkernel.rmeta);
#  - the kernel's build dir has Module.symvers (a full `make`/`make modules` ran, which the
#    normal kernel recipe does).
SRC_URI = "git://example.invalid/DirectNVM-rs.git;protocol=https;branch=main \
           file://99-directnvm.rules"
SRCREV = "${AUTOREV}"
S = "${WORKDIR}/git"

inherit module useradd

DEPENDS += "bindgen-cli-native clang-native rust-native"

# module.bbclass passes CC=${KERNEL_CC} (gcc) and friends; a Rust kernel is built with
# LLVM=1, so drive the top-level Makefile directly with the kernel's own settings.
EXTRA_OEMAKE = "KDIR=${STAGING_KERNEL_BUILDDIR} ARCH=${ARCH} LLVM=1 \
                CROSS_COMPILE=${TARGET_PREFIX}"

do_compile() {
    unset CFLAGS CPPFLAGS CXXFLAGS LDFLAGS
    oe_runmake
}

do_install() {
    oe_runmake -C ${STAGING_KERNEL_BUILDDIR} M=${S} ARCH=${ARCH} LLVM=1 \
        INSTALL_MOD_PATH=${D} INSTALL_MOD_DIR=extra modules_install
    install -d ${D}${sysconfdir}/udev/rules.d
    install -m 0644 ${WORKDIR}/99-directnvm.rules ${D}${sysconfdir}/udev/rules.d/
}

# Group that may open /dev/directnvm and /dev/hdu* (99-directnvm.rules).
USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "-r directnvm"

FILES:${PN} += "${sysconfdir}/udev/rules.d/99-directnvm.rules"
RPROVIDES:${PN} += "kernel-module-directnvm kernel-module-hdu"
# Load at boot (drop this to load by hand during bring-up).
KERNEL_MODULE_AUTOLOAD += "directnvm hdu"
