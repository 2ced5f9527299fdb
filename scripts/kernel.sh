#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Build (or reuse) the QEMU test kernel: arm64, LLVM 19, Rust, debug options.
# Output: $(kernel_dir)/{arch/arm64/boot/Image,Module.symvers,...}; prints the dir on stdout last.
set -euo pipefail
. "$(dirname "$0")/env.sh"

[ -f "$KSRC_TAR" ] || { echo "kernel: $KSRC_TAR missing; run 'make deps'" >&2; exit 1; }
OUT=$(kernel_dir)
if [ -f "$OUT/.directnvm-complete" ]; then
  echo "kernel: cached build $OUT" >&2
  echo "$OUT"; exit 0
fi
# One build of a kernel version at a time: a second `make` (another checkout, a parallel
# target) waits for the first and then reuses its result instead of building into the same
# directory at once.
mkdir -p "$DIRECTNVM_CACHE"
exec 9>"$DIRECTNVM_CACHE/.kernel-$KVER.lock"
if ! flock -n 9; then
  echo "kernel: another build of $KVER is running; waiting for it" >&2
  flock 9
fi
if [ -f "$OUT/.directnvm-complete" ]; then
  echo "kernel: cached build $OUT (built meanwhile)" >&2
  echo "$OUT"; exit 0
fi

SRC=$DIRECTNVM_CACHE/linux-source-$KVER
if [ ! -f "$SRC/.extracted" ]; then
  echo "kernel: extracting $KSRC_TAR" >&2
  rm -rf "$SRC"; mkdir -p "$SRC"
  tar -xf "$KSRC_TAR" -C "$SRC" --strip-components=1
  touch "$SRC/.extracted"
fi

# Seed from the newest earlier build (another fragment or toolchain): kbuild then rebuilds only
# what the changed options touch. Keep at most two kernel builds in the cache.
if [ ! -d "$OUT" ]; then
  seed=$(ls -1td "$DIRECTNVM_CACHE"/kernel-$KVER-* 2>/dev/null | head -n1 || true)
  if [ -n "$seed" ] && [ -f "$seed/.config" ]; then
    echo "kernel: seeding from $seed" >&2
    cp -a "$seed" "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
    rm -f "$OUT/.directnvm-complete"
  fi
fi
mkdir -p "$OUT"
# (grep finds nothing on a first build: that is not an error)
{ ls -1td "$DIRECTNVM_CACHE"/kernel-$KVER-* 2>/dev/null | grep -vx "$OUT" || true; } | tail -n +2 | xargs -r rm -rf
echo "kernel: configuring in $OUT" >&2
make -C "$SRC" O="$OUT" "${KMAKE_ARGS[@]}" KCONFIG_ALLCONFIG="$TOP/qemu/kernel.config" allnoconfig >&2
make -C "$SRC" O="$OUT" "${KMAKE_ARGS[@]}" olddefconfig >&2

# Every option of the fragment must have survived dependency resolution.
bad=0
while IFS= read -r line; do
  case "$line" in CONFIG_*=*) ;; *) continue ;; esac
  opt=${line%%=*}; val=${line#*=}
  if [ "$val" = n ]; then
    grep -qx "$opt=y" "$OUT/.config" && { echo "kernel: $opt should be off" >&2; bad=1; }
  else
    grep -qx "$line" "$OUT/.config" || { echo "kernel: $line did not take (dependency missing?)" >&2; bad=1; }
  fi
done < "$TOP/qemu/kernel.config"
[ $bad -eq 0 ] || { echo "kernel: config fragment not satisfied" >&2; exit 1; }

echo "kernel: building Image + modules (this takes a while on 2 cores)" >&2
make -C "$SRC" O="$OUT" "${KMAKE_ARGS[@]}" -j"$(nproc)" Image modules >&2
[ -f "$OUT/Module.symvers" ] || { echo "kernel: Module.symvers missing after build" >&2; exit 1; }
touch "$OUT/.directnvm-complete"
echo "$OUT"
