// SPDX-License-Identifier: MIT OR Apache-2.0
//! Backend on the kernel's character devices: `/dev/directnvm` (info, layout, claims, mmap of
//! the carve-out regions) and `/dev/hduN` (exclusive open, mmap of the user register page).
//! Only the control path makes system calls; see `DESIGN.md` §3 for the kernel side.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use directnvm_abi::*;

use crate::error::{Error, Result};
use crate::platform::{core_regions, CoreMapping, Platform, Region};

/// Default engine device node.
pub const DEFAULT_DEVICE: &str = "/dev/directnvm";

fn open(path: &str) -> Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| Error::InvalidArgument)?;
    // SAFETY: `c` is a valid NUL-terminated string; the returned fd is owned below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Error::last_os());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl<T>(fd: &OwnedFd, cmd: u32, arg: *mut T) -> Result<()> {
    // SAFETY: `cmd` encodes size_of::<T>() (see `directnvm_abi::ioctl`) and `arg` points to a T (or is null
    // for argument-less commands).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, arg) };
    if r < 0 {
        Err(Error::last_os())
    } else {
        Ok(())
    }
}

/// A shared mapping, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is process-wide memory; ownership moves with the value.
unsafe impl Send for Mapping {}
// SAFETY: a shared `&Mapping` only reads `ptr` and `len`; the mapped bytes are reached through
// raw pointers whose users synchronise (one handle per core), as with `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(fd: &OwnedFd, len: usize, offset: u64) -> Result<Mapping> {
        // SAFETY: mapping a device file; the kernel validates offset, length and ownership.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os());
        }
        Ok(Mapping { ptr: p.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and are unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// `/dev/directnvm`, opened once and shared by every handle of the process.
pub struct CharDev {
    fd: Arc<OwnedFd>,
    layout: DnvmLayout,
    hdu_prefix: String,
}

impl CharDev {
    /// Open `path` (normally [`DEFAULT_DEVICE`]); HDUs are `/dev/hdu<core>`.
    pub fn open(path: &str) -> Result<CharDev> {
        let fd = open(path)?;
        let mut layout = DnvmLayout { count: 0, reserved: 0, regions: [DnvmRegion::default(); DNVM_MAX_REGIONS] };
        ioctl(&fd, DNVM_IOC_GET_LAYOUT, &mut layout)?;
        Ok(CharDev { fd: Arc::new(fd), layout, hdu_prefix: "/dev/hdu".into() })
    }

    fn open_hdu(&self, core: u32) -> Result<(OwnedFd, HduInfo)> {
        let fd = open(&format!("{}{core}", self.hdu_prefix))?;
        let mut info = HduInfo::default();
        ioctl(&fd, HDU_IOC_GET_INFO, &mut info)?;
        if info.abi_version != DNVM_ABI_VERSION {
            return Err(Error::Revision);
        }
        Ok((fd, info))
    }

    /// Raw `DNVM_IOC_GET_STATS`.
    pub fn stats(&self) -> Result<DnvmStats> {
        let mut s = DnvmStats::default();
        ioctl(&self.fd, DNVM_IOC_GET_STATS, &mut s)?;
        Ok(s)
    }
}

impl Platform for CharDev {
    fn info(&self) -> Result<DnvmInfo> {
        // SAFETY: DnvmInfo is plain old data; all-zero is a valid value.
        let mut info: DnvmInfo = unsafe { core::mem::zeroed() };
        ioctl(&self.fd, DNVM_IOC_GET_INFO, &mut info)?;
        if info.abi_version != DNVM_ABI_VERSION {
            return Err(Error::Revision);
        }
        Ok(info)
    }

    fn layout(&self) -> Result<DnvmLayout> {
        Ok(self.layout)
    }

    fn open_core(&self, core: u32) -> Result<Box<dyn CoreMapping>> {
        let [st, ss, sd] = core_regions(&self.layout, core).ok_or(Error::InvalidArgument)?;
        let mut claim = DnvmClaim { core, flags: 0 };
        ioctl(&self.fd, DNVM_IOC_CLAIM, &mut claim).map_err(|e| if e == Error::Os(libc::EBUSY) { Error::Busy } else { e })?;
        // From here on, dropping `m` releases the claim (and unmaps first).
        let mut m =
            ChardevCore { dev: self.fd.clone(), core, maps: Vec::new(), hdu: None, info: HduInfo::default(), regions: [st, ss, sd] };
        let (hfd, info) = self.open_hdu(core).map_err(|e| if e == Error::Os(libc::EBUSY) { Error::Busy } else { e })?;
        m.maps.push(Mapping::new(&hfd, DNVM_PAGE_SIZE as usize, 0)?);
        m.hdu = Some(hfd);
        m.info = info;
        for r in [st, ss, sd] {
            m.maps.push(Mapping::new(&self.fd, r.size as usize, r.offset)?);
        }
        Ok(Box::new(m))
    }

    fn hdu_info(&self, core: u32) -> Result<HduInfo> {
        Ok(self.open_hdu(core)?.1)
    }

    fn reset_hdu(&self, core: u32) -> Result<()> {
        let (fd, _) = self.open_hdu(core)?;
        ioctl::<u8>(&fd, HDU_IOC_RESET, core::ptr::null_mut()).map_err(map_reset)
    }

    fn set_arbitration(&self, mut a: DnvmArbitration) -> Result<()> {
        ioctl(&self.fd, DNVM_IOC_SET_ARBITRATION, &mut a)
    }

    /// Re-create the controller's queues and put the engines back in step with them
    /// (docs/design.md "Controller re-init"): hold every HDU open (nobody can START meanwhile;
    /// `Busy` if one is in use), refuse on rev 1 once a core was claimed since the queues were
    /// created (`Revision`: its engines keep their queue pointers until power-up), else
    /// CONTROLLER_INIT and, on rev 2, HDU_IOC_RESET_QUEUES on every HDU.
    fn controller_init(&self) -> Result<()> {
        let cores = self.info()?.cores;
        let mut hdus = Vec::with_capacity(cores as usize);
        for core in 0..cores {
            hdus.push(self.open_hdu(core).map_err(|e| if e == Error::Os(libc::EBUSY) { Error::Busy } else { e })?);
        }
        // Read after the HDUs are held: no I/O can start between this check and the re-init.
        let info = self.info()?;
        let rev1 = hdus.iter().any(|(_, i)| !Revision::from_number(i.revision).is_some_and(Revision::can_reset));
        if rev1 && info.flags & DNVM_INFO_QUEUES_USED != 0 {
            return Err(Error::Revision);
        }
        ioctl::<u8>(&self.fd, DNVM_IOC_CONTROLLER_INIT, core::ptr::null_mut()).map_err(|e| {
            if e == Error::Os(libc::EBUSY) {
                Error::Busy
            } else {
                e
            }
        })?;
        if !rev1 {
            for (fd, _) in &hdus {
                ioctl::<u8>(fd, HDU_IOC_RESET_QUEUES, core::ptr::null_mut())?;
            }
        }
        Ok(())
    }
}

fn map_reset(e: Error) -> Error {
    if e == Error::Os(libc::EOPNOTSUPP) {
        Error::Revision
    } else {
        e
    }
}

/// A claimed core on the character devices.
struct ChardevCore {
    dev: Arc<OwnedFd>,
    core: u32,
    /// HDU page, staging, status, data (in that order once complete).
    maps: Vec<Mapping>,
    hdu: Option<OwnedFd>,
    info: HduInfo,
    regions: [DnvmRegion; 3],
}

impl ChardevCore {
    fn region(&self, i: usize) -> Region {
        Region { ptr: self.maps[1 + i].ptr, bus: self.regions[i].phys, len: self.regions[i].size as usize }
    }
}

impl CoreMapping for ChardevCore {
    fn regs(&self) -> *mut u64 {
        self.maps[0].ptr.cast()
    }
    fn hdu_info(&self) -> HduInfo {
        self.info
    }
    fn staging(&self) -> Region {
        self.region(0)
    }
    fn status(&self) -> Region {
        self.region(1)
    }
    fn data(&self) -> Region {
        self.region(2)
    }
    fn reset(&self) -> Result<()> {
        let fd = self.hdu.as_ref().ok_or(Error::NotReady)?;
        ioctl::<u8>(fd, HDU_IOC_RESET, core::ptr::null_mut()).map_err(map_reset)
    }
}

impl Drop for ChardevCore {
    fn drop(&mut self) {
        self.maps.clear();
        self.hdu = None;
        let mut claim = DnvmClaim { core: self.core, flags: 0 };
        let _ = ioctl(&self.dev, DNVM_IOC_RELEASE, &mut claim);
    }
}
