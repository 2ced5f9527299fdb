#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Install or uninstall libnvmedl, its header and pkg-config file, the tools (nvmedl, nvmedl-bench,
# nvmedl-ublk), their man pages, the fio engine (libfio_directnvm.so, built against the source
# of the fio this machine's apt serves: scripts/fio-src.sh --host), the udev rule and
# nvmedl-ublk's systemd units (`make install` / `make uninstall`; the kernel modules:
# `make modules_install`).
#
#   scripts/install.sh install|uninstall|files
#   scripts/install.sh units DIR BINDIR   render the systemd units into DIR for programs in BINDIR
#
# Environment (the Makefile passes its variables of the same names):
#   PREFIX=/usr/local  DESTDIR=  BINDIR=$PREFIX/bin  LIBDIR=$PREFIX/lib
#   INCLUDEDIR=$PREFIX/include  MANDIR=$PREFIX/share/man  PKGCONFIGDIR=$LIBDIR/pkgconfig
#   UDEVRULESDIR=/etc/udev/rules.d  SYSTEMDUNITDIR=$PREFIX/lib/systemd/system
#   FIOENGINEDIR=$LIBDIR/fio (fio --ioengine=external:$FIOENGINEDIR/libfio_directnvm.so)
#   PROFILE=release (cargo profile: release or dev)
#   NO_BUILD=1: install what target/ holds without running cargo.
# `files` prints the installed paths (without DESTDIR), which is also what uninstall removes.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$HOME/.cargo/bin:$PATH

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
BINDIR=${BINDIR:-$PREFIX/bin}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
MANDIR=${MANDIR:-$PREFIX/share/man}
PKGCONFIGDIR=${PKGCONFIGDIR:-$LIBDIR/pkgconfig}
UDEVRULESDIR=${UDEVRULESDIR:-/etc/udev/rules.d}
SYSTEMDUNITDIR=${SYSTEMDUNITDIR:-$PREFIX/lib/systemd/system}
FIOENGINEDIR=${FIOENGINEDIR:-$LIBDIR/fio}
PROFILE=${PROFILE:-release}
case "$PROFILE" in
  release) OUT=$TOP/target/release ;;
  dev) OUT=$TOP/target/debug ;;
  *) echo "install: PROFILE must be release or dev, not '$PROFILE'" >&2; exit 2 ;;
esac

# The library version from its Cargo.toml; the soname carries the major number (build.rs).
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$TOP/userspace/libnvmedl/Cargo.toml" | head -1)
[ -n "$VERSION" ] || { echo "install: no version in userspace/libnvmedl/Cargo.toml" >&2; exit 1; }
MAJOR=${VERSION%%.*}
TOOLS=(nvmedl nvmedl-bench nvmedl-ublk)
UNITS=(nvmedl-ublk@.service nvmedl-ublk-export@.service)
MANDIR_BUILD=$TOP/build/man

