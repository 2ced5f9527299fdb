#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The workspace's rust-version is the true floor: no crate in Cargo.lock needs a newer Rust.

Reads `cargo metadata --locked` (the lock file as it is, no network) and compares every
dependency's declared `rust-version` with the workspace's ([workspace.package] in Cargo.toml).
Fails (exit 1) naming each crate that needs more, and when the floor is set higher than any
crate needs (then it is not the true floor either; our own code's need is MIN_OWN below).
"""
import json
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
# What our own code needs (u64::is_multiple_of, stable since 1.87).
MIN_OWN = (1, 87)


def ver(s):
    parts = [int(x) for x in s.split(".")]
    return tuple((parts + [0, 0])[:3])


def main():
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--offline"],
        cwd=TOP, check=True, capture_output=True, text=True).stdout)
    members = set(meta["workspace_members"])
    own = {p["rust_version"] for p in meta["packages"] if p["id"] in members}
    if len(own) != 1 or None in own:
        print(f"not ok - workspace members disagree on rust-version: {sorted(map(str, own))}")
        return 1
    floor = own.pop()
    deps = [(ver(p["rust_version"]), p["name"], p["version"])
            for p in meta["packages"] if p["id"] not in members and p.get("rust_version")]
    over = [d for d in deps if d[0] > ver(floor)]
    for v, name, version in sorted(over):
        print(f"# {name} {version} needs rust {'.'.join(map(str, v))}")
    if over:
        print(f"not ok - Cargo.lock holds {len(over)} crate(s) newer than rust-version {floor}")
        return 1
    need = max([d[0] for d in deps] + [MIN_OWN + (0,)])
    if need < ver(floor):
        print(f"not ok - rust-version {floor} is above what anything needs "
              f"({'.'.join(map(str, need))}): lower it to the true floor")
        return 1
    top = max(deps)
    print(f"ok - rust-version {floor} is the true floor "
          f"({top[1]} {top[2]} needs {'.'.join(map(str, top[0]))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
