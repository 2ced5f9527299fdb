#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR MIT
# Validate the DirectNVM device-tree bindings and every overlay in dts/.
#
#   scripts/dtcheck.sh            # one line per check, then "N passed, N failed[, N skipped]"
#   DTCHECK_VERBOSE=1 scripts/dtcheck.sh   # also print the tool output of passing checks
#
# Needs dtc, fdtoverlay (device-tree-compiler) and python3-venv, swig, python3-dev (to build
# pylibfdt) from scripts/deps.sh. The first run installs the pinned dt-schema tools
# (scripts/dtschema-requirements.txt) from PyPI into $DIRECTNVM_CACHE/dtschema-venv; later
# runs are offline. QEMU (optional) is used only to check that the QEMU overlay applies onto
# the real "virt" DTB.
#
# Checks:
#   1. dt-doc-validate on dts/bindings/*.yaml (meta-schema; any diagnostic fails)
#   2. the bindings' examples, extracted, compiled and validated against the bindings
#   3. every dts/*.dtso compiles with dtc, warnings are errors
#   4. every overlay applied (fdtoverlay) onto its minimal base in dts/tests/, then the merged
#      tree: dtc re-check, dt-validate -m (schema errors and unmatched compatibles fail),
#      scripts/dtsemantic.py (cross-node rules: carve-out in DMA window, HDU count/indices...)
#   5. negative tests dts/tests/bad-*.dts: each MUST be rejected with the error its
#      "expect:" line names; being accepted (or rejected for another reason) fails
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${DIRECTNVM_CACHE:-/var/cache/directnvm}
VENV=$CACHE/dtschema-venv
REQ=$TOP/scripts/dtschema-requirements.txt
DTS=$TOP/dts
BIND=$DTS/bindings
TESTS=$DTS/tests
VERBOSE=${DTCHECK_VERBOSE:-0}

# Each overlay and the minimal base DTB it is applied onto (dts/tests/). "@" after the base
# name: compile the base with -@ (the overlay references a label of the base).
declare -A OVERLAY_BASE=(
  [qemu-virt-directnvm]=base-qemu-virt
  [zcu106-directnvm]=base-zcu106
  [zcu106-directnvm-runtime]=base-zcu106-boot@
)

# The ZCU106 overlays' only fragment is `&{/} { #address-cells; #size-cells; reserved-memory,
# pl-bus }`: dtc warns avoid_unnecessary_addr_size on /fragment@0/__overlay__, because the cell
# counts are there so dtc can check the children's reg/ranges against the real root (2/2), but
# the __overlay__ node itself has no reg-carrying children or ranges. Dropping the cells instead
# gives ranges_format/avoid_default_addr_size warnings. So that one check, and only it, is off
# for those overlays. The QEMU overlay has its devices directly under the root (children with
# reg) and compiles with every check on.
DTC_OVERLAY_FLAGS=(-Wno-avoid_unnecessary_addr_size)
declare -A OVERLAY_STRICT=([qemu-virt-directnvm]=1)
# dt-extract-example wraps each example in a generated "example-N" node with
# #address-cells/#size-cells and no reg child: the same check, the same reason (the kernel's
# dt_binding_check turns it off for examples too).
DTC_EXAMPLE_FLAGS=(-Wno-avoid_unnecessary_addr_size)

PASS=0 FAIL=0 SKIP=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dtcheck.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

ok()   { PASS=$((PASS + 1)); echo "ok: $1"; [ "$VERBOSE" = 1 ] && [ -s "${2:-/dev/null}" ] && sed 's/^/    /' "$2"; return 0; }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL: $1"; [ -s "${2:-/dev/null}" ] && sed 's/^/    /' "$2"; return 0; }
skip() { SKIP=$((SKIP + 1)); echo "skip: $1"; }
finish() {
  if [ "$SKIP" -gt 0 ]; then echo "$PASS passed, $FAIL failed, $SKIP skipped"
  else echo "$PASS passed, $FAIL failed"; fi
  [ "$FAIL" -eq 0 ]
  exit
}

# --- tools -------------------------------------------------------------------------------
log=$WORK/tools.log
missing=
for t in dtc fdtoverlay; do command -v $t >/dev/null || missing="$missing $t"; done
if [ -n "$missing" ]; then
  echo "missing:$missing (apt package device-tree-compiler; run scripts/deps.sh)" >"$log"
  bad "host tools dtc, fdtoverlay" "$log"; finish
fi
ok "host tools dtc, fdtoverlay ($(dtc --version | awk '{print $NF}'))"

