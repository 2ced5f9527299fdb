#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Build the fio ioengine `directnvm` for the guest: libfio_directnvm.so (aarch64), compiled
# against the configured source of the Debian fio package that the initramfs carries
# (scripts/fio-src.sh), linked with the static aarch64 libnvmedl (qemu/build-guest.sh builds
# it first). Prints the path of the .so.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/scripts/env.sh"
OUT=$TOP/target/aarch64-unknown-linux-gnu/release
LIB=$OUT/libnvmedl.a
[ -f "$LIB" ] || { echo "fio/build: $LIB missing (bash qemu/build-guest.sh)" >&2; exit 1; }
FIO=$(bash "$TOP/scripts/fio-src.sh")
CC=aarch64-linux-gnu-gcc
# fio's struct layouts depend on config-host.h: configure the tree for the guest's target.
# The configure result differs from Debian's only in optional libraries (libaio, rdma,
# zlib...) whose members sit at the end of struct io_u or in structs the engine never
# touches; ->setup checks the layout at run time (td->io_ops must be this engine).
if [ ! -f "$FIO/config-host.h" ] || ! grep -q "'--cc=$CC'" "$FIO/config-host.h"; then
  (cd "$FIO" && ./configure --cc=$CC --disable-native --prefix=/usr >/dev/null)
fi
# userspace/fio/Makefile builds it (the Yocto layer's fio bbappend uses the same Makefile).
make -s -C "$TOP/userspace/fio" CC=$CC FIO_SRC="$FIO" NVMEDL_LIB="$LIB" BUILD_DIR="$OUT/fio-engine" >&2
cp "$OUT/fio-engine/libfio_directnvm.so" "$OUT/libfio_directnvm.so"
echo "$OUT/libfio_directnvm.so"
