#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Host test of `make install` / `make uninstall`: install into a temporary DESTDIR,
# build the C example with `pkg-config --cflags --libs libnvmedl` alone (shared and static),
# check the soname, the man pages and `--help`/`--version` of every installed tool (no device
# exists on the host), then uninstall and check nothing is left. Prints TAP-style lines and
# `N passed, N failed`; exit status 1 on any failure.
#   PROFILE=dev (default here: shares the build with cargo test) or release.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
export PROFILE=${PROFILE:-dev}
PREFIX=/usr
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
DEST=$WORK/dest
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; [ -f "${2:-/nonexistent}" ] && sed 's/^/# /' "$2" | tail -20; }
finish() { echo "$pass passed, $fail failed"; if [ "$fail" = 0 ]; then exit 0; else exit 1; fi; }

if make -s -C "$TOP" install DESTDIR="$DEST" PREFIX=$PREFIX PROFILE="$PROFILE" >"$WORK/install.log" 2>&1; then
  ok "make install DESTDIR=... PREFIX=$PREFIX"
else
  bad "make install DESTDIR=... PREFIX=$PREFIX" "$WORK/install.log"; finish
fi

LIB=$DEST$PREFIX/lib
missing=
while read -r f; do [ -e "$DEST$f" ] || missing="$missing $f"; done < <(PREFIX=$PREFIX bash "$TOP/scripts/install.sh" files)
[ -z "$missing" ] && ok "every listed file is installed" || { echo "# missing:$missing"; bad "every listed file is installed"; }

soname=$(readelf -d "$LIB/libnvmedl.so.0.1.0" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libnvmedl.so.0 ] && [ "$(readlink "$LIB/libnvmedl.so")" = libnvmedl.so.0 ] &&
  [ "$(readlink "$LIB/libnvmedl.so.0")" = libnvmedl.so.0.1.0 ] &&
  ok "libnvmedl.so.0.1.0 has soname libnvmedl.so.0, links libnvmedl.so -> .so.0 -> .so.0.1.0" ||
  bad "soname '$soname' or the links are wrong"

# pkg-config alone: the .pc file names the real prefix; the sysroot variable maps it into DESTDIR.
export PKG_CONFIG_PATH=$LIB/pkgconfig PKG_CONFIG_LIBDIR=$LIB/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
command -v pkg-config >/dev/null || { bad "pkg-config is installed (apt package pkgconf; scripts/deps.sh)"; finish; }
flags=$(pkg-config --cflags --libs libnvmedl)
echo "# pkg-config --cflags --libs libnvmedl: $flags"
[ "$(pkg-config --modversion libnvmedl)" = 0.1.0 ] && ok "pkg-config --modversion libnvmedl = 0.1.0" || bad "pkg-config --modversion"
# shellcheck disable=SC2086
if gcc -O2 -Wall -Wextra -Werror -o "$WORK/dlexample" "$TOP/userspace/examples/dlexample.c" $flags >"$WORK/cc.log" 2>&1 &&
  readelf -d "$WORK/dlexample" | grep -q 'NEEDED.*\[libnvmedl.so.0\]'; then
  ok "C example builds with \`pkg-config --cflags --libs libnvmedl\` alone and needs libnvmedl.so.0"
else
  bad "C example with pkg-config flags" "$WORK/cc.log"
fi
# The example starts (it fails at nvmedl_admin_init: no /dev/directnvm here), so the dynamic
# loader found the installed library through its soname.
if LD_LIBRARY_PATH=$LIB "$WORK/dlexample" 1 1 >"$WORK/run.log" 2>&1; [ -s "$WORK/run.log" ] &&
  ! grep -q 'error while loading shared libraries' "$WORK/run.log"; then
  ok "the dynamically linked example loads libnvmedl.so.0 from the install"
else
  bad "the dynamically linked example loads libnvmedl.so.0" "$WORK/run.log"
fi
# shellcheck disable=SC2046
if gcc -O2 -o "$WORK/dlexample-static" "$TOP/userspace/examples/dlexample.c" $(pkg-config --cflags libnvmedl) \
  "$LIB/libnvmedl.a" $(pkg-config --static --libs-only-l libnvmedl | sed 's/-lnvmedl//') >"$WORK/cc2.log" 2>&1 &&
  ! readelf -d "$WORK/dlexample-static" | grep -q 'libnvmedl'; then
  ok "C example links libnvmedl.a with pkg-config --static's private libraries"
else
  bad "static link with Libs.private" "$WORK/cc2.log"
fi

