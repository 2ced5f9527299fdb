#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Fetch the Debian arm64 packages of qemu/guest-debs.list (and the library packages they depend
# on) and extract them into the cache. Idempotent; prints the extracted root on stdout.
#
#   scripts/guest-debs.sh            fetch if needed, print $DIRECTNVM_CACHE/guest-debs-<key>/root
#   scripts/guest-debs.sh --copy DIR copy the list's programs + their shared libraries + the
#                                    arm64 loader into DIR (an initramfs root)
#
# Only packages named in the list and library packages (lib*) reached through Depends and
# Pre-Depends are fetched: the programs' DT_NEEDED closure lives there, and following every
# dependency would pull python3, perl and init systems into a RAM disk that never runs them.
# --copy fails naming any shared library that the closure needs and no package supplied.
set -euo pipefail
. "$(dirname "$0")/env.sh"
LIST=$TOP/qemu/guest-debs.list
READELF=aarch64-linux-gnu-readelf

pkgs=$(awk '$1 == "package" {print $2}' "$LIST")
progs=$(awk '$1 == "program" {print $2}' "$LIST")

# Key: the list and the candidate versions of its packages (a Debian update gives a new root).
key=$({ cat "$LIST"; for p in $pkgs; do apt-cache policy "$p:arm64" | awk '/Candidate:/ {print $2}'; done; } \
      | sha256sum | cut -c1-16)
DIR=$DIRECTNVM_CACHE/guest-debs-$key
ROOT=$DIR/root

fetch() {
  rm -rf "$DIR.tmp"; mkdir -p "$DIR.tmp/debs" "$DIR.tmp/root"
  # Breadth-first over Depends/Pre-Depends, following named packages and lib* packages only.
  python3 - "$DIR.tmp/closure" $pkgs <<'PY'
import subprocess, sys
out, want = sys.argv[1], sys.argv[2:]
seen, queue = set(), list(want)
while queue:
    p = queue.pop(0)
    if p in seen:
        continue
    seen.add(p)
    r = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests",
                        "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances",
                        p + ":arm64"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"guest-debs: apt-cache depends {p}:arm64 failed: {r.stderr.strip()}")
    lines = r.stdout.splitlines()
    i = 0
    while i < len(lines):
        l = lines[i].strip()
        i += 1
        if not (l.startswith("Depends:") or l.startswith("PreDepends:")):
            continue
        name = l.split(":", 1)[1].strip()
        if name.startswith("<"):          # virtual: take the first provider listed below it
            if i < len(lines) and lines[i].startswith("    "):
                name = lines[i].strip()
            else:
                continue
        name = name.split(":")[0]
        if name.startswith("lib") and name not in seen:
            queue.append(name)
open(out, "w").write("\n".join(sorted(seen)) + "\n")
PY
  # Architecture-independent packages (Architecture: all) have no :arm64 candidate.
  while read -r p; do
    arch=$(apt-cache show --no-all-versions "$p:arm64" 2>/dev/null | sed -n 's/^Architecture: //p')
    if [ "$arch" = arm64 ]; then echo "$p:arm64"; else echo "$p"; fi
  done < "$DIR.tmp/closure" > "$DIR.tmp/args"
  echo "guest-debs: fetching $(wc -l < "$DIR.tmp/closure") arm64 packages" >&2
  # One apt call for all (apt warns that root downloads unsandboxed into a root-owned dir).
  (cd "$DIR.tmp/debs" && apt-get download -q $(cat "$DIR.tmp/args") 2>&1 >/dev/null \
    | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  local missing arch
  missing=$(while read -r p; do ls "$DIR.tmp/debs/${p}_"*.deb >/dev/null 2>&1 || echo "$p"; done < "$DIR.tmp/closure")
  [ -z "$missing" ] || { echo "guest-debs: apt-get download failed for: $missing" >&2; exit 1; }
  for d in "$DIR.tmp"/debs/*.deb; do dpkg -x "$d" "$DIR.tmp/root"; done
  rm -rf "$DIR.tmp/debs"
  # Keep the cache small: at most two roots.
  { ls -1td "$DIRECTNVM_CACHE"/guest-debs-* 2>/dev/null | grep -vx "$DIR" | grep -v '\.tmp$' || true; } \
    | tail -n +2 | xargs -r rm -rf
  rm -rf "$DIR"; mv "$DIR.tmp" "$DIR"
  touch "$DIR/.complete"
}

# One fetch at a time (two `make initramfs` of different checkouts share the cache): a second
# one waits for the first and then uses its result.
if [ ! -f "$DIR/.complete" ]; then
  mkdir -p "$DIRECTNVM_CACHE"
  exec 8>"$DIRECTNVM_CACHE/.guest-debs.lock"
  flock 8
  [ -f "$DIR/.complete" ] || fetch
  flock -u 8
fi

# Resolve a library name the way the arm64 loader would, inside $ROOT; print its path.
find_lib() {
  local d
  for d in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib usr/lib/aarch64-linux-gnu/ceph; do
    [ -e "$ROOT/$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}

copy_into() {
  local dest=$1 queue=() seen=" " f lib rel
  for f in $progs; do
    [ -e "$ROOT$f" ] || { echo "guest-debs: $f is not in the fetched packages" >&2; exit 1; }
    mkdir -p "$dest$(dirname "$f")"
    cp -L "$ROOT$f" "$dest$f"
    queue+=("$dest$f")
  done
  while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    for lib in $($READELF -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case "$seen" in *" $lib "*) continue ;; esac
      seen="$seen$lib "
      rel=$(find_lib "$lib") || { echo "guest-debs: $lib (needed by ${f#"$dest"}) not found" >&2; exit 1; }
      mkdir -p "$dest/$(dirname "$rel")"
      cp -L "$ROOT/$rel" "$dest/$rel"
      queue+=("$dest/$rel")
    done
  done
  # The program interpreter (PT_INTERP) of arm64 Debian binaries.
  mkdir -p "$dest/lib"
  cp -L "$ROOT/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$dest/lib/ld-linux-aarch64.so.1"
  mkdir -p "$dest/lib/aarch64-linux-gnu"
  ln -sf ../ld-linux-aarch64.so.1 "$dest/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" 2>/dev/null || true
}

case "${1:-}" in
  --copy) [ -n "${2:-}" ] || { echo "usage: $0 --copy DIR" >&2; exit 2; }; copy_into "$2" ;;
  "") echo "$ROOT" ;;
  *) echo "usage: $0 [--copy DIR]" >&2; exit 2 ;;
esac
