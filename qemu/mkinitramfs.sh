#!/usr/bin/env bash
# Build the guest initramfs: busybox, the two modules, the guest programs, init.
# Output: build/initramfs.cpio.gz (path printed on stdout).
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
GUEST_BIN=$TOP/target/aarch64-unknown-linux-gnu/release
OUT=$TOP/build/initramfs.cpio.gz
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,lib/modules}
cp "$DIRECTNVM_CACHE/busybox-arm64/bin/busybox" "$ROOT/bin/busybox"
ln -s busybox "$ROOT/bin/sh"
for ko in "$TOP/directnvm_drv/directnvm.ko" "$TOP/hdu_drv/hdu.ko"; do
  [ -f "$ko" ] || { echo "mkinitramfs: $ko missing (make modules)" >&2; exit 1; }
  cp "$ko" "$ROOT/lib/modules/"
done
for b in dnvm-guest-tests nvmedl nvmedl-bench nvmedl-ublk dlexample; do
  [ -x "$GUEST_BIN/$b" ] || { echo "mkinitramfs: $GUEST_BIN/$b missing (make guest)" >&2; exit 1; }
  aarch64-linux-gnu-strip -o "$ROOT/bin/$b" "$GUEST_BIN/$b"
done
# Debian arm64 programs (fio, e2fsprogs, nvme-cli) with their shared libraries and loader.
bash "$TOP/scripts/guest-debs.sh" --copy "$ROOT"
install -m 0755 "$TOP/qemu/init.sh" "$ROOT/init"
mkdir -p "$(dirname "$OUT")"
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$OUT"
echo "$OUT"
