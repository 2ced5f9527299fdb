// SPDX-License-Identifier: GPL-2.0-only
//! An open `/dev/hduN`: the exclusive owner or a shared read-only diagnostic open, its mmap of
//! the user register page (mapped on fault), its ioctls and the engine reset on release.

use super::*;

/// The only mapping userspace may make of /dev/hduN: the user register page, exactly one page
/// at offset 0, shared. Everything else is EINVAL; the rev 2 privileged page has no file
/// offset at all, so no request can reach it.
pub(super) fn check_user_mmap(pgoff: usize, len: usize, shared: bool) -> Result {
    if pgoff != 0 || len as u64 != DNVM_PAGE_SIZE || !shared {
        return Err(EINVAL);
    }
    Ok(())
}

/// Errno of an ioctl number this driver does not serve: a known number with the wrong size or
/// direction is a malformed request (EINVAL), anything else is not ours (ENOTTY).
pub(super) fn unknown_ioctl(cmd: u32) -> Error {
    let nr = dnvm_ioc_nr(cmd);
    if dnvm_ioc_type(cmd) == HDU_IOC_MAGIC && (1..=HDU_IOC_MAX_NR).contains(&nr) {
        EINVAL
    } else {
        ENOTTY
    }
}

/// Whether an open with these `f_flags` is a shared read-only diagnostic open (only when the
/// `shared_readonly` module parameter allows it); otherwise the open is exclusive.
pub(super) fn is_shared_open(f_flags: u32, shared_readonly: bool) -> bool {
    shared_readonly && f_flags & bindings::O_ACCMODE == bindings::O_RDONLY
}

/// Per-open-file state of /dev/hduN.
pub(super) struct HduFile {
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
            kshim::ParamFlag::enabled(crate::module_parameters::shared_readonly.value()),
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
