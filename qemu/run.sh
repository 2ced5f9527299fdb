#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Boot the DirectNVM virtual board: QEMU virt (arm64, 4 CPUs, 1 GiB shared-file RAM), the
# project's DT overlay, the test kernel, the initramfs, and the fake HDU device process.
#
#   qemu/run.sh --suite|--demo|--mode NAME|--lab NAME [--revision 1|2] [--timeout SECONDS]
#               [--keep-log FILE] [--env KEY=VALUE]... [--fake-arg ARG]... [--engines N]
#               [--kver VERSION --initrd FILE] [--nvme] [--pin-device]
#
# --mode NAME runs `dnvm-guest-tests NAME` in the guest (the tests: suite, soak, fuzz, fio,
# ublk, ...); --lab NAME runs `dnvm-guest-lab NAME` (the experiments: wrr, qos, figures,
# libbench, ...; qemu/guest-lab/src/main.rs lists them); --env exports KEY=VALUE to either (carried on the kernel command line as dnvm.env.KEY=VALUE). --fake-arg passes
# ARG to the fake-hdu process (e.g. --fake-arg --ssd --fake-arg read_iops=20000). --engines N
# sets directnvm,engines-per-hdu in the board DT (1 by default; 4 = one engine per urgency class,
# rev 2 only); the drivers and the fake device both read it from there. --kver boots the test
# kernel of another linux-source version with an initramfs holding modules built for it
# (scripts/kernel-compat.sh makes both).
# --nvme also attaches QEMU's emulated NVMe controller (`-device nvme`, 1 GiB namespace on a
# RAM-backed file in /dev/shm, no latency model) for the guest kernel's nvme driver, with
# NVME_POLL_QUEUES (default 2) polled queues (nvme.poll_queues=): /dev/nvme0n1 in the guest,
# the kernel-stack baseline of fio's io_uring (hipri), libaio and psync engines. --mode fio,
# --lab fiojob and --lab figures always attach it.
# --pin-device gives the fake device (the FPGA + SSD, a polling process) the last host CPU to
# itself and QEMU the others (taskset), so the guest's vCPUs never steal the device's time and
# figures do not depend on where the host scheduler put the two; with a CPU of its own the
# device polls without ever sleeping, like the FPGA (fake-hdu --idle-spin-us forever, unless a
# --fake-arg sets it).
# docs/performance.md §4; `make bench-guest` uses it. Ignored on a host with fewer than 2 CPUs.
#
# Exit status: the guest's ("DNVM-EXIT: N"), 124 on timeout, 2 on harness errors. Every
# process and the /dev/shm memory file are removed on exit, whatever happens.
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"

MODE=suite LAB= REVISION=1 TIMEOUT=900 LOG= DEVICE=1 GUEST_ENV=
FAKE_ARGS=() ENGINES= NVME=0 PIN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) MODE=suite ;;
    --demo) MODE=demo ;;
    --debug) MODE=debug ;;
    --klog) MODE=klog ;;
    --mode) MODE=$2; shift ;;
    --lab)
      [[ "$2" =~ ^[a-z0-9_-]+$ ]] || { echo "run.sh: bad --lab $2" >&2; exit 2; }
      MODE=lab LAB=$2; shift ;;
    --env)
      [[ "$2" =~ ^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.,:/+-]*$ ]] || { echo "run.sh: bad --env $2" >&2; exit 2; }
      GUEST_ENV="$GUEST_ENV dnvm.env.$2"; shift ;;
    --revision) REVISION=$2; shift ;;
    --fake-arg) FAKE_ARGS+=("$2"); shift ;;
    --engines) ENGINES=$2; shift ;;
    --timeout) TIMEOUT=$2; shift ;;
    --keep-log) LOG=$2; shift ;;
    --nvme) NVME=1 ;;
    --pin-device) PIN=1 ;;
    --no-device) DEVICE=0 ;;   # boot without the fake HDU device (kernel-only debugging)
    --kver) export KVER=$2; shift ;;     # test kernel of another linux-source version
    --initrd) INITRD=$2; shift ;;        # initramfs other than build/initramfs.cpio.gz
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

case "$MODE${LAB:+:$LAB}" in fio|lab:fiojob|lab:figures) NVME=1 ;; esac

KDIR=$(bash "$TOP/scripts/kernel.sh")
IMAGE=$KDIR/arch/arm64/boot/Image
INITRD=${INITRD:-$TOP/build/initramfs.cpio.gz}
[ -f "$INITRD" ] || { echo "run.sh: $INITRD missing (make initramfs)" >&2; exit 2; }
(cd "$TOP" && cargo build --release -q -p fakehdu) || { echo "run.sh: cannot build fake-hdu" >&2; exit 2; }
FAKE=$TOP/target/release/fake-hdu

