// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl`: inspect and administer a DirectNVM engine, and move LBAs to and from files.
//!
//! ```text
//! nvmedl [--device PATH] info [--json] | layout | identify
//! nvmedl [--device PATH] read   <core> <lba> <bytes> <file>     SSD -> file
//! nvmedl [--device PATH] write  <core> <lba> <file>             file -> SSD (padded to 4 KiB)
//! nvmedl [--device PATH] verify <core> <lba> <file>             compare SSD with file
//! nvmedl [--device PATH] reset  <core>                          HDU_IOC_RESET (rev 2)
//! nvmedl [--device PATH] reset  controller                      CONTROLLER_INIT + engine queue reset
//! nvmedl [--device PATH] arbitration <burst> <high> <medium> <low>   (weights minus one)
//! nvmedl advise --service-us US --rate N [--classes R:W,..] [--fraction F] [--max-depth K] [--json]
//! ```
//! The command line is defined in `nvmedl_cli.rs` (clap). Exit status: 0 success, 1 failure
//! (verify mismatch included), 2 usage.

use std::process::ExitCode;

use clap::Parser;
use directnvm_abi::*;
use nvmedl::{Device, Error, Handle};
use nvmedl_tools::advise_report::AdviceJson;
use nvmedl_tools::doctor;
use nvmedl_tools::nvmedl_cli::{Class, Command, NvmedlCli, ResetTarget};
use nvmedl_tools::progress::Progress;
use nvmedl_tools::qos::advisor::{self, AdviceInput};
use nvmedl_tools::qos::mdk;
use nvmedl_tools::EXIT_FAILURE;
use serde::Serialize;

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

/// `nvmedl info --json`: the engine and every HDU.
#[derive(Serialize)]
struct InfoJson {
    abi_version: u32,
    ready: bool,
    wrr: bool,
    cores: u32,
    engines: u32,
    staging_entries: u32,
    io_queue_depth: u32,
    capacity_lbas: u64,
    lba_size: u32,
    max_transfer: u32,
    carveout_phys: u64,
    carveout_size: u64,
    nvme_version: String,
    model: String,
    serial: String,
    firmware: String,
    hdus: Vec<HduJson>,
}

