// SPDX-License-Identifier: MIT OR Apache-2.0
//! libnvmedl's in-process backend: the fakehdu device model running in this process, for
//! libnvmedl's host tests (`userspace/libnvmedl/tests/inproc/`) and the host benchmarks
//! (`nvmedl-bench-inproc`, qemu/inproc-bench). Test code: the shipping library and tools do
//! not depend on it.
//!
//! It plays the kernel's part: the carve-out is partitioned by the kernel's own `layout.rs`,
//! the NVMe controller is brought up by the kernel's own bring-up (`directnvm_abi::bringup`,
//! over fakehdu's `ModelHost`), claims are tracked per core, and rev 2 DMA windows and resets
//! are programmed through the privileged page as hdu_drv does. Handles then drive the model through raw pointers into
//! its guest memory, exactly the code path they use on the mmaps of the real devices.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use directnvm_abi::*;
use fakehdu::{ControlOp, FakeHdu, GuestMem};

use nvmedl::platform::{CoreMapping, Platform, Region};
use nvmedl::{Error, Result};

use crate::nvme::NvmeError;
use directnvm_abi::layout::{self, Layout, LayoutParams};
use fakehdu::test_support::ModelHost;

/// The kernel's NVMe bring-up: the protocol crate's.
pub(crate) use directnvm_abi::bringup as nvme;

/// Options of an in-process board.
#[derive(Clone, Debug)]
pub struct InProcConfig {
    /// HDU revision (1 or 2).
    pub revision: u32,
    /// Engines per HDU (rev 2: 1, 2 or 4; rev 1: 1).
    pub engines: u32,
    /// SSD timing of the model.
    pub timing: fakehdu::TimingMode,
    /// Namespace size in bytes.
    pub disk_size: u64,
    /// Rev 2 START queue depth (`HduCaps::start_queue`: 0 or 1).
    pub start_queue: u32,
    /// SSD model parameters (`None`: the model's defaults); apply with a `timing` other
    /// than `None`.
    pub ssd: Option<fakehdu::timing::SsdParams>,
}

impl InProcConfig {
    /// One engine per HDU, no SSD timing, 64 MiB namespace.
    pub fn new(revision: u32) -> Self {
        Self { revision, engines: 1, timing: fakehdu::TimingMode::None, disk_size: 64 << 20, start_queue: 1, ssd: None }
    }
}

/// The model plus the kernel-side state the drivers would keep.
pub struct InProc {
    model: FakeHdu,
    layout: Layout,
    ctrl: Mutex<Option<nvme::Controller>>,
    claims: Arc<Mutex<u64>>,
    cfg: nvme::Config,
    revision: u32,
}

fn nvme_err(e: NvmeError) -> Error {
    match e {
        NvmeError::Timeout(_) => Error::Timeout,
        NvmeError::Status { status, .. } => Error::Nvme { status },
        NvmeError::NoController => Error::Os(libc::ENODEV),
        NvmeError::Bus => Error::Os(libc::ENXIO),
        _ => Error::Os(libc::EIO),
    }
}

impl InProc {
    /// Start a model and bring it up like the kernel modules do at probe.
    pub fn start(c: InProcConfig) -> Result<Arc<InProc>> {
        let mut cfg = fakehdu::Config::in_process(c.revision);
        cfg.engines = Some(c.engines);
        cfg.timing = c.timing;
        cfg.disk_size = c.disk_size;
        cfg.start_queue = c.start_queue;
        if let Some(ssd) = c.ssd {
            cfg.nvme.ssd = ssd;
        }
        let model = FakeHdu::start(cfg).map_err(|_| Error::InvalidArgument)?;
        let board = model.board().clone();
        let params = LayoutParams {
            base: board.carveout,
            size: board.carveout_size,
            page: DNVM_PAGE_SIZE,
            cores: board.hdus.len() as u32,
            engines: c.engines,
            staging_entries: board.staging_entries,
            data_size: 0,
            coherent: false,
        };
        let layout = Layout::compute(params).map_err(|_| Error::InvalidArgument)?;
        let page = DNVM_PAGE_SIZE as usize;
        let ncfg = nvme::Config {
            cores: params.cores,
            engines: c.engines,
            io_queue_depth: board.io_queue_depth,
            queue_window_base: board.queue_window,
            queue_window_size: board.queue_window_size,
            admin_sq_off: layout::ADMIN_SQ_PAGE as usize * page,
            admin_cq_off: layout::ADMIN_CQ_PAGE as usize * page,
            admin_data_off: layout::ADMIN_DATA_PAGE as usize * page,
            allow_wrr: true,
            extra_queues: 0,
        };
        let ip = InProc { model, layout, ctrl: Mutex::new(None), claims: Arc::new(Mutex::new(0)), cfg: ncfg, revision: c.revision };
        if Revision::from_number(c.revision).is_some_and(Revision::has_dma_window) {
            for h in 0..board.hdus.len() {
                fakehdu::test_support::program_window(ip.model.mem(), &board, h, board.carveout, board.carveout + board.carveout_size)
                    .map_err(|_| Error::InvalidArgument)?;
            }
        }
        ip.controller_init()?;
        Ok(Arc::new(ip))
    }