for t in nvmedl nvmedl-bench; do
  bin=$DEST$PREFIX/bin/$t
  out=$("$bin" --help 2>&1) && grep -q "^Usage: $t" <<<"$out" && grep -q "Exit status" <<<"$out" &&
    ok "$t --help (exit 0, usage and exit codes, no device)" || bad "$t --help: $(head -2 <<<"$out")"
  out=$("$bin" --version 2>&1) && [ "$out" = "$t 0.1.0" ] && ok "$t --version = '$out'" || bad "$t --version: $out"
  set +e; "$bin" --no-such-flag >/dev/null 2>&1; rc=$?; set -e
  [ "$rc" = 2 ] && ok "$t: a usage error exits 2" || bad "$t: a usage error exits $rc, not 2"
done
for u in nvmedl-ublk@.service nvmedl-ublk-export@.service; do
  f=$DEST$PREFIX/lib/systemd/system/$u
  exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$f" 2>/dev/null)
  [ "$exe" = "$PREFIX/bin/nvmedl-ublk" ] && [ -x "$DEST$exe" ] && ! grep -q '@[A-Z]*@' "$f" &&
    [ "$("$DEST$exe" --version)" = "nvmedl-ublk 0.1.0" ] &&
    ok "$u installed, its ExecStart runs the installed nvmedl-ublk" || bad "$u (ExecStart '$exe')"
done
set +e; "$DEST$PREFIX/bin/nvmedl" --device "$WORK/none" info >/dev/null 2>"$WORK/err"; rc=$?; set -e
[ "$rc" = 1 ] && grep -q "$WORK/none" "$WORK/err" && ok "nvmedl without a device exits 1 and names the device" ||
  bad "nvmedl without a device: rc $rc" "$WORK/err"

# The fio engine: exports only `ioengine`, and this machine's fio (the version it was built
# against, scripts/fio-src.sh --host) loads the installed file and runs its setup: the layout
# check passes, and with no engine on this machine the job is refused with the engine's message.
eng=$DEST$PREFIX/lib/fio/libfio_directnvm.so
[ "$(nm -D --defined-only "$eng" 2>/dev/null | awk '{print $3}')" = ioengine ] &&
  ok "fio engine installed in \$LIBDIR/fio, exports only ioengine" || bad "fio engine $eng (exports: $(nm -D --defined-only "$eng" 2>&1 | head -3))"
set +e; fio --name=probe --ioengine=external:"$eng" --thread=1 --rw=randread --bs=4k --size=1m --core=0 >"$WORK/fio.log" 2>&1; rc=$?; set -e
[ "$rc" != 0 ] && grep -q "directnvm: job 'probe': cannot open the engine" "$WORK/fio.log" &&
  ok "fio $(fio --version) loads the installed engine; with no engine here its setup refuses the job by name" ||
  bad "fio with the installed engine: rc $rc" "$WORK/fio.log"
# nvmedl doctor on a machine without the engine: a diagnosis, not a crash.
set +e; "$DEST$PREFIX/bin/nvmedl" doctor >"$WORK/doctor.log" 2>&1; rc=$?; set -e
[ "$rc" = 1 ] && grep -q "^FAIL modules *not loaded: directnvm, hdu" "$WORK/doctor.log" && grep -q "fix: modprobe directnvm hdu" "$WORK/doctor.log" &&
  ok "nvmedl doctor here: exit 1, modules not loaded, fix modprobe" || bad "nvmedl doctor: rc $rc" "$WORK/doctor.log"

pages=$(ls "$DEST$PREFIX/share/man/man1")
echo "# man pages: $(echo $pages)"
if grep -q '^\.TH nvmedl-bench 1' "$DEST$PREFIX/share/man/man1/nvmedl-bench.1" &&
  grep -q 'syscall\\-markers' "$DEST$PREFIX/share/man/man1/nvmedl-bench.1" &&
  grep -q '^\.TH nvmedl-read 1' "$DEST$PREFIX/share/man/man1/nvmedl-read.1" &&
  grep -q '^\.TH nvmedl-ublk-serve 1' "$DEST$PREFIX/share/man/man1/nvmedl-ublk-serve.1" &&
  grep -q '^\.TH nvmedl-doctor 1' "$DEST$PREFIX/share/man/man1/nvmedl-doctor.1" &&
  [ ! -e "$DEST$PREFIX/share/man/man1/nvmedl-ublk-stop-dev.1" ]; then
  ok "man pages generated from the clap definitions (nvmedl, nvmedl-bench, nvmedl-ublk, one per subcommand, none for hidden ones)"
else
  bad "man pages"
fi

if make -s -C "$TOP" uninstall DESTDIR="$DEST" PREFIX=$PREFIX >"$WORK/uninstall.log" 2>&1 &&
  [ -z "$(find "$DEST" -type f -o -type l)" ]; then
  ok "make uninstall removes every installed file"
else
  find "$DEST" -type f -o -type l | sed 's/^/# left: /'
  bad "make uninstall" "$WORK/uninstall.log"
fi
finish