man_pages() { ls "$MANDIR_BUILD"/*.1 2>/dev/null | xargs -rn1 basename; }

files() {
  echo "$LIBDIR/libnvmedl.so.$VERSION"
  echo "$LIBDIR/libnvmedl.so.$MAJOR"
  echo "$LIBDIR/libnvmedl.so"
  echo "$LIBDIR/libnvmedl.a"
  echo "$INCLUDEDIR/libnvmedl.h"
  echo "$PKGCONFIGDIR/libnvmedl.pc"
  for t in "${TOOLS[@]}"; do echo "$BINDIR/$t"; done
  echo "$FIOENGINEDIR/libfio_directnvm.so"
  echo "$UDEVRULESDIR/99-directnvm.rules"
  for u in "${UNITS[@]}"; do echo "$SYSTEMDUNITDIR/$u"; done
}

# The units with the programs' directory filled in (userspace/ublk/systemd/*.in).
render_units() {
  local dir=$1 bindir=$2 u
  install -d "$dir"
  for u in "${UNITS[@]}"; do
    sed "s|@BINDIR@|$bindir|g" "$TOP/userspace/ublk/systemd/$u.in" > "$dir/$u"
    chmod 0644 "$dir/$u"
  done
}

build() {
  [ "${NO_BUILD:-}" = 1 ] && return 0
  (cd "$TOP" && cargo build --profile "$PROFILE" -q -p libnvmedl -p nvmedl-tools -p nvmedl-ublk)
  # Man pages from the clap definitions (nvmedl-mangen is a build tool, not installed).
  rm -rf "$MANDIR_BUILD"
  (cd "$TOP" && cargo run --profile "$PROFILE" -q -p nvmedl-tools --features man --bin nvmedl-mangen -- "$MANDIR_BUILD" >/dev/null)
  # The fio engine (userspace/fio/Makefile), with the static library just built.
  local fio
  fio=$(bash "$TOP/scripts/fio-src.sh" --host)
  make -s -C "$TOP/userspace/fio" FIO_SRC="$fio" NVMEDL_LIB="$OUT/libnvmedl.a" BUILD_DIR="$OUT/fio-engine"
}

install_all() {
  build
  for f in "$OUT/libnvmedl.so" "$OUT/libnvmedl.a" "${TOOLS[@]/#/$OUT/}" "$OUT/fio-engine/libfio_directnvm.so"; do
    [ -f "$f" ] || { echo "install: $f missing (build failed or NO_BUILD=1 without a build)" >&2; exit 1; }
  done
  [ -n "$(man_pages)" ] || { echo "install: no man pages in $MANDIR_BUILD" >&2; exit 1; }
  local d=$DESTDIR
  install -d "$d$BINDIR" "$d$LIBDIR" "$d$INCLUDEDIR" "$d$PKGCONFIGDIR" "$d$MANDIR/man1" "$d$UDEVRULESDIR" "$d$FIOENGINEDIR"
  install -m 0755 "$OUT/libnvmedl.so" "$d$LIBDIR/libnvmedl.so.$VERSION"
  ln -sfn "libnvmedl.so.$VERSION" "$d$LIBDIR/libnvmedl.so.$MAJOR"
  ln -sfn "libnvmedl.so.$MAJOR" "$d$LIBDIR/libnvmedl.so"
  install -m 0644 "$OUT/libnvmedl.a" "$d$LIBDIR/libnvmedl.a"
  install -m 0644 "$TOP/userspace/libnvmedl/include/libnvmedl.h" "$d$INCLUDEDIR/libnvmedl.h"
  sed -e '/^#/d' -e "s|@PREFIX@|$PREFIX|; s|@LIBDIR@|$LIBDIR|; s|@INCLUDEDIR@|$INCLUDEDIR|; s|@VERSION@|$VERSION|" \
    "$TOP/userspace/libnvmedl/libnvmedl.pc.in" > "$d$PKGCONFIGDIR/libnvmedl.pc"
  chmod 0644 "$d$PKGCONFIGDIR/libnvmedl.pc"
  for t in "${TOOLS[@]}"; do install -m 0755 "$OUT/$t" "$d$BINDIR/$t"; done
  install -m 0755 "$OUT/fio-engine/libfio_directnvm.so" "$d$FIOENGINEDIR/libfio_directnvm.so"
  for m in $(man_pages); do install -m 0644 "$MANDIR_BUILD/$m" "$d$MANDIR/man1/$m"; done
  install -m 0644 "$TOP/docs/petalinux/99-directnvm.rules" "$d$UDEVRULESDIR/99-directnvm.rules"
  render_units "$d$SYSTEMDUNITDIR" "$BINDIR"
  echo "install: libnvmedl $VERSION, ${TOOLS[*]}, $(man_pages | wc -l) man pages, fio engine, udev rule, ${UNITS[*]} -> ${d:-/}${d:+ }(PREFIX $PREFIX)"
  if [ -z "$d" ] && command -v ldconfig >/dev/null && [ "$(id -u)" = 0 ]; then ldconfig; fi
}

uninstall_all() {
  local d=$DESTDIR
  files | while read -r f; do rm -f "$d$f"; done
  # Man pages: every nvmedl*.1 this project generates (the set depends on the subcommands).
  rm -f "$d$MANDIR"/man1/nvmedl.1 "$d$MANDIR"/man1/nvmedl-*.1
  echo "uninstall: removed libnvmedl, ${TOOLS[*]}, man pages, udev rule, units from ${d:-/}${d:+ }(PREFIX $PREFIX)"
}

case "${1:-}" in
  install) install_all ;;
  uninstall) uninstall_all ;;
  files) files ;;
  units) render_units "${2:?units DIR BINDIR}" "${3:?units DIR BINDIR}" ;;
  *) echo "usage: scripts/install.sh install|uninstall|files|units DIR BINDIR" >&2; exit 2 ;;
esac
