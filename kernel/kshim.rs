// SPDX-License-Identifier: GPL-2.0-only
//! The one place with `unsafe` in the DirectNVM kernel modules (`directnvm.ko` and `hdu.ko` both
//! compile this file as their `kshim` module).
//!
//! It wraps the C helpers of `kshim.c` (reserved memory, `pgprot_*`, the map-on-fault
//! vm_operations, `memremap`, `unmap_mapping_range`) and the two kernel-crate internals that
//! Linux 7.3 keeps private (the raw `struct device *` and `vm_pgoff`). Everything it returns is
//! safe to use.

use core::ffi::{c_int, c_uint, c_ulong, c_void};
use core::ptr::NonNull;
use kernel::{bindings, device, fs::File, mm::virt::VmaNew, prelude::*};

#[repr(C)]
struct RawRmem {
    base: u64,
    size: u64,
    no_map: u32,
    reserved: u32,
}

extern "C" {
    // Kernel structs are passed as `c_void` pointers: bindgen's opaque members make the real
    // types trip `improper_ctypes`, and the C side has the true prototypes (kshim.h).
    fn dnvm_shim_rmem(dev: *mut c_void, idx: c_uint, out: *mut RawRmem) -> c_int;
    fn dnvm_shim_vm_on_fault(vma: *mut c_void, mode: c_uint) -> c_int;
    fn dnvm_shim_fault_pgoff(vmf: *mut c_void) -> u64;
    fn dnvm_shim_fault_insert(
        vmf: *mut c_void,
        phys: bindings::phys_addr_t,
        npages: c_ulong,
        ret: *mut c_uint,
    );
    fn dnvm_shim_memremap_wc(phys: bindings::phys_addr_t, size: usize) -> *mut c_void;
    fn dnvm_shim_memunmap(addr: *mut c_void);
    fn dnvm_shim_zap_mapping(mapping: *mut c_void, start: u64, len: u64);
    fn dnvm_shim_request_mem(start: u64, size: u64, name: *const core::ffi::c_char) -> c_int;
    fn dnvm_shim_release_mem(start: u64, size: u64);
    fn dnvm_shim_add_groups(dev: *mut c_void) -> c_int;
    fn dnvm_shim_dma_rmb();
    fn dnvm_shim_misc_set_owner(misc: *mut c_void);
    fn dnvm_shim_file_owned(file: *mut c_void) -> bool;
}

/// Raw `struct device *` of a device. `Device<Ctx>` is `#[repr(transparent)]` over
/// `Opaque<bindings::device>`, so the cast is a layout identity.
fn raw_dev<Ctx: device::DeviceContext>(d: &device::Device<Ctx>) -> *mut bindings::device {
    core::ptr::from_ref(d).cast::<bindings::device>().cast_mut()
}

/// A physical range this driver owns and may map: a `reg` resource of its own device or its
/// reserved-memory carve-out. Only built in probe from those sources.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PhysWindow {
    /// Physical base address.
    pub(crate) base: u64,
    /// Size in bytes.
    pub(crate) size: u64,
}

/// Attach the module's sysfs attributes (kshim.h `dnvm_module_groups`) to the misc class
/// device `misc`; they go away with it at `misc_deregister`.
pub(crate) fn add_sysfs<T: kernel::miscdevice::MiscDevice>(
    misc: &kernel::miscdevice::MiscDeviceRegistration<T>,
) -> Result {
    // SAFETY: `device()` is the registered, live class device of `misc`.
    kernel::error::to_result(unsafe { dnvm_shim_add_groups(raw_dev(misc.device()).cast()) })
}

/// Exclusive claim of a physical range in `/proc/iomem`, released on drop (see kshim.c for why
/// the kernel crate's `ExclusiveIoMem` is not used).
pub(crate) struct PhysClaim(PhysWindow);

impl PhysClaim {
    /// Claim `win` under `name`; EBUSY if any part of it is claimed already.
    pub(crate) fn new(win: PhysWindow, name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a 'static NUL-terminated string, as the resource tree keeps it.
        let ret = unsafe { dnvm_shim_request_mem(win.base, win.size, name.as_char_ptr()) };
        kernel::error::to_result(ret)?;
        Ok(Self(win))
    }
}

impl Drop for PhysClaim {
    fn drop(&mut self) {
        // SAFETY: releases exactly the range this object claimed.
        unsafe { dnvm_shim_release_mem(self.0.base, self.0.size) };
    }
}

