# SPDX-License-Identifier: MIT OR Apache-2.0
# DirectNVM-rs top-level Makefile.
#
#   make deps      install every host package (idempotent; other targets call it when needed)
#   make kernel    build/reuse the QEMU test kernel (cached outside the checkout)
#   make / make modules [KDIR=<kernel build dir>] [ARCH=arm64] [LLVM=-19]
#                  build directnvm.ko and hdu.ko out of tree (default KDIR: the QEMU test kernel)
#   make guest     cross-build the aarch64 guest programs
#   make demo      boot the virtual board, load the modules, show what the stack sees
#   make check     format/lint gate + host tests + DT checks + the guest suite in QEMU
#   make wrr       the paper's arbitration experiment (Figure 13): figures + build/wrr.svg (+ CSV)
#   make test-64m  the guest suite with the full 64 MiB-per-core library run
#   make bench     host CPU per I/O: libnvmedl vs io_uring;  make bench-guest: nvmedl-bench figures
#   make bench-repro  make bench-guest three times per revision: spread and p99/p50 per boot
#   make bench-batch / bench-idle / bench-profile   START batch sweep, backoff of a waiting
#                  handle, perf profile of the QD32 path (host; docs/performance.md)
#   make install / uninstall [PREFIX=/usr/local] [DESTDIR=]   libnvmedl (.so with soname, .a,
#                  header, pkg-config), nvmedl tools + man pages, udev rule; [KDIR=..] adds the modules
#   make modules_install KDIR=<kernel build dir> [DESTDIR=] [INSTALL_MOD_DIR=extra]
#   make oelint    the Yocto layer (meta-directnvm) against oelint-adv and Cargo.lock
#   make fio       Debian's fio through the directnvm ioengine in the guest, rev 1 and rev 2
#   make qos-evidence  the QoS figures in the guest (rev 2) + plots in build/qos/
#   make qos-advise    the M/D/1/K depth model next to a measured open-loop depth sweep
#   make qos-advise-wrr  the same per urgency class under NVMe WRR (rev 2, 4 engines per HDU)
#   make figures   the paper's fio jobs + the kernel NVMe baseline in the guest (3 boots):
#                  build/figures/ (fio JSON, one CSV + SVG per figure, summary.md)
SHELL := /bin/bash
TOP := $(CURDIR)
DIRECTNVM_CACHE ?= /var/cache/directnvm
export DIRECTNVM_CACHE
ifneq ($(KERNEL_SRC),)
# Inside a distribution build: Yocto's module.bbclass passes KERNEL_SRC (and O=, CC, LD, ARCH
# and a rustc of its own on PATH). Build against that tree with that toolchain and nothing of
# this machine's: the kernel finds the Rust library sources from its own rustc.
KDIR ?= $(KERNEL_SRC)
KMAKE_TOOLS :=
else
# This machine's test builds (scripts/env.sh): the Debian LLVM 19 toolchain, rustup's rustc.
ARCH ?= arm64
LLVM ?= -19
RUST_LIB_SRC ?= /usr/lib/rustlib/src/rust/library
export LIBCLANG_PATH ?= /usr/lib/llvm-19/lib
export PATH := $(HOME)/.cargo/bin:$(PATH)
KMAKE_TOOLS = ARCH=$(ARCH) LLVM=$(LLVM) RUST_LIB_SRC=$(RUST_LIB_SRC)
endif

.PHONY: all modules deps kernel guest initramfs demo check test-host test-guest dtcheck clean \
	test-64m bench bench-batch bench-idle bench-profile bench-guest bench-repro wrr fio qos-evidence qos-advise \
	qos-advise-wrr figures

all: modules

deps:
	@bash scripts/deps.sh

kernel: deps
	@bash scripts/kernel.sh >/dev/null

# KDIR given: build against that tree only. Not given: the cached QEMU test kernel.
ifeq ($(origin KDIR),undefined)
modules: kernel
	@$(MAKE) --no-print-directory modules-build KDIR="$$(bash scripts/kernel.sh 2>/dev/null)"
