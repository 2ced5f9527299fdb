// SPDX-License-Identifier: GPL-2.0-only
//! directnvm.ko: the DirectNVM reserved-memory and queue manager.
//!
//! Binds `compatible = "directnvm,engine"`: owns the `no-map` carve-out, partitions it (admin
//! queues, per-core staging queue, status words and data slice), brings the NVMe controller up
//! behind the engines and exposes `/dev/directnvm` (ioctl + mmap). The kernel is on the control
//! path only; I/O is userspace writing staging entries and poking HDU registers.

use kernel::{
    c_str,
    debugfs::{Scope, ScopedDir},
    device, fmt,
    fs::File,
    io::Io,
    miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration},
    mm::virt::{flags as vmflags, VmaNew},
    new_mutex, of, platform,
    prelude::*,
    sync::{Arc, Mutex},
    uaccess::{UserPtr, UserSlice},
};

/// NVMe controller bring-up: the protocol crate's (kernel/abi/bringup.rs), shared with the
/// test hosts over the controller model.
use crate::abi::bringup as nvme;

use crate::abi::layout::{Layout, LayoutParams};
use crate::abi::{self, *};
use crate::kshim::{self, Cache, DevresIoMem, FileMapping, PhysClaim, PhysWindow, WcMap};

/// debugfs `directnvm/`.
mod debugfs;
/// An open `/dev/directnvm` (claims, mappings, ioctl and mmap handlers).
mod file;
/// ioctl decoding and argument checks.
mod ioctl;

use debugfs::debugfs_files;
use file::DnvmFile;

/// Bytes of the controller BAR window the driver touches (registers + admin doorbells).
const BAR_SIZE: usize = 0x2000;

/// Controller state under the device lock.
struct CtrlState {
    ctrl: Option<nvme::Controller>,
    last_error: Option<nvme::NvmeError>,
}

/// Mutable device state: claims and controller, one lock (lockdep sees one class).
struct DevState {
    /// Owner (file id) of each core.
    claims: [u64; DNVM_MAX_CORES],
    /// The owner's address space per claimed core (to zap its mappings at unbind).
    owner_maps: [Option<FileMapping>; DNVM_MAX_CORES],
    /// The device was unbound: no claim, no fault may map a page any more.
    gone: bool,
    /// A core was claimed since the I/O queues were last created (`DNVM_INFO_QUEUES_USED`):
    /// the engines may have moved their queue pointers.
    queues_used: bool,
    next_file: u64,
    ctrl: CtrlState,
    stats: DnvmStats,
}

/// Everything the engine device shares between probe, files and unbind.
#[pin_data]
struct Shared {
    layout: Layout,
    carve: PhysWindow,
    cfg: nvme::Config,
    bar: DevresIoMem<BAR_SIZE>,
    admin: WcMap,
    /// /proc/iomem claims of the BAR window and the carve-out (dropped after the mappings).
    _claims: [PhysClaim; 2],
    #[pin]
    state: Mutex<DevState>,
}

/// `NvmeHost` over the BAR window and the admin region.
struct Host<'a> {
    sh: &'a Shared,
}

impl nvme::NvmeHost for Host<'_> {
    fn rd32(&self, off: usize) -> Result<u32, nvme::NvmeError> {
        let bar = self.sh.bar.try_access().ok_or(nvme::NvmeError::Bus)?;
        (&*bar).try_read32(off).map_err(|_| nvme::NvmeError::Bus)
    }
    fn wr32(&self, off: usize, val: u32) -> Result<(), nvme::NvmeError> {
        let bar = self.sh.bar.try_access().ok_or(nvme::NvmeError::Bus)?;
        (&*bar)
            .try_write32(val, off)
            .map_err(|_| nvme::NvmeError::Bus)
    }
    fn mem_read(&self, off: usize, buf: &mut [u8]) -> Result<(), nvme::NvmeError> {
        self.sh
            .admin
            .read_bytes(off, buf)
            .map_err(|_| nvme::NvmeError::Bus)
    }
    fn mem_write(&self, off: usize, buf: &[u8]) -> Result<(), nvme::NvmeError> {
        self.sh
            .admin
            .write_bytes(off, buf)
            .map_err(|_| nvme::NvmeError::Bus)
    }
    fn mem_bus(&self) -> u64 {
        self.sh.layout.admin.phys
    }
    fn read_barrier(&self) {
        kshim::dma_rmb();
    }
    fn sleep_us(&self, us: u32) {
        kernel::time::delay::fsleep(kernel::time::Delta::from_micros(i64::from(us)));
    }
}

