#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Regenerate the generated C headers (one source of truth: the Rust definitions):
#   userspace/libnvmedl/include/libnvmedl.h   libnvmedl's C ABI (cbindgen on src/ffi/)
#   kernel/abi/include/directnvm_abi.h        the kernel ABI: structs, constants (cbindgen on the
#                                             protocol crate's C-ABI modules) + ioctl numbers and
#                                             size checks (kernel/abi/examples/c_header_tail.rs)
#   dts/qemu-virt-directnvm.dtso              the QEMU board's DT overlay (fake-hdu --print-overlay,
#                                             from qemu/fakehdu/src/board.rs)
#   scripts/gen-headers.sh          write both headers and the overlay
#   scripts/gen-headers.sh --check  fail (exit 1) if a committed file is stale or a header does not compile
# Installs cbindgen from crates.io into ~/.cargo/bin when it is missing (idempotent).
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$HOME/.cargo/bin:$PATH
CBINDGEN_VERSION=0.29.4
if ! cbindgen --version 2>/dev/null | grep -q "$CBINDGEN_VERSION"; then
  cargo install --locked cbindgen --version "$CBINDGEN_VERSION" >&2
fi
CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
STALE=0

# publish NEW HEADER: write it, or with --check compare it with the committed one.
publish() {
  local new=$1 header=$2
  if [ $CHECK = 1 ]; then
    if ! cmp -s "$new" "$header"; then
      echo "gen-headers: $header is stale; run scripts/gen-headers.sh" >&2
      diff -u "$header" "$new" >&2 || true
      STALE=1
    else
      echo "gen-headers: $header is up to date"
    fi
  else
    mkdir -p "$(dirname "$header")"
    cp "$new" "$header"
    echo "$header"
  fi
}

# libnvmedl.h
CRATE=$TOP/userspace/libnvmedl
cbindgen --quiet --config "$CRATE/cbindgen.toml" --crate libnvmedl --output "$TMPD/libnvmedl.h" "$CRATE"
publish "$TMPD/libnvmedl.h" "$CRATE/include/libnvmedl.h"

# directnvm_abi.h: cbindgen reads the protocol crate's C-ABI modules (lib.rs lists them in this
# order) as one file, without their `//!` module docs; the other modules (the NVMe codecs, the
# bring-up, the layout) are not part of the C ABI. Every ioctl cbindgen had to skip must be in
# the generated tail.
ABI=$TOP/kernel/abi
for m in sizes hdu entry testdev ioctl dt; do
  grep -v '^//!' "$ABI/$m.rs"
done >"$TMPD/abi.rs"
cbindgen --config "$ABI/cbindgen.toml" --output "$TMPD/body.h" "$TMPD/abi.rs" 2>"$TMPD/warn"
cargo run -q -p directnvm-abi --example c_header_tail >"$TMPD/tail.h"
for name in $(sed -n 's/^WARN: Skip abi::\([A-Z0-9_]*_IOC_[A-Z0-9_]*\) .*/\1/p' "$TMPD/warn"); do
  grep -q "^#define $name " "$TMPD/tail.h" || { echo "gen-headers: $name is missing from DNVM_IOCTLS (kernel/abi/ioctl.rs)" >&2; exit 1; }
done
{
  echo "/* Generated from kernel/abi (directnvm-abi) by scripts/gen-headers.sh. Do not edit. */"
  echo "/* SPDX-License-Identifier: MIT OR Apache-2.0 */"
  echo "/*"
  echo " * DirectNVM kernel ABI: the ioctls, structs and mmap layout of /dev/directnvm and /dev/hduN,"
  echo " * and the staging-entry and register layout of the HDU (docs/hardware.md explains each number)."
  echo " */"
  echo "#ifndef DIRECTNVM_ABI_H"
  echo "#define DIRECTNVM_ABI_H"
  echo
  cat "$TMPD/body.h"
  echo
  cat "$TMPD/tail.h"
  echo
  echo "#endif /* DIRECTNVM_ABI_H */"
} >"$TMPD/directnvm_abi.h"
publish "$TMPD/directnvm_abi.h" "$ABI/include/directnvm_abi.h"

# dts/qemu-virt-directnvm.dtso: the QEMU board's overlay, rendered from its one source,
# Board::qemu_default in qemu/fakehdu/src/board.rs (qemu/run.sh reads the same map through
# `fake-hdu --print-board-map`).
cargo run -q -p fakehdu --bin fake-hdu -- --print-overlay >"$TMPD/qemu-virt-directnvm.dtso"
publish "$TMPD/qemu-virt-directnvm.dtso" "$TOP/dts/qemu-virt-directnvm.dtso"

# Both headers must compile as C11 (the size checks are _Static_asserts).
if [ $CHECK = 1 ]; then
  for h in "$CRATE/include/libnvmedl.h" "$ABI/include/directnvm_abi.h"; do
    printf '#include "%s"\nint main(void) { return 0; }\n' "$h" >"$TMPD/t.c"
    cc -std=c11 -Wall -Werror -c -o "$TMPD/t.o" "$TMPD/t.c" || { echo "gen-headers: $h does not compile" >&2; exit 1; }
  done
  echo "gen-headers: both headers compile (C11, -Wall -Werror)"
fi
exit $STALE
