// SPDX-License-Identifier: GPL-2.0-only
//! hdu.ko: one platform driver for every DirectNVM Hardware Dispatch Unit (HDU).
//!
//! Each `compatible = "directnvm,hdu"` node gets `/dev/hduN` (N from `directnvm,index`).
//! Userspace maps the 4 KiB user register page (START/NREQS/REQBUF/DONE...) and drives the
//! engine without syscalls; the kernel keeps the privileged page (rev 2: reset, DMA window).
//! Register map: docs/hardware.md; numbers: kernel/abi/hdu.rs and kernel/abi/ioctl.rs.

use kernel::{
    bindings, c_str,
    debugfs::Scope,
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

use crate::abi::*;
use crate::kshim::{self, Cache, DevresIoMem, FileMapping, PhysClaim, PhysWindow};

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

/// Longest wait for an engine reset. The spec drains commands already at the SSD for up to
/// 1 s (docs/hardware.md §3); the bound leaves the same again as margin.
const RESET_TIMEOUT_US: u64 = 2_000_000;

/// CTRL value of an engine reset; `qreset` also returns the engines' queue pointers to the
/// fresh-queue state (only right after the I/O queues were re-created).
const fn reset_ctrl(qreset: bool) -> u64 {
    if qreset {
        HDU_CTRL_RESET | HDU_CTRL_QRESET
    } else {
        HDU_CTRL_RESET
    }
}

/// A reset is over once CTRL self-cleared and PSTATUS no longer says "resetting". (CTRL is read
/// too: right after the write the device may not have seen it yet, and PSTATUS still reads 0.)
const fn reset_finished(ctrl: u64, pstatus: u64) -> bool {
    ctrl & HDU_CTRL_RESET == 0 && pstatus & HDU_PSTATUS_RESETTING == 0
}

/// The only mapping userspace may make of /dev/hduN: the user register page, exactly one page
/// at offset 0, shared. Everything else is EINVAL; the rev 2 privileged page has no file
/// offset at all, so no request can reach it.
fn check_user_mmap(pgoff: usize, len: usize, shared: bool) -> Result {
    if pgoff != 0 || len as u64 != DNVM_PAGE_SIZE || !shared {
        return Err(EINVAL);
    }
    Ok(())
}

/// Errno of an ioctl number this driver does not serve: a known number with the wrong size or
/// direction is a malformed request (EINVAL), anything else is not ours (ENOTTY).
fn unknown_ioctl(cmd: u32) -> Error {
    let nr = dnvm_ioc_nr(cmd);
    if dnvm_ioc_type(cmd) == HDU_IOC_MAGIC && (1..=HDU_IOC_MAX_NR).contains(&nr) {
        EINVAL
    } else {
        ENOTTY
    }
}

/// Whether an open with these `f_flags` is a shared read-only diagnostic open (only when the
/// `shared_readonly` module parameter allows it); otherwise the open is exclusive.
fn is_shared_open(f_flags: u32, shared_readonly: bool) -> bool {
    shared_readonly && f_flags & bindings::O_ACCMODE == bindings::O_RDONLY
}

/// Mutable per-HDU state, under `HduShared::state`.
#[derive(Default)]
struct HduState {
    /// A file holds the exclusive open; its address space (for zapping at unbind).
    owner: Option<Option<FileMapping>>,
    /// Shared read-only (diagnostic) opens currently open.
    readers: u32,
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
    revision: Revision,
    caps: HduCaps,
    user: PhysWindow,
    priv_phys: u64,
    dma: Option<PhysWindow>,
    regs: DevresIoMem<USER_SIZE>,
    priv_regs: Option<DevresIoMem<PRIV_SIZE>>,
    /// Claims of the register pages in /proc/iomem (dropped after the mappings above).
    _claims: KVec<PhysClaim>,
    /// Serialises engine resets (held across the bounded wait; taken before `state`).
    #[pin]
    reset_lock: Mutex<()>,
    #[pin]
    state: Mutex<HduState>,
}

impl HduShared {
    fn read_user(&self, reg: HduReg) -> Result<u64> {
        let regs = self.regs.try_access().ok_or(ENODEV)?;
        (&*regs).try_read64(reg.offset())
    }

    /// One access to the privileged page. The Devres guard is an RCU read-side section, so it
    /// is taken per access and never held across a sleep or a mutex.
    fn with_priv<R>(
        &self,
        f: impl FnOnce(&kernel::io::mem::IoMem<'_, PRIV_SIZE>) -> Result<R>,
    ) -> Result<R> {
        let pr = self.priv_regs.as_ref().ok_or_else(kshim::eopnotsupp)?;
        let guard = pr.try_access().ok_or(ENODEV)?;
        f(&guard)
    }

    fn read_priv(&self, reg: HduPrivReg) -> Result<u64> {
        self.with_priv(|p| p.try_read64(reg.offset()))
    }

    /// Rev 2 engine reset through the privileged page (`qreset`: also the queue pointers), then
    /// re-program the DMA window. Waits at most `RESET_TIMEOUT_US` for the drain.
    fn reset_engine(&self, qreset: bool) -> Result {
        if !self.revision.can_reset() {
            return Err(kshim::eopnotsupp());
        }
        let _serial = self.reset_lock.lock();
        self.with_priv(|p| p.try_write64(reset_ctrl(qreset), HduPrivReg::Ctrl.offset()))?;
        let mut waited_us: u64 = 0;
        loop {
            if reset_finished(
                self.read_priv(HduPrivReg::Ctrl)?,
                self.read_priv(HduPrivReg::Status)?,
            ) {
                break;
            }
            if waited_us >= RESET_TIMEOUT_US {
                pr_err!(
                    "hdu{}: engine reset did not complete in {} ms\n",
                    self.index,
                    RESET_TIMEOUT_US / 1000
                );
                return Err(ETIMEDOUT);
            }
            // Usually done within microseconds; a drain of commands at the SSD takes longer.
            let step: u64 = if waited_us < 2000 { 20 } else { 1000 };
            kernel::time::delay::fsleep(kernel::time::Delta::from_micros(step as i64));
            waited_us += step;
        }
        if let Some(w) = self.dma {
            self.with_priv(|p| {
                p.try_write64(w.base, HduPrivReg::DmaBase.offset())?;
                p.try_write64(w.base + w.size, HduPrivReg::DmaLimit.offset())
            })?;
        }
        self.state.lock().resets += 1;
        Ok(())
    }

    fn info(&self) -> HduInfo {
        HduInfo {
            abi_version: DNVM_ABI_VERSION,
            index: self.index,
            revision: self.revision.number(),
            engines: self.caps.engines,
            caps: self.caps.to_reg(),
            user_phys: self.user.base,
            priv_phys: self.priv_phys,
            dma_base: self.dma.map_or(0, |w| w.base),
            dma_limit: self.dma.map_or(0, |w| w.base + w.size),
        }
    }

    fn stats(&self) -> HduStats {
        let errors = if self.revision.has_status() {
            self.read_user(HduReg::Errors).unwrap_or(0)
        } else {
            0
        };
        let done = self.read_user(HduReg::Done).unwrap_or(0);
        let st = self.state.lock();
        HduStats {
            opens: st.opens,
            mmaps: st.mmaps,
            resets: st.resets,
            errors,
            done,
        }
    }
}

/// debugfs `hduN/registers`: one line per register, `user NAME OFFSET VALUE` or
/// `priv NAME OFFSET VALUE` (values read live; "unavailable" once unbound).
fn debugfs_registers(sh: &Arc<HduShared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (owner, readers) = {
        let st = sh.state.lock();
        (st.owner.is_some(), st.readers)
    };
    writeln!(
        f,
        "# hdu{} rev {} user page {:#x} owner {} readers {}",
        sh.index,
        sh.revision.number(),
        sh.user.base,
        if owner { "open" } else { "none" },
        readers
    )?;
    for reg in HduReg::ALL {
        let (name, off) = (reg.name(), reg.offset());
        match sh.read_user(reg) {
            Ok(v) => writeln!(f, "user {name} {off:#04x} {v:#018x}")?,
            Err(_) => writeln!(f, "user {name} {off:#04x} unavailable")?,
        }
    }
    if sh.priv_regs.is_some() {
        for reg in HduPrivReg::ALL {
            let (name, off) = (reg.name(), reg.offset());
            match sh.read_priv(reg) {
                Ok(v) => writeln!(f, "priv {name} {off:#04x} {v:#018x}")?,
                Err(_) => writeln!(f, "priv {name} {off:#04x} unavailable")?,
            }
        }
    }
    Ok(())
}

/// The misc device of one HDU; lives in the platform driver data.
#[pin_data]
struct DevNode {
    #[pin]
    reg: MiscDeviceRegistration<HduFile>,
    /// debugfs directory `hduN/` (register dump), removed before `shared` goes.
    #[pin]
    debugfs: Scope<Arc<HduShared>>,
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
            b"revision" => writeln!(f, "{}", sh.revision.number()),
            b"engines" => writeln!(f, "{}", sh.caps.engines),
            b"caps" => writeln!(f, "{:#018x}", sh.caps.to_reg()),
            b"state" => {
                let done = sh.read_user(HduReg::Done)?;
                let s = if done & HDU_DONE_BIT != 0 {
                    "done"
                } else if sh.revision.has_status() && done & HDU_BUSY_BIT != 0 {
                    "busy"
                } else if sh.revision.has_status() {
                    "idle"
                } else {
                    "not-done" // rev 1 cannot tell idle from busy
                };
                writeln!(f, "{s}")
            }
            b"errors" => {
                let e = if sh.revision.has_status() {
                    sh.read_user(HduReg::Errors)?
                } else {
                    0
                };
                writeln!(f, "{e}")
            }
            b"phys_addr" => writeln!(f, "{:#x}", sh.user.base),
            b"dma_window" => match sh.dma {
                Some(w) => writeln!(f, "{:#x}-{:#x}", w.base, w.base + w.size),
                None => writeln!(f, "none"),
            },
            b"owner" => writeln!(
                f,
                "{}",
                if sh.state.lock().owner.is_some() {
                    "open"
                } else {
                    "none"
                }
            ),
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

/// Per-open-file state of /dev/hduN.
struct HduFile {
    shared: Arc<HduShared>,
    /// This file holds the exclusive open (else: a shared read-only diagnostic open).
    owner: bool,
}

impl Drop for HduFile {
    fn drop(&mut self) {
        if !self.owner {
            let mut st = self.shared.state.lock();
            st.readers = st.readers.saturating_sub(1);
            return;
        }
        // Release of the exclusive owner: a crashed process must not leave a running batch.
        if self.shared.revision.can_reset() && !self.shared.state.lock().gone {
            if let Err(e) = self.shared.reset_engine(false) {
                pr_warn!(
                    "hdu{}: reset on release failed: {:?}\n",
                    self.shared.index,
                    e
                );
            }
        }
        self.shared.state.lock().owner = None;
    }
}

impl HduFile {
    /// Page fault on the owner's register mapping: map the user page only while the HDU is
    /// bound, under the lock unbind takes before it zaps; else SIGBUS.
    fn fault(&self, f: &kshim::Fault) {
        let st = self.shared.state.lock();
        if self.owner && !st.gone && f.pgoff() == 0 {
            if f.insert(self.shared.user, 0, 1).is_err() {
                pr_warn!("hdu{}: register page fault refused\n", self.shared.index);
            }
        }
    }
}

kshim::vm_fault_handler!(HduFile);

#[vtable]
impl MiscDevice for HduFile {
    type Ptr = KBox<Self>;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        kshim::check_open(file)?;
        let shared = DevNode::from_registration(misc).shared.clone();
        let owner = !is_shared_open(
            file.flags(),
            kshim::ParamFlag::is_set(crate::module_parameters::shared_readonly.value()),
        );
        {
            let mut st = shared.state.lock();
            if st.gone {
                return Err(ENODEV);
            }
            if owner {
                if st.owner.is_some() {
                    return Err(EBUSY);
                }
                st.owner = Some(FileMapping::of(file));
            } else {
                st.readers += 1;
            }
            st.opens += 1;
        }
        // If the allocation fails, dropping the HduFile gives the slot back.
        Ok(KBox::new(HduFile { shared, owner }, GFP_KERNEL)?)
    }

    fn mmap(me: &HduFile, _file: &File, vma: &VmaNew) -> Result {
        // Shared read-only opens are for diagnostics (ioctls, sysfs): no register access.
        if !me.owner {
            return Err(EACCES);
        }
        let len = vma.end() - vma.start();
        check_user_mmap(
            kshim::vma_pgoff(vma),
            len,
            vma.flags() & vmflags::SHARED != 0,
        )?;
        vma.try_clear_mayexec()?;
        vma.set_dontcopy();
        vma.set_dontexpand();
        vma.set_io();
        let mut st = me.shared.state.lock();
        if st.gone {
            return Err(ENODEV);
        }
        // Nothing is mapped here: the page comes at fault time, under `state`, only while the
        // HDU is bound (see `HduFile::fault`), so unbind's zap cannot miss a racing mmap.
        kshim::map_on_fault(vma, Cache::Device)?;
        st.mmaps += 1;
        Ok(())
    }

    fn ioctl(me: &HduFile, file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let sh = &me.shared;
        let user = UserPtr::from_addr(arg);
        if dnvm_ioc_type(cmd) != HDU_IOC_MAGIC {
            return Err(ENOTTY);
        }
        match cmd {
            HDU_IOC_GET_INFO => {
                sh.read_user(HduReg::Done)?; // ENODEV once unbound
                UserSlice::new(user, core::mem::size_of::<HduInfo>())
                    .writer()
                    .write(&sh.info())?;
            }
            HDU_IOC_GET_STATS => {
                sh.read_user(HduReg::Done)?;
                UserSlice::new(user, core::mem::size_of::<HduStats>())
                    .writer()
                    .write(&sh.stats())?;
            }
            HDU_IOC_RESET | HDU_IOC_RESET_QUEUES => {
                if !me.owner {
                    return Err(EPERM);
                }
                // State-changing commands need a file opened for writing.
                if file.flags() & kernel::fs::file::flags::O_ACCMODE
                    == kernel::fs::file::flags::O_RDONLY
                {
                    return Err(EBADF);
                }
                sh.reset_engine(cmd == HDU_IOC_RESET_QUEUES)?;
            }
            _ => return Err(unknown_ioctl(cmd)),
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

pub(crate) struct HduDriver;

kshim::of_device_table!(
    OF_TABLE,
    <HduDriver as platform::Driver>::IdInfo,
    [(of::DeviceId::new(DT_COMPAT_HDU), ())]
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
                let sh = shared?;
                let name = NAMES[sh.index as usize];
                // `shared` before `reg`: an open can arrive as soon as the node is registered
                // (fields are initialised in this order; dropped in declaration order).
                try_pin_init!(DevNode {
                    shared: sh.clone(),
                    debugfs <- Scope::dir(sh, name, |sh, d| {
                        d.read_callback_file(c_str!("registers"), sh, &debugfs_registers);
                    }),
                    reg <- MiscDeviceRegistration::register(MiscDeviceOptions { name }),
                })
            },
        })
        .pin_chain(|data| {
            kshim::misc_set_owner(&data.node.reg);
            kshim::add_sysfs(&data.node.reg)
        })
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
    let index: u32 = fw.property_read(DT_PROP_INDEX).required_by(dev)?;
    if index as usize >= DNVM_MAX_CORES {
        dev_err!(
            dev,
            "directnvm,index {} out of range (max {})\n",
            index,
            DNVM_MAX_CORES - 1
        );
        return Err(EINVAL);
    }
    let res = pdev.resource_by_index(0).ok_or(ENODEV)?;
    let user = PhysWindow {
        base: res.start(),
        size: res.size(),
    };
    if user.size < DNVM_PAGE_SIZE || user.base % DNVM_PAGE_SIZE != 0 {
        dev_err!(dev, "user register page must be a 4 KiB aligned page\n");
        return Err(EINVAL);
    }
    let mut claims = KVec::new();
    claims.push(PhysClaim::new(user, c_str!("directnvm-hdu"))?, GFP_KERNEL)?;
    let user = PhysWindow {
        base: user.base,
        size: DNVM_PAGE_SIZE,
    };
    let regs = pdev
        .io_request_by_index(0)
        .ok_or(ENODEV)?
        .iomap_sized::<USER_SIZE>()?;
    let id = (&regs).try_read64(HduReg::Id.offset())?;
    let Some(revision) = Revision::from_id(id) else {
        dev_err!(
            dev,
            "HDU revision {} is not supported by this driver\n",
            hdu_revision(id)
        );
        return Err(ENODEV);
    };
    let caps = if revision.has_caps() {
        HduCaps::from_reg((&regs).try_read64(HduReg::Caps.offset())?)
    } else {
        HduCaps::REV1
    };
    let regs = regs.into_devres()?;

    let (priv_phys, priv_regs) = match pdev.resource_by_index(1) {
        Some(r) if revision.has_privileged_page() => {
            let base = r.start();
            claims.push(
                PhysClaim::new(
                    PhysWindow {
                        base,
                        size: r.size(),
                    },
                    c_str!("directnvm-hdu-priv"),
                )?,
                GFP_KERNEL,
            )?;
            let p = pdev
                .io_request_by_index(1)
                .ok_or(ENODEV)?
                .iomap_sized::<PRIV_SIZE>()?;
            (base, Some(p.into_devres()?))
        }
        _ => (0, None),
    };
    if revision.has_privileged_page() && priv_regs.is_none() {
        dev_err!(
            dev,
            "rev {} HDU needs its privileged page as reg entry 1\n",
            revision.number()
        );
        return Err(EINVAL);
    }
    let dma = match kshim::carveout(dev, 0) {
        Ok(c) => Some(c.window),
        Err(e) if revision.has_dma_window() => {
            dev_err!(
                dev,
                "rev 2 HDU needs memory-region for its DMA window: {:?}\n",
                e
            );
            return Err(e);
        }
        Err(_) => None,
    };
    let dma = if revision.has_dma_window() { dma } else { None };

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
            reset_lock <- new_mutex!(()),
            state <- new_mutex!(HduState::default()),
        }),
        GFP_KERNEL,
    )?;
    if revision.can_reset() {
        // A plain reset: the queue pointers stay, in step with the controller's queues (only a
        // re-creation of the queues pairs with a queue reset, see docs/design.md).
        shared.reset_engine(false)?;
        shared.state.lock().resets = 0;
    }
    let (dma_base, dma_limit) = dma.map_or((0, 0), |w| (w.base, w.base + w.size));
    dev_info!(
        dev,
        "hdu{}: rev {} at {:#x}, {} engine(s), max nreqs {}, START queue {}, DMA window {:#x}..{:#x}\n",
        index,
        revision.number(),
        user.base,
        caps.engines,
        caps.max_nreqs,
        caps.start_queue,
        dma_base,
        dma_limit
    );
    Ok(shared)
}