else
modules: modules-build
endif

.PHONY: modules-build
modules-build:
	$(MAKE) -C "$(KDIR)" M="$(TOP)" $(KMAKE_TOOLS) modules
	@ls -l kernel/directnvm.ko kernel/hdu.ko

guest: deps
	@bash qemu/build-guest.sh

initramfs: modules guest
	@bash qemu/mkinitramfs.sh

test-host: deps lint
	cargo test --workspace
	bash scripts/gen-headers.sh --check

# Format and lint gate (part of `make check`): the workspace in rustfmt.toml's style and clippy
# with warnings as errors (workspace lints in Cargo.toml); the kernel-only Rust in the kernel's
# rustfmt style and through the kernel's CLIPPY=1 module build, no warning allowed
# (scripts/kernel-lint.sh; it needs the kernel: the cached one, or KDIR=...).
# `make fmt` rewrites both in their styles.
.PHONY: lint fmt
lint: deps
	cargo fmt --all --check
	python3 scripts/msrv-check.py
	cargo clippy --workspace --all-targets -q -- -D warnings
	@KDIR="$(KDIR)" bash scripts/kernel-lint.sh

fmt:
	cargo fmt --all
	rustfmt --edition 2021 --config-path kernel/.rustfmt.toml kernel/directnvm_main.rs kernel/hdu_main.rs

dtcheck: deps
	@bash scripts/dtcheck.sh

# The guest suite runs three times: the fake device as the published RTL (rev 1), as rev 2 with
# one engine per HDU, and as rev 2 with one engine per urgency class (4 per HDU, 16 queue pairs);
# then fio through the directnvm ioengine on rev 1 and rev 2 (`make fio`, about 2 minutes each),
# then the ublk mode (nvmedl-ublk: ext4 + fsck, fio verify, kill -9/--recover, NVMe/TCP) on rev 1 and 2.
test-guest: initramfs
	@bash qemu/run.sh --suite --revision 1
	@bash qemu/run.sh --suite --revision 2
	@bash qemu/run.sh --suite --revision 2 --engines 4
	@bash qemu/run.sh --mode fio --revision 1 --timeout 600
	@bash qemu/run.sh --mode fio --revision 2 --timeout 600
	@bash qemu/run.sh --mode ublk --revision 1 --timeout 1800 $(UBLK_STOP_ENV)
	@bash qemu/run.sh --mode ublk --revision 2 --timeout 1800 $(UBLK_STOP_ENV)

# The ublk mode's stop cases, stop stress (rounds of SIGTERM / kill -9 + del under a mounted,
# busy ext4) and systemd-unit cases run on demand: make ublk-stop runs 200 rounds
# (UBLK_STOP_ITERS=N for another count; make check UBLK_STOP_ITERS=N adds them to its ublk
# boots). They stay out of make check until they pass on rev 2 every time: a stop issued by
# another process (the server's stop helper, `del`) can wait for good while the server exits
# (docs/ublk.md "Stopping", known problem).
UBLK_STOP_ITERS ?=
UBLK_STOP_ENV = $(if $(UBLK_STOP_ITERS),--env DNVM_UBLK_STOP_ITERS=$(UBLK_STOP_ITERS))
.PHONY: ublk-stop
UBLK_STOP_ROUNDS = $(if $(filter command line,$(origin UBLK_STOP_ITERS)),$(UBLK_STOP_ITERS),200)
ublk-stop: initramfs
	@bash qemu/run.sh --mode ublk --revision 1 --timeout 7200 --env DNVM_UBLK_STOP_ITERS=$(UBLK_STOP_ROUNDS)
	@bash qemu/run.sh --mode ublk --revision 2 --timeout 7200 --env DNVM_UBLK_STOP_ITERS=$(UBLK_STOP_ROUNDS)

