//! `nvmedl`: inspect and administer a DirectNVM engine, and move LBAs to and from files.
//!
//! ```text
//! nvmedl [--device PATH] info | layout | identify
//! nvmedl [--device PATH] read   <core> <lba> <bytes> <file>     SSD -> file
//! nvmedl [--device PATH] write  <core> <lba> <file>             file -> SSD (padded to 4 KiB)
//! nvmedl [--device PATH] verify <core> <lba> <file>             compare SSD with file
//! nvmedl [--device PATH] reset  <core>                          HDU_IOC_RESET (rev 2)
//! nvmedl [--device PATH] reset  controller                      CONTROLLER_INIT + engine queue reset
//! nvmedl [--device PATH] arbitration <burst> <high> <medium> <low>   (weights minus one)
//! ```
//! Exit status: 0 success, 1 failure (verify mismatch included), 2 usage.

use std::process::ExitCode;

use directnvm_abi::*;
use nvmedl::{Device, Error, Handle};

fn usage() -> ExitCode {
    eprintln!(
        "usage: nvmedl [--device PATH] <command>\n  info | layout | identify\n  read <core> <lba> <bytes> <file>\n  write <core> <lba> <file>\n  verify <core> <lba> <file>\n  reset <core> | reset controller\n  arbitration <burst> <high> <medium> <low>"
    );
    ExitCode::from(2)
}

fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim_matches(|c: char| c == ' ' || c == '\0').to_string()
}

fn info(dev: &Device) -> Result<(), Error> {
    let i = dev.info();
    println!("abi_version     {}", i.abi_version);
    println!("ready           {}", i.flags & DNVM_INFO_READY != 0);
    println!("arbitration     {}", if i.flags & DNVM_INFO_WRR != 0 { "weighted round robin" } else { "round robin" });
    println!("cores           {}", i.cores);
    println!("engines/hdu     {}", i.engines);
    println!("staging_entries {}", i.staging_entries);
    println!("io_queue_depth  {}", i.io_queue_depth);
    println!("capacity        {} LBAs of {} B ({} MiB)", i.capacity_lbas, i.lba_size, (i.capacity_lbas * u64::from(i.lba_size)) >> 20);
    println!("max_transfer    {} B", i.max_transfer);
    println!("carveout        {:#x}+{:#x}", i.carveout_phys, i.carveout_size);
    for c in 0..i.cores {
        match dev.hdu_info(c) {
            Ok(h) => {
                let caps = HduCaps::from_reg(h.caps);
                println!(
                    "hdu{c}            rev {} at {:#x}, {} engine(s), max_nreqs {}, max_xfer {} KiB, start queue {}",
                    h.revision,
                    h.user_phys,
                    h.engines,
                    caps.max_nreqs,
                    caps.max_xfer_pages * 4,
                    caps.start_queue
                );
            }
            Err(e) => println!("hdu{c}            {e}"),
        }
    }
    Ok(())
}

fn identify(dev: &Device) -> Result<(), Error> {
    let i = dev.info();
    if i.flags & DNVM_INFO_READY == 0 {
        return Err(Error::NotReady);
    }
    println!("model           {}", text(&i.model));
    println!("serial          {}", text(&i.serial));
    println!("firmware        {}", text(&i.firmware));
    println!("nvme_version    {}.{}.{}", i.nvme_version >> 16, (i.nvme_version >> 8) & 0xff, i.nvme_version & 0xff);
    println!("namespace 1     {} LBAs x {} B", i.capacity_lbas, i.lba_size);
    let a = i.arbitration;
    println!("arbitration     burst 2^{} weights high {} medium {} low {}", a[0], a[1] as u32 + 1, a[2] as u32 + 1, a[3] as u32 + 1);
    Ok(())
}

fn layout(dev: &Device) -> Result<(), Error> {
    let l = dev.layout()?;
    println!("{:<8} {:>5} {:>12} {:>12} {:>10} cache", "kind", "core", "offset", "phys", "size");
    for r in &l.regions[..(l.count as usize).min(l.regions.len())] {
        let kind = match r.kind {
            DNVM_REGION_ADMIN => "admin",
            DNVM_REGION_STAGING => "staging",
            DNVM_REGION_STATUS => "status",
            DNVM_REGION_DATA => "data",
            _ => "?",
        };
        let core = if r.core == DNVM_NO_CORE { "-".to_string() } else { r.core.to_string() };
        let cache = match r.cache {
            DNVM_CACHE_WC => "wc",
            DNVM_CACHE_CACHED => "cached",
            _ => "kernel",
        };
        println!("{kind:<8} {core:>5} {:>#12x} {:>#12x} {:>10} {cache}", r.offset, r.phys, r.size);
    }
    Ok(())
}