#[cfg(CONFIG_KUNIT = "y")]
#[kernel::prelude::kunit_tests(directnvm_hdu)]
mod tests {
    use super::*;

    #[test]
    fn caps_decode_round_trip_and_fields() {
        let v: u64 = 0x0004_0010_1000_0512;
        let c = HduCaps::from_reg(v);
        assert_eq!(c.engines, 2);
        assert_eq!(c.start_queue, 1);
        assert_eq!(c.queue_depth_log2, 5);
        assert_eq!(c.max_nreqs, 0x1000);
        assert_eq!(c.dispatch_depth, 0x10);
        assert_eq!(c.max_xfer_pages, 4);
        assert_eq!(c.to_reg(), v);
        assert_eq!(HduCaps::from_reg(HduCaps::REV1.to_reg()), HduCaps::REV1);
        assert_eq!(HduCaps::REV1.max_nreqs, DNVM_REV1_MAX_NREQS);
    }

    #[test]
    fn revision_detection() {
        assert_eq!(hdu_revision(0), HDU_REV1);
        assert_eq!(hdu_revision(hdu_id(2)), HDU_REV2);
        assert_eq!(hdu_revision(hdu_id(3)), 3);
        // Anything without the magic is a rev 1 block (it reads 0, or garbage on aliasing).
        assert_eq!(hdu_revision(0x0000_0002_dead_beef), HDU_REV1);
        assert_eq!(hdu_revision(HDU_ID_MAGIC as u64 >> 1), HDU_REV1);
        assert_eq!(Revision::from_id(0), Some(Revision::Rev1));
        assert_eq!(Revision::from_id(hdu_id(2)), Some(Revision::Rev2));
        assert_eq!(Revision::from_id(hdu_id(3)), None); // an unknown revision is refused at probe
    }