fn nvme_errno(e: nvme::NvmeError) -> Error {
    match e {
        nvme::NvmeError::NoController => ENODEV,
        nvme::NvmeError::Bus => ENXIO,
        nvme::NvmeError::Timeout(_) => ETIMEDOUT,
        nvme::NvmeError::Fatal
        | nvme::NvmeError::Lost
        | nvme::NvmeError::BadCompletion
        | nvme::NvmeError::Status { .. } => EIO,
        nvme::NvmeError::BadLbaFormat
        | nvme::NvmeError::TooFewQueues(_)
        | nvme::NvmeError::BadConfig(_) => EINVAL,
    }
}

impl Shared {
    /// (Re)initialise the controller. Caller holds the state lock and has checked claims.
    fn controller_init(&self, st: &mut DevState) -> Result {
        st.stats.controller_inits += 1;
        if let Some(mut c) = st.ctrl.ctrl.take() {
            st.stats.admin_commands += c.commands;
            st.stats.admin_errors += c.errors;
            if let Err(e) = c.shutdown(&Host { sh: self }) {
                pr_warn!("controller shutdown before re-init: {:?}\n", e);
            }
        }
        match nvme::bring_up(&Host { sh: self }, self.cfg) {
            Ok(c) => {
                pr_info!(
                    "NVMe {}.{} up: {} LBAs of {} B, {} I/O queue pair(s), {} arbitration\n",
                    c.vs >> 16,
                    (c.vs >> 8) & 0xff,
                    c.capacity_lbas,
                    c.lba_size,
                    c.io_queues,
                    if c.wrr {
                        "weighted round robin"
                    } else {
                        "round robin (CAP.AMS has no WRR)"
                    }
                );
                st.ctrl.ctrl = Some(c);
                st.ctrl.last_error = None;
                st.queues_used = false;
                Ok(())
            }
            Err(e) => {
                pr_err!("NVMe bring-up failed: {:?}\n", e);
                st.ctrl.last_error = Some(e);
                Err(nvme_errno(e))
            }
        }
    }

    fn info(&self, st: &DevState) -> DnvmInfo {
        let mut info = self.layout.info(self.cfg.io_queue_depth);
        if st.queues_used {
            info.flags |= DNVM_INFO_QUEUES_USED;
        }
        if let Some(c) = &st.ctrl.ctrl {
            c.describe(&mut info);
        }
        info
    }
}

/// The misc device; lives in the platform driver data.
#[pin_data]
struct DevNode {
    #[pin]
    reg: MiscDeviceRegistration<DnvmFile>,
    /// debugfs directory `directnvm/`, removed before `shared` goes.
    #[pin]
    debugfs: Scope<Arc<Shared>>,
    shared: Arc<Shared>,
}

kshim::misc_node!(DevNode, reg, DnvmFile);
kshim::misc_sysfs_show!(DevNode, DnvmFile);