/// Move `len` bytes between the SSD at `lba` and `data`, in chunks of one buffer.
fn transfer(h: &mut Handle, lba: u64, data: &mut [u8], write: bool) -> Result<(), Error> {
    let chunk = (h.max_request() as usize).min(1 << 20).min(h.data_size() / 2).max(4096) / 4096 * 4096;
    let mut buf = h.buf_alloc(chunk)?;
    let mut off = 0;
    while off < data.len() {
        let n = (data.len() - off).min(chunk);
        let len = n.div_ceil(4096) * 4096;
        let req_lba = lba + (off / 512) as u64;
        let r = nvmedl::Request::read(&buf, req_lba).len(len as u32);
        if write {
            buf.as_mut_slice()[..n].copy_from_slice(&data[off..off + n]);
            buf.as_mut_slice()[n..len].fill(0);
            h.execute(nvmedl::Request::write(&buf, req_lba).len(len as u32))?;
        } else {
            h.execute(r)?;
            data[off..off + n].copy_from_slice(&buf.as_slice()[..n]);
        }
        off += n;
    }
    h.buf_free(buf)
}

fn run(args: &[String]) -> Result<ExitCode, Error> {
    let mut args = args.to_vec();
    let mut path = nvmedl::chardev::DEFAULT_DEVICE.to_string();
    if args.first().map(String::as_str) == Some("--device") && args.len() > 1 {
        path = args[1].clone();
        args.drain(..2);
    }
    let Some(cmd) = args.first().cloned() else { return Ok(usage()) };
    let dev = Device::open_path(&path)?;
    let n = |i: usize| args.get(i).and_then(|s| num(s));
    match (cmd.as_str(), args.len()) {
        ("info", 1) => info(&dev)?,
        ("layout", 1) => layout(&dev)?,
        ("identify", 1) => identify(&dev)?,
        ("reset", 2) if args[1] == "controller" => {
            if let Err(e) = dev.controller_init() {
                match e {
                    Error::Revision => eprintln!("nvmedl: rev 1 engines keep their NVMe queue pointers once a core was used; re-creating the queues needs a power cycle"),
                    Error::Busy => eprintln!("nvmedl: a core is claimed or an HDU is open; close every user first"),
                    _ => {}
                }
                return Err(e);
            }
            println!("controller: re-initialised (I/O queues re-created, engines' queue pointers reset)");
        }
        ("reset", 2) => {
            let Some(core) = n(1) else { return Ok(usage()) };
            dev.reset_hdu(core as u32)?;
            println!("hdu{core}: reset");
        }
        ("arbitration", 5) => {
            let (Some(burst), Some(high), Some(medium), Some(low)) = (n(1), n(2), n(3), n(4)) else { return Ok(usage()) };
            dev.set_arbitration(DnvmArbitration { burst: burst as u32, high: high as u32, medium: medium as u32, low: low as u32 })?;
            println!("arbitration: burst {burst} high {high} medium {medium} low {low}");
        }
        ("read", 5) => {
            let (Some(core), Some(lba), Some(bytes)) = (n(1), n(2), n(3)) else { return Ok(usage()) };
            let mut h = dev.handle(core as u32)?;
            let mut data = vec![0u8; bytes as usize];
            transfer(&mut h, lba, &mut data, false)?;
            std::fs::write(&args[4], &data).map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc_eio())))?;
            println!("read {bytes} bytes at LBA {lba} to {}", args[4]);
        }
        ("write", 4) | ("verify", 4) => {
            let (Some(core), Some(lba)) = (n(1), n(2)) else { return Ok(usage()) };
            let mut data = std::fs::read(&args[3]).map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc_eio())))?;
            let mut h = dev.handle(core as u32)?;
            if cmd == "write" {
                transfer(&mut h, lba, &mut data, true)?;
                println!("wrote {} bytes at LBA {lba} from {}", data.len(), args[3]);
            } else {
                let mut disk = vec![0u8; data.len()];
                transfer(&mut h, lba, &mut disk, false)?;
                if let Some(i) = disk.iter().zip(&data).position(|(a, b)| a != b) {
                    println!("verify: MISMATCH at byte {i} (LBA {})", lba + (i / 512) as u64);
                    return Ok(ExitCode::from(1));
                }
                println!("verify: {} bytes at LBA {lba} match {}", data.len(), args[3]);
            }
        }
        _ => return Ok(usage()),
    }
    Ok(ExitCode::SUCCESS)
}

fn libc_eio() -> i32 {
    5
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("nvmedl: {e}");
            ExitCode::from(1)
        }
    }
}