    #[test]
    fn mmap_requests() {
        let page = DNVM_PAGE_SIZE as usize;
        assert!(check_user_mmap(0, page, true).is_ok());
        assert_eq!(check_user_mmap(1, page, true), Err(EINVAL)); // the privileged page's place
        assert_eq!(check_user_mmap(0, 2 * page, true), Err(EINVAL));
        assert_eq!(check_user_mmap(0, page / 2, true), Err(EINVAL));
        assert_eq!(check_user_mmap(0, page, false), Err(EINVAL)); // MAP_PRIVATE
        assert_eq!(check_user_mmap(usize::MAX, page, true), Err(EINVAL));
    }

    #[test]
    fn ioctl_numbers_and_reset_bits() {
        assert_eq!(
            unknown_ioctl(dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x01, 8)),
            EINVAL
        );
        assert_eq!(
            unknown_ioctl(dnvm_ioc(DNVM_IOC_NONE, HDU_IOC_MAGIC, HDU_IOC_MAX_NR, 8)),
            EINVAL
        );
        assert_eq!(
            unknown_ioctl(dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x55, 8)),
            ENOTTY
        );
        assert_eq!(
            unknown_ioctl(dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, 8)),
            ENOTTY
        );
        assert_eq!(reset_ctrl(false), HDU_CTRL_RESET);
        assert_eq!(reset_ctrl(true), HDU_CTRL_RESET | HDU_CTRL_QRESET);
        assert!(!reset_finished(HDU_CTRL_RESET, 0)); // written, not yet seen by the device
        assert!(!reset_finished(0, HDU_PSTATUS_RESETTING));
        assert!(reset_finished(0, HDU_PSTATUS_WINDOW_FAULT));
    }

    #[test]
    fn shared_open_only_read_only_and_only_when_allowed() {
        let rdonly = bindings::O_RDONLY;
        let rdwr = bindings::O_RDWR;
        assert!(!is_shared_open(rdonly, false));
        assert!(is_shared_open(rdonly, true));
        assert!(!is_shared_open(rdwr, true));
        assert!(!is_shared_open(bindings::O_WRONLY, true));
        assert!(is_shared_open(rdonly | bindings::O_CLOEXEC, true));
    }
}