impl DevNode {
    /// Value of sysfs attribute `name` (table in directnvm_shim.c) of /sys/class/misc/directnvm/.
    fn show(&self, name: &CStr, f: &mut kernel::str::Formatter<'_>) -> Result {
        use core::fmt::Write;
        let sh = &self.shared;
        let p = &sh.layout.params;
        let st = sh.state.lock();
        let r = match name.to_bytes() {
            b"cores" => writeln!(f, "{}", p.cores),
            b"engines" => writeln!(f, "{}", p.engines),
            b"ready" => writeln!(f, "{}", u32::from(st.ctrl.ctrl.is_some())),
            b"capacity_lbas" => writeln!(
                f,
                "{}",
                st.ctrl.ctrl.as_ref().map_or(0, |c| c.capacity_lbas)
            ),
            b"carveout" => writeln!(f, "{:#x}+{:#x}", sh.carve.base, sh.carve.size),
            b"claimed" => writeln!(f, "{:#x}", claimed_mask(&st)),
            b"last_error" => match st.ctrl.last_error {
                Some(e) => writeln!(f, "{e:?}"),
                None => writeln!(f, "none"),
            },
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

fn claimed_mask(st: &DevState) -> u64 {
    st.claims
        .iter()
        .enumerate()
        .filter(|(_, &o)| o != 0)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// Platform driver data.
#[pin_data]
pub(crate) struct DnvmData {
    #[pin]
    node: DevNode,
}

pub(crate) struct DnvmDriver;

kshim::of_device_table!(
    OF_TABLE,
    <DnvmDriver as platform::Driver>::IdInfo,
    [(of::DeviceId::new(DT_COMPAT_ENGINE), ())]
);

impl platform::Driver for DnvmDriver {
    type IdInfo = ();
    type Data<'bound> = DnvmData;
    const OF_ID_TABLE: Option<of::IdTable<Self::IdInfo>> = Some(&OF_TABLE);

    fn probe<'bound>(
        pdev: &'bound platform::Device<device::Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<DnvmData, Error> + 'bound {
        let shared = probe_shared(pdev);
        try_pin_init!(DnvmData {
            node <- {
                let sh = shared?;
                // `shared` before `reg`: an open can arrive as soon as the node is registered
                // (fields are initialised in this order; dropped in declaration order).
                try_pin_init!(DevNode {
                    shared: sh.clone(),
                    debugfs <- Scope::dir(sh, c_str!("directnvm"), debugfs_files),
                    reg <- MiscDeviceRegistration::register(MiscDeviceOptions {
                        name: c_str!("directnvm"),
                    }),
                })
            },
        })
        .pin_chain(|data| {
            kshim::misc_set_owner(&data.node.reg);
            kshim::add_sysfs(&data.node.reg)
        })
    }

    fn unbind<'bound>(_pdev: &'bound platform::Device<device::Core<'_>>, this: Pin<&DnvmData>) {
        let sh = &this.node.shared;
        let mut st = sh.state.lock();
        // Open files outlive the device: they keep their claims' records, but no fault maps a
        // page any more and every existing mapping of a claimed core is zapped.
        st.gone = true;
        for core in 0..DNVM_MAX_CORES {
            if let Some(m) = st.owner_maps[core].take() {
                let r = sh.layout.cores[core];
                m.zap(
                    r.staging.offset,
                    r.staging.size + r.status.size + r.data.size,
                );
            }
        }
        if let Some(mut c) = st.ctrl.ctrl.take() {
            if let Err(e) = c.shutdown(&Host { sh }) {
                pr_warn!("controller shutdown at unbind: {:?}\n", e);
            }
        }
    }
}

fn read_u64_pair(dev: &device::Device<device::Bound>, name: &CStr) -> Result<(u64, u64)> {
    let fw = dev.fwnode().ok_or(ENODEV)?;
    let v: [u64; 2] = fw.property_read(name).required_by(dev)?;
    Ok((v[0], v[1]))
}

fn probe_shared(pdev: &platform::Device<device::Core<'_>>) -> Result<Arc<Shared>> {
    let dev: &device::Device<device::Bound> = pdev.as_ref();
    let fw = dev.fwnode().ok_or(ENODEV)?;
    let cores: u32 = fw.property_read(DT_PROP_CORES).required_by(dev)?;
    let engines: u32 = fw
        .property_read(DT_PROP_ENGINES_PER_HDU)
        .or(DT_DEFAULT_ENGINES_PER_HDU);
    let staging_entries: u32 = fw
        .property_read(DT_PROP_STAGING_ENTRIES)
        .or(DT_DEFAULT_STAGING_ENTRIES);
    let io_queue_depth: u32 = fw
        .property_read(DT_PROP_IO_QUEUE_DEPTH)
        .or(DT_DEFAULT_IO_QUEUE_DEPTH);
    let data_size: u32 = fw.property_read(DT_PROP_DATA_BUFFER_SIZE).or(0);
    let coherent = fw.property_read_bool(c_str!("dma-coherent"));
    let (qbase, qsize) = read_u64_pair(dev, DT_PROP_QUEUE_WINDOW)?;

    let c = kshim::carveout(dev, 0).inspect_err(|e| dev_err!(dev, "memory-region: {:?}\n", e))?;
    if !c.no_map {
        dev_err!(dev, "memory-region must be no-map (a cached linear-map alias would break the engines' view)\n");
        return Err(EINVAL);
    }
    if fw.property_present(DT_PROP_DMA_WINDOW) {
        let (dbase, dsize) = read_u64_pair(dev, DT_PROP_DMA_WINDOW)?;
        let inside = c.window.base >= dbase
            && c.window
                .base
                .checked_add(c.window.size)
                .is_some_and(|e| e <= dbase.saturating_add(dsize));
        if !inside {
            dev_err!(
                dev,
                "carve-out {:#x}+{:#x} is outside the engines' DMA window {:#x}+{:#x}\n",
                c.window.base,
                c.window.size,
                dbase,
                dsize
            );
            return Err(EINVAL);
        }
    }
    let params = LayoutParams {
        base: c.window.base,
        size: c.window.size,
        page: kernel::page::PAGE_SIZE as u64,
        cores,
        engines,
        staging_entries,
        data_size: u64::from(data_size),
        coherent,
    };
    let layout = Layout::compute(params).map_err(|e| {
        dev_err!(
            dev,
            "carve-out {:#x}+{:#x} cannot hold the configuration: {:?}\n",
            c.window.base,
            c.window.size,
            e
        );
        EINVAL
    })?;
    let carve_claim = PhysClaim::new(c.window, c_str!("directnvm-carveout"))?;
    let res = pdev.resource_by_index(0).ok_or(ENODEV)?;
    let bar_claim = PhysClaim::new(
        PhysWindow {
            base: res.start(),
            size: res.size(),
        },
        c_str!("directnvm-nvme"),
    )?;
    let admin = WcMap::new(PhysWindow {
        base: layout.admin.phys,
        size: layout.admin.size,
    })?;
    let bar = pdev
        .io_request_by_index(0)
        .ok_or(ENODEV)?
        .iomap_sized::<BAR_SIZE>()?
        .into_devres()?;
    let page = kernel::page::PAGE_SIZE;
    let cfg = nvme::Config {
        cores,
        engines,
        io_queue_depth,
        queue_window_base: qbase,
        queue_window_size: qsize,
        admin_sq_off: layout::ADMIN_SQ_PAGE as usize * page,
        admin_cq_off: layout::ADMIN_CQ_PAGE as usize * page,
        admin_data_off: layout::ADMIN_DATA_PAGE as usize * page,
        allow_wrr: true,
        extra_queues: 0,
    };
    let shared = Arc::pin_init(
        try_pin_init!(Shared {
            layout,
            carve: c.window,
            cfg,
            bar,
            admin,
            _claims: [bar_claim, carve_claim],
            state <- new_mutex!(DevState {
                claims: [0; DNVM_MAX_CORES],
                owner_maps: [const { None }; DNVM_MAX_CORES],
                gone: false,
                queues_used: false,
                next_file: 0,
                ctrl: CtrlState { ctrl: None, last_error: None },
                stats: DnvmStats::default(),
            }),
        }),
        GFP_KERNEL,
    )?;
    let d = &layout.cores[0];
    dev_info!(
        dev,
        "carve-out {:#x}+{:#x}: {} core(s) x {} engine(s), staging {} entries, data {} KiB/core at {:#x}\n",
        c.window.base,
        c.window.size,
        cores,
        engines,
        staging_entries,
        d.data.size / 1024,
        d.data.phys
    );
    {
        // A board without a working SSD still gets /dev/directnvm (layout, claims) and can
        // retry with DNVM_IOC_CONTROLLER_INIT; GET_INFO reports the controller not ready.
        let mut st = shared.state.lock();
        let _ = shared.controller_init(&mut st);
    }
    Ok(shared)
}
