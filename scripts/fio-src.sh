#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The exact source of the Debian fio package that runs in the guest (qemu/guest-debs.list), for
# building the directnvm ioengine against fio's own headers and config-host.h.
# Idempotent; prints the configured source tree on stdout.
#
# apt-get source needs a deb-src entry; this machine's sources have none, so apt runs with a
# private source list (a deb-src stanza for the mirror the system already uses), private lists
# and cache under $DIRECTNVM_CACHE: the system's apt configuration is left alone.
# The version is the arm64 candidate of `fio`, i.e. the binary in the initramfs.
#
#   scripts/fio-src.sh          the source tree (userspace/fio/build.sh configures it for aarch64)
#   scripts/fio-src.sh --host   a copy of it configured for this machine's cc (make install's
#                               engine, loaded by this machine's fio of the same version)
set -euo pipefail
. "$(dirname "$0")/env.sh"

VER=$(apt-cache policy fio:arm64 | awk '/Candidate:/ {print $2}')
[ -n "$VER" ] && [ "$VER" != "(none)" ] || { echo "fio-src: no fio:arm64 candidate (run make deps)" >&2; exit 1; }
UPVER=${VER%-*}
DIR=$DIRECTNVM_CACHE/fio-src-$VER
SRC=$DIR/fio-$UPVER

if [ ! -f "$DIR/.complete" ]; then
  rm -rf "$DIR.tmp"; mkdir -p "$DIR.tmp"/{etc,lists/partial,cache/archives/partial,dl}
  uri=$(awk '/^URIs:/ && $2 ~ /debian$/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
  [ -n "$uri" ] || uri=http://deb.debian.org/debian
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  cat > "$DIR.tmp/etc/src.sources" <<SRC
Types: deb-src
URIs: $uri
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  APT=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$DIR.tmp/etc"
       -o Dir::State::Lists="$DIR.tmp/lists" -o Dir::Cache="$DIR.tmp/cache" -o APT::Sandbox::User=root)
  echo "fio-src: fetching the Debian source of fio $VER" >&2
  apt-get "${APT[@]}" -q update >&2
  (cd "$DIR.tmp/dl" && apt-get "${APT[@]}" -q source --download-only "fio=$VER" >&2)
  (cd "$DIR.tmp" && dpkg-source -x --no-check dl/fio_"$VER".dsc "fio-$UPVER" >&2)
  rm -rf "$DIR.tmp/lists" "$DIR.tmp/cache"
  rm -rf "$DIR"; mv "$DIR.tmp" "$DIR"
  touch "$DIR/.complete"
fi
if [ "${1:-}" = --host ]; then
  HOST=$DIR/host/fio-$UPVER
  if [ ! -f "$HOST/config-host.h" ]; then
    rm -rf "$DIR/host"; mkdir -p "$DIR/host"
    cp -a "$SRC" "$HOST.tmp"
    rm -f "$HOST.tmp/config-host.h" "$HOST.tmp/config-host.mak"
    (cd "$HOST.tmp" && ./configure --disable-native --prefix=/usr >/dev/null) || { echo "fio-src: configure for the host failed" >&2; exit 1; }
    mv "$HOST.tmp" "$HOST"
  fi
  echo "$HOST"
  exit 0
fi
echo "$SRC"
