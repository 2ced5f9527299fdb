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

/// An open `/dev/hduN` (exclusive or shared read-only; mmap, ioctl, release).
mod file;
/// Probe of one HDU node.
mod probe;

use file::HduFile;
use probe::probe_shared;

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

/// Platform driver data: the misc device node.
#[pin_data]
pub(crate) struct HduData {
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

#[cfg(CONFIG_KUNIT = "y")]
#[kernel::prelude::kunit_tests(directnvm_hdu)]
mod tests {
    use super::file::{check_user_mmap, is_shared_open, unknown_ioctl};
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
        assert_eq!(hdu_revision(u64::from(HDU_ID_MAGIC) >> 1), HDU_REV1);
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
