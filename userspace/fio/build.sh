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
SRC=$TOP/userspace/fio
OBJ=$(mktemp -d)
trap 'rm -rf "$OBJ"' EXIT
CFLAGS=(-O2 -g -fPIC -std=gnu99 -Wall -Wno-unused-parameter -D_GNU_SOURCE -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64
  -DBITS_PER_LONG=64 -include "$FIO/config-host.h" -I"$FIO" -I"$TOP/userspace/libnvmedl/include")
for c in engine setup options; do
  $CC "${CFLAGS[@]}" -c -o "$OBJ/$c.o" "$SRC/$c.c"
done
# -z nodelete: fio dlcloses engines while threads may still unwind (SPDK's plugin does the
# same); libgcc_s: the Rust runtime's unwinder (libnvmedl catches panics at its C ABI).
$CC -shared -Wl,-z,nodelete -Wl,--version-script="$SRC/exports.map" -o "$OUT/libfio_directnvm.so" \
  "$OBJ"/engine.o "$OBJ"/setup.o "$OBJ"/options.o "$LIB" -lgcc_s -lpthread -ldl -lm -lc
echo "$OUT/libfio_directnvm.so"
