#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Regenerate the C header of libnvmedl from its Rust C ABI (cbindgen).
#   scripts/gen-headers.sh          write userspace/libnvmedl/include/libnvmedl.h
#   scripts/gen-headers.sh --check  fail (exit 1) if the committed header is stale
# Installs cbindgen from crates.io into ~/.cargo/bin when it is missing (idempotent).
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$HOME/.cargo/bin:$PATH
CBINDGEN_VERSION=0.29.4
if ! cbindgen --version 2>/dev/null | grep -q "$CBINDGEN_VERSION"; then
  cargo install --locked cbindgen --version "$CBINDGEN_VERSION" >&2
fi
CRATE=$TOP/userspace/libnvmedl
HEADER=$CRATE/include/libnvmedl.h
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT
cbindgen --quiet --config "$CRATE/cbindgen.toml" --crate libnvmedl --output "$TMP" "$CRATE"
if [ "${1:-}" = "--check" ]; then
  if ! cmp -s "$TMP" "$HEADER"; then
    echo "gen-headers: $HEADER is stale; run scripts/gen-headers.sh" >&2
    diff -u "$HEADER" "$TMP" >&2 || true
    exit 1
  fi
  echo "gen-headers: $HEADER is up to date"
else
  mkdir -p "$(dirname "$HEADER")"
  cp "$TMP" "$HEADER"
  echo "$HEADER"
fi
