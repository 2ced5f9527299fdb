#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Install every host package DirectNVM-rs needs on a bare Debian bookworm machine.
# Idempotent, no prompts. Fails with a message naming the missing piece.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

die() { echo "deps: ERROR: $*" >&2; exit 1; }
log() { echo "deps: $*"; }

STAMP_DIR=${DIRECTNVM_CACHE:-/var/cache/directnvm}
mkdir -p "$STAMP_DIR"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# fio: `make install` builds the fio engine against this machine's fio source, and
# scripts/test-install.sh loads the installed engine into this machine's fio.
APT_PKGS=(clang-19 lld-19 llvm-19 libclang-19-dev bc bison flex cpio kmod libelf-dev
  libssl-dev rsync device-tree-compiler gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  xz-utils python3-venv python3-dev swig file strace pkgconf dpkg-dev python3-matplotlib linux-perf
  fio)

# The Debian mirror this machine already uses; the backports suites come from the same place.
mirror_uri() {
  local f
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$f" && return 0
  done
  awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null
}

setup_sources() {
  local src=/etc/apt/sources.list.d/directnvm-backports.sources uri
  if [ ! -f "$src" ]; then
    uri=$(mirror_uri)
    [ -n "$uri" ] || die "cannot find the Debian mirror URI in /etc/apt/sources.list*"
    log "adding bookworm-backports and trixie-backports from $uri"
    $SUDO tee "$src" >/dev/null <<SRC
Types: deb
URIs: $uri
Suites: bookworm-backports trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    # Nothing comes from trixie unless asked by exact version.
    $SUDO tee /etc/apt/preferences.d/directnvm-trixie >/dev/null <<'PIN'
Package: *
Pin: release n=trixie-backports
Pin-Priority: 1
PIN
    rm -f "$STAMP_DIR/apt-updated"
  fi
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    rm -f "$STAMP_DIR/apt-updated"
  fi
  if [ ! -f "$STAMP_DIR/apt-updated" ]; then
    $SUDO apt-get update -q || die "apt-get update failed"
    touch "$STAMP_DIR/apt-updated"
  fi
}

missing_pkgs() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

install_apt() {
  local miss
  miss=$(missing_pkgs "${APT_PKGS[@]}" linux-source-7.3 linux-source-7.2)
  if [ -n "$miss" ]; then
    log "installing: $miss"
    $SUDO apt-get install -y -q --no-install-recommends $miss || die "apt-get install failed for: $miss"
  fi
  if ! command -v qemu-system-aarch64 >/dev/null; then
    log "installing qemu-system-arm from bookworm-backports"
    $SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports qemu-system-arm \
      || die "qemu-system-arm from bookworm-backports is not available"
  fi
}

# The Rust toolchain: cargo and a rustc at least the workspace's rust-version (Cargo.toml).
# Debian bookworm's own rustc (1.63) is too old; the toolchain comes from rustup.
check_rust() {
  local need have top
  top=$(cd "$(dirname "$0")/.." && pwd)
  need=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$top/Cargo.toml" | head -1)
  [ -n "$need" ] || die "no rust-version in $top/Cargo.toml ([workspace.package])"
  export PATH=$HOME/.cargo/bin:$PATH
  local remedy="install the stable toolchain with rustup as the user who runs make:
      curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
      . \"\$HOME/.cargo/env\"
  or, with rustup already installed: rustup update stable && rustup default stable"
  if ! command -v rustc >/dev/null || ! command -v cargo >/dev/null; then
    die "no Rust toolchain (rustc and cargo); the workspace needs rustc >= $need;
  $remedy"
  fi
  have=$(rustc --version | awk '{print $2}')
  if [ "$(printf '%s\n%s\n' "$need" "${have%%-*}" | sort -V | head -1)" != "$need" ]; then
    die "rustc $have ($(command -v rustc)) is older than the workspace's rust-version $need;
  $remedy"
  fi
  log "rustc $have >= rust-version $need"
}

