// SPDX-License-Identifier: MIT OR Apache-2.0
//! Board address map: where the HDU register pages, the NVMe BAR window, the engine queue
//! window and the carve-out live in guest-physical space.
//!
//! The source of truth is the device tree (`dts/qemu-virt-directnvm.dtso`, or the merged boot
//! DTB); `Board::from_dtb` parses either. `Board::qemu_default` is the same map as constants for
//! in-process tests; a test checks that it equals the parsed overlay.

use std::ffi::CStr;

use directnvm_abi::*;

/// A DT name of the ABI as the `fdt` crate takes it.
fn dt(name: &CStr) -> &str {
    name.to_str().unwrap_or_default()
}

/// One HDU's register pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HduAddr {
    /// Instance index (`directnvm,index`).
    pub index: u32,
    /// Guest-physical address of the user register page.
    pub user: u64,
    /// Guest-physical address of the privileged page (rev 2), if the node has one.
    pub privileged: Option<u64>,
}

/// The board description the model needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Board {
    /// Guest-physical RAM base (QEMU virt: 0x4000_0000; memory-file offset 0).
    pub ram_base: u64,
    /// RAM size in bytes.
    pub ram_size: u64,
    /// HDUs in index order.
    pub hdus: Vec<HduAddr>,
    /// NVMe controller BAR0 window (registers at +0, doorbells at +0x1000).
    pub nvme_bar: u64,
    /// Size of the BAR window.
    pub nvme_bar_size: u64,
    /// Engine I/O queue memory: queue q (= QID - 1) at + q * `DNVM_QWIN_QUEUE_STRIDE`.
    pub queue_window: u64,
    /// Size of the queue window.
    pub queue_window_size: u64,
    /// Engines behind each HDU (1, 2 or 4).
    pub engines_per_hdu: u32,
    /// NVMe I/O queue depth of every engine queue (entries).
    pub io_queue_depth: u32,
    /// Entries per staging queue (informational for the model).
    pub staging_entries: u32,
    /// Reserved-memory carve-out base.
    pub carveout: u64,
    /// Carve-out size.
    pub carveout_size: u64,
    /// DMA-reachable range of the engines (`directnvm,dma-window`).
    pub dma_window: (u64, u64),
    /// Guest-physical address of the test mailbox page.
    pub mailbox: u64,
}

impl Board {
    /// The QEMU virtual board of `dts/qemu-virt-directnvm.dtso` with 1 GiB of RAM.
    pub fn qemu_default() -> Self {
        Self {
            ram_base: 0x4000_0000,
            ram_size: 0x4000_0000,
            hdus: (0..4u32)
                .map(|i| HduAddr {
                    index: i,
                    user: 0x7f00_0000 + u64::from(i) * 0x1000,
                    privileged: Some(0x7f01_0000 + u64::from(i) * 0x1000),
                })
                .collect(),
            nvme_bar: 0x7f10_0000,
            nvme_bar_size: 0x1_0000,
            queue_window: 0x7f20_0000,
            queue_window_size: 0x20_0000,
            engines_per_hdu: 1,
            io_queue_depth: 32,
            staging_entries: 170,
            carveout: 0x7b00_0000,
            carveout_size: 0x0400_0000,
            dma_window: (0x4000_0000, 0x4000_0000),
            mailbox: TESTDEV_MAILBOX_PHYS,
        }
    }