    /// The bring-up's host: fakehdu's `NvmeHost` over the model, the kernel layout's admin
    /// region, waits that sleep (the model runs on its own thread).
    fn host(&self) -> ModelHost<'static> {
        ModelHost::sleeping(self.model.mem(), self.model.board().nvme_bar, self.layout.admin.phys)
    }

    /// The running model (statistics, direct inspection).
    pub fn model(&self) -> &FakeHdu {
        &self.model
    }

    /// Fault injection and other control operations (the model's control-socket set).
    pub fn control(&self, op: ControlOp) -> fakehdu::Result<String> {
        self.model.control(op)
    }
}

fn hdu_info_of(model: &FakeHdu, core: u32, revision: u32) -> Result<HduInfo> {
    let board = model.board();
    let h = board.hdus.get(core as usize).ok_or(Error::InvalidArgument)?;
    let mem = model.mem();
    let id = mem.load64(h.user + HduReg::Id.offset() as u64).map_err(|_| Error::Os(libc::ENXIO))?;
    let rev = hdu_revision(id);
    let revision_of_id = Revision::from_number(rev);
    let caps = if revision_of_id.is_some_and(Revision::has_caps) {
        HduCaps::from_reg(mem.load64(h.user + HduReg::Caps.offset() as u64).map_err(|_| Error::Os(libc::ENXIO))?)
    } else {
        HduCaps::REV1
    };
    debug_assert!(rev == revision || revision == 0);
    let (dma_base, dma_limit) =
        if revision_of_id.is_some_and(Revision::has_dma_window) { (board.carveout, board.carveout + board.carveout_size) } else { (0, 0) };
    Ok(HduInfo {
        abi_version: DNVM_ABI_VERSION,
        index: core,
        revision: rev,
        engines: caps.engines,
        caps: caps.to_reg(),
        user_phys: h.user,
        priv_phys: if revision_of_id.is_some_and(Revision::has_privileged_page) { h.privileged.unwrap_or(0) } else { 0 },
        dma_base,
        dma_limit,
    })
}

/// Rev 2 engine reset through the privileged page (`qreset`: also the queue pointers), then
/// the DMA window again (hdu_drv's job).
fn reset_engine(mem: &GuestMem, board: &fakehdu::Board, core: u32, revision: u32, qreset: bool) -> Result<()> {
    if !Revision::from_number(revision).is_some_and(Revision::can_reset) {
        return Err(Error::Revision);
    }
    let p = board.hdus.get(core as usize).and_then(|h| h.privileged).ok_or(Error::Revision)?;
    let bus = |_| Error::Os(libc::ENXIO);
    let ctrl = if qreset { HDU_CTRL_RESET | HDU_CTRL_QRESET } else { HDU_CTRL_RESET };
    mem.store64(p + HduPrivReg::Ctrl.offset() as u64, ctrl).map_err(bus)?;
    let t0 = Instant::now();
    // The model drains commands already at the SSD for up to 1 s.
    while mem.load64(p + HduPrivReg::Ctrl.offset() as u64).map_err(bus)? & HDU_CTRL_RESET != 0 {
        if t0.elapsed() > Duration::from_secs(3) {
            return Err(Error::Timeout);
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    fakehdu::test_support::program_window(mem, board, core as usize, board.carveout, board.carveout + board.carveout_size)
        .map_err(|_| Error::Os(libc::ENXIO))
}

impl Platform for InProc {
    fn info(&self) -> Result<DnvmInfo> {
        let mut info = self.layout.info(self.cfg.io_queue_depth);
        if let Some(c) = self.ctrl.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            c.describe(&mut info);
        }
        Ok(info)
    }

    fn layout(&self) -> Result<DnvmLayout> {
        Ok(self.layout.to_abi())
    }

    fn open_core(&self, core: u32) -> Result<Box<dyn CoreMapping>> {
        if core >= self.layout.params.cores {
            return Err(Error::InvalidArgument);
        }
        {
            let mut c = self.claims.lock().unwrap_or_else(|e| e.into_inner());
            if *c & (1 << core) != 0 {
                return Err(Error::Busy);
            }
            *c |= 1 << core;
        }
        let release = ClaimGuard { claims: self.claims.clone(), core };
        let info = hdu_info_of(&self.model, core, self.revision)?;
        let r = self.layout.cores[core as usize];
        let map = |reg: DnvmRegion| -> Result<Region> {
            let ptr = self.model.host_ptr(reg.phys, reg.size).ok_or(Error::Os(libc::ENXIO))?;
            Ok(Region { ptr, bus: reg.phys, len: reg.size as usize })
        };
        let regs = self.model.hdu_regs(core as usize).ok_or(Error::Os(libc::ENXIO))?;
        Ok(Box::new(InProcCore {
            mem: self.model.mem().clone(),
            board: self.model.board().clone(),
            regs: regs.cast(),
            info,
            regions: [map(r.staging)?, map(r.status)?, map(r.data)?],
            revision: self.revision,
            _claim: release,
        }))
    }

    fn hdu_info(&self, core: u32) -> Result<HduInfo> {
        hdu_info_of(&self.model, core, self.revision)
    }

    fn reset_hdu(&self, core: u32) -> Result<()> {
        reset_engine(self.model.mem(), self.model.board(), core, self.revision, false)
    }

    fn set_arbitration(&self, a: DnvmArbitration) -> Result<()> {
        let mut g = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
        let c = g.as_mut().ok_or(Error::NotReady)?;
        if !c.wrr {
            return Err(Error::Os(libc::EOPNOTSUPP));
        }
        c.set_arbitration(&self.host(), a).map_err(nvme_err)
    }

    fn controller_init(&self) -> Result<()> {
        if *self.claims.lock().unwrap_or_else(|e| e.into_inner()) != 0 {
            return Err(Error::Busy);
        }
        let mut g = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_some() && !Revision::from_number(self.revision).is_some_and(Revision::can_reset) {
            // The rev 1 engines keep their queue pointers across a controller reset (see
            // docs/hardware.md §6): queues are created once per power-up.
            return Ok(());
        }
        let again = g.is_some();
        if let Some(mut c) = g.take() {
            let _ = c.shutdown(&self.host());
        }
        *g = Some(nvme::bring_up(&self.host(), self.cfg).map_err(nvme_err)?);
        if again {
            // Rev 2: the engines follow the re-created queues (docs/design.md).
            let board = self.model.board();
            for core in 0..board.hdus.len() as u32 {
                reset_engine(self.model.mem(), board, core, self.revision, true)?;
            }
        }
        Ok(())
    }
}

/// Releases a core's claim when dropped.
struct ClaimGuard {
    claims: Arc<Mutex<u64>>,
    core: u32,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        *self.claims.lock().unwrap_or_else(|e| e.into_inner()) &= !(1 << self.core);
    }
}

