// SPDX-License-Identifier: MIT OR Apache-2.0
//! STOP_DEV from a process of its own, so that `kill -9` during a stop cannot wedge the server.
//!
//! STOP_DEV (with user recovery) quiesces the disk and waits until the server has answered
//! every request it holds; the kernel runs it in an io_uring worker of the task that issued
//! it. Issued by the server itself, a SIGKILL that arrives meanwhile (a service manager's
//! stop timeout, an administrator) deadlocks in the kernel: the exiting thread waits for its
//! io_uring worker, the worker waits for the requests, and those are failed or re-issued only
//! when the server's `/dev/ublkcN` is released, which its own exit cannot reach (the server
//! stays in D state for good, its cores claimed). So the server asks a child process
//! (`nvmedl-ublk stop-dev ID`, the same binary) to issue STOP_DEV: if the server is killed,
//! its exit completes, its release answers the requests, and the child's STOP_DEV returns.

use crate::error::Result;
use libublk::ctrl::UblkCtrl;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A stop under way: the child issuing STOP_DEV (None: it was issued in-process).
pub struct Stopper(Option<Child>);

/// How long the server waits, after its queues ended, for the child to report.
const REAP: Duration = Duration::from_secs(5);

impl Stopper {
    /// Request the stop of `ctrl`'s device: in a child process, or in this one if that cannot
    /// be started (said on stderr).
    pub fn start(ctrl: &UblkCtrl) -> Stopper {
        let id = ctrl.dev_info().dev_id.to_string();
        let child = std::env::current_exe()
            .and_then(|exe| Command::new(exe).args(["stop-dev", &id]).stdin(Stdio::null()).stdout(Stdio::null()).spawn());
        match child {
            Ok(c) => Stopper(Some(c)),
            Err(e) => {
                eprintln!("nvmedl-ublk: cannot start the stop helper ({e}); stopping in-process");
                let _ = ctrl.kill_dev();
                Stopper(None)
            }
        }
    }

    /// Reap the child (bounded: its STOP_DEV has returned once the queues ended, or soon
    /// after); a child still running is left to finish on its own.
    pub fn finish(self) {
        let Some(mut c) = self.0 else { return };
        let t0 = Instant::now();
        loop {
            match c.try_wait() {
                Ok(Some(st)) if !st.success() => eprintln!("nvmedl-ublk: stop helper exited with {st}"),
                Ok(Some(_)) | Err(_) => {}
                Ok(None) if t0.elapsed() < REAP => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Ok(None) => eprintln!("nvmedl-ublk: stop helper {} still running; leaving it", c.id()),
            }
            return;
        }
    }
}

/// `nvmedl-ublk stop-dev ID`: STOP_DEV, for the server of device ID.
pub fn stop_dev(id: i32) -> Result<()> {
    UblkCtrl::new_simple(id)?.kill_dev()?;
    Ok(())
}
