// SPDX-License-Identifier: GPL-2.0-only
//! hdu.ko: one platform driver for every DirectNVM Hardware Dispatch Unit (HDU).
//!
//! Each `compatible = "directnvm,hdu"` node gets `/dev/hduN` (N from `directnvm,index`).
//! Userspace maps the 4 KiB user register page (START/NREQS/REQBUF/DONE...) and drives the
//! engine without syscalls; the kernel keeps the privileged page (rev 2: reset, DMA window).
//! Register map: docs/hardware.md; numbers: userspace/abi/src/abi.rs.

use kernel::{
    c_str, device,
    fs::File,
    io::{mem::DevresIoMem, Io},
    miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration},
    mm::virt::{flags as vmflags, VmaNew},
    new_mutex, of, platform,
    prelude::*,
    sync::{Arc, Mutex},
    uaccess::{UserPtr, UserSlice},
};

/// The unsafe shim shared with directnvm.ko (hdu.ko uses part of it).
#[allow(dead_code)]
#[path = "../directnvm_drv/kshim.rs"]
mod kshim;

/// The shared ABI (register offsets, ioctl structs), included from userspace/abi/src/abi.rs.
#[allow(dead_code, unreachable_pub)]
mod abi {
    include!("../userspace/abi/src/abi.rs");
}

use abi::*;
use kshim::{Cache, FileMapping, PhysClaim, PhysWindow};

const USER_SIZE: usize = HDU_USER_REGS_SIZE;
const PRIV_SIZE: usize = HDU_PRIV_REGS_SIZE;

/// Device node names; `MiscDeviceOptions` needs `'static` names.
const NAMES: [&CStr; DNVM_MAX_CORES] = [
    c_str!("hdu0"),
    c_str!("hdu1"),
    c_str!("hdu2"),
    c_str!("hdu3"),
    c_str!("hdu4"),
    c_str!("hdu5"),
    c_str!("hdu6"),
    c_str!("hdu7"),
];

/// Mutable per-HDU state, under `HduShared::state`.
#[derive(Default)]
struct HduState {
    /// A file holds the exclusive open; its address space (for zapping at unbind).
    owner: Option<Option<FileMapping>>,
    /// The device was unbound: refuse new mappings.
    gone: bool,
    opens: u64,
    mmaps: u64,
    resets: u64,
}

/// Everything one HDU instance shares between probe, open files and unbind.
#[pin_data]
struct HduShared {
    index: u32,
    revision: u32,
    caps: HduCaps,
    user: PhysWindow,
    priv_phys: u64,
    dma: Option<PhysWindow>,
    regs: DevresIoMem<USER_SIZE>,
    priv_regs: Option<DevresIoMem<PRIV_SIZE>>,
    /// Claims of the register pages in /proc/iomem (dropped after the mappings above).
    _claims: KVec<PhysClaim>,
    #[pin]
    state: Mutex<HduState>,
}

impl HduShared {
    fn read_user(&self, off: usize) -> Result<u64> {
        let regs = self.regs.try_access().ok_or(ENODEV)?;
        (&*regs).try_read64(off)
    }

