// SPDX-License-Identifier: MIT OR Apache-2.0
//! `serve`: claim the cores, create (or recover) the ublk device, run one queue per core,
//! stop on SIGTERM/SIGINT (or when the device is deleted under it) leaving no claimed core and
//! no ublk device behind, without waiting for a file system on it to be unmounted.
//!
//! The stop, in order (docs/ublk.md "Stopping"): STOP_DEV (the kernel lets the queues finish
//! what they hold, fails queued and new I/O with EIO, removes the disk and aborts the queues'
//! fetch commands), the queue threads commit what they still hold and end, then the device is
//! deleted with DEL_DEV_ASYNC: its number is freed when the last opener (a mounted file system)
//! lets go, but nobody waits for that.

use crate::cli::ServeArgs;
use crate::error::{Result, UblkSrvError};
use crate::geometry::Geometry;
use crate::queue::{self, CoreIo};
use crate::signals;
use crate::stopper::Stopper;
use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::UblkDev;
use libublk::{sys, UblkFlags};
use nvmedl::{Device, HandleOptions};
use std::io::Write;
use std::panic::AssertUnwindSafe;
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
    if let Some(&core) = a.cores.iter().find(|&&c| c >= dev.cores()) {
        return Err(UblkSrvError::NoSuchCore { core, cores: dev.cores() });
    }
    let mut hs = Vec::new();
    for &core in &a.cores {
        let opts = HandleOptions { priority: a.urgency, backoff: a.backoff(), ..Default::default() };
        hs.push(dev.handle_with(core, opts).map_err(|err| UblkSrvError::Core { core, err })?);
    }
    Ok((dev, hs))
}

/// The device to recover, if any: `--recover ID`, or `--id ID --recover-existing` when device
/// ID exists. Refuses a device that is still served or has another queue count.
fn to_recover(a: &ServeArgs) -> Result<Option<sys::ublksrv_ctrl_dev_info>> {
    let id = match a.recover {
        Some(id) => id,
        None => {
            let Some(info) = existing(a.id) else { return Ok(None) };
            if !a.recover_existing {
                return Err(UblkSrvError::UblkExists { id: a.id, pid: info.ublksrv_pid });
            }
            a.id
        }
    };
    let info = existing(id).ok_or(UblkSrvError::NoSuchUblk(id))?;
    if info.state == sys::UBLK_S_DEV_LIVE as u16 && pid_alive(info.ublksrv_pid) {
        return Err(UblkSrvError::UblkLive { id, pid: info.ublksrv_pid });
    }
    if usize::from(info.nr_hw_queues) != a.cores.len() {
        return Err(UblkSrvError::QueueMismatch { have: info.nr_hw_queues, want: a.cores.len() });
    }
    Ok(Some(info))
}

