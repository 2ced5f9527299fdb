#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Build the C example against libnvmedl.h and the static library.
#   build-c.sh guest  -> target/aarch64-unknown-linux-gnu/release/dlexample (static aarch64;
#                        needs qemu/build-guest.sh to have built libnvmedl for aarch64)
#   build-c.sh host   -> target/release/dlexample (host gcc; builds libnvmedl first)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
INC=$TOP/userspace/libnvmedl/include
SRC=$TOP/userspace/examples/dlexample.c
case "${1:-guest}" in
  guest)
    OUT=$TOP/target/aarch64-unknown-linux-gnu/release
    [ -f "$OUT/libnvmedl.a" ] || { echo "build-c: $OUT/libnvmedl.a missing (bash qemu/build-guest.sh)" >&2; exit 1; }
    aarch64-linux-gnu-gcc -O2 -Wall -Wextra -static -I"$INC" -o "$OUT/dlexample" "$SRC" "$OUT/libnvmedl.a" -lpthread -ldl -lm
    ;;
  host)
    (cd "$TOP" && cargo build --release -p libnvmedl >&2)
    OUT=$TOP/target/release
    gcc -O2 -Wall -Wextra -I"$INC" -o "$OUT/dlexample" "$SRC" "$OUT/libnvmedl.a" -lpthread -ldl -lm
    ;;
  *) echo "usage: build-c.sh [guest|host]" >&2; exit 2 ;;
esac
echo "$OUT/dlexample"
