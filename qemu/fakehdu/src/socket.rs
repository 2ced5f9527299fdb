// SPDX-License-Identifier: MIT OR Apache-2.0
//! Unix control socket: line-based text protocol (see `control`).

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::control::parse_line;
use crate::runner::FakeHdu;

/// A listening control socket; removed from the file system when dropped.
pub struct ControlSocket {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlSocket {
    /// Listen on `path` and serve `dev`.
    pub fn serve(path: &Path, dev: Arc<FakeHdu>) -> crate::Result<Self> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).map_err(crate::Error::io(path.display()))?;
        listener.set_nonblocking(true).map_err(crate::Error::io(path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fake-hdu-ctl".into())
            .spawn(move || {
                let mut clients = Vec::new();
                while !st.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            let (d, s) = (dev.clone(), st.clone());
                            clients.push(std::thread::spawn(move || client(conn, &d, &s)));
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                    clients.retain(|c: &JoinHandle<()>| !c.is_finished());
                }
                for c in clients {
                    let _ = c.join();
                }
            })
            .map_err(crate::Error::io("control socket thread"))?;
        Ok(Self { path: path.to_path_buf(), stop, thread: Some(thread) })
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn client(conn: UnixStream, dev: &FakeHdu, stop: &AtomicBool) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
    let Ok(mut out) = conn.try_clone() else { return };
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    while !stop.load(Ordering::Acquire) {
        match reader.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) => {
                let reply = match parse_line(&line) {
                    Ok(op) => match dev.control(op) {
                        Ok(s) if s.is_empty() => "ok".to_string(),
                        Ok(s) => format!("ok {s}"),
                        Err(e) => format!("err {e}"),
                    },
                    Err(e) => format!("err {e}"),
                };
                line.clear();
                if writeln!(out, "{reply}").is_err() {
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
    }
}