struct InProcCore {
    /// Keeps the guest memory (and so every pointer below) alive.
    mem: GuestMem,
    board: fakehdu::Board,
    regs: *mut u64,
    info: HduInfo,
    regions: [Region; 3],
    revision: u32,
    _claim: ClaimGuard,
}

// SAFETY: the pointers point into `mem`, which this value keeps alive; the model accesses the
// same memory with atomic/volatile operations from its own thread, like a device would.
unsafe impl Send for InProcCore {}

impl CoreMapping for InProcCore {
    fn regs(&self) -> *mut u64 {
        self.regs
    }
    fn hdu_info(&self) -> HduInfo {
        self.info
    }
    fn staging(&self) -> Region {
        self.regions[0]
    }
    fn status(&self) -> Region {
        self.regions[1]
    }
    fn data(&self) -> Region {
        self.regions[2]
    }
    fn reset(&self) -> Result<()> {
        reset_engine(&self.mem, &self.board, self.info.index, self.revision, false)
    }
}

#[cfg(test)]
mod reinit_tests {
    use super::*;
    use nvmedl::{Device, HandleOptions};

    /// Write 5 blocks of `gen` at `lba` (if `write`) and read them back through a fresh handle
    /// on `core`; true if every byte matches.
    fn write_read(dev: &Device, core: u32, lba: u64, gen: u8, write: bool) -> bool {
        let opts = HandleOptions { timeout: Duration::from_secs(5), ..HandleOptions::default() };
        let Ok(mut h) = dev.handle_with(core, opts) else { return false };
        let Ok(mut b) = h.buf_alloc(5 * 4096) else { return false };
        if write {
            b.as_mut_slice().iter_mut().enumerate().for_each(|(i, x)| *x = (i as u8).wrapping_mul(3) ^ gen);
            if h.write(&b, lba).is_err() {
                return false;
            }
        }
        b.as_mut_slice().fill(0);
        h.read(&b, lba).is_ok() && b.as_slice().iter().enumerate().all(|(i, x)| *x == (i as u8).wrapping_mul(3) ^ gen)
    }

    /// Rev 2 re-init re-creates the queues and queue-resets the engines: I/O works after it and
    /// data written before is intact (without the queue reset this test fails).
    #[test]
    fn rev2_controller_init_resets_engine_queues() {
        let ip = InProc::start(InProcConfig::new(HDU_REV2)).expect("board");
        let dev = Device::from_platform(ip.clone()).expect("device");
        for core in 0..4 {
            assert!(write_read(&dev, core, 0x1000 + core as u64 * 0x100, 1, true), "core {core} before");
        }
        dev.controller_init().expect("re-init");
        for core in 0..4 {
            assert!(write_read(&dev, core, 0x8000 + core as u64 * 0x100, 2, true), "core {core} after");
            assert!(write_read(&dev, core, 0x1000 + core as u64 * 0x100, 1, false), "core {core}: data from before");
        }
    }
}