/// The reserved-memory region behind a `memory-region` phandle.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Carveout {
    /// Base and size.
    pub(crate) window: PhysWindow,
    /// The node has the `no-map` property (not in the kernel's linear map).
    pub(crate) no_map: bool,
}

/// Look up `memory-region` entry `idx` of `dev`.
pub(crate) fn carveout(dev: &device::Device<device::Bound>, idx: u32) -> Result<Carveout> {
    let mut raw = RawRmem {
        base: 0,
        size: 0,
        no_map: 0,
        reserved: 0,
    };
    // SAFETY: `raw_dev` gives a valid `struct device *` for the lifetime of `dev`; `raw` is a
    // valid, writable `struct dnvm_shim_rmem` (same repr(C) layout as kshim.h).
    let ret = unsafe { dnvm_shim_rmem(raw_dev(dev).cast(), idx, &mut raw) };
    kernel::error::to_result(ret)?;
    Ok(Carveout {
        window: PhysWindow {
            base: raw.base,
            size: raw.size,
        },
        no_map: raw.no_map != 0,
    })
}

/// Memory type of a user mapping (values match `DNVM_SHIM_MAP_*` in kshim.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Cache {
    /// Device-nGnRE, the type `ioremap` uses: register pages.
    Device = 0,
    /// Normal non-cacheable: carve-out regions (memcpy-safe, matches `memremap(WC)`).
    WriteCombine = 1,
    /// Normal cacheable: only when the engine path is coherent (`dma-coherent`).
    Cached = 2,
}

/// Page offset (`vm_pgoff`) the process asked for.
pub(crate) fn vma_pgoff(vma: &VmaNew) -> usize {
    // SAFETY: `as_ptr` is a valid VMA for the duration of the mmap call; `vm_pgoff` is a plain
    // field that mmap handlers read.
    unsafe { (*vma.as_ptr()).vm_pgoff }
}

/// Prepare `vma` for map-on-fault with memory type `cache`: nothing is mapped now; each fault
/// asks the module (`vm_fault_handler!`), which maps pages only while the file may reach them.
/// So no page can be mapped before the VMA is in the file's mapping tree, where RELEASE, close
/// and unbind zap it (docs/design.md "Claims and mappings").
pub(crate) fn map_on_fault(vma: &VmaNew, cache: Cache) -> Result {
    // SAFETY: `vma` is the VMA under construction in an mmap handler (mmap lock held for
    // writing); the shim only sets its page protection, flags and vm_ops.
    kernel::error::to_result(unsafe { dnvm_shim_vm_on_fault(vma.as_ptr().cast(), cache as c_uint) })
}

/// One page fault on a map-on-fault VMA (valid during `dnvm_rs_fault` only).
pub(crate) struct Fault {
    vmf: *mut c_void,
    ret: *mut c_uint,
}

impl Fault {
    /// File page offset of the faulting address.
    pub(crate) fn pgoff(&self) -> u64 {
        // SAFETY: `vmf` is the live `struct vm_fault` of this fault.
        unsafe { dnvm_shim_fault_pgoff(self.vmf) }
    }

    /// Map the faulting page to byte `off` of `win`, and up to `npages - 1` following pages
    /// (fewer at the end of `win` or of the VMA). Without a call, the fault ends in SIGBUS.
    pub(crate) fn insert(&self, win: PhysWindow, off: u64, npages: u64) -> Result {
        let page = kernel::page::PAGE_SIZE as u64;
        if off % page != 0 || off >= win.size || npages == 0 {
            return Err(EINVAL);
        }
        let npages = npages.min((win.size - off) / page);
        // SAFETY: `vmf` is the live fault and `ret` its result slot; the pages lie inside `win`
        // (checked above), device memory or a no-map carve-out owned by this driver (the only
        // sources of `PhysWindow`), so no kernel RAM is exposed.
        unsafe { dnvm_shim_fault_insert(self.vmf, win.base + off, npages as c_ulong, self.ret) };
        Ok(())
    }
}

