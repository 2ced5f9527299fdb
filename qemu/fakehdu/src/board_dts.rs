// SPDX-License-Identifier: MIT OR Apache-2.0
//! The QEMU virtual board's address map, written out for the tools that need it, so
//! `Board::qemu_default` is its one source:
//!
//! * `fake-hdu --print-overlay` renders `dts/qemu-virt-directnvm.dtso` (scripts/gen-headers.sh
//!   writes it, and `--check` fails when the committed file differs);
//! * `fake-hdu --print-board-map` prints the shell variables `qemu/run.sh` boots with.

use std::fmt::Write;

use directnvm_abi::*;

use crate::board::Board;

/// The QEMU board's programmable-logic window: the top of RAM that the guest kernel does not
/// get (`mem=`), where the fake device's register pages, BAR, queue memory and mailbox live.
pub const QEMU_PL_WINDOW: (u64, u64) = (0x7f00_0000, 16 << 20);

/// `0x7f10_0000`: a guest-physical address as the overlay's comment writes it.
fn addr(v: u64) -> String {
    let h = format!("{v:08x}");
    let (hi, lo) = h.split_at(h.len() - 4);
    format!("0x{hi}_{lo}")
}

/// `64 MiB`, `64 KiB`, `4K`: a size as the overlay's comment writes it.
fn size(v: u64) -> String {
    match v {
        v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{} GiB", v >> 30),
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{} MiB", v >> 20),
        v => format!("{} KiB", v >> 10),
    }
}

/// `<0x0 0x7f100000 0x0 0x10000>`: a 2+2-cell (address, size) pair.
fn cells(a: u64, s: u64) -> String {
    format!("<{:#x} {:#x} {:#x} {:#x}>", a >> 32, a & 0xffff_ffff, s >> 32, s & 0xffff_ffff)
}

