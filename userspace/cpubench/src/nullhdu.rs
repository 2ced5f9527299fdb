// SPDX-License-Identifier: MIT OR Apache-2.0
//! The null HDU: register page, staging, status and data regions in ordinary memory, and a
//! device step that completes a started batch at once (START → 0, DONE → 1, rev 2 status
//! words → done). Whoever calls [`NullHdu::step`] pays for the device (the bench thread in
//! the CPU cases, so the device's work is counted against the library).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use directnvm_abi::*;
use nvmedl::platform::{CoreMapping, Platform, Region};
use nvmedl::{Device, Error, Handle, HandleOptions};

pub const PAGE: usize = 4096;
const STAGING_ENTRIES: u32 = 256;
const DATA_BYTES: usize = 1 << 20;

/// Page-aligned zeroed memory.
struct Mem {
    ptr: *mut u8,
    layout: Layout,
}

impl Mem {
    fn new(len: usize) -> Mem {
        let layout = Layout::from_size_align(len.div_ceil(PAGE) * PAGE, PAGE).expect("layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        Mem { ptr, layout }
    }
    fn region(&self) -> Region {
        Region { ptr: self.ptr, bus: self.ptr as u64, len: self.layout.size() }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

/// The null HDU's memory: register page, staging, status, data.
pub struct NullHdu {
    regs: Mem,
    staging: Mem,
    status: Mem,
    data: Mem,
    revision: u32,
}

// SAFETY: plain heap memory; one thread drives it at a time (the bench thread).
unsafe impl Send for NullHdu {}
// SAFETY: as above.
unsafe impl Sync for NullHdu {}

impl NullHdu {
    fn reg(&self, r: HduReg) -> *mut u64 {
        // SAFETY: a register slot (offset < 0x40) inside the 4 KiB page.
        unsafe { self.regs.ptr.cast::<u64>().add(r.slot()) }
    }

    /// The device: complete a started batch at once; false if none was started.
    #[inline]
    pub fn step(&self) -> bool {
        // SAFETY: register slots and status words inside the allocations; volatile like MMIO.
        unsafe {
            if self.reg(HduReg::Start).read_volatile() == 0 {
                return false;
            }
            if Revision::from_number(self.revision).is_some_and(Revision::has_status) {
                let n = self.reg(HduReg::Nreqs).read_volatile() as usize;
                let words = self.status.ptr.cast::<u32>();
                for i in 0..n.min(STAGING_ENTRIES as usize) {
                    words.add(i).write_volatile(DNVM_STATUS_DONE);
                }
            }
            // Another thread may play the device (`idle.rs`): the status words before DONE.
            fence(Ordering::Release);
            self.reg(HduReg::Start).write_volatile(0);
            self.reg(HduReg::Done).write_volatile(HDU_DONE_BIT);
        }
        true
    }
}

struct NullPlatform(Arc<NullHdu>);
struct NullCore(Arc<NullHdu>);

fn caps(rev: u32) -> HduCaps {
    if Revision::from_number(rev).is_some_and(Revision::has_caps) {
        HduCaps { engines: 1, queue_depth_log2: 10, max_nreqs: STAGING_ENTRIES, dispatch_depth: 64, max_xfer_pages: 32, start_queue: 0 }
    } else {
        HduCaps::REV1
    }
}

impl CoreMapping for NullCore {
    fn regs(&self) -> *mut u64 {
        self.0.regs.ptr.cast()
    }
    fn hdu_info(&self) -> HduInfo {
        HduInfo {
            abi_version: DNVM_ABI_VERSION,
            revision: self.0.revision,
            engines: 1,
            caps: caps(self.0.revision).to_reg(),
            ..HduInfo::default()
        }
    }
    fn staging(&self) -> Region {
        self.0.staging.region()
    }
    fn status(&self) -> Region {
        self.0.status.region()
    }
    fn data(&self) -> Region {
        self.0.data.region()
    }
    fn reset(&self) -> nvmedl::Result<()> {
        Err(Error::Revision)
    }
}

impl Platform for NullPlatform {
    fn info(&self) -> nvmedl::Result<DnvmInfo> {
        Ok(DnvmInfo {
            abi_version: DNVM_ABI_VERSION,
            reserved: 0,
            cores: 1,
            engines: 1,
            staging_entries: STAGING_ENTRIES,
            io_queue_depth: 1024,
            lba_size: DNVM_LBA_SIZE,
            max_transfer: 128 << 10,
            capacity_lbas: 1 << 30,
            carveout_phys: 0,
            carveout_size: 0,
            flags: DNVM_INFO_READY,
            nvme_version: 0,
            serial: [0; 20],
            model: [0; 40],
            firmware: [0; 8],
            arbitration: [0; 4],
        })
    }
    fn layout(&self) -> nvmedl::Result<DnvmLayout> {
        Err(Error::Revision)
    }
    fn open_core(&self, core: u32) -> nvmedl::Result<Box<dyn CoreMapping>> {
        if core != 0 {
            return Err(Error::InvalidArgument);
        }
        Ok(Box::new(NullCore(self.0.clone())))
    }
    fn hdu_info(&self, _core: u32) -> nvmedl::Result<HduInfo> {
        Ok(NullCore(self.0.clone()).hdu_info())
    }
    fn reset_hdu(&self, _core: u32) -> nvmedl::Result<()> {
        Err(Error::Revision)
    }
    fn set_arbitration(&self, _a: DnvmArbitration) -> nvmedl::Result<()> {
        Err(Error::Revision)
    }
    fn controller_init(&self) -> nvmedl::Result<()> {
        Ok(())
    }
}

impl NullHdu {
    /// A null HDU of revision `rev`.
    pub fn new(rev: u32) -> Arc<NullHdu> {
        Arc::new(NullHdu {
            regs: Mem::new(PAGE),
            staging: Mem::new(STAGING_ENTRIES as usize * DNVM_ENTRY_SIZE),
            status: Mem::new(PAGE),
            data: Mem::new(DATA_BYTES),
            revision: rev,
        })
    }
}

/// A handle on a fresh null HDU of revision `rev` with `opts`.
pub fn null_handle(rev: u32, opts: HandleOptions) -> Result<(Arc<NullHdu>, Handle), String> {
    let hdu = NullHdu::new(rev);
    let dev = Device::from_platform(Arc::new(NullPlatform(hdu.clone()))).map_err(|e| e.to_string())?;
    let h = dev.handle_with(0, opts).map_err(|e| e.to_string())?;
    Ok((hdu, h))
}
