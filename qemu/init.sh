#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# PID 1 of the DirectNVM virtual board (busybox). The mode comes from the kernel command line:
# dnvm.mode=demo shows what the stack sees, dnvm.mode=klog prints the kernel log,
# dnvm.mode=lab dnvm.lab=<name> runs the experiment `dnvm-guest-lab <name>` (wrr, qos, figures,
# ...), any other mode runs the tests `dnvm-guest-tests <mode>` (suite, soak, fuzz, ...).
# dnvm.env.KEY=VALUE exports KEY=VALUE to either.
# The last console line is "DNVM-EXIT: <status>", which qemu/run.sh turns into its exit status.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmp /tmp
# Debian programs (scripts/guest-debs.sh) live in /usr/sbin, /usr/bin and /sbin; busybox in /bin.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mode=suite lab=
for a in $(cat /proc/cmdline); do
  case "$a" in
    dnvm.mode=*) mode=${a#dnvm.mode=} ;;
    dnvm.lab=*) lab=${a#dnvm.lab=} ;;
    dnvm.env.*=*) kv=${a#dnvm.env.}; export "${kv%%=*}=${kv#*=}" ;;
  esac
done

insmod /lib/modules/directnvm.ko && insmod /lib/modules/hdu.ko
status=$?
# Let the platform devices probe and the nodes appear.
for i in $(seq 1 100); do [ -e /dev/hdu3 ] && [ -e /dev/directnvm ] && break; sleep 0.05; done

if [ "$mode" = klog ]; then dmesg | grep -i -E "kunit|ktap|directnvm|ok " ; fi
if [ $status -ne 0 ]; then
  echo "init: insmod failed"
elif [ "$mode" = demo ]; then
  echo "=== dmesg (drivers) ==="
  dmesg | grep -E 'directnvm|hdu' 
  echo "=== device nodes ==="
  ls -l /dev/directnvm /dev/hdu*
  echo "=== what the stack sees ==="
  /bin/dnvm-guest-lab info
  status=$?
  echo "=== I/O through libnvmedl ==="
  # The CLI: 64 KiB of a file to LBA 0 through core 0, read back through core 1, compared.
  head -c 65536 /bin/busybox > /tmp/demo.in &&
    nvmedl write 0 0 /tmp/demo.in && nvmedl read 1 0 65536 /tmp/demo.out &&
    cmp /tmp/demo.in /tmp/demo.out && echo "nvmedl: 64 KiB written via core 0, read back via core 1, identical" || status=1
  # The paper's example program on the C API: 4 threads, one per core, write + verify.
  dlexample 256 || status=1
  # A one-second benchmark: 4 KiB random reads, queue depth 32, one core.
  nvmedl-bench --rw rand-read --cores 0 --iodepth 32 --runtime 1 || status=1
elif [ "$mode" = lab ]; then
  /bin/dnvm-guest-lab "$lab"
  status=$?
else
  case "$mode" in klog|debug) mode=suite ;; esac
  /bin/dnvm-guest-tests "$mode"
  status=$?
fi
echo "DNVM-EXIT: $status"
poweroff -f
