// SPDX-License-Identifier: MIT OR Apache-2.0
//! `serve`: claim the cores, create (or recover) the ublk device, run one queue per core,
//! stop on SIGTERM/SIGINT leaving no claimed core and no ublk device behind.

use crate::cli::ServeArgs;
use crate::error::{io_err, Result, UblkSrvError};
use crate::geometry::Geometry;
use crate::queue::{CoreIo, QueueIo};
use crate::signals;
use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::{BufDescList, UblkDev, UblkQueue};
use libublk::{sys, UblkFlags};
use nvmedl::{Device, HandleOptions};
use std::fs::File;
use std::io::Write;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};

/// Device flags: user copy (data moves once, kernel ↔ DMA slice) and user recovery with
/// re-issue of what the dead server had in flight (it was never acknowledged).
const CTRL_FLAGS: u64 = (sys::UBLK_F_USER_COPY | sys::UBLK_F_USER_RECOVERY | sys::UBLK_F_USER_RECOVERY_REISSUE) as u64;

/// State of an existing ublk device: (queues, depth, io buffer bytes, state, server pid).
fn existing(id: i32) -> Option<sys::ublksrv_ctrl_dev_info> {
    if id < 0 || !std::path::Path::new(&format!("/dev/ublkc{id}")).exists() {
        return None;
    }
    UblkCtrl::new_simple(id).ok().map(|c| c.dev_info())
}

fn claim(a: &ServeArgs) -> Result<(Device, Vec<nvmedl::Handle>)> {
    if a.cores.is_empty() {
        return Err(UblkSrvError::NoCores);
    }
    for (i, c) in a.cores.iter().enumerate() {
        if a.cores[..i].contains(c) {
            return Err(UblkSrvError::DuplicateCore(*c));
        }
    }
    let dev = Device::open_path(&a.device)?;
    let mut hs = Vec::new();
    for &core in &a.cores {
        let opts = HandleOptions { priority: a.urgency, backoff: a.backoff(), ..Default::default() };
        hs.push(dev.handle_with(core, opts).map_err(|err| UblkSrvError::Core { core, err })?);
    }
    Ok((dev, hs))
}