    /// One access to the privileged page. The Devres guard is an RCU read-side section, so it
    /// is taken per access and never held across a sleep or a mutex.
    fn with_priv<R>(&self, f: impl FnOnce(&kernel::io::mem::IoMem<'_, PRIV_SIZE>) -> Result<R>) -> Result<R> {
        let pr = self.priv_regs.as_ref().ok_or(EOPNOTSUPP)?;
        let guard = pr.try_access().ok_or(ENODEV)?;
        f(&guard)
    }

    /// Rev 2 engine reset through the privileged page, then re-program the DMA window.
    fn reset_engine(&self) -> Result {
        if self.revision < HDU_REV2 {
            return Err(EOPNOTSUPP);
        }
        self.with_priv(|p| p.try_write64(HDU_CTRL_RESET, HDU_PRIV_CTRL))?;
        // The model and the hardware finish a reset within microseconds; bound the wait.
        let mut done = false;
        for _ in 0..1000 {
            if self.with_priv(|p| p.try_read64(HDU_PRIV_STATUS))? & HDU_PSTATUS_RESETTING == 0 {
                done = true;
                break;
            }
            kernel::time::delay::fsleep(kernel::time::Delta::from_micros(100));
        }
        if !done {
            pr_err!("hdu{}: engine reset did not complete in 100 ms\n", self.index);
            return Err(ETIMEDOUT);
        }
        if let Some(w) = self.dma {
            self.with_priv(|p| {
                p.try_write64(w.base, HDU_PRIV_DMA_BASE)?;
                p.try_write64(w.base + w.size, HDU_PRIV_DMA_LIMIT)
            })?;
        }
        self.state.lock().resets += 1;
        Ok(())
    }

    fn info(&self) -> HduInfo {
        HduInfo {
            abi_version: DNVM_ABI_VERSION,
            index: self.index,
            revision: self.revision,
            engines: self.caps.engines,
            caps: self.caps.to_reg(),
            user_phys: self.user.base,
            priv_phys: self.priv_phys,
            dma_base: self.dma.map_or(0, |w| w.base),
            dma_limit: self.dma.map_or(0, |w| w.base + w.size),
        }
    }

    fn stats(&self) -> HduStats {
        let errors = if self.revision >= HDU_REV2 { self.read_user(HDU_REG_ERRORS).unwrap_or(0) } else { 0 };
        let done = self.read_user(HDU_REG_DONE).unwrap_or(0);
        let st = self.state.lock();
        HduStats { opens: st.opens, mmaps: st.mmaps, resets: st.resets, errors, done }
    }
}

/// The misc device of one HDU; lives in the platform driver data.
#[pin_data]
struct DevNode {
    #[pin]
    reg: MiscDeviceRegistration<HduFile>,
    shared: Arc<HduShared>,
}

kshim::misc_node!(DevNode, reg, HduFile);
kshim::misc_sysfs_show!(DevNode, HduFile);

impl DevNode {
    /// Value of sysfs attribute `name` (table in hdu_shim.c) of /sys/class/misc/hduN/.
    fn show(&self, name: &CStr, f: &mut kernel::str::Formatter<'_>) -> Result {
        use core::fmt::Write;
        let sh = &self.shared;
        let r = match name.to_bytes() {
            b"index" => writeln!(f, "{}", sh.index),
            b"revision" => writeln!(f, "{}", sh.revision),
            b"engines" => writeln!(f, "{}", sh.caps.engines),
            b"caps" => writeln!(f, "{:#018x}", sh.caps.to_reg()),
            b"state" => {
                let done = sh.read_user(HDU_REG_DONE)?;
                let s = if done & HDU_DONE_BIT != 0 {
                    "done"
                } else if sh.revision >= HDU_REV2 && done & HDU_BUSY_BIT != 0 {
                    "busy"
                } else if sh.revision >= HDU_REV2 {
                    "idle"
                } else {
                    "not-done" // rev 1 cannot tell idle from busy
                };
                writeln!(f, "{s}")
            }
            b"errors" => {
                let e = if sh.revision >= HDU_REV2 { sh.read_user(HDU_REG_ERRORS)? } else { 0 };
                writeln!(f, "{e}")
            }
            b"phys_addr" => writeln!(f, "{:#x}", sh.user.base),
            b"dma_window" => match sh.dma {
                Some(w) => writeln!(f, "{:#x}-{:#x}", w.base, w.base + w.size),
                None => writeln!(f, "none"),
            },
            b"owner" => writeln!(f, "{}", if sh.state.lock().owner.is_some() { "open" } else { "none" }),
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

/// Per-open-file state of /dev/hduN.
struct HduFile {
    shared: Arc<HduShared>,
}

impl Drop for HduFile {
    fn drop(&mut self) {
        // Release of the exclusive owner: a crashed process must not leave a running batch.
        if self.shared.revision >= HDU_REV2 && !self.shared.state.lock().gone {
            if let Err(e) = self.shared.reset_engine() {
                pr_warn!("hdu{}: reset on release failed: {:?}\n", self.shared.index, e);
            }
        }
        self.shared.state.lock().owner = None;
    }
}

#[vtable]
impl MiscDevice for HduFile {
    type Ptr = KBox<Self>;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        let shared = DevNode::from_registration(misc).shared.clone();
        {
            let mut st = shared.state.lock();
            if st.gone {
                return Err(ENODEV);
            }
            if st.owner.is_some() {
                return Err(EBUSY);
            }
            st.owner = Some(FileMapping::of(file));
            st.opens += 1;
        }
        Ok(KBox::new(HduFile { shared }, GFP_KERNEL)?)
    }

    fn mmap(me: &HduFile, _file: &File, vma: &VmaNew) -> Result {
        let len = vma.end() - vma.start();
        if kshim::vma_pgoff(vma) != 0 || len as u64 != DNVM_PAGE_SIZE {
            return Err(EINVAL);
        }
        if vma.flags() & vmflags::SHARED == 0 {
            return Err(EINVAL);
        }
        vma.try_clear_mayexec()?;
        vma.set_dontcopy();
        vma.set_dontexpand();
        vma.set_io();
        let mut st = me.shared.state.lock();
        if st.gone {
            return Err(ENODEV);
        }
        kshim::map_phys(vma, me.shared.user, Cache::Device)?;
        st.mmaps += 1;
        Ok(())
    }

    fn ioctl(me: &HduFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let sh = &me.shared;
        let user = UserPtr::from_addr(arg);
        if dnvm_ioc_type(cmd) != HDU_IOC_MAGIC {
            return Err(ENOTTY);
        }
        match cmd {
            HDU_IOC_GET_INFO => {
                sh.read_user(HDU_REG_DONE)?; // ENODEV once unbound
                UserSlice::new(user, core::mem::size_of::<HduInfo>()).writer().write(&sh.info())?;
            }
            HDU_IOC_GET_STATS => {
                sh.read_user(HDU_REG_DONE)?;
                UserSlice::new(user, core::mem::size_of::<HduStats>()).writer().write(&sh.stats())?;
            }
            HDU_IOC_RESET => sh.reset_engine()?,
            _ => {
                // A known command with the wrong size is a malformed request, not an unknown one.
                let nr = dnvm_ioc_nr(cmd);
                return Err(if (1..=3).contains(&nr) { EINVAL } else { ENOTTY });
            }
        }
        Ok(0)
    }
}

/// Platform driver data: the misc device node.
#[pin_data]
struct HduData {
    #[pin]
    node: DevNode,
}

struct HduDriver;

kernel::of_device_table!(
    OF_TABLE,
    <HduDriver as platform::Driver>::IdInfo,
    [(of::DeviceId::new(c_str!("directnvm,hdu")), ())]
);

impl platform::Driver for HduDriver {
    type IdInfo = ();
    type Data<'bound> = HduData;
    const OF_ID_TABLE: Option<of::IdTable<Self::IdInfo>> = Some(&OF_TABLE);

    fn probe<'bound>(
        pdev: &'bound platform::Device<device::Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<HduData, Error> + 'bound {
        let shared = probe_shared(pdev);
        try_pin_init!(HduData {
            node <- {
                let shared = shared?;
                let name = NAMES[shared.index as usize];
                try_pin_init!(DevNode {
                    reg <- MiscDeviceRegistration::register(MiscDeviceOptions { name }),
                    shared,
                })
            },
        })
        .pin_chain(|data| kshim::add_sysfs(&data.node.reg))
    }

    fn unbind<'bound>(_pdev: &'bound platform::Device<device::Core<'_>>, this: Pin<&HduData>) {
        let sh = &this.node.shared;
        let mut st = sh.state.lock();
        st.gone = true;
        if let Some(Some(m)) = st.owner.as_ref() {
            // Any access through an old mapping now faults (SIGBUS) instead of reaching
            // a device that is no longer ours.
            m.zap(0, 0);
        }
    }
}

fn probe_shared(pdev: &platform::Device<device::Core<'_>>) -> Result<Arc<HduShared>> {
    let dev: &device::Device<device::Bound> = pdev.as_ref();
    let fw = dev.fwnode().ok_or(ENODEV)?;
    let index: u32 = fw.property_read(c_str!("directnvm,index")).required_by(dev)?;
    if index as usize >= DNVM_MAX_CORES {
        dev_err!(dev, "directnvm,index {} out of range (max {})\n", index, DNVM_MAX_CORES - 1);
        return Err(EINVAL);
    }
    let res = pdev.resource_by_index(0).ok_or(ENODEV)?;
    let user = PhysWindow { base: res.start(), size: res.size() };
    if user.size < DNVM_PAGE_SIZE || user.base % DNVM_PAGE_SIZE != 0 {
        dev_err!(dev, "user register page must be a 4 KiB aligned page\n");
        return Err(EINVAL);
    }
    let mut claims = KVec::new();
    claims.push(PhysClaim::new(user, c_str!("directnvm-hdu"))?, GFP_KERNEL)?;
    let user = PhysWindow { base: user.base, size: DNVM_PAGE_SIZE };
    let regs = pdev.io_request_by_index(0).ok_or(ENODEV)?.iomap_sized::<USER_SIZE>()?;
    let id = (&regs).try_read64(HDU_REG_ID)?;
    let revision = hdu_revision(id);
    let caps = if revision >= HDU_REV2 { HduCaps::from_reg((&regs).try_read64(HDU_REG_CAPS)?) } else { HduCaps::REV1 };
    let regs = regs.into_devres()?;

    let (priv_phys, priv_regs) = match pdev.resource_by_index(1) {
        Some(r) if revision >= HDU_REV2 => {
            let base = r.start();
            claims.push(PhysClaim::new(PhysWindow { base, size: r.size() }, c_str!("directnvm-hdu-priv"))?, GFP_KERNEL)?;
            let p = pdev.io_request_by_index(1).ok_or(ENODEV)?.iomap_sized::<PRIV_SIZE>()?;
            (base, Some(p.into_devres()?))
        }
        _ => (0, None),
    };
    if revision >= HDU_REV2 && priv_regs.is_none() {
        dev_err!(dev, "rev {} HDU needs its privileged page as reg entry 1\n", revision);
        return Err(EINVAL);
    }
    let dma = match kshim::carveout(dev, 0) {
        Ok(c) => Some(c.window),
        Err(e) if revision >= HDU_REV2 => {
            dev_err!(dev, "rev 2 HDU needs memory-region for its DMA window: {:?}\n", e);
            return Err(e);
        }
        Err(_) => None,
    };
    let dma = if revision >= HDU_REV2 { dma } else { None };

    let shared = Arc::pin_init(
        try_pin_init!(HduShared {
            index,
            revision,
            caps,
            user,
            priv_phys,
            dma,
            regs,
            priv_regs,
            _claims: claims,
            state <- new_mutex!(HduState::default()),
        }),
        GFP_KERNEL,
    )?;
    if revision >= HDU_REV2 {
        shared.reset_engine()?;
        shared.state.lock().resets = 0;
    }
    let (dma_base, dma_limit) = dma.map_or((0, 0), |w| (w.base, w.base + w.size));
    dev_info!(
        dev,
        "hdu{}: rev {} at {:#x}, {} engine(s), max nreqs {}, DMA window {:#x}..{:#x}\n",
        index,
        revision,
        user.base,
        caps.engines,
        caps.max_nreqs,
        dma_base,
        dma_limit
    );
    Ok(shared)
}

kernel::module_platform_driver! {
    type: HduDriver,
    name: "hdu",
    authors: ["DirectNVM-rs developers"],
    description: "DirectNVM Hardware Dispatch Unit driver",
    license: "GPL",
}