# The oldest supported kernel (docs/board.md "Kernel versions"): its own cached test kernel,
# the modules built against it, the guest suite on rev 2.
COMPAT_KVER ?= 7.2
.PHONY: test-kernel-compat
test-kernel-compat: guest
	@bash scripts/kernel-compat.sh $(COMPAT_KVER) --suite --revision 2

demo: initramfs
	@bash qemu/run.sh --demo

# Rev 2 with one engine per urgency class, an SSD model slow enough to be the bottleneck and
# few commands in flight inside it, so the controller's arbitration decides who is served.
WRR_SSD ?= read_iops=4000
WRR_INFLIGHT ?= 8
wrr: initramfs
	@mkdir -p build
	@bash qemu/run.sh --lab wrr --revision 2 --engines 4 --timeout 600 --keep-log build/wrr.log \
	  --fake-arg --ssd --fake-arg $(WRR_SSD) --fake-arg --max-inflight --fake-arg $(WRR_INFLIGHT) >/dev/null
	@grep -a '^wrr:' build/wrr.log
	@$(PLOT_PY) scripts/wrr-plot.py build/wrr.log build/wrr.svg

# The QoS evidence (docs/qos.md "Evidence"), rev 2, two boots with SSD models slow
# enough to be the bottleneck through their bandwidth (so request size matters):
#   1. two tiers under a background burst, tenant boosting (QOS_SSD, 300/150 MB/s);
#   2. the 70/30 mix with exponential sizes at depths 8/32/128 vs adaptive (QOS_MIX_SSD,
#      12/6 MB/s, ~900 IOPS: far below what the TCG guest drives even on a loaded host).
# QOS_ENV="--env QOS_REPEAT=1 ..." passes settings to the guest (qemu/guest-lab/src/qos_*.rs).
# Plots and tables: build/qos/ (scripts/qos-plot.py, Debian's python3 + python3-matplotlib).
QOS_SSD ?= read_iops=50000,write_iops=50000,read_bw=300000000,write_bw=150000000
QOS_MIX_SSD ?= read_iops=50000,write_iops=50000,read_bw=12000000,write_bw=6000000
QOS_ENV ?=
# QOS_PIN=--pin-device gives the device model a host CPU of its own (as make bench-guest
# does). Off by default: QEMU's 4 vCPUs then share one host CPU, which stretches the
# experiment's poll steps (docs/qos.md §7 has the run that showed it).
QOS_PIN ?=
PLOT_PY ?= /usr/bin/python3
qos-evidence: initramfs
	@mkdir -p build/qos
	@bash qemu/run.sh --lab qos --revision 2 $(QOS_PIN) --timeout 900 --keep-log build/qos/level1.log --env QOS_PARTS=tiers,tenants \
	  --fake-arg --ssd --fake-arg $(QOS_SSD) $(QOS_ENV) >/dev/null \
	  || { grep -a '^qos:' build/qos/level1.log; tail -n 5 build/qos/level1.log; exit 1; }
	@bash qemu/run.sh --lab qos --revision 2 $(QOS_PIN) --timeout 900 --keep-log build/qos/mix.log --env QOS_PARTS=mix \
	  --fake-arg --ssd --fake-arg $(QOS_MIX_SSD) $(QOS_ENV) >/dev/null \
	  || { grep -a '^qos:' build/qos/mix.log; tail -n 5 build/qos/mix.log; exit 1; }
	@cat build/qos/level1.log build/qos/mix.log > build/qos/evidence.log
	@$(PLOT_PY) scripts/qos-plot.py evidence build/qos/evidence.log build/qos