# Debian's python3 (python3-venv is a Debian package); fall back to whatever python3 is first.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
want_stamp=$( { cat "$REQ"; "$PY" --version 2>&1; } | sha256sum | cut -c1-16)
if [ -x "$VENV/bin/dt-validate" ] && [ "$(cat "$VENV/.directnvm-stamp" 2>/dev/null)" = "$want_stamp" ]; then
  ok "dtschema venv $VENV (cached, $("$VENV/bin/dt-validate" --version 2>/dev/null))"
else
  log=$WORK/venv.log
  {
    echo "installing pinned dt-schema into $VENV"
    mkdir -p "$CACHE" && rm -rf "$VENV" &&
    "$PY" -m venv "$VENV" &&
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ" &&
    "$VENV/bin/python" -c 'import libfdt, dtschema' &&
    echo "$want_stamp" >"$VENV/.directnvm-stamp"
  } >"$log" 2>&1
  if [ -f "$VENV/.directnvm-stamp" ] && [ -x "$VENV/bin/dt-validate" ]; then
    ok "dtschema venv $VENV (installed, $("$VENV/bin/dt-validate" --version 2>/dev/null))"
  else
    echo "(needs PyPI once, and python3-venv swig python3-dev gcc: scripts/deps.sh)" >>"$log"
    rm -rf "$VENV"
    bad "dtschema venv $VENV" "$log"; finish
  fi
fi
export PATH=$VENV/bin:$PATH

