#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Cross-build the guest programs (static aarch64) with a std built from Debian's rust-src.
# Output: target/aarch64-unknown-linux-gnu/release/<bin>
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
cd "$TOP"
GUEST_PKGS=(-p dnvm-guest-tests -p dnvm-guest-lab -p libnvmedl -p nvmedl-tools -p nvmedl-ublk -p nvmedl-cpubench)
# panic_unwind matches the workspace profiles (panic = "unwind", needed by libnvmedl's C ABI).
export RUSTC_BOOTSTRAP=1
cargo build --release --target aarch64-unknown-linux-gnu -Zbuild-std=std,panic_unwind \
  "${GUEST_PKGS[@]}" >&2
bash "$TOP/userspace/examples/build-c.sh" guest >&2
# The fio ioengine (against the Debian fio source) with the static aarch64 libnvmedl.
bash "$TOP/userspace/fio/build.sh" >&2
echo "$TOP/target/aarch64-unknown-linux-gnu/release"
