# SPDX-License-Identifier: MIT OR Apache-2.0
# Shared settings for the build scripts (sourced, not run).
# DIRECTNVM_CACHE holds everything that is expensive and outside the checkout:
# the extracted kernel source, kernel builds keyed by version + config hash, busybox.
DIRECTNVM_CACHE=${DIRECTNVM_CACHE:-/var/cache/directnvm}
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Kernel version of the Debian linux-source package to build against (make check also boots
# the oldest supported one: scripts/kernel-compat.sh).
KVER=${KVER:-7.3}
KSRC_TAR=/usr/src/linux-source-$KVER.tar.xz
RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
KMAKE_ARGS=(ARCH=arm64 LLVM=-19 RUST_LIB_SRC=$RUST_LIB_SRC)
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
export PATH=$HOME/.cargo/bin:$PATH

# Key of the kernel build: source package version, fragment, toolchain versions.
kernel_key() {
  local pkgver
  pkgver=$(dpkg-query -W -f='${Version}' linux-source-$KVER 2>/dev/null || echo none)
  { echo "$pkgver"; cat "$TOP/qemu/kernel.config"; rustc --version; clang-19 --version | head -1;
    bindgen --version 2>/dev/null; } | sha256sum | cut -c1-16
}
kernel_dir() { echo "$DIRECTNVM_CACHE/kernel-$KVER-$(kernel_key)"; }
