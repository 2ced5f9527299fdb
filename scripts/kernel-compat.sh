#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The modules on an older kernel: build the QEMU test kernel of linux-source-VERSION (cached like
# the default one), build directnvm.ko and hdu.ko against it in a copy of the sources
# (build/kernel-VERSION/: Kbuild writes objects next to them), pack an initramfs with those
# modules and the already built guest programs, and boot the guest suite on it.
#   scripts/kernel-compat.sh VERSION [run.sh arguments...]   (default: --suite --revision 2)
# Needs `make guest` first (the Makefile's test-kernel-compat target does that).
set -euo pipefail
VER=${1:?usage: kernel-compat.sh VERSION [run.sh args]}
shift
export KVER=$VER
. "$(dirname "$0")/env.sh"
[ $# -gt 0 ] || set -- --suite --revision 2

KDIR=$(bash "$TOP/scripts/kernel.sh")
WORK=$TOP/build/kernel-$VER
rm -rf "$WORK"
mkdir -p "$WORK"
# Everything the modules compile: Kbuild and kernel/ (the drivers, the shim, the protocol crate).
cp -a "$TOP/Kbuild" "$TOP/kernel" "$WORK/"
find "$WORK" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' -o -name '*.rmeta' \) -delete
echo "kernel-compat: building the modules against linux $VER ($KDIR)" >&2
make -C "$KDIR" M="$WORK" "${KMAKE_ARGS[@]}" modules >&2
modinfo -F vermagic "$WORK/kernel/directnvm.ko" >&2
KO_DIR=$WORK INITRAMFS_OUT=$TOP/build/initramfs-$VER.cpio.gz bash "$TOP/qemu/mkinitramfs.sh" >/dev/null
echo "kernel-compat: booting linux $VER: qemu/run.sh $*" >&2
exec bash "$TOP/qemu/run.sh" --kver "$VER" --initrd "$TOP/build/initramfs-$VER.cpio.gz" "$@"