# rust-src of exactly the installed rustc version (the kernel build requires a matched pair).
install_rust_src() {
  local want have ver
  want=$(rustc --version | awk '{print $2}')
  have=$(dpkg-query -W -f='${Version}' rust-src 2>/dev/null || true)
  if [ -n "$have" ] && [ "${have%%+*}" = "$want" ]; then return 0; fi
  ver=$(apt-cache madison rust-src | awk -F'|' '{gsub(/ /,"",$2); print $2}' \
        | while read -r v; do [ "${v%%+*}" = "$want" ] && { echo "$v"; break; }; done)
  [ -n "$ver" ] || die "no Debian rust-src package matches rustc $want (apt-cache madison rust-src)"
  log "installing rust-src=$ver (matches rustc $want)"
  $SUDO apt-get install -y -q --no-install-recommends "rust-src=$ver" || die "cannot install rust-src=$ver"
}

install_busybox() {
  local dir=$STAMP_DIR/busybox-arm64
  if [ ! -x "$dir/bin/busybox" ]; then
    log "fetching busybox-static:arm64"
    local tmp; tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download busybox-static:arm64) || die "cannot download busybox-static:arm64"
    rm -rf "$dir"; mkdir -p "$dir"
    dpkg -x "$tmp"/busybox-static_*_arm64.deb "$dir"
    rm -rf "$tmp"
    [ -x "$dir/bin/busybox" ] || die "busybox-static:arm64 did not contain bin/busybox"
  fi
}

install_bindgen() {
  if ! command -v bindgen >/dev/null || ! bindgen --version | grep -q ' 0\.72\.'; then
    log "installing bindgen-cli 0.72 from crates.io"
    LIBCLANG_PATH=/usr/lib/llvm-19/lib cargo install --locked bindgen-cli --version '^0.72' \
      || die "cargo install bindgen-cli 0.72 failed"
  fi
}

# oelint-adv (PyPI, pinned) for the Yocto recipe check, in its own venv (scripts/check-recipes.sh).
OELINT_VERSION=9.11.2
install_oelint() {
  local venv=$STAMP_DIR/oelint-venv
  if [ "$("$venv/bin/oelint-adv" --version 2>/dev/null | awk '{print $NF}')" != "$OELINT_VERSION" ]; then
    log "installing oelint-adv $OELINT_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" || die "python3 -m venv failed (apt package python3-venv)"
    "$venv/bin/pip" install -q "oelint-adv==$OELINT_VERSION" || die "pip install oelint-adv==$OELINT_VERSION failed"
  fi
}

# Cross std for the aarch64 guest: rustup's sysroot must see the same rust-src.
link_rust_src() {
  local sysroot; sysroot=$(rustc --print sysroot)
  if [ ! -e "$sysroot/lib/rustlib/src/rust/library" ]; then
    mkdir -p "$sysroot/lib/rustlib/src"
    ln -sfn /usr/lib/rustlib/src/rust "$sysroot/lib/rustlib/src/rust"
  fi
  [ -d "$sysroot/lib/rustlib/src/rust/library/std" ] || die "rust-src not visible in $sysroot"
}

check_rust

# rustfmt and clippy for the format/lint gate of `make check`.
install_rust_tools() {
  cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1 && return
  command -v rustup >/dev/null || die "cargo fmt/clippy missing and no rustup to add them (install rustfmt and clippy for $(rustc --version))"
  log "adding rustup components rustfmt, clippy"
  rustup component add rustfmt clippy || die "rustup component add rustfmt clippy failed"
}

# The source of the Debian fio that runs in the guest (the directnvm ioengine builds against
# its headers): scripts/fio-src.sh, cached and idempotent.
fetch_fio_src() {
  bash "$(dirname "$0")/fio-src.sh" >/dev/null || die "cannot fetch the Debian fio source (scripts/fio-src.sh)"
}

setup_sources
install_apt
install_rust_tools
install_rust_src
install_busybox
install_bindgen
link_rust_src
install_oelint
fetch_fio_src
log "all dependencies present"