/// Define `dnvm_rs_fault`, the fault entry point of the shim's vm_operations, for files of type
/// `$file` (a `MiscDevice` with `Ptr = KBox<$file>`). It calls
/// `$file::fault(&self, &kshim::Fault)`, which must decide and insert under the same lock that
/// revokes the file's right to the pages (and zaps them).
macro_rules! vm_fault_handler {
    ($file:ty) => {
        /// Fault callback of map-on-fault VMAs (called from the C shim).
        #[no_mangle]
        extern "C" fn dnvm_rs_fault(
            private: *mut core::ffi::c_void,
            vmf: *mut core::ffi::c_void,
            ret: *mut core::ffi::c_uint,
        ) {
            // SAFETY: `private` is the faulting VMA's `vm_file->private_data`: the
            // `KBox<$file>` that `MiscDevice::open` returned (`into_foreign` of a box is the
            // raw pointer). The VMA holds a reference to the file, so the box is freed only
            // after the fault returns. Only this module's VMAs use the shim's vm_operations.
            // `vmf` and `ret` are the live fault and its result slot, for this call only.
            let (file, fault) = unsafe {
                (
                    &*private.cast::<$file>(),
                    $crate::kshim::Fault::new(vmf, ret),
                )
            };
            <$file>::fault(file, &fault);
        }
    };
}
pub(crate) use vm_fault_handler;

impl Fault {
    /// Wrap the shim's arguments (used by `vm_fault_handler!` only).
    ///
    /// # Safety
    /// `vmf` must be the live `struct vm_fault *` and `ret` its result slot, both valid for as
    /// long as the returned value is used.
    pub(crate) unsafe fn new(vmf: *mut c_void, ret: *mut c_uint) -> Self {
        Self { vmf, ret }
    }
}

/// A kernel write-combining mapping of part of the carve-out (admin queues, identify page).
pub(crate) struct WcMap {
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: the mapping is plain memory usable from any CPU; accesses go through volatile ops.
unsafe impl Send for WcMap {}
// SAFETY: as above; callers serialise logical access with their own locks.
unsafe impl Sync for WcMap {}

impl WcMap {
    /// Map `win` (must lie in a no-map carve-out).
    pub(crate) fn new(win: PhysWindow) -> Result<Self> {
        let size: usize = win.size.try_into()?;
        // SAFETY: `win` comes from the carve-out, which is no-map, so memremap(WC) creates the
        // only kernel alias and it has the same memory type as the user mappings.
        let p = unsafe { dnvm_shim_memremap_wc(win.base, size) };
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?;
        Ok(Self { ptr, size })
    }

    fn check(&self, off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copy `buf.len()` bytes from offset `off` into `buf`.
    pub(crate) fn read_bytes(&self, off: usize, buf: &mut [u8]) -> Result {
        self.check(off, buf.len())?;
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: in bounds (checked above).
            *b = unsafe { core::ptr::read_volatile(self.ptr.as_ptr().add(off + i)) };
        }
        Ok(())
    }

    /// Copy `buf` to offset `off`.
    pub(crate) fn write_bytes(&self, off: usize, buf: &[u8]) -> Result {
        self.check(off, buf.len())?;
        for (i, b) in buf.iter().enumerate() {
            // SAFETY: in bounds (checked above).
            unsafe { core::ptr::write_volatile(self.ptr.as_ptr().add(off + i), *b) };
        }
        Ok(())
    }
}

impl Drop for WcMap {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `dnvm_shim_memremap_wc` and is unmapped exactly once.
        unsafe { dnvm_shim_memunmap(self.ptr.as_ptr().cast()) };
    }
}

/// The address space of an open device file, kept while that file is open so that unbind can
/// zap its user mappings.
pub(crate) struct FileMapping(NonNull<bindings::address_space>);

// SAFETY: an address_space pointer may be used from any thread; validity is the owner's rule.
unsafe impl Send for FileMapping {}
// SAFETY: `zap` only calls unmap_mapping_range, which does its own locking.
unsafe impl Sync for FileMapping {}

impl FileMapping {
    /// The address space behind `file`.
    pub(crate) fn of(file: &File) -> Option<Self> {
        // SAFETY: `file` is a live file; `f_mapping` is set at open and stays valid while the
        // file (and so its inode) is alive.
        let m = unsafe { (*file.as_ptr()).f_mapping };
        NonNull::new(m).map(Self)
    }

    /// A second handle on the same address space, under the same rule: the owner drops it
    /// (under its lock) before the file it came from is released.
    pub(crate) fn dup(&self) -> Self {
        Self(self.0)
    }