/// One HDU of `nvmedl info --json`: its info, or the error that hid it.
#[derive(Serialize)]
struct HduJson {
    core: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_phys: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    engines: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_nreqs: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_xfer_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_queue: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn info_json(dev: &Device) -> Result<(), Error> {
    let i = dev.info();
    let hdus = (0..i.cores)
        .map(|c| match dev.hdu_info(c) {
            Ok(h) => {
                let caps = HduCaps::from_reg(h.caps);
                HduJson {
                    core: c,
                    revision: Some(h.revision),
                    user_phys: Some(h.user_phys),
                    engines: Some(h.engines),
                    max_nreqs: Some(caps.max_nreqs),
                    max_xfer_bytes: Some(u64::from(caps.max_xfer_pages) * 4096),
                    start_queue: Some(caps.start_queue),
                    error: None,
                }
            }
            Err(e) => HduJson {
                core: c,
                revision: None,
                user_phys: None,
                engines: None,
                max_nreqs: None,
                max_xfer_bytes: None,
                start_queue: None,
                error: Some(e.to_string()),
            },
        })
        .collect();
    let v = i.nvme_version;
    let out = InfoJson {
        abi_version: i.abi_version,
        ready: i.flags & DNVM_INFO_READY != 0,
        wrr: i.flags & DNVM_INFO_WRR != 0,
        cores: i.cores,
        engines: i.engines,
        staging_entries: i.staging_entries,
        io_queue_depth: i.io_queue_depth,
        capacity_lbas: i.capacity_lbas,
        lba_size: i.lba_size,
        max_transfer: i.max_transfer,
        carveout_phys: i.carveout_phys,
        carveout_size: i.carveout_size,
        nvme_version: format!("{}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff),
        model: text(&i.model),
        serial: text(&i.serial),
        firmware: text(&i.firmware),
        hdus,
    };
    println!("{}", serde_json::to_string_pretty(&out).map_err(|_| Error::InvalidArgument)?);
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
fn transfer(h: &mut Handle, lba: u64, data: &mut [u8], write: bool, progress: &mut Progress) -> Result<(), Error> {
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
        progress.add(n as u64);
    }
    progress.finish();
    h.buf_free(buf)
}

/// `nvmedl advise`: the model needs no device.
fn advise(service_us: f64, rate: f64, classes: &[Class], fraction: f64, max_depth: u64, json: bool) -> Result<ExitCode, Error> {
    let input = AdviceInput {
        service: service_us * 1e-6,
        lambda: rate,
        classes: classes.iter().map(|c| mdk::Class { lambda: c.rate, weight: c.weight }).collect(),
        fraction,
        max_depth: u32::try_from(max_depth).map_err(|_| Error::InvalidArgument)?,
    };
    match advisor::advise(&input) {
        Ok(a) if json => match serde_json::to_string(&AdviceJson::of(&input, &a)) {
            Ok(line) => {
                println!("{line}");
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("nvmedl: advise: JSON: {e}");
                Ok(ExitCode::from(EXIT_FAILURE))
            }
        },
        Ok(a) => {
            print!("{}", a.render(&input));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("nvmedl: advise: need --service-us > 0, --rate > 0, 0 < --fraction <= 1, 1 <= --max-depth <= 1024");
            Err(e)
        }
    }
}

fn run(cli: NvmedlCli) -> Result<ExitCode, Error> {
    // The model needs no device.
    if let Command::Advise { service_us, rate, classes, fraction, max_depth, json } = &cli.command {
        return advise(*service_us, *rate, classes, *fraction, *max_depth, *json);
    }
    // The doctor looks at the board before any device can be opened.
    if let Command::Doctor { json } = cli.command {
        return Ok(doctor(&cli.device, json));
    }
    let dev = match Device::open_path(&cli.device) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("nvmedl: {}: {e} (is the directnvm module loaded? --device PATH names another node)", cli.device);
            return Ok(ExitCode::from(EXIT_FAILURE));
        }
    };
    match cli.command {
        Command::Advise { .. } | Command::Doctor { .. } => {}
        Command::Info { json: false } => info(&dev)?,
        Command::Info { json: true } => info_json(&dev)?,
        Command::Layout => layout(&dev)?,
        Command::Identify => identify(&dev)?,
        Command::Reset { target: ResetTarget::Controller } => {
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
        Command::Reset { target: ResetTarget::Core(core) } => {
            dev.reset_hdu(core_u32(core)?)?;
            println!("hdu{core}: reset");
        }
        Command::Arbitration { burst, high, medium, low } => {
            let w = |v: u64| u32::try_from(v).map_err(|_| Error::InvalidArgument);
            dev.set_arbitration(DnvmArbitration { burst: w(burst)?, high: w(high)?, medium: w(medium)?, low: w(low)? })?;
            println!("arbitration: burst {burst} high {high} medium {medium} low {low}");
        }
        Command::Read { core, lba, bytes, file } => {
            let mut h = dev.handle(core_u32(core)?)?;
            let mut data = vec![0u8; usize::try_from(bytes).map_err(|_| Error::InvalidArgument)?];
            transfer(&mut h, lba, &mut data, false, &mut Progress::new(cli.progress, "read", bytes))?;
            std::fs::write(&file, &data).map_err(|e| os_error(&file, e))?;
            println!("read {bytes} bytes at LBA {lba} to {file}");
        }
        Command::Write { core, lba, file } => {
            let mut data = std::fs::read(&file).map_err(|e| os_error(&file, e))?;
            let mut h = dev.handle(core_u32(core)?)?;
            let mut progress = Progress::new(cli.progress, "write", data.len() as u64);
            transfer(&mut h, lba, &mut data, true, &mut progress)?;
            println!("wrote {} bytes at LBA {lba} from {file}", data.len());
        }
        Command::Verify { core, lba, file } => {
            let data = std::fs::read(&file).map_err(|e| os_error(&file, e))?;
            let mut h = dev.handle(core_u32(core)?)?;
            let mut disk = vec![0u8; data.len()];
            transfer(&mut h, lba, &mut disk, false, &mut Progress::new(cli.progress, "verify", data.len() as u64))?;
            if let Some(i) = disk.iter().zip(&data).position(|(a, b)| a != b) {
                println!("verify: MISMATCH at byte {i} (LBA {})", lba + (i / 512) as u64);
                return Ok(ExitCode::from(EXIT_FAILURE));
            }
            println!("verify: {} bytes at LBA {lba} match {file}", data.len());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `nvmedl doctor`: the findings, exit status 1 if any check failed.
fn doctor(device: &str, json: bool) -> ExitCode {
    let board = doctor::Board::new(std::path::PathBuf::from("/"), device);
    let findings = doctor::diagnose(&board);
    if json {
        match serde_json::to_string_pretty(&findings) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("nvmedl: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        }
    } else {
        print!("{}", doctor::render(&findings));
    }
    if doctor::healthy(&findings) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILURE)
    }
}

fn core_u32(core: u64) -> Result<u32, Error> {
    u32::try_from(core).map_err(|_| Error::InvalidArgument)
}

/// A file error: say which file, keep the errno for the exit path.
fn os_error(file: &str, e: std::io::Error) -> Error {
    eprintln!("nvmedl: {file}: {e}");
    Error::Os(e.raw_os_error().unwrap_or(libc_eio()))
}

fn libc_eio() -> i32 {
    5
}

fn main() -> ExitCode {
    // Parsing never opens the device: --help, --version and usage errors work anywhere.
    let cli = NvmedlCli::parse();
    match run(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("nvmedl: {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
