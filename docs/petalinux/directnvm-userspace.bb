# SPDX-License-Identifier: GPL-2.0-only OR MIT
SUMMARY = "DirectNVM-rs user space: libnvmedl (Rust API + C ABI), nvmedl, nvmedl-bench"
LICENSE = "GPL-2.0-only | MIT"
LIC_FILES_CHKSUM = "file://LICENSE;md5=CHANGEME"

# Assumptions (this is a template, not a tested recipe):
#  - Yocto >= 4.3 (cargo + cargo-update-recipe-crates classes). The crate list
#    directnvm-userspace-crates.inc is generated, not written: `bitbake -c update_crates
#    directnvm-userspace` reads Cargo.lock and writes one crate:// SRC_URI line (with
#    checksum) per dependency, so the build itself is offline and reproducible;
#  - the Yocto rustc is at least the workspace's rust-version (MSRV); the userspace crates
#    are plain std Rust (no -Zbuild-std here, that is only for the QEMU guest build);
#  - the workspace root Cargo.toml is the repo top; qemu/ host-only crates (fake HDU) are
#    not built for the target: only the packages below are;
#  - package names nvmedl / nvmedl-bench / libnvmedl are the workspace's; adjust if they
#    differ. The C header is the generated one under the crate's include/.
SRC_URI = "git://example.invalid/DirectNVM-rs.git;protocol=https;branch=main"
SRCREV = "${AUTOREV}"
S = "${WORKDIR}/git"

inherit cargo cargo-update-recipe-crates
require ${BPN}-crates.inc

CARGO_SRC_DIR = ""
CARGO_BUILD_FLAGS += "-p libnvmedl -p nvmedl -p nvmedl-bench"

do_install:append() {
    # cargo.bbclass installs the binaries; add the C ABI library and header.
    install -d ${D}${libdir} ${D}${includedir}
    if [ -f ${B}/target/${CARGO_TARGET_SUBDIR}/libnvmedl.so ]; then
        install -m 0755 ${B}/target/${CARGO_TARGET_SUBDIR}/libnvmedl.so ${D}${libdir}/
    fi
    install -m 0644 ${S}/userspace/libnvmedl/include/libnvmedl.h ${D}${includedir}/ || true
}

FILES:${PN} += "${libdir}/libnvmedl.so"
FILES_SOLIBSDEV = ""
INSANE_SKIP:${PN} += "dev-so"
RDEPENDS:${PN} += "directnvm-modules"