    /// Remove the user mappings of file bytes `[start, start + len)` (`len` 0: to the end) of
    /// the file's inode; later accesses fault with SIGBUS.
    ///
    /// The owner guarantees the file is still open: it drops the `FileMapping` in `release`
    /// (or keeps it inside the file's own private data) under the lock it holds here.
    pub(crate) fn zap(&self, start: u64, len: u64) {
        // SAFETY: per the owner's rule above the address space is alive.
        unsafe { dnvm_shim_zap_mapping(self.0.as_ptr().cast(), start, len) };
    }
}

// --- Older kernels -------------------------------------------------------------------------
//
// The drivers are written against the Rust kernel crate of Linux 7.3. The top-level Kbuild sets
// `cfg(dnvm_pre_7_3)` when building against an older kernel (7.2 is the oldest it accepts);
// these items are the only places that differ, so the drivers themselves have no version cfgs.

/// A device-managed I/O memory mapping (`kernel::io::mem::DevresIoMem` of 7.3; before it, the
/// same thing spelled `Devres<IoMem<'static, SIZE>>`). Both give `try_access()` a guard that
/// dereferences to an `IoMem` with the `Io` accessors.
#[cfg(not(dnvm_pre_7_3))]
pub(crate) use kernel::io::mem::DevresIoMem;
/// See above.
#[cfg(dnvm_pre_7_3)]
pub(crate) type DevresIoMem<const SIZE: usize> =
    kernel::devres::Devres<kernel::io::mem::IoMem<'static, SIZE>>;

/// `EOPNOTSUPP` (the kernel crate of 7.2 has no constant for it).
pub(crate) fn eopnotsupp() -> Error {
    #[cfg(not(dnvm_pre_7_3))]
    return EOPNOTSUPP;
    #[cfg(dnvm_pre_7_3)]
    return Error::from_errno(-(bindings::EOPNOTSUPP as c_int));
}

/// Read barrier between this CPU and bus-mastering devices (`dma_rmb()`): loads after it see
/// at least what the device wrote before the load that precedes it (e.g. a completion entry).
pub(crate) fn dma_rmb() {
    #[cfg(not(dnvm_pre_7_3))]
    kernel::sync::barrier::dma_mb(kernel::sync::barrier::Read);
    // SAFETY: a barrier; no memory is accessed.
    #[cfg(dnvm_pre_7_3)]
    unsafe {
        dnvm_shim_dma_rmb()
    };
}

/// `kernel::of_device_table!` of 7.3 (`TABLE, IdInfo type, [entries]`); before 7.3 the macro
/// also wants the name of the module alias table, which this supplies.
macro_rules! of_device_table {
    // Tokens are forwarded as `tt`: 7.3's macro matches the entry list's brackets.
    ($table:ident, $($rest:tt)*) => {
        #[cfg(not(dnvm_pre_7_3))]
        kernel::of_device_table!($table, $($rest)*);
        #[cfg(dnvm_pre_7_3)]
        kernel::of_device_table!($table, MODULE_OF_TABLE, $($rest)*);
    };
}
pub(crate) use of_device_table;

/// A yes/no module parameter's `value()`: a `bool` from 7.3 on; before, where the kernel crate
/// has no `bool` parameters and `value()` returns a reference, a `&u8` (non-zero = yes).
pub(crate) trait ParamFlag {
    /// Whether the parameter is set.
    fn enabled(self) -> bool;
}

impl ParamFlag for bool {
    fn enabled(self) -> bool {
        self
    }
}

impl ParamFlag for &u8 {
    fn enabled(self) -> bool {
        *self != 0
    }
}

/// Make the open files of the registered misc device `misc` pin this module, as
/// `MiscDeviceRegistration` itself does from 7.3 on (it sets `file_operations.owner`). Before
/// 7.3 the owner is NULL: rmmod would succeed with a file open and the file's next call would
/// run freed code. Call it right after registration; `check_open` closes the window.
pub(crate) fn misc_set_owner<T: kernel::miscdevice::MiscDevice>(
    misc: &kernel::miscdevice::MiscDeviceRegistration<T>,
) {
    #[cfg(dnvm_pre_7_3)]
    {
        let p = core::ptr::from_ref(misc).cast_mut().cast::<c_void>();
        // SAFETY: `MiscDeviceRegistration` is `#[repr(transparent)]` over the registered
        // `struct miscdevice`, which is alive while `misc` is borrowed; the shim only swaps its
        // `fops` for a module-static copy with `.owner` set (kshim.c).
        unsafe { dnvm_shim_misc_set_owner(p) };
    }
    #[cfg(not(dnvm_pre_7_3))]
    let _ = misc;
}