impl Board {
    /// The DT overlay of this board (the text of `dts/qemu-virt-directnvm.dtso` for
    /// `Board::qemu_default`).
    pub fn overlay_dts(&self) -> String {
        let page = DNVM_PAGE_SIZE;
        let n = self.hdus.len();
        let stride = self.hdus.get(1).map_or(page, |h| h.user - self.hdus[0].user);
        let (pl, pl_size) = QEMU_PL_WINDOW;
        let dt = |c: &std::ffi::CStr| c.to_str().unwrap_or_default().to_string();
        let mut s = String::new();
        let _ = write!(
            s,
            r#"// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * DirectNVM on the QEMU virtual board (machine "virt", {ram} RAM at {ram_base}).
 * Generated from qemu/fakehdu/src/board.rs (Board::qemu_default) by `fake-hdu --print-overlay`
 * (scripts/gen-headers.sh); do not edit.
 *
 * The guest kernel is booted with mem={mem}M, so the top {pl_mb} MiB of RAM
 * ({pl}..{pl_end}) is not System RAM: it plays the FPGA's programmable-logic
 * window, serviced by the fake HDU device (qemu/fakehdu) through the shared memory file.
 *
 *   {carve}  {carve_size}  carve-out (no-map reserved memory, DMA-reachable like ZCU106 HPC0 DDR)
 *   {user}  {n} x 4K  HDU user register pages      (hdu N at + N*{stride:#x})
 *   {privp}  {n} x 4K  HDU privileged pages (rev 2) (hdu N at + N*{stride:#x})
 *   {bar}  {bar_size}  NVMe controller BAR0 window  (doorbells at +0x1000)
 *   {qw}  {qw_size}   engine I/O queue memory      (queue q: SQ at +q*0x2_0000, CQ +0x1_0000)
 *
 * Merged into QEMU's own DTB (-machine dumpdtb) with fdtoverlay by qemu/run.sh, so the
 * reserved-memory node is part of the boot DTB. Binding: dts/bindings/directnvm,*.yaml.
 *
 * The engine and HDU nodes sit directly under the root, like QEMU virt's own devices (the
 * ZCU106 overlays put them on a "pl-bus" simple-bus instead). That also gives the root
 * fragment children with "reg", so its #address-cells/#size-cells are needed and dtc has no
 * avoid_unnecessary_addr_size warning to give.
 */
/dts-v1/;
/plugin/;

&{{/}} {{
	/* Same values as the base DTB; stated so dtc can check the child nodes' reg and ranges. */
	#address-cells = <2>;
	#size-cells = <2>;

	reserved-memory {{
		#address-cells = <2>;
		#size-cells = <2>;
		ranges;

		dnvm_carveout: buffer@{carve_at:x} {{
			reg = {carve_reg};
			no-map;
		}};
	}};

	directnvm@{bar_at:x} {{
		compatible = "{engine}";
		reg = {bar_reg};
		reg-names = "nvme";
		memory-region = <&dnvm_carveout>;
		{p_cores} = <{n}>;
		{p_engines} = <{engines}>;
		{p_staging} = <{staging}>;
		{p_depth} = <{depth}>;
		{p_qw} = {qw_reg};
		{p_dw} = {dw_reg};
	}};
"#,
            ram = size(self.ram_size),
            ram_base = addr(self.ram_base),
            mem = (pl - self.ram_base) >> 20,
            pl_mb = pl_size >> 20,
            pl = addr(pl),
            pl_end = addr(pl + pl_size - 1),
            carve = addr(self.carveout),
            carve_size = size(self.carveout_size),
            user = addr(self.hdus.first().map_or(0, |h| h.user)),
            privp = addr(self.hdus.first().and_then(|h| h.privileged).unwrap_or(0)),
            bar = addr(self.nvme_bar),
            bar_size = size(self.nvme_bar_size),
            qw = addr(self.queue_window),
            qw_size = size(self.queue_window_size),
            carve_at = self.carveout,
            carve_reg = cells(self.carveout, self.carveout_size),
            bar_at = self.nvme_bar,
            engine = dt(DT_COMPAT_ENGINE),
            bar_reg = cells(self.nvme_bar, self.nvme_bar_size),
            p_cores = dt(DT_PROP_CORES),
            p_engines = dt(DT_PROP_ENGINES_PER_HDU),
            engines = self.engines_per_hdu,
            p_staging = dt(DT_PROP_STAGING_ENTRIES),
            staging = self.staging_entries,
            p_depth = dt(DT_PROP_IO_QUEUE_DEPTH),
            depth = self.io_queue_depth,
            p_qw = dt(DT_PROP_QUEUE_WINDOW),
            qw_reg = cells(self.queue_window, self.queue_window_size),
            p_dw = dt(DT_PROP_DMA_WINDOW),
            dw_reg = cells(self.dma_window.0, self.dma_window.1),
        );
        for h in &self.hdus {
            let mut reg = cells(h.user, page);
            let mut names = "\"user\"".to_string();
            if let Some(p) = h.privileged {
                reg = format!("{reg}, {}", cells(p, page));
                names.push_str(", \"priv\"");
            }
            let _ = write!(
                s,
                "\n\thdu@{:x} {{\n\t\tcompatible = \"{}\";\n\t\treg = {reg};\n\t\treg-names = {names};\n\t\t{} = <{}>;\n\t\tmemory-region = <&dnvm_carveout>;\n\t}};\n",
                h.user,
                dt(DT_COMPAT_HDU),
                dt(DT_PROP_INDEX),
                h.index
            );
        }
        s.push_str("};\n");
        s
    }

    /// Shell assignments of the map `qemu/run.sh` boots with: RAM base and size, the kernel's
    /// `mem=` (RAM below the PL window), the engine node's path (for `fdtput`).
    pub fn shell_map(&self) -> String {
        format!(
            "DNVM_RAM_BASE={:#x}\nDNVM_RAM_MB={}\nDNVM_KERNEL_MEM_MB={}\nDNVM_ENGINE_NODE=/directnvm@{:x}\n",
            self.ram_base,
            self.ram_size >> 20,
            (QEMU_PL_WINDOW.0 - self.ram_base) >> 20,
            self.nvme_bar
        )
    }
}
