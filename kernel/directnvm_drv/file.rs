// SPDX-License-Identifier: GPL-2.0-only
//! An open `/dev/directnvm`: its claims, its map-on-fault mappings and the ioctl / mmap
//! handlers (`MiscDevice`).

use super::*;
use ioctl::{decode_ioctl, needs_write, validate_arbitration, validate_claim, Cmd};

/// Per-open-file state of /dev/directnvm.
pub(crate) struct DnvmFile {
    shared: Arc<Shared>,
    id: u64,
    mapping: Option<FileMapping>,
}

impl Drop for DnvmFile {
    fn drop(&mut self) {
        // Last reference to the file (all mappings are gone too): release its claims.
        let mut st = self.shared.state.lock();
        for core in 0..DNVM_MAX_CORES {
            if st.claims[core] == self.id {
                st.claims[core] = 0;
                st.owner_maps[core] = None;
            }
        }
    }
}

impl DnvmFile {
    fn claim(&self, c: &DnvmClaim, take: bool) -> Result {
        let sh = &self.shared;
        let core = validate_claim(c, sh.layout.params.cores)?;
        let mut st = sh.state.lock();
        if take && st.gone {
            return Err(ENODEV);
        }
        let owner = st.claims[core];
        if take {
            if owner != 0 {
                return Err(EBUSY);
            }
            st.claims[core] = self.id;
            st.owner_maps[core] = self.mapping.as_ref().map(FileMapping::dup);
            st.stats.claims += 1;
            // Whoever holds a core can start I/O, which moves the engines' queue pointers.
            if st.ctrl.ctrl.is_some() {
                st.queues_used = true;
            }
        } else {
            if owner != self.id {
                return Err(EINVAL);
            }
            // The core's pages must not stay mapped in this process once another file can own
            // them. Faults map pages only under this lock and only for the owner (`fault`), so
            // after this zap no mapping of the file reaches the core, however mmap races it.
            st.claims[core] = 0;
            st.owner_maps[core] = None;
            if let Some(m) = &self.mapping {
                let r = sh.layout.cores[core];
                m.zap(
                    r.staging.offset,
                    r.staging.size + r.status.size + r.data.size,
                );
            }
        }
        Ok(())
    }

    /// Page fault on one of this file's mappings: map the page (and the rest of its region, up
    /// to `FAULT_AROUND` pages) only while this file owns the core, under the lock that RELEASE,
    /// close and unbind take to revoke it. Anything else gets SIGBUS.
    fn fault(&self, f: &kshim::Fault) {
        let sh = &self.shared;
        let page = kernel::page::PAGE_SIZE as u64;
        let Some(offset) = f.pgoff().checked_mul(page) else {
            return;
        };
        let st = sh.state.lock();
        let Some(region) = sh.layout.find_user_region(offset, page) else {
            return;
        };
        if st.gone || st.claims[region.core as usize] != self.id {
            return;
        }
        let npages = ((region.offset + region.size - offset) / page).min(FAULT_AROUND);
        if f.insert(sh.carve, offset, npages).is_err() {
            pr_warn!("fault at offset {:#x} outside the carve-out\n", offset);
        }
    }
}

/// Pages mapped per fault (the faulting one and the following ones of its region): 2 MiB, so a
/// 64 MiB data slice takes 32 faults, and the device lock is held for at most 512 inserts.
const FAULT_AROUND: u64 = 512;

kshim::vm_fault_handler!(DnvmFile);

#[vtable]
impl MiscDevice for DnvmFile {
    type Ptr = KBox<Self>;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        kshim::check_open(file)?;
        let shared = DevNode::from_registration(misc).shared.clone();
        let id = {
            let mut st = shared.state.lock();
            st.next_file += 1;
            st.next_file
        };
        Ok(KBox::new(
            DnvmFile {
                shared,
                id,
                mapping: FileMapping::of(file),
            },
            GFP_KERNEL,
        )?)
    }

    fn mmap(me: &DnvmFile, _file: &File, vma: &VmaNew) -> Result {
        let sh = &me.shared;
        let page = kernel::page::PAGE_SIZE as u64;
        let offset = (kshim::vma_pgoff(vma) as u64)
            .checked_mul(page)
            .ok_or(EINVAL)?;
        let len = (vma.end() - vma.start()) as u64;
        if vma.flags() & vmflags::SHARED == 0 {
            return Err(EINVAL);
        }
        let region = sh.layout.find_user_region(offset, len).ok_or(EINVAL)?;
        let cache = match region.cache {
            DNVM_CACHE_WC => Cache::WriteCombine,
            DNVM_CACHE_CACHED => Cache::Cached,
            _ => return Err(EACCES),
        };
        vma.try_clear_mayexec()?;
        vma.set_dontcopy();
        vma.set_dontexpand();
        let mut st = sh.state.lock();
        // Early, clear refusal; the authoritative check is in `fault`, at every page.
        if st.gone || st.claims[region.core as usize] != me.id {
            return Err(EACCES);
        }
        // vm_pgoff is relative to the carve-out base, which is how the layout reports offsets.
        // Nothing is mapped here: pages come at fault time (see `fault`).
        kshim::map_on_fault(vma, cache)?;
        st.stats.mmaps += 1;
        Ok(())
    }

    fn ioctl(me: &DnvmFile, file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let sh = &me.shared;
        let user = UserPtr::from_addr(arg);
        let c = decode_ioctl(cmd)?;
        if needs_write(c)
            && file.flags() & kernel::fs::file::flags::O_ACCMODE
                == kernel::fs::file::flags::O_RDONLY
        {
            return Err(EBADF);
        }
        match c {
            Cmd::GetInfo => {
                let info = sh.info(&sh.state.lock());
                UserSlice::new(user, core::mem::size_of::<DnvmInfo>())
                    .writer()
                    .write(&info)?;
            }
            Cmd::GetLayout => {
                let l = sh.layout.to_abi();
                UserSlice::new(user, core::mem::size_of::<DnvmLayout>())
                    .writer()
                    .write(&l)?;
            }
            c @ (Cmd::Claim | Cmd::Release) => {
                let a: DnvmClaim = UserSlice::new(user, core::mem::size_of::<DnvmClaim>())
                    .reader()
                    .read()?;
                me.claim(&a, c == Cmd::Claim)?;
            }
            Cmd::ControllerInit => {
                let mut st = sh.state.lock();
                if claimed_mask(&st) != 0 {
                    return Err(EBUSY);
                }
                sh.controller_init(&mut st)?;
            }
            Cmd::SetArbitration => {
                let a: DnvmArbitration =
                    UserSlice::new(user, core::mem::size_of::<DnvmArbitration>())
                        .reader()
                        .read()?;
                validate_arbitration(&a)?;
                let mut st = sh.state.lock();
                let c = st.ctrl.ctrl.as_mut().ok_or(ENODEV)?;
                if !c.wrr {
                    return Err(kshim::eopnotsupp());
                }
                c.set_arbitration(&Host { sh }, a).map_err(nvme_errno)?;
            }
            Cmd::GetStats => {
                let st = sh.state.lock();
                let mut s = st.stats;
                // Computed from the claims, so a release by close is seen too.
                s.claimed_mask = claimed_mask(&st);
                if let Some(c) = &st.ctrl.ctrl {
                    s.admin_commands += c.commands;
                    s.admin_errors += c.errors;
                }
                drop(st);
                UserSlice::new(user, core::mem::size_of::<DnvmStats>())
                    .writer()
                    .write(&s)?;
            }
        }
        Ok(0)
    }
}