# The board's map has one source, qemu/fakehdu/src/board.rs: DNVM_RAM_BASE, DNVM_RAM_MB,
# DNVM_KERNEL_MEM_MB (RAM below the FPGA's PL window) and DNVM_ENGINE_NODE; the overlay
# dts/qemu-virt-directnvm.dtso is generated from it (scripts/gen-headers.sh).
MAP=$("$FAKE" --print-board-map) || { echo "run.sh: fake-hdu --print-board-map failed" >&2; exit 2; }
eval "$MAP"
RAM_MB=$DNVM_RAM_MB
WORK=$(mktemp -d /tmp/dnvm-run.XXXXXX)
SHM=/dev/shm/dnvm-$$-$RANDOM
QPID= FPID=
cleanup() {
  local rc=$?
  [ -n "$QPID" ] && kill -9 "$QPID" 2>/dev/null || true
  if [ -n "$FPID" ]; then
    kill -TERM "$FPID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$FPID" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$FPID" 2>/dev/null || true
  fi
  rm -f "$SHM" "$SHM-nvme"
  [ -n "$LOG" ] && cp "$WORK/console.log" "$LOG" 2>/dev/null || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

truncate -s ${RAM_MB}M "$SHM"
MACHINE=(-M "virt,memory-backend=ram" -cpu cortex-a53 -smp 4 -m ${RAM_MB}M -nic none
  -object "memory-backend-file,id=ram,mem-path=$SHM,size=${RAM_MB}M,share=on")
qemu-system-aarch64 "${MACHINE[@]}" -machine dumpdtb="$WORK/virt.dtb" -display none >/dev/null 2>&1
dtc -@ -q -I dts -O dtb -o "$WORK/overlay.dtbo" "$TOP/dts/qemu-virt-directnvm.dtso"
fdtoverlay -i "$WORK/virt.dtb" -o "$WORK/board.dtb" "$WORK/overlay.dtbo"
if [ -n "$ENGINES" ]; then
  fdtput -t u "$WORK/board.dtb" "$DNVM_ENGINE_NODE" directnvm,engines-per-hdu "$ENGINES"
fi

PIN_FAKE=() PIN_QEMU=()
NCPU=$(nproc)
if [ $PIN -eq 1 ] && [ "$NCPU" -ge 2 ]; then
  PIN_FAKE=(taskset -c $((NCPU - 1))) PIN_QEMU=(taskset -c 0-$((NCPU - 2)))
  case " ${FAKE_ARGS[*]} " in *" --idle-spin-us "*) ;; *) FAKE_ARGS+=(--idle-spin-us forever) ;; esac
  echo "run.sh: pinned: fake-hdu on CPU $((NCPU - 1)), QEMU on CPUs 0-$((NCPU - 2))" >&2
fi

if [ $DEVICE -eq 1 ]; then
  "${PIN_FAKE[@]}" "$FAKE" --mem-file "$SHM" --ram-base "$DNVM_RAM_BASE" --ram-size ${RAM_MB}M --dtb "$WORK/board.dtb" \
  --revision "$REVISION" --disk "$WORK/disk.img" --disk-size 1G --socket "$WORK/fake-hdu.sock" \
  "${FAKE_ARGS[@]}" > "$WORK/fake-hdu.log" 2>&1 &
  FPID=$!   # the fake-hdu process itself (not a subshell), so cleanup really stops it
fi

NVME_ARGS=() NVME_APPEND=
if [ $NVME -eq 1 ]; then
  truncate -s 1G "$SHM-nvme"
  NVME_ARGS=(-drive "file=$SHM-nvme,if=none,format=raw,id=nvm0"
    -device "nvme,serial=dnvm-baseline,drive=nvm0")
  NVME_APPEND=" nvme.poll_queues=${NVME_POLL_QUEUES:-2}"
fi

# log_buf_len: the kernel log is checked at the end of a mode (KUnit results printed at boot,
# splats), so it must hold a whole run: long runs (make ublk-stop) log many I/O errors.
APPEND="console=ttyAMA0 log_buf_len=16M mem=${DNVM_KERNEL_MEM_MB}M rdinit=/init dnvm.mode=$MODE${LAB:+ dnvm.lab=$LAB} loglevel=4 panic=-1 kunit.enable=1 kunit.autorun=1$NVME_APPEND$GUEST_ENV"
"${PIN_QEMU[@]}" timeout --kill-after=10 "$TIMEOUT" qemu-system-aarch64 "${MACHINE[@]}" -dtb "$WORK/board.dtb" \
  "${NVME_ARGS[@]}" -kernel "$IMAGE" -initrd "$INITRD" -append "$APPEND" -nographic -no-reboot \
  -serial mon:stdio < /dev/null > >(tee "$WORK/console.log") 2>&1 &
QPID=$!
set +e
wait "$QPID"
qrc=$?
QPID=
set -e
sleep 0.2
if [ -n "$FPID" ] && ! kill -0 "$FPID" 2>/dev/null; then
  echo "run.sh: fake-hdu exited early:" >&2; cat "$WORK/fake-hdu.log" >&2
fi
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
  echo "run.sh: TIMEOUT after ${TIMEOUT}s" >&2
  exit 124
fi
grc=$(grep -a -o 'DNVM-EXIT: [0-9]*' "$WORK/console.log" | tail -n1 | awk '{print $2}')
[ -n "$grc" ] || { echo "run.sh: guest ended without DNVM-EXIT (qemu rc $qrc)" >&2; exit 2; }
exit "$grc"
