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

/// The unsafe shim (shared with hdu.ko, which uses other parts of it).
#[allow(dead_code)]
#[path = "../userspace/abi/kernel/kshim.rs"]
mod kshim;

/// The shared ABI (register offsets, ioctl structs), included from userspace/abi/src/abi.rs.
#[allow(dead_code, unreachable_pub)]
mod abi {
    include!("../userspace/abi/src/abi.rs");
}

/// Carve-out partitioning (shared with userspace's in-process backend).
#[allow(dead_code, unreachable_pub)]
mod layout;

/// NVMe controller bring-up: the protocol crate's (userspace/abi/src/bringup.rs), shared with the
/// test hosts over the controller model.
use abi::bringup as nvme;

use abi::*;
use kshim::{Cache, DevresIoMem, FileMapping, PhysClaim, PhysWindow, WcMap};
use layout::{Layout, LayoutParams};

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
        (&*bar).try_write32(val, off).map_err(|_| nvme::NvmeError::Bus)
    }
    fn mem_read(&self, off: usize, buf: &mut [u8]) -> Result<(), nvme::NvmeError> {
        self.sh.admin.read_bytes(off, buf).map_err(|_| nvme::NvmeError::Bus)
    }
    fn mem_write(&self, off: usize, buf: &[u8]) -> Result<(), nvme::NvmeError> {
        self.sh.admin.write_bytes(off, buf).map_err(|_| nvme::NvmeError::Bus)
    }
    fn mem_bus(&self) -> u64 {
        self.sh.layout.admin.phys
    }
    fn read_barrier(&self) {
        kshim::dma_rmb();
    }
    fn sleep_us(&self, us: u32) {
        kernel::time::delay::fsleep(kernel::time::Delta::from_micros(us as i64));
    }
}

