#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Write the Yocto crate list of libnvmedl from Cargo.lock (the format of oe-core's
cargo-update-recipe-crates class): one crate:// SRC_URI entry and one sha256sum per
crates.io package, so the recipe's build is offline and pinned.

  scripts/yocto-crates.py          write meta-directnvm/recipes-support/libnvmedl/libnvmedl-crates.inc
  scripts/yocto-crates.py --check  exit 1 if that file does not match Cargo.lock
"""
import os
import sys
import tomllib

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(TOP, "meta-directnvm/recipes-support/libnvmedl/libnvmedl-crates.inc")
REGISTRY = "registry+https://github.com/rust-lang/crates.io-index"


def render() -> str:
    with open(os.path.join(TOP, "Cargo.lock"), "rb") as f:
        lock = tomllib.load(f)
    crates = []
    for p in lock.get("package", []):
        src = p.get("source")
        if src is None:
            continue  # a workspace member
        if src != REGISTRY:
            sys.exit(f"yocto-crates: {p['name']} {p['version']} comes from {src}; only crates.io is supported")
        if "checksum" not in p:
            sys.exit(f"yocto-crates: {p['name']} {p['version']} has no checksum in Cargo.lock")
        crates.append((p["name"], p["version"], p["checksum"]))
    crates.sort()
    lines = ["# SPDX-License-Identifier: MIT OR Apache-2.0",
             "# Generated from Cargo.lock by scripts/yocto-crates.py. Do not edit.", "", 'SRC_URI += "\\']
    lines += [f"    crate://crates.io/{n}/{v} \\" for n, v, _ in crates]
    lines += ['"', ""]
    lines += [f'SRC_URI[{n}-{v}.sha256sum] = "{c}"' for n, v, c in crates]
    return "\n".join(lines) + "\n"


def main() -> int:
    text = render()
    if sys.argv[1:] == ["--check"]:
        try:
            old = open(OUT).read()
        except FileNotFoundError:
            old = ""
        if old != text:
            print(f"yocto-crates: {os.path.relpath(OUT, TOP)} is stale; run scripts/yocto-crates.py", file=sys.stderr)
            return 1
        print(f"yocto-crates: {os.path.relpath(OUT, TOP)} matches Cargo.lock ({text.count('crate://')} crates)")
        return 0
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    with open(OUT, "w") as f:
        f.write(text)
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
