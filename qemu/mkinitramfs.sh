#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Build the guest initramfs: busybox, the two modules, the guest programs, init.
# Output: build/initramfs.cpio.gz (path printed on stdout).
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
GUEST_BIN=$TOP/target/aarch64-unknown-linux-gnu/release
# KO_DIR: tree whose kernel/ holds the modules (another kernel version
# builds them in a copy: scripts/kernel-compat.sh); INITRAMFS_OUT: where to write.
KO_DIR=${KO_DIR:-$TOP}
OUT=${INITRAMFS_OUT:-$TOP/build/initramfs.cpio.gz}
ROOT=$(mktemp -d)
# The root directory as on a board (mktemp makes it 0700): unprivileged programs must reach
# /bin and /dev (the suite runs nvmedl doctor as an unprivileged user).
chmod 0755 "$ROOT"
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,lib/modules}
cp "$DIRECTNVM_CACHE/busybox-arm64/bin/busybox" "$ROOT/bin/busybox"
ln -s busybox "$ROOT/bin/sh"
for ko in "$KO_DIR/kernel/directnvm.ko" "$KO_DIR/kernel/hdu.ko"; do
  [ -f "$ko" ] || { echo "mkinitramfs: $ko missing (make modules)" >&2; exit 1; }
  cp "$ko" "$ROOT/lib/modules/"
done
for b in dnvm-guest-tests dnvm-guest-lab nvmedl nvmedl-bench nvmedl-cpubench nvmedl-ublk dlexample; do
  [ -x "$GUEST_BIN/$b" ] || { echo "mkinitramfs: $GUEST_BIN/$b missing (make guest)" >&2; exit 1; }
  aarch64-linux-gnu-strip -o "$ROOT/bin/$b" "$GUEST_BIN/$b"
done
# Debian arm64 programs (fio, e2fsprogs, nvme-cli) with their shared libraries and loader.
bash "$TOP/scripts/guest-debs.sh" --copy "$ROOT"
# The fio ioengine and the job files (userspace/fio); its libraries must be in the root.
mkdir -p "$ROOT/usr/lib/fio" "$ROOT/usr/share/directnvm"
aarch64-linux-gnu-strip --strip-unneeded -o "$ROOT/usr/lib/fio/libfio_directnvm.so" "$GUEST_BIN/libfio_directnvm.so"
cp -r "$TOP/userspace/fio/jobs" "$ROOT/usr/share/directnvm/fio-jobs"
DEBS=$(bash "$TOP/scripts/guest-debs.sh")
for lib in $(aarch64-linux-gnu-readelf -d "$ROOT/usr/lib/fio/libfio_directnvm.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  [ -e "$ROOT/lib/aarch64-linux-gnu/$lib" ] || [ -e "$ROOT/usr/lib/aarch64-linux-gnu/$lib" ] && continue
  src=$(ls "$DEBS"/{lib,usr/lib}/aarch64-linux-gnu/"$lib" 2>/dev/null | head -n1)
  [ -n "$src" ] || { echo "mkinitramfs: $lib (needed by libfio_directnvm.so) is in no fetched package" >&2; exit 1; }
  mkdir -p "$ROOT/lib/aarch64-linux-gnu"; cp -L "$src" "$ROOT/lib/aarch64-linux-gnu/$lib"
done
# nvmedl-ublk's systemd units as `make install` renders them (the ublk mode runs their lines).
bash "$TOP/scripts/install.sh" units "$ROOT/lib/systemd/system" /bin
install -m 0755 "$TOP/qemu/init.sh" "$ROOT/init"
mkdir -p "$(dirname "$OUT")"
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$OUT"
echo "$OUT"
