#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Check the Yocto layer meta-directnvm (make oelint, part of make check):
#   - the crate list libnvmedl-crates.inc matches Cargo.lock (scripts/yocto-crates.py --check);
#   - every LIC_FILES_CHKSUM md5 is the md5 of the named file;
#   - the recipes fetch (no externalsrc), pass no path of this machine (RUST_LIB_SRC, LIBCLANG
#     of /usr, ~/.cargo) and load no module at boot unless the integrator asks;
#   - oelint-adv (pinned, from the venv scripts/deps.sh creates) reports no error and no warning
#     on the recipes, the classes and conf/layer.conf for every release LAYERSERIES_COMPAT names
#     and for latest. Infos (suggested variables such as BUGTRACKER) are not failures.
# Suppressed with reason: oelint.vars.homepageprefix / homepageping: HOMEPAGE is
# ${DIRECTNVM_HOMEPAGE} (conf/layer.conf), set by whoever publishes the project; the ping
# rule also needs the network, which a CI check must not.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
LAYER=$TOP/meta-directnvm
OELINT=${DIRECTNVM_CACHE:-/var/cache/directnvm}/oelint-venv/bin/oelint-adv
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }

if python3 "$TOP/scripts/yocto-crates.py" --check; then ok "libnvmedl-crates.inc matches Cargo.lock"; else bad "libnvmedl-crates.inc is stale"; fi

# LIC_FILES_CHKSUM entries: file://PATH;md5=SUM, relative to the repository top (EXTERNALSRC).
lic_bad=
while read -r path sum; do
  have=$(md5sum "$TOP/$path" 2>/dev/null | cut -d' ' -f1 || true)
  [ "$have" = "$sum" ] || lic_bad="$lic_bad $path(recipe $sum, file ${have:-missing})"
done < <(grep -ho 'file://[^;" ]*;md5=[0-9a-f]*' "$LAYER"/recipes-*/*/*.bb | sed 's|file://||; s|;md5=| |')
if [ -z "$lic_bad" ]; then ok "LIC_FILES_CHKSUM md5s match LICENSE and LICENSES/*"; else bad "LIC_FILES_CHKSUM:$lic_bad"; fi

# Fetched sources and the build's own toolchain only (comments aside).
host=$(grep -nE 'externalsrc|EXTERNALSRC|RUST_LIB_SRC|LIBCLANG_PATH *= *"/|\.cargo/bin|/usr/lib/llvm|^[^#]*KERNEL_MODULE_AUTOLOAD' \
  "$LAYER"/recipes-*/*/*.bb "$LAYER"/classes-recipe/*.bbclass "$LAYER"/conf/layer.conf | grep -v ':[0-9]*: *#' || true)
if [ -z "$host" ]; then ok "recipes fetch from git, use the build's toolchain, autoload nothing"; else echo "$host" | sed 's/^/# /'; bad "externalsrc, host paths or autoload in the layer"; fi

if [ ! -x "$OELINT" ]; then
  bad "oelint-adv missing at $OELINT (run: bash scripts/deps.sh)"
else
  releases=$(sed -n 's/^LAYERSERIES_COMPAT_directnvm = "\(.*\)"/\1/p' "$LAYER/conf/layer.conf")
  [ -n "$releases" ] || bad "no LAYERSERIES_COMPAT_directnvm in conf/layer.conf"
  for rel in $releases latest; do
    out=$(cd "$LAYER" && "$OELINT" --quiet --hide info --release "$rel" --relpaths \
      --suppress oelint.vars.homepageprefix --suppress oelint.vars.homepageping \
      recipes-*/*/*.bb classes-recipe/*.bbclass conf/layer.conf 2>&1) && rc=0 || rc=$?
    if [ "$rc" = 0 ] && [ -z "$out" ]; then
      ok "oelint-adv $("$OELINT" --version | awk '{print $NF}') --release $rel: no errors, no warnings"
    else
      echo "$out" | sed 's/^/# /'
      bad "oelint-adv --release $rel (exit $rc)"
    fi
  done
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
