# SPDX-License-Identifier: MIT OR Apache-2.0
SUMMARY = "fio ioengine for the DirectNVM FPGA NVMe host engine"
DESCRIPTION = "libfio_directnvm.so, the external fio ioengine 'directnvm' (fio \
--ioengine=external:${libdir}/fio/libfio_directnvm.so) with libnvmedl linked in statically. \
fio's struct layouts depend on its configured source tree, so the engine is compiled against \
the source of the fio release the build ships (DIRECTNVM_FIO_VERSION); at run time the engine \
refuses a fio whose layout differs."
SECTION = "console/tests"
LICENSE = "MIT | Apache-2.0"
LIC_FILES_CHKSUM = "file://LICENSE;md5=91b01d0e22624a1420e635588d061274 \
                    file://LICENSES/MIT.txt;md5=e011e8508bfd71a3d8792d2e735b4037 \
                    file://LICENSES/Apache-2.0.txt;md5=3b83ef96387f14655fc854ddc3c6bd57"

DEPENDS = "libnvmedl"

inherit directnvm_source

# fio's sources (only its headers and config-host.h are used; nothing of fio is installed).
SRC_URI += "git://git.kernel.dk/fio.git;protocol=https;branch=master;name=fio;destsuffix=fio"
SRCREV_fio = "${DIRECTNVM_FIO_SRCREV}"
SRCREV_FORMAT = "directnvm_fio"
# The fio release the engine is compiled against: set both to the fio of your build
# (`bitbake-getvar -r fio PV`; the commit of tag fio-<PV> in git.kernel.dk/fio.git).
DIRECTNVM_FIO_VERSION ??= "3.39"
DIRECTNVM_FIO_SRCREV ??= "a6e474c9e896e4ba1eb40066a03402afb040710a"

FIO_S = "${S}/../fio"

# fio's own configure, for the target's compiler, as meta-oe's fio recipe does.
do_configure() {
    cd ${FIO_S}
    grep -q "^DEF_VER=fio-${DIRECTNVM_FIO_VERSION}$" FIO-VERSION-GEN || \
        bbfatal "DIRECTNVM_FIO_SRCREV is not fio ${DIRECTNVM_FIO_VERSION} (FIO-VERSION-GEN: $(grep ^DEF_VER= FIO-VERSION-GEN))"
    ./configure --cc="${CC}" --extra-cflags="${CFLAGS}" --disable-native --prefix=${prefix}
}

do_compile() {
    oe_runmake -C ${S}/userspace/fio FIO_SRC=${FIO_S} NVMEDL_LIB=${STAGING_LIBDIR}/libnvmedl.a \
        NVMEDL_INC=${STAGING_INCDIR} BUILD_DIR=${B}/engine
}

do_install() {
    oe_runmake -C ${S}/userspace/fio FIO_SRC=${FIO_S} NVMEDL_LIB=${STAGING_LIBDIR}/libnvmedl.a \
        NVMEDL_INC=${STAGING_INCDIR} BUILD_DIR=${B}/engine DESTDIR=${D} ENGINE_DIR=${libdir}/fio install
}

FILES:${PN} += "${libdir}/fio/libfio_directnvm.so"
RDEPENDS:${PN} = "fio"