# The depth advisor's M/D/1/K model next to a measured depth sweep: the SSD model with one
# command in flight and a 100 us command cost is one deterministic server; open-loop Poisson
# arrivals at rho = 0.7, 0.95, 1.3 (nvmedl-bench --rate), depths 1..16. Table: build/qos/advise.md.
QOS_ADVISE_SSD ?= read_iops=10000
qos-advise: initramfs
	@mkdir -p build/qos
	@bash qemu/run.sh --lab qosadvise --revision 2 --timeout 900 --keep-log build/qos/advise.log \
	  --fake-arg --ssd --fake-arg $(QOS_ADVISE_SSD) --fake-arg --max-inflight --fake-arg 1 $(QOS_ENV) >/dev/null \
	  || { grep -a '^qos:' build/qos/advise.log; tail -n 5 build/qos/advise.log; exit 1; }
	@$(PLOT_PY) scripts/qos-plot.py advise build/qos/advise.log build/qos

# The advisor's per-class model under WRR (docs/qos.md §5, §7) next to a measured depth sweep:
# rev 2 with one engine per urgency class and the same one-command SSD model, so the NVMe
# controller's WRR arbitration among the engines' queues decides who is served; a high and a
# low class (weights 3:1, QOS_ENV="--env QOS_WRR_HIGH=4" etc. to change), open-loop Poisson
# arrivals per class at three loads, depths 1..16 per class. Table: build/qos/advise-wrr.md.
# A job (handle, HDU) per class, --pin-device (the device model on a host CPU of its own:
# unpinned, two spinning guest jobs starve it of CPU, docs/qos.md §7) and a 1 ms command (not
# qos-advise's 0.1 ms), so the host's scheduling noise is small against it. QOS_ENV="--env QOS_WRR_HANDLES=1": both
# classes in one job on one HDU (nvmedl-bench --prio-mix --class-depth), see docs/qos.md §7.
QOS_ADVISE_WRR_SSD ?= read_iops=1000
qos-advise-wrr: initramfs
	@mkdir -p build/qos
	@bash qemu/run.sh --lab qosadvisewrr --revision 2 --engines 4 --pin-device --timeout 900 --keep-log build/qos/advise-wrr.log \
	  --fake-arg --ssd --fake-arg $(QOS_ADVISE_WRR_SSD) --fake-arg --max-inflight --fake-arg 1 $(QOS_ENV) >/dev/null \
	  || { grep -a '^qos:' build/qos/advise-wrr.log; tail -n 5 build/qos/advise-wrr.log; exit 1; }
	@grep -a '^qos: advise-wrr' build/qos/advise-wrr.log || true
	@$(PLOT_PY) scripts/qos-plot.py advise-wrr build/qos/advise-wrr.log build/qos

check: test-host test-install oelint dtcheck test-guest test-kernel-compat

# Installation (scripts/install.sh holds the file list; PROFILE=dev installs the debug build).
PREFIX ?= /usr/local
DESTDIR ?=
PROFILE ?= release
INSTALL_MOD_DIR ?= extra
INSTALL_VARS = PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" PROFILE="$(PROFILE)" \
	$(foreach v,BINDIR LIBDIR INCLUDEDIR MANDIR PKGCONFIGDIR UDEVRULESDIR SYSTEMDUNITDIR FIOENGINEDIR,$(if $($(v)),$(v)="$($(v))"))
.PHONY: install uninstall modules_install test-install
install:
	@$(INSTALL_VARS) bash scripts/install.sh install
ifneq ($(origin KDIR),undefined)
	@$(MAKE) --no-print-directory modules_install
endif

uninstall:
	@$(INSTALL_VARS) bash scripts/install.sh uninstall

# The modules of a given kernel tree (built first if needed) into $(DESTDIR)/lib/modules/<release>/$(INSTALL_MOD_DIR).
ifeq ($(origin KDIR),undefined)
modules_install:
	@echo "modules_install: give the kernel build tree: make modules_install KDIR=<dir>" >&2; exit 2
else
modules_install: modules
	$(MAKE) -C "$(KDIR)" M="$(TOP)" $(KMAKE_TOOLS) \
	  INSTALL_MOD_PATH="$(DESTDIR)" INSTALL_MOD_DIR="$(INSTALL_MOD_DIR)" modules_install
endif