pub fn serve(a: ServeArgs) -> Result<()> {
    let old = to_recover(&a)?;
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

    // DEL_DEV_ASYNC also when libublk deletes the device on an error path (its drop).
    let ctrl = match old {
        Some(info) => {
            let id = i32::try_from(info.dev_id).unwrap_or(-1);
            UblkCtrl::new_simple(id)?.start_user_recover()?;
            UblkCtrlBuilder::default()
                .name("nvmedl")
                .id(id)
                .nr_queues(a.cores.len() as u16)
                .depth(geo.depth as u16)
                .ctrl_flags(CTRL_FLAGS)
                .dev_flags(UblkFlags::UBLK_DEV_F_RECOVER_DEV | UblkFlags::UBLK_DEV_F_DEL_DEV_ASYNC)
                .build()?
        }
        None => UblkCtrlBuilder::default()
            .name("nvmedl")
            .id(a.id)
            .nr_queues(a.cores.len() as u16)
            .depth(geo.depth as u16)
            .io_buf_bytes(geo.max_io as u32)
            .ctrl_flags(CTRL_FLAGS)
            .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV | UblkFlags::UBLK_DEV_F_DEL_DEV_ASYNC)
            .build()?,
    };
    if trace {
        eprintln!("nvmedl-ublk: ublk device {} added, starting", ctrl.dev_info().dev_id);
    }
    let cores = Arc::new(Mutex::new(cores));
    let urgency = a.urgency;
    let main_thread = signals::Waker::this_thread();
    let tgt_init = move |dev: &mut UblkDev| {
        dev.set_default_params(geo.sectors << 9);
        dev.tgt.params = geo.params();
        Ok(())
    };
    let q_fn = move |qid: u16, dev: &UblkDev| {
        let io = cores.lock().ok().and_then(|mut v| v.get_mut(usize::from(qid)).and_then(Option::take));
        if let Some(io) = io {
            // A panic is a crash: the requests this queue holds cannot be answered any more,
            // and a stop would wait for them forever. Abort instead, so the kernel re-issues
            // them to the next server (`--recover`), as after `kill -9`.
            if std::panic::catch_unwind(AssertUnwindSafe(|| queue::run(qid, dev, io, urgency, geo))).is_err() {
                eprintln!("nvmedl-ublk: queue {qid} panicked; aborting (recover the device with --recover)");
                std::process::abort();
            }
        }
        // However the queue ended, the server stops: a device that lost a queue would hold the
        // I/O routed to it until someone stopped the server.
        main_thread.wake();
    };
    let summary = format!(
        "{} queue(s) x depth {}, max I/O {} bytes, {} sectors, flush {}",
        a.cores.len(),
        geo.depth,
        geo.max_io,
        geo.sectors,
        if geo.flush { "yes" } else { "no (no volatile cache)" }
    );
    let recovering = old.is_some();
    // The stop under way (`stopper.rs`), reaped once the queues have ended.
    let stopping = Arc::new(Mutex::new(None));
    let stopping2 = stopping.clone();
    let dev_fn = move |ctrl: &UblkCtrl| {
        let id = ctrl.dev_info().dev_id;
        let what = if recovering { "recovered" } else { "ready" };
        println!("nvmedl-ublk: /dev/ublkb{id} {what}: {summary}");
        let _ = std::io::stdout().flush();
        let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
        match signals::wait_stop_signal() {
            signals::Stop::Signal(sig) => eprintln!("nvmedl-ublk: signal {sig}, stopping /dev/ublkb{id}"),
            signals::Stop::QueueEnded => eprintln!("nvmedl-ublk: a queue of /dev/ublkb{id} ended (device deleted?), stopping"),
        }
        let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
        *stopping.lock().unwrap_or_else(|e| e.into_inner()) = Some(Stopper::start(ctrl));
    };
    ctrl.run_target(tgt_init, q_fn, dev_fn)?;
    if let Some(s) = stopping2.lock().unwrap_or_else(|e| e.into_inner()).take() {
        s.finish();
    }
    // Only a stopped server reaches this point: the device goes with it, without waiting for
    // whoever still holds /dev/ublkbN open (a mounted file system) to let go.
    delete(&ctrl, i32::try_from(ctrl.dev_info().dev_id).unwrap_or(-1))
}

/// Delete a stopped device without waiting for its last opener (DEL_DEV_ASYNC); kernels
/// without it get the synchronous delete, which returns once the device is closed everywhere.
pub fn delete(ctrl: &UblkCtrl, id: i32) -> Result<()> {
    let Err(e) = ctrl.del_dev_async() else { return Ok(()) };
    if existing(id).is_none() {
        return Ok(()); // deleted meanwhile (`nvmedl-ublk del`)
    }
    eprintln!("nvmedl-ublk: asynchronous delete of device {id} refused ({e}); deleting synchronously");
    ctrl.del_dev()?;
    Ok(())
}

fn pid_alive(pid: i32) -> bool {
    pid > 0 && std::path::Path::new(&format!("/proc/{pid}")).exists()
}
