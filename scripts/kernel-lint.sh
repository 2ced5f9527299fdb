#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The kernel-only Rust against the kernel's own rules (part of `make lint`):
#   1. rustfmt --check with the kernel's settings (kernel/.rustfmt.toml, the Linux tree's
#      .rustfmt.toml) on the two crate roots and the modules they reach (the shim, the drivers;
#      the roots mark `mod abi` rustfmt::skip: the protocol crate is cargo fmt's);
#   2. the kernel's clippy build, `make -C KDIR M=... CLIPPY=1 modules` (its lints include
#      clippy::undocumented_unsafe_blocks and missing_docs), of both modules from a fresh copy of
#      the sources in build/kernel-lint/ (the tree's objects stay those of `make modules`, and
#      every file is compiled, so no warning hides in an up-to-date object); any warning fails.
#   scripts/kernel-lint.sh            against $KDIR, or the cached QEMU test kernel (scripts/kernel.sh)
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$TOP"
fail=0

if rustfmt --check --edition 2021 --config-path kernel/.rustfmt.toml kernel/directnvm_main.rs kernel/hdu_main.rs; then
  echo "kernel-lint: rustfmt (kernel settings) clean"
else
  echo "kernel-lint: rustfmt differences in the kernel-only Rust; run: make fmt" >&2
  fail=1
fi

KDIR=${KDIR:-$(bash scripts/kernel.sh)}
# The copy of the kernel's settings must still be the kernel's (comments aside).
if [ -f "$KDIR/source/.rustfmt.toml" ] &&
  ! diff <(grep -v '^#' "$KDIR/source/.rustfmt.toml" | grep .) <(grep -v '^#' kernel/.rustfmt.toml | grep .) >/dev/null; then
  echo "kernel-lint: kernel/.rustfmt.toml differs from $KDIR/source/.rustfmt.toml" >&2
  fail=1
fi

WORK=$TOP/build/kernel-lint
rm -rf "$WORK"
mkdir -p "$WORK"
cp -a Kbuild kernel "$WORK/"
find "$WORK" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' -o -name '*.rmeta' \) -delete
log=$WORK/build.log
if ! make -C "$KDIR" M="$WORK" "${KMAKE_ARGS[@]}" CLIPPY=1 modules >"$log" 2>&1; then
  cat "$log" >&2
  echo "kernel-lint: the CLIPPY=1 module build failed" >&2
  exit 1
fi
if grep -qiE '(^|[: ])(warning|error)[:[]' "$log"; then
  grep -iE -A12 '(^|[: ])(warning|error)[:[]' "$log" >&2
  echo "kernel-lint: the CLIPPY=1 module build has warnings ($log)" >&2
  fail=1
else
  echo "kernel-lint: CLIPPY=1 build of directnvm.ko and hdu.ko against $KDIR: no warnings"
fi
exit $fail