# The Yocto layer meta-directnvm: crate list vs Cargo.lock, license checksums, oelint-adv.
.PHONY: oelint
oelint: deps
	@bash scripts/check-recipes.sh

# make install into a temporary DESTDIR, the C example built with pkg-config alone, the tools' --help.
test-install: deps
	@bash scripts/test-install.sh

# fio (Debian's arm64 binary) through the directnvm ioengine (userspace/fio): crc32c
# verification on all four cores, mixed sizes, a negative control, and the bad-job refusals;
# fio's exit status and JSON report are the assertions (qemu/guest-tests/src/fio.rs).
fio: initramfs
	@bash qemu/run.sh --mode fio --revision 1 --timeout 600
	@bash qemu/run.sh --mode fio --revision 2 --timeout 600

# The paper's evaluation through fio (qemu/guest-lab/src/figures.rs, scripts/figures.py).
# Boot 1, rev 2 with one engine per urgency class and the SSD model's default timing and
# configuration: the paper's jobs. Boot 2, same device with at most 8 commands in flight inside
# the model (as `make wrr`, so arbitration decides who is served): the urgency and WRR jobs with
# the model slowed (through the test mailbox) so the device is the bottleneck. (The cap stays out
# of boot 1: it would be the depth sweep's ceiling.) Boot 3, the fake SSD's timing off: the
# directnvm engine vs the kernel nvme driver on QEMU's emulated NVMe (io_uring hipri, libaio,
# psync), guest CPU per I/O. fio's JSON comes back on the console between markers.
FIGURES_OUT ?= build/figures
# Debian's python3 with python3-matplotlib (scripts/deps.sh), not whatever python3 is first in PATH.
FIGURES_PY ?= /usr/bin/python3
figures: initramfs
	@mkdir -p $(FIGURES_OUT)
	@bash qemu/run.sh --lab figures --revision 2 --engines 4 --timeout 1200 --keep-log $(FIGURES_OUT)/paper.log \
	  --env DNVM_FIGURES=paper >/dev/null
	@bash qemu/run.sh --lab figures --revision 2 --engines 4 --timeout 900 --keep-log $(FIGURES_OUT)/arbitration.log \
	  --env DNVM_FIGURES=arbitration --fake-arg --max-inflight --fake-arg 8 >/dev/null
	@bash qemu/run.sh --lab figures --revision 2 --timeout 900 --keep-log $(FIGURES_OUT)/baseline.log \
	  --env DNVM_FIGURES=baseline --fake-arg --timing --fake-arg none >/dev/null
	@$(FIGURES_PY) scripts/figures.py $(FIGURES_OUT) $(FIGURES_OUT)/paper.log $(FIGURES_OUT)/arbitration.log \
	  $(FIGURES_OUT)/baseline.log
	@cat $(FIGURES_OUT)/summary.md

# The library's acceptance run at full size: in the guest suite, 4 threads pinned to 4 cores
# each write and verify a distinct 64 MiB range through the Rust API and through the C example
# (make check uses DNVM_LIB_MB's default, 8 MiB, to keep the suite short); the same three
# device configurations as test-guest.
test-64m: initramfs
	@bash qemu/run.sh --suite --revision 1 --env DNVM_LIB_MB=64
	@bash qemu/run.sh --suite --revision 2 --env DNVM_LIB_MB=64
	@bash qemu/run.sh --suite --revision 2 --engines 4 --env DNVM_LIB_MB=64

# Host CPU per 4 KiB I/O: libnvmedl's submit+complete path on a null HDU vs io_uring (figures).
bench: deps
	cargo build --release -q -p nvmedl-cpubench
	./target/release/nvmedl-cpubench

# Host figures of the I/O path (docs/performance.md): the START batch sweep (rev 1/2, QD1/QD32,
# batch 1..64), the backoff of a waiting handle (idle CPU, first I/O after idle), and a perf
# profile of the libnvmedl case at QD32 (perf from Debian's linux-perf; make deps installs it).
bench-batch: deps
	cargo build --release -q -p nvmedl-cpubench
	./target/release/nvmedl-cpubench --ios 300000 batch