    /// Parse a DTB (a full boot DTB or the compiled overlay). RAM base/size are taken from the
    /// `memory` node when present, otherwise left at the QEMU defaults.
    pub fn from_dtb(blob: &[u8]) -> crate::Result<Self> {
        let fdt = fdt::Fdt::new(blob).map_err(|e| dtb(&format!("{e:?}")))?;
        let root = fdt.find_node("/").ok_or_else(|| dtb("DTB has no root node"))?;
        let mut nodes = Vec::new();
        collect(root, Cells { addr: 2, size: 1 }, &mut nodes);

        let mut board = Board::qemu_default();
        board.hdus.clear();
        let engine =
            nodes.iter().find(|n| n.compatible.iter().any(|c| c == dt(DT_COMPAT_ENGINE))).ok_or_else(|| dtb("no directnvm,engine node"))?;
        let (bar, bar_size) = *engine.reg.first().ok_or_else(|| dtb("engine node has no reg"))?;
        board.nvme_bar = bar;
        board.nvme_bar_size = bar_size;
        let qw = engine.pair(dt(DT_PROP_QUEUE_WINDOW)).ok_or_else(|| dtb("engine: no directnvm,queue-window"))?;
        board.queue_window = qw.0;
        board.queue_window_size = qw.1;
        if let Some(dw) = engine.pair(dt(DT_PROP_DMA_WINDOW)) {
            board.dma_window = dw;
        }
        board.engines_per_hdu = engine.u32(dt(DT_PROP_ENGINES_PER_HDU)).unwrap_or(DT_DEFAULT_ENGINES_PER_HDU);
        board.io_queue_depth = engine.u32(dt(DT_PROP_IO_QUEUE_DEPTH)).unwrap_or(DT_DEFAULT_IO_QUEUE_DEPTH);
        board.staging_entries = engine.u32(dt(DT_PROP_STAGING_ENTRIES)).unwrap_or(DT_DEFAULT_STAGING_ENTRIES);
        let ph = engine.u32("memory-region").ok_or_else(|| dtb("engine: no memory-region"))?;
        let carve = nodes.iter().find(|n| n.phandle == Some(ph)).ok_or_else(|| dtb("memory-region phandle not found"))?;
        let (cb, cs) = *carve.reg.first().ok_or_else(|| dtb("carve-out has no reg"))?;
        board.carveout = cb;
        board.carveout_size = cs;

        for (i, n) in nodes.iter().filter(|n| n.compatible.iter().any(|c| c == dt(DT_COMPAT_HDU))).enumerate() {
            let user = n.reg.first().ok_or_else(|| dtb("hdu node has no reg"))?.0;
            board.hdus.push(HduAddr { index: n.u32(dt(DT_PROP_INDEX)).unwrap_or(i as u32), user, privileged: n.reg.get(1).map(|r| r.0) });
        }
        board.hdus.sort_by_key(|h| h.index);
        if board.hdus.is_empty() {
            return Err(dtb("no directnvm,hdu nodes"));
        }
        if let Some(mem) = nodes.iter().find(|n| n.name.starts_with("memory@") && !n.reg.is_empty()) {
            board.ram_base = mem.reg[0].0;
            board.ram_size = mem.reg[0].1;
        }
        Ok(board)
    }

    /// Guest-physical base of the memory of engine queue `qid` (QID 1 → queue 0).
    pub fn queue_base(&self, qid: u16) -> Option<u64> {
        let q = u64::from(qid.checked_sub(1)?);
        let off = q * directnvm_abi::DNVM_QWIN_QUEUE_STRIDE;
        (off + directnvm_abi::DNVM_QWIN_QUEUE_STRIDE <= self.queue_window_size).then_some(self.queue_window + off)
    }
}

#[derive(Clone, Copy)]
struct Cells {
    addr: usize,
    size: usize,
}

struct Node {
    name: String,
    compatible: Vec<String>,
    reg: Vec<(u64, u64)>,
    phandle: Option<u32>,
    props: Vec<(String, Vec<u8>)>,
    cells: Cells,
}

impl Node {
    fn prop(&self, name: &str) -> Option<&[u8]> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())
    }
    fn u32(&self, name: &str) -> Option<u32> {
        let v = self.prop(name)?;
        Some(u32::from_be_bytes(v.get(..4)?.try_into().ok()?))
    }
    /// A property holding one (address, size) pair in the parent bus' cell format.
    fn pair(&self, name: &str) -> Option<(u64, u64)> {
        parse_reg(self.prop(name)?, self.cells).into_iter().next()
    }
}

fn read_cells(v: &[u8], n: usize) -> Option<u64> {
    let mut x = 0u64;
    for i in 0..n {
        let c = u32::from_be_bytes(v.get(i * 4..i * 4 + 4)?.try_into().ok()?);
        x = (x << 32) | u64::from(c);
    }
    Some(x)
}

fn parse_reg(v: &[u8], c: Cells) -> Vec<(u64, u64)> {
    let step = (c.addr + c.size) * 4;
    if step == 0 {
        return Vec::new();
    }
    v.chunks_exact(step).filter_map(|e| Some((read_cells(e, c.addr)?, read_cells(&e[c.addr * 4..], c.size)?))).collect()
}

/// Walk the tree; `parent` are the cell sizes that apply to this node's `reg`.
fn collect(node: fdt::node::FdtNode<'_, '_>, parent: Cells, out: &mut Vec<Node>) {
    let props: Vec<(String, Vec<u8>)> = node.properties().map(|p| (p.name.to_string(), p.value.to_vec())).collect();
    let get = |name: &str| props.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let own = Cells {
        addr: get("#address-cells").and_then(|v| read_cells(&v, 1)).map_or(parent.addr, |x| x as usize),
        size: get("#size-cells").and_then(|v| read_cells(&v, 1)).map_or(parent.size, |x| x as usize),
    };
    let compatible = get("compatible")
        .map(|v| v.split(|b| *b == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect())
        .unwrap_or_default();
    let reg = get("reg").map(|v| parse_reg(&v, parent)).unwrap_or_default();
    let phandle = get("phandle").or_else(|| get("linux,phandle")).and_then(|v| read_cells(&v, 1)).map(|x| x as u32);
    out.push(Node { name: node.name.to_string(), compatible, reg, phandle, props, cells: parent });
    for child in node.children() {
        collect(child, own, out);
    }
}

fn dtb(what: &str) -> crate::Error {
    crate::Error::Dtb(what.to_string())
}