pub fn serve(a: ServeArgs) -> Result<()> {
    let old = match a.recover {
        Some(id) => {
            let info = existing(id).ok_or(UblkSrvError::NoSuchUblk(id))?;
            if info.state == sys::UBLK_S_DEV_LIVE as u16 && pid_alive(info.ublksrv_pid) {
                return Err(UblkSrvError::UblkLive { id, pid: info.ublksrv_pid });
            }
            if usize::from(info.nr_hw_queues) != a.cores.len() {
                return Err(UblkSrvError::QueueMismatch { have: info.nr_hw_queues, want: a.cores.len() });
            }
            Some(info)
        }
        None => {
            if let Some(info) = existing(a.id) {
                return Err(UblkSrvError::UblkExists { id: a.id, pid: info.ublksrv_pid });
            }
            None
        }
    };
    let (_dev, handles) = claim(&a)?;
    let h0 = &handles[0];
    let depth = old.map(|i| u32::from(i.queue_depth)).or(a.depth);
    let geo = Geometry::fit(h0.capacity_lbas(), h0.max_request(), h0.data_size(), depth, h0.has(nvmedl::Cap::Flush))?;
    if let Some(info) = old {
        if u64::from(info.max_io_buf_bytes) < geo.max_io {
            return Err(UblkSrvError::Ublk(format!("device {} has {}-byte I/O buffers", info.dev_id, info.max_io_buf_bytes)));
        }
    }
    let mut cores = Vec::new();
    for mut handle in handles {
        let mut bufs = Vec::new();
        for _ in 0..geo.depth {
            bufs.push(handle.buf_alloc(geo.buf_bytes as usize).map_err(|err| UblkSrvError::Core { core: handle.core(), err })?);
        }
        cores.push(Some(CoreIo { handle, bufs }));
    }
    let _ = std::fs::create_dir_all(UblkCtrl::run_dir());
    let trace = std::env::var_os("NVMEDL_UBLK_TRACE").is_some();
    if trace {
        eprintln!("nvmedl-ublk: claimed cores {:?}, {geo:?}", a.cores);
    }
    signals::block_stop_signals();

    let ctrl = match a.recover {
        Some(id) => {
            UblkCtrl::new_simple(id)?.start_user_recover()?;
            UblkCtrlBuilder::default()
                .name("nvmedl")
                .id(id)
                .nr_queues(a.cores.len() as u16)
                .depth(geo.depth as u16)
                .ctrl_flags(CTRL_FLAGS)
                .dev_flags(UblkFlags::UBLK_DEV_F_RECOVER_DEV)
                .build()?
        }
        None => UblkCtrlBuilder::default()
            .name("nvmedl")
            .id(a.id)
            .nr_queues(a.cores.len() as u16)
            .depth(geo.depth as u16)
            .io_buf_bytes(geo.max_io as u32)
            .ctrl_flags(CTRL_FLAGS)
            .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
            .build()?,
    };
    if trace {
        eprintln!("nvmedl-ublk: ublk device {} added, starting", ctrl.dev_info().dev_id);
    }
    let cores = Arc::new(Mutex::new(cores));
    let urgency = a.urgency;
    let tgt_init = move |dev: &mut UblkDev| {
        dev.set_default_params(geo.sectors << 9);
        dev.tgt.params = geo.params();
        Ok(())
    };
    let q_fn = move |qid: u16, dev: &UblkDev| {
        let io = cores.lock().ok().and_then(|mut v| v.get_mut(usize::from(qid)).and_then(Option::take));
        if let Some(io) = io {
            run_queue(qid, dev, io, urgency, geo);
        }
    };
    let summary = format!(
        "{} queue(s) x depth {}, max I/O {} bytes, {} sectors, flush {}",
        a.cores.len(),
        geo.depth,
        geo.max_io,
        geo.sectors,
        if geo.flush { "yes" } else { "no (no volatile cache)" }
    );
    let recovering = a.recover.is_some();
    let dev_fn = move |ctrl: &UblkCtrl| {
        let id = ctrl.dev_info().dev_id;
        let what = if recovering { "recovered" } else { "ready" };
        println!("nvmedl-ublk: /dev/ublkb{id} {what}: {summary}");
        let _ = std::io::stdout().flush();
        let sig = signals::wait_stop_signal();
        eprintln!("nvmedl-ublk: signal {sig}, stopping /dev/ublkb{id}");
        let _ = ctrl.kill_dev();
    };
    ctrl.run_target(tgt_init, q_fn, dev_fn)?;
    // Only a stopped server reaches this point: the device goes with it.
    let _ = ctrl.del_dev();
    Ok(())
}

fn run_queue(qid: u16, dev: &UblkDev, io: CoreIo, urgency: u16, geo: Geometry) {
    // /dev/ublkcN opens only once (libublk holds it): use a duplicate of libublk's descriptor.
    let fd = dev.tgt.fds[0];
    // SAFETY: tgt.fds[0] is the open /dev/ublkcN of `dev`, which outlives this call; it is only
    // borrowed long enough to duplicate it.
    let cdev = match unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned() {
        Ok(f) => File::from(f),
        Err(e) => {
            eprintln!("nvmedl-ublk: queue {qid}: {}", io_err("dup /dev/ublkc", e));
            return;
        }
    };
    let mut st = QueueIo::new(io, cdev, qid, urgency, geo);
    let q = match UblkQueue::new(qid, dev).and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(None))) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("nvmedl-ublk: queue {qid}: {e}");
            return;
        }
    };
    if std::env::var_os("NVMEDL_UBLK_TRACE").is_some() {
        eprintln!("nvmedl-ublk: queue {qid}: fetch commands queued");
    }
    q.wait_and_handle_io(move |q, tag, ctx| st.on_cqe(q, tag, ctx));
}

fn pid_alive(pid: i32) -> bool {
    pid > 0 && std::path::Path::new(&format!("/proc/{pid}")).exists()
}