bench-idle: deps
	cargo build --release -q -p nvmedl-cpubench
	./target/release/nvmedl-cpubench idle

bench-profile: deps
	cargo build --release -q -p nvmedl-cpubench
	mkdir -p build
	@perf record -q -g -o build/cpubench-qd32.perf ./target/release/nvmedl-cpubench --ios 2000000 lib --rev 2 --qd 32
	@perf report -q -i build/cpubench-qd32.perf --no-children --sort symbol 2>/dev/null | grep -E '^ +[0-9.]+%' | head -15

# nvmedl-bench figures in the guest (rand read QD1/QD32, seq read/write), rev 1 and rev 2.
# BENCH_RUNS=... replaces the standard runs (see DNVM_BENCH_RUNS in qemu/guest-lab/src/bench.rs),
# BENCH_REVS=2 picks the revisions. The fake device gets a host CPU of its own (run.sh
# --pin-device, docs/performance.md §4); BENCH_PIN=0 boots unpinned; BENCH_RUN_ARGS adds run.sh
# arguments (e.g. '--fake-arg --idle-spin-us --fake-arg 200').
BENCH_REVS ?= 1 2
BENCH_PIN ?= 1
bench-guest: initramfs
	@for r in $(BENCH_REVS); do \
	  bash qemu/run.sh --lab libbench --revision $$r $(if $(filter 1,$(BENCH_PIN)),--pin-device) \
	    $(if $(BENCH_RUNS),--env DNVM_BENCH_RUNS=$(BENCH_RUNS)) $(BENCH_RUN_ARGS) || exit 1; \
	done

# Reproducibility of the guest figures: `make bench-guest` BENCH_REPEATS times
# per revision, then a table of every run's IOPS/MB/s spread and p50/p99 per boot in
# build/bench-repro.md (scripts/bench-repro.py; the logs stay in build/bench-repro/).
BENCH_REPEATS ?= 3
bench-repro: initramfs
	@/usr/bin/python3 scripts/bench-repro.py --repeats $(BENCH_REPEATS) --revs "$(BENCH_REVS)"

clean:
	-$(MAKE) -C "$$(bash scripts/kernel.sh 2>/dev/null || echo /nonexistent)" M="$(TOP)" ARCH=$(ARCH) LLVM=$(LLVM) clean 2>/dev/null
	rm -rf build target

# Long reliability runs in QEMU. Both end with the kernel-log check and a summary.
#   make soak [SOAK_SECS=60] [SOAK_MB=16] [SOAK_DEPTH=32] [SOAK_SEED=..] [REVISION=2]
#   make fuzz [FUZZ_ITERS=200000] [FUZZ_SEED=..] [STRESS_ITERS=200] [REVISION=2]
# (the guest suite runs short forms of both; `--mode reliability` runs only those groups)
REVISION ?= 2
SOAK_SECS ?= 60
FUZZ_ITERS ?= 200000
.PHONY: soak fuzz
soak: initramfs
	@bash qemu/run.sh --mode soak --revision $(REVISION) --timeout $$(( $(SOAK_SECS) + 600 )) \
	  --env SOAK_SECS=$(SOAK_SECS) $(if $(SOAK_MB),--env SOAK_MB=$(SOAK_MB)) \
	  $(if $(SOAK_DEPTH),--env SOAK_DEPTH=$(SOAK_DEPTH)) $(if $(SOAK_SEED),--env SOAK_SEED=$(SOAK_SEED))

fuzz: initramfs
	@bash qemu/run.sh --mode fuzz --revision $(REVISION) --timeout 3600 --env FUZZ_ITERS=$(FUZZ_ITERS) \
	  $(if $(FUZZ_SEED),--env FUZZ_SEED=$(FUZZ_SEED)) $(if $(STRESS_ITERS),--env STRESS_ITERS=$(STRESS_ITERS))