fn nvme_errno(e: nvme::NvmeError) -> Error {
    match e {
        nvme::NvmeError::NoController => ENODEV,
        nvme::NvmeError::Bus => ENXIO,
        nvme::NvmeError::Timeout(_) => ETIMEDOUT,
        nvme::NvmeError::Fatal | nvme::NvmeError::Lost | nvme::NvmeError::BadCompletion | nvme::NvmeError::Status { .. } => EIO,
        nvme::NvmeError::BadLbaFormat | nvme::NvmeError::TooFewQueues(_) | nvme::NvmeError::BadConfig(_) => EINVAL,
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
                    if c.wrr { "weighted round robin" } else { "round robin (CAP.AMS has no WRR)" }
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

/// Name of a region kind in debugfs.
fn kind_name(kind: u32) -> &'static str {
    match kind {
        DNVM_REGION_ADMIN => "admin",
        DNVM_REGION_STAGING => "staging",
        DNVM_REGION_STATUS => "status",
        DNVM_REGION_DATA => "data",
        _ => "?",
    }
}

/// debugfs `directnvm/layout`: `KIND CORE OFFSET PHYS SIZE CACHE` per region, as GET_LAYOUT.
fn debugfs_layout(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let l = sh.layout.to_abi();
    writeln!(f, "# kind core offset phys size cache")?;
    for r in &l.regions[..l.count as usize] {
        let cache = match r.cache {
            DNVM_CACHE_WC => "wc",
            DNVM_CACHE_CACHED => "cached",
            _ => "none",
        };
        if r.core == DNVM_NO_CORE {
            writeln!(f, "{} - {:#x} {:#x} {:#x} {}", kind_name(r.kind), r.offset, r.phys, r.size, cache)?;
        } else {
            writeln!(f, "{} {} {:#x} {:#x} {:#x} {}", kind_name(r.kind), r.core, r.offset, r.phys, r.size, cache)?;
        }
    }
    Ok(())
}

/// debugfs `directnvm/claims`: `core N free` or `core N file ID` per core, then the flags.
fn debugfs_claims(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let st = sh.state.lock();
    for (i, &owner) in st.claims[..sh.layout.params.cores as usize].iter().enumerate() {
        if owner == 0 {
            writeln!(f, "core {i} free")?;
        } else {
            writeln!(f, "core {i} file {owner}")?;
        }
    }
    writeln!(f, "queues_used {}", st.queues_used as u32)
}

/// debugfs `directnvm/admin_log`: the controller's recent admin commands, oldest first:
/// `SEQ OPCODE CID CDW10 STATUS` (status 0xffff: timed out).
fn debugfs_admin_log(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let st = sh.state.lock();
    let Some(c) = &st.ctrl.ctrl else {
        return match st.ctrl.last_error {
            Some(e) => writeln!(f, "# controller not up: {e:?}"),
            None => writeln!(f, "# controller not up"),
        };
    };
    writeln!(f, "# commands {} errors {}; seq opcode cid cdw10 status", c.commands, c.errors)?;
    let n = nvme::LOG_ENTRIES as u64;
    for seq in c.commands.saturating_sub(n)..c.commands {
        let e = c.log[(seq % n) as usize];
        writeln!(f, "{seq} {:#04x} {} {:#010x} {:#06x}", e.opcode, e.cid, e.cdw10, e.status)?;
    }
    Ok(())
}

/// debugfs `directnvm/registers`: the controller registers, read live (`NAME VALUE`).
fn debugfs_registers(sh: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use nvme::NvmeHost;
    let h = Host { sh };
    let rd64 = |off: usize| -> Option<u64> {
        Some(h.rd32(off).ok()? as u64 | (h.rd32(off + 4).ok()? as u64) << 32)
    };
    let regs64 = [("CAP", abi::nvme::reg::CAP), ("ASQ", abi::nvme::reg::ASQ), ("ACQ", abi::nvme::reg::ACQ)];
    let regs32 = [("VS", abi::nvme::reg::VS), ("CC", abi::nvme::reg::CC), ("CSTS", abi::nvme::reg::CSTS), ("AQA", abi::nvme::reg::AQA)];
    for (name, off) in regs64 {
        match rd64(off) {
            Some(v) => writeln!(f, "{name} {v:#018x}")?,
            None => writeln!(f, "{name} unavailable")?,
        }
    }
    for (name, off) in regs32 {
        match h.rd32(off) {
            Ok(v) => writeln!(f, "{name} {v:#010x}")?,
            Err(_) => writeln!(f, "{name} unavailable")?,
        }
    }
    Ok(())
}

/// Populate debugfs `directnvm/`.
fn debugfs_files<'a>(sh: &'a Arc<Shared>, d: &ScopedDir<'a, '_>) {
    d.read_callback_file(c_str!("layout"), sh, &debugfs_layout);
    d.read_callback_file(c_str!("claims"), sh, &debugfs_claims);
    d.read_callback_file(c_str!("admin_log"), sh, &debugfs_admin_log);
    d.read_callback_file(c_str!("registers"), sh, &debugfs_registers);
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
            b"ready" => writeln!(f, "{}", st.ctrl.ctrl.is_some() as u32),
            b"capacity_lbas" => writeln!(f, "{}", st.ctrl.ctrl.as_ref().map_or(0, |c| c.capacity_lbas)),
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

/// Per-open-file state of /dev/directnvm.
struct DnvmFile {
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

fn claimed_mask(st: &DevState) -> u64 {
    st.claims.iter().enumerate().filter(|(_, &o)| o != 0).fold(0, |m, (i, _)| m | 1 << i)
}

/// Numbers of the ioctls this device knows (a known number with a wrong size is EINVAL).
const KNOWN_NRS: core::ops::RangeInclusive<u32> = 0x01..=0x07;

/// What a `/dev/directnvm` ioctl number asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    GetInfo,
    GetLayout,
    Claim,
    Release,
    ControllerInit,
    SetArbitration,
    GetStats,
}

/// Decode an ioctl number: the exact number (direction, size, type, nr) of a command, else
/// EINVAL for a known command number with the wrong size or direction, ENOTTY for the rest.
fn decode_ioctl(cmd: u32) -> Result<Cmd> {
    Ok(match cmd {
        DNVM_IOC_GET_INFO => Cmd::GetInfo,
        DNVM_IOC_GET_LAYOUT => Cmd::GetLayout,
        DNVM_IOC_CLAIM => Cmd::Claim,
        DNVM_IOC_RELEASE => Cmd::Release,
        DNVM_IOC_CONTROLLER_INIT => Cmd::ControllerInit,
        DNVM_IOC_SET_ARBITRATION => Cmd::SetArbitration,
        DNVM_IOC_GET_STATS => Cmd::GetStats,
        _ => {
            let known = dnvm_ioc_type(cmd) == DNVM_IOC_MAGIC && KNOWN_NRS.contains(&dnvm_ioc_nr(cmd));
            return Err(if known { EINVAL } else { ENOTTY });
        }
    })
}

/// Check a CLAIM/RELEASE argument against the number of cores; the core index on success.
fn validate_claim(c: &DnvmClaim, cores: u32) -> Result<usize> {
    if c.flags != 0 || c.core >= cores || c.core as usize >= DNVM_MAX_CORES {
        return Err(EINVAL);
    }
    Ok(c.core as usize)
}

/// Check a SET_ARBITRATION argument (burst log2 0..7, weights 0..255).
fn validate_arbitration(a: &DnvmArbitration) -> Result {
    if nvme::arbitration_valid(a) {
        Ok(())
    } else {
        Err(EINVAL)
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
                m.zap(r.staging.offset, r.staging.size + r.status.size + r.data.size);
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
        let Some(offset) = f.pgoff().checked_mul(page) else { return };
        let st = sh.state.lock();
        let Some(region) = sh.layout.find_user_region(offset, page) else { return };
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

/// Commands that change device state need a file opened for writing (EBADF otherwise, like
/// write(2) on a read-only descriptor); read-only opens keep GET_INFO, GET_LAYOUT, GET_STATS.
fn needs_write(c: Cmd) -> bool {
    matches!(c, Cmd::Claim | Cmd::Release | Cmd::ControllerInit | Cmd::SetArbitration)
}

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
        Ok(KBox::new(DnvmFile { shared, id, mapping: FileMapping::of(file) }, GFP_KERNEL)?)
    }

    fn mmap(me: &DnvmFile, _file: &File, vma: &VmaNew) -> Result {
        let sh = &me.shared;
        let page = kernel::page::PAGE_SIZE as u64;
        let offset = (kshim::vma_pgoff(vma) as u64).checked_mul(page).ok_or(EINVAL)?;
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
        if needs_write(c) && file.flags() & kernel::fs::file::flags::O_ACCMODE == kernel::fs::file::flags::O_RDONLY {
            return Err(EBADF);
        }
        match c {
            Cmd::GetInfo => {
                let info = sh.info(&sh.state.lock());
                UserSlice::new(user, core::mem::size_of::<DnvmInfo>()).writer().write(&info)?;
            }
            Cmd::GetLayout => {
                let l = sh.layout.to_abi();
                UserSlice::new(user, core::mem::size_of::<DnvmLayout>()).writer().write(&l)?;
            }
            c @ (Cmd::Claim | Cmd::Release) => {
                let a: DnvmClaim = UserSlice::new(user, core::mem::size_of::<DnvmClaim>()).reader().read()?;
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
                    UserSlice::new(user, core::mem::size_of::<DnvmArbitration>()).reader().read()?;
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
                UserSlice::new(user, core::mem::size_of::<DnvmStats>()).writer().write(&s)?;
            }
        }
        Ok(0)
    }
}

/// Platform driver data.
#[pin_data]
struct DnvmData {
    #[pin]
    node: DevNode,
}

struct DnvmDriver;

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
                    reg <- MiscDeviceRegistration::register(MiscDeviceOptions { name: c_str!("directnvm") }),
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
                m.zap(r.staging.offset, r.staging.size + r.status.size + r.data.size);
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
    let engines: u32 = fw.property_read(DT_PROP_ENGINES_PER_HDU).or(DT_DEFAULT_ENGINES_PER_HDU);
    let staging_entries: u32 = fw.property_read(DT_PROP_STAGING_ENTRIES).or(DT_DEFAULT_STAGING_ENTRIES);
    let io_queue_depth: u32 = fw.property_read(DT_PROP_IO_QUEUE_DEPTH).or(DT_DEFAULT_IO_QUEUE_DEPTH);
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
            && c.window.base.checked_add(c.window.size).is_some_and(|e| e <= dbase.saturating_add(dsize));
        if !inside {
            dev_err!(dev, "carve-out {:#x}+{:#x} is outside the engines' DMA window {:#x}+{:#x}\n",
                c.window.base, c.window.size, dbase, dsize);
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
        data_size: data_size as u64,
        coherent,
    };
    let layout = Layout::compute(params).map_err(|e| {
        dev_err!(dev, "carve-out {:#x}+{:#x} cannot hold the configuration: {:?}\n", c.window.base, c.window.size, e);
        EINVAL
    })?;
    let carve_claim = PhysClaim::new(c.window, c_str!("directnvm-carveout"))?;
    let res = pdev.resource_by_index(0).ok_or(ENODEV)?;
    let bar_claim = PhysClaim::new(PhysWindow { base: res.start(), size: res.size() }, c_str!("directnvm-nvme"))?;
    let admin = WcMap::new(PhysWindow { base: layout.admin.phys, size: layout.admin.size })?;
    let bar = pdev.io_request_by_index(0).ok_or(ENODEV)?.iomap_sized::<BAR_SIZE>()?.into_devres()?;
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

kernel::module_platform_driver! {
    type: DnvmDriver,
    name: "directnvm",
    authors: ["DirectNVM-rs developers"],
    description: "DirectNVM reserved-memory and queue manager",
    license: "GPL",
}

#[cfg(CONFIG_KUNIT = "y")]
#[kernel::prelude::kunit_tests(directnvm_ioctl)]
mod tests {
    use super::*;

    #[test]
    fn every_command_decodes() {
        assert_eq!(decode_ioctl(DNVM_IOC_GET_INFO), Ok(Cmd::GetInfo));
        assert_eq!(decode_ioctl(DNVM_IOC_GET_LAYOUT), Ok(Cmd::GetLayout));
        assert_eq!(decode_ioctl(DNVM_IOC_CLAIM), Ok(Cmd::Claim));
        assert_eq!(decode_ioctl(DNVM_IOC_RELEASE), Ok(Cmd::Release));
        assert_eq!(decode_ioctl(DNVM_IOC_CONTROLLER_INIT), Ok(Cmd::ControllerInit));
        assert_eq!(decode_ioctl(DNVM_IOC_SET_ARBITRATION), Ok(Cmd::SetArbitration));
        assert_eq!(decode_ioctl(DNVM_IOC_GET_STATS), Ok(Cmd::GetStats));
    }

    #[test]
    fn wrong_size_or_direction_is_einval_unknown_is_enotty() {
        let info = core::mem::size_of::<DnvmInfo>();
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, info - 8)), Err(EINVAL));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x01, info + 8)), Err(EINVAL));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x01, info)), Err(EINVAL));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_WRITE, DNVM_IOC_MAGIC, 0x03, 4)), Err(EINVAL));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_NONE, DNVM_IOC_MAGIC, 0x05, 8)), Err(EINVAL));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x00, 8)), Err(ENOTTY));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x08, 8)), Err(ENOTTY));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_READ, DNVM_IOC_MAGIC, 0x7f, 8)), Err(ENOTTY));
        assert_eq!(decode_ioctl(dnvm_ioc(DNVM_IOC_READ, HDU_IOC_MAGIC, 0x01, info)), Err(ENOTTY));
        assert_eq!(decode_ioctl(0), Err(ENOTTY));
    }

    #[test]
    fn claim_arguments() {
        assert_eq!(validate_claim(&DnvmClaim { core: 0, flags: 0 }, 4), Ok(0));
        assert_eq!(validate_claim(&DnvmClaim { core: 3, flags: 0 }, 4), Ok(3));
        assert_eq!(validate_claim(&DnvmClaim { core: 4, flags: 0 }, 4), Err(EINVAL));
        assert_eq!(validate_claim(&DnvmClaim { core: u32::MAX, flags: 0 }, 4), Err(EINVAL));
        assert_eq!(validate_claim(&DnvmClaim { core: 0, flags: 1 }, 4), Err(EINVAL));
        assert_eq!(validate_claim(&DnvmClaim { core: 8, flags: 0 }, 9), Err(EINVAL));
    }

    #[test]
    fn arbitration_arguments() {
        assert_eq!(validate_arbitration(&nvme::DEFAULT_ARBITRATION), Ok(()));
        assert_eq!(validate_arbitration(&DnvmArbitration { burst: 7, high: 255, medium: 255, low: 255 }), Ok(()));
        assert_eq!(validate_arbitration(&DnvmArbitration { burst: 8, high: 0, medium: 0, low: 0 }), Err(EINVAL));
        assert_eq!(validate_arbitration(&DnvmArbitration { burst: 0, high: 256, medium: 0, low: 0 }), Err(EINVAL));
        assert_eq!(validate_arbitration(&DnvmArbitration { burst: 0, high: 0, medium: 256, low: 0 }), Err(EINVAL));
        assert_eq!(validate_arbitration(&DnvmArbitration { burst: 0, high: 0, medium: 0, low: u32::MAX }), Err(EINVAL));
    }
}
