#!/bin/sh
# PID 1 of the DirectNVM virtual board (busybox). The mode comes from the kernel command line:
# dnvm.mode=demo shows what the stack sees, dnvm.mode=klog prints the kernel log, any other
# mode runs `dnvm-guest-tests <mode>` (suite, soak, fuzz, ...). dnvm.env.KEY=VALUE exports
# KEY=VALUE to the tests.
# The last console line is "DNVM-EXIT: <status>", which qemu/run.sh turns into its exit status.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmp /tmp
export PATH=/bin
mode=suite
for a in $(cat /proc/cmdline); do
  case "$a" in
    dnvm.mode=*) mode=${a#dnvm.mode=} ;;
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
  /bin/dnvm-guest-tests info
  status=$?
else
  case "$mode" in klog|debug) mode=suite ;; esac
  /bin/dnvm-guest-tests "$mode"
  status=$?
fi
echo "DNVM-EXIT: $status"
poweroff -f