/// Refuse (EAGAIN) an open whose file does not pin this module: before 7.3, an open that came
/// in between the misc registration and `misc_set_owner`. Always true from 7.3 on; checked
/// there too, so the invariant the unload tests rely on is asserted on every kernel.
pub(crate) fn check_open(file: &File) -> Result {
    // SAFETY: `file` is the live file being opened; the shim reads its `f_op->owner`.
    if unsafe { dnvm_shim_file_owned(file.as_ptr().cast()) } {
        Ok(())
    } else {
        Err(EAGAIN)
    }
}

// The ioctl structs of the shared ABI cross the user boundary as plain bytes.
macro_rules! abi_pod {
    ($($t:ident),* $(,)?) => {$(
        // SAFETY: the ABI struct is `#[repr(C)]`, made only of integers and integer arrays with
        // no padding (sizes are asserted in kernel/abi/tests.rs and below), and every bit
        // pattern is a valid value.
        unsafe impl kernel::transmute::FromBytes for crate::abi::ioctl::$t {}
        // SAFETY: as above: no padding, so every byte is initialised.
        unsafe impl kernel::transmute::AsBytes for crate::abi::ioctl::$t {}
    )*};
}
abi_pod!(
    DnvmInfo,
    DnvmRegion,
    DnvmLayout,
    DnvmClaim,
    DnvmArbitration,
    DnvmStats,
    HduInfo,
    HduStats
);

/// Implement `$node::from_registration`, which recovers the pinned `$node` that embeds the misc
/// registration in field `$field`, as `open` and sysfs callbacks need.
///
/// Invariant the caller upholds by construction: every `MiscDeviceRegistration<$file>` is
/// created as the `$field` of a pinned `$node` (the only place that calls `register`).
macro_rules! misc_node {
    ($node:ty, $field:ident, $file:ty) => {
        impl $node {
            fn from_registration(
                reg: &kernel::miscdevice::MiscDeviceRegistration<$file>,
            ) -> &$node {
                let p = core::ptr::from_ref(reg).cast_mut();
                // SAFETY: by the invariant above `reg` is the `$field` of a live `$node`; the
                // misc core holds `misc_mtx` across `open`, and `misc_deregister` (in the
                // node's drop) takes it, so the node outlives the returned borrow.
                unsafe { &*kernel::container_of!(p, $node, $field) }
            }
        }
    };
}
pub(crate) use misc_node;

/// Define `dnvm_rs_show`, the sysfs show entry point the C shim's attributes call, for misc
/// device nodes of type `$node` (with `from_registration`, see `misc_node!`) whose files are
/// `$file`. It calls `$node::show(&self, name: &CStr, &mut Formatter) -> Result` with the
/// attribute's name (EINVAL for a name it does not know).
macro_rules! misc_sysfs_show {
    ($node:ty, $file:ty) => {
        /// sysfs show callback target (called from the C shim's attribute table).
        #[no_mangle]
        extern "C" fn dnvm_rs_show(
            misc: *mut core::ffi::c_void,
            name: *const core::ffi::c_char,
            buf: *mut u8,
        ) -> isize {
            // SAFETY: the C shim passes dev_get_drvdata() of our misc class device, which
            // misc_register sets to the `struct miscdevice`: our `MiscDeviceRegistration`
            // (repr(transparent) over it). kernfs drains show calls before misc_deregister
            // returns, so the registration is alive. sysfs hands a PAGE_SIZE buffer; `name` is
            // the attribute's static NUL-terminated name.
            let (reg, page, name) = unsafe {
                (
                    &*misc.cast::<kernel::miscdevice::MiscDeviceRegistration<$file>>(),
                    core::slice::from_raw_parts_mut(buf, kernel::page::PAGE_SIZE),
                    <core::ffi::CStr as kernel::str::CStrExt>::from_char_ptr(name.cast()),
                )
            };
            let mut f = kernel::str::Formatter::new(page);
            match <$node>::from_registration(reg).show(name, &mut f) {
                Ok(()) => f.bytes_written() as isize,
                Err(e) => e.to_errno() as isize,
            }
        }
    };
}
pub(crate) use misc_sysfs_show;