# --- 1. bindings against the meta-schema ---------------------------------------------------
# dt-doc-validate reports some problems (unresolvable $ref...) on stderr with exit 0, so any
# output at all is a failure.
for y in "$BIND"/*.yaml; do
  log=$WORK/doc-$(basename "$y").log
  if dt-doc-validate "$y" >"$log" 2>&1 && [ ! -s "$log" ]; then
    ok "binding $(basename "$y") passes the dt-schema meta-schema"
  else
    bad "binding $(basename "$y") passes the dt-schema meta-schema" "$log"
  fi
done

# Processed schema: core dt-schema schemas + the project bindings, loaded once.
SCHEMA=$WORK/processed-schema.json
log=$WORK/mk-schema.log
if dt-mk-schema -j "$BIND" >"$SCHEMA" 2>"$log" && [ -s "$SCHEMA" ] && [ ! -s "$log" ]; then
  ok "bindings process into one schema (dt-mk-schema)"
else
  bad "bindings process into one schema (dt-mk-schema)" "$log"; finish
fi

# dt-validate exits 0 even when it reports errors: judge by its output. The minimal base
# trees' root compatibles have no schema here (board schemas live in the kernel), so that
# one "/: failed to match" line is dropped; every other unmatched compatible (-m) counts.
validate() { # dtb log
  dt-validate -m -s "$SCHEMA" "$1" 2>&1 \
    | grep -v -E '^[^ ]+: /: failed to match any schema with compatible' >"$2"
  [ ! -s "$2" ]
}
semantic() { # dtb log
  "$VENV/bin/python" "$TOP/scripts/dtsemantic.py" "$1" >"$2" 2>&1
}

# --- 2. binding examples -------------------------------------------------------------------
for y in "$BIND"/*.yaml; do
  n=$(basename "$y" .yaml)
  log=$WORK/ex-$n.log
  if dt-extract-example "$y" >"$WORK/ex-$n.dts" 2>"$log" &&
     dtc "${DTC_EXAMPLE_FLAGS[@]}" -I dts -O dtb -o "$WORK/ex-$n.dtb" "$WORK/ex-$n.dts" >>"$log" 2>&1 &&
     [ ! -s "$log" ] && validate "$WORK/ex-$n.dtb" "$log"; then
    ok "examples of $n.yaml compile and validate"
  else
    bad "examples of $n.yaml compile and validate" "$log"
  fi
done

# --- 3 + 4. overlays -------------------------------------------------------------------------
for o in "$DTS"/*.dtso; do
  n=$(basename "$o" .dtso)
  log=$WORK/ov-$n.log
  flags=("${DTC_OVERLAY_FLAGS[@]}")
  [ -n "${OVERLAY_STRICT[$n]:-}" ] && flags=()
  if dtc "${flags[@]}" -@ -i "$DTS" -I dts -O dtb -o "$WORK/$n.dtbo" "$o" >"$log" 2>&1 &&
     [ ! -s "$log" ]; then
    ok "overlay $n.dtso compiles without dtc warnings"
  else
    bad "overlay $n.dtso compiles without dtc warnings" "$log"; continue
  fi

  base=${OVERLAY_BASE[$n]:-}
  if [ -z "$base" ]; then
    echo "no base DTB for $n.dtso: add it to OVERLAY_BASE in scripts/dtcheck.sh" >"$log"
    bad "overlay $n.dtso applies and validates" "$log"; continue
  fi
  sym=()
  case "$base" in *@) base=${base%@}; sym=(-@) ;; esac
  merged=$WORK/$n+$base.dtb
  if ! { dtc "${sym[@]}" -i "$TESTS" -i "$DTS" -I dts -O dtb -o "$WORK/$base.dtb" "$TESTS/$base.dts" &&
         fdtoverlay -i "$WORK/$base.dtb" -o "$merged" "$WORK/$n.dtbo"; } >"$log" 2>&1 || [ -s "$log" ]; then
    bad "overlay $n.dtso applies onto tests/$base.dts" "$log"; continue
  fi
  # The merged tree once more through dtc's checks (cross-fragment reg/unit-address/phandle).
  if dtc -I dtb -O dtb -o /dev/null "$merged" >"$log" 2>&1 && [ ! -s "$log" ] &&
     validate "$merged" "$log"; then
    ok "overlay $n.dtso on tests/$base.dts validates against dts/bindings"
  else
    bad "overlay $n.dtso on tests/$base.dts validates against dts/bindings" "$log"
  fi
  if semantic "$merged" "$log"; then
    ok "overlay $n.dtso on tests/$base.dts passes the cross-node checks"
  else
    bad "overlay $n.dtso on tests/$base.dts passes the cross-node checks" "$log"
  fi
done

# The QEMU overlay onto QEMU's own virt DTB, as qemu/run.sh merges them (apply only: QEMU's
# DTB does not pass the core schemas without the kernel's bindings).
if command -v qemu-system-aarch64 >/dev/null && [ -f "$WORK/qemu-virt-directnvm.dtbo" ]; then
  log=$WORK/qemu-dumpdtb.log
  if qemu-system-aarch64 -M virt,dumpdtb="$WORK/virt.dtb" -cpu cortex-a53 -smp 4 -m 1G \
       -nodefaults -nographic >"$log" 2>&1 &&
     fdtoverlay -i "$WORK/virt.dtb" -o "$WORK/virt+dnvm.dtb" "$WORK/qemu-virt-directnvm.dtbo" >>"$log" 2>&1 &&
     dtc -I dtb -O dtb -o /dev/null -Wno-unique_unit_address "$WORK/virt+dnvm.dtb" >/dev/null 2>&1 &&
     semantic "$WORK/virt+dnvm.dtb" "$log"; then
    ok "overlay qemu-virt-directnvm.dtso applies onto QEMU's own virt DTB"
  else
    bad "overlay qemu-virt-directnvm.dtso applies onto QEMU's own virt DTB" "$log"
  fi
else
  skip "overlay qemu-virt-directnvm.dtso onto QEMU's own virt DTB (no qemu-system-aarch64)"
fi

# --- 5. negative tests -----------------------------------------------------------------------
# bad-semantic-*: schema-valid trees that dtsemantic.py must reject; other bad-*: trees that
# dt-validate must reject. Both compile cleanly, so a rejection is the binding's doing.
for t in "$TESTS"/bad-*.dts; do
  n=$(basename "$t" .dts)
  log=$WORK/neg-$n.log
  expect=$(sed -n 's/^ \* expect: //p' "$t" | head -n1)
  if [ -z "$expect" ]; then
    echo "no ' * expect: REGEX' line in $t" >"$log"; bad "negative test $n is rejected" "$log"; continue
  fi
  if ! dtc -I dts -O dtb -o "$WORK/$n.dtb" "$t" >"$log" 2>&1 || [ -s "$log" ]; then
    bad "negative test $n compiles cleanly (so only the schema can reject it)" "$log"; continue
  fi
  case "$n" in
    bad-semantic-*)
      if ! validate "$WORK/$n.dtb" "$log"; then
        bad "negative test $n is schema-valid (only the cross-node check may reject it)" "$log"; continue
      fi
      semantic "$WORK/$n.dtb" "$log" && accepted=1 || accepted=0 ;;
    *) validate "$WORK/$n.dtb" "$log" && accepted=1 || accepted=0 ;;
  esac
  if [ "$accepted" = 1 ]; then
    echo "accepted, but it must fail with: $expect" >>"$log"
    bad "negative test $n is rejected" "$log"
  elif grep -qE -e "$expect" "$log"; then
    ok "negative test $n is rejected: $(grep -m1 -oE -e "$expect" "$log")" "$log"
  else
    { echo "rejected, but not with the expected error: $expect"; } >>"$log"
    bad "negative test $n is rejected for the right reason" "$log"
  fi
done

finish
