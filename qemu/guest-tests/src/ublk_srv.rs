// SPDX-License-Identifier: MIT OR Apache-2.0
//! Helpers of the `ublk` mode: the `nvmedl-ublk` server as a child process, file contents
//! that can be regenerated for verification, and the writer processes.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};

use dnvm_testkit::bytes::named_content;

pub const SERVER: &str = "/bin/nvmedl-ublk";
/// Bound of the wait for a server's ready line.
const READY_SECS: u64 = 60;

/// A running server and the block device it announced.
pub struct Server {
    child: Child,
    pub id: i32,
    pub bdev: String,
}

/// Run `nvmedl-ublk ARGS` to completion: (success, stdout + stderr).
pub fn run(args: &[&str]) -> (bool, String) {
    match Command::new(SERVER).args(args).output() {
        Ok(o) => {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), s)
        }
        Err(e) => (false, e.to_string()),
    }
}

impl Server {
    /// Start `nvmedl-ublk serve ARGS` and wait for its ready line; `Err` carries its stderr.
    pub fn start(args: &[&str]) -> Result<Server, String> {
        let mut child = Command::new(SERVER)
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawn {SERVER}: {e}"))?;
        let out = child.stdout.take().ok_or("no stdout")?;
        // The ready line, bounded: a server stuck in START_DEV fails the case, not the boot.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(std::time::Duration::from_secs(READY_SECS)).unwrap_or_default();
        let Some(bdev) = line.split_whitespace().find(|w| w.starts_with("/dev/ublkb")) else {
            let _ = child.kill();
            let _ = child.wait();
            let (_, dmesg) = crate::sys::sh("dmesg | tail -8");
            return Err(format!("server did not start (its stderr is above): {} | dmesg: {}", line.trim(), dmesg.trim()));
        };
        let id = bdev.trim_start_matches("/dev/ublkb").parse().map_err(|_| format!("bad ready line {line:?}"))?;
        Ok(Server { child, id, bdev: bdev.to_string() })
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGTERM, wait, and report the exit status.
    pub fn stop(mut self) -> Result<(), String> {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let st = self.child.wait().map_err(|e| e.to_string())?;
        if st.success() {
            Ok(())
        } else {
            Err(format!("server exited with {st} (its stderr is above)"))
        }
    }

    /// Wait for the server to exit by itself, at most `bound`: Ok((exited 0, how long)).
    pub fn wait_within(mut self, bound: std::time::Duration) -> Result<(bool, std::time::Duration), String> {
        let t0 = std::time::Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return Ok((st.success(), t0.elapsed())),
                Ok(None) if t0.elapsed() <= bound => std::thread::sleep(std::time::Duration::from_millis(10)),
                Ok(None) => {
                    let pid = self.pid();
                    // Not reaped on purpose if it will not die: the caller reports what blocks it.
                    let _ = self.child.kill();
                    return Err(format!("server {pid} still running {bound:?} later"));
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// SIGTERM; the server must be gone within `bound`, with exit status 0: Ok(how long).
    pub fn term_within(self, bound: std::time::Duration) -> Result<std::time::Duration, String> {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let (ok, took) = self.wait_within(bound)?;
        check_ok(ok, took)
    }

    /// SIGKILL and reap: the block device stays (user recovery).
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn check_ok(ok: bool, took: std::time::Duration) -> Result<std::time::Duration, String> {
    if ok {
        Ok(took)
    } else {
        Err(format!("server exited with an error after {took:?} (its stderr is above)"))
    }
}

/// Wait (bounded) until `path` disappears; true if it did.
pub fn gone(path: &str) -> bool {
    for _ in 0..200 {
        if !std::path::Path::new(path).exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    false
}

/// The ublk block devices present.
pub fn ublk_devs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev")
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("ublkb") || n.starts_with("ublkc"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every core in `cores` can be claimed by this process (nothing left claimed).
pub fn cores_free(cores: &[u32]) -> Result<(), String> {
    let dev = nvmedl::Device::open().map_err(|e| e.to_string())?;
    for &c in cores {
        dev.handle(c).map_err(|e| format!("core {c} still claimed: {e}"))?;
    }
    Ok(())
}

/// Length of file number `i` (not a multiple of the block size, from 1 to ~100 KiB).
pub fn file_len(i: usize) -> usize {
    (i * 7919 + 513) % (100 * 1024) + 1
}

/// `dnvm-guest-tests ublk-writer DIR TAG COUNT [LOG]`: write COUNT files DIR/TAG-i; with LOG,
/// fsync each file and the directory, then append its name to LOG (the durable set) once the
/// journal is known to have committed it.
///
/// An fsync that returns 0 is not enough when the device stops under the file system: if the
/// journal commit holding the file failed (I/O error, journal aborted) before this fsync
/// asked for it, jbd2 finds that transaction neither running nor committing and ext4 returns
/// 0 (`jbd2_complete_transaction`, `__jbd2_journal_force_commit`: "nothing to commit"); ext4
/// itself only notices the abort at its next journal handle. So the file is logged after the
/// next operation that starts a handle succeeded (creating the next file; after the last, a
/// probe file): a journal aborted by then would have failed it, and the commit of this file
/// had ended before its fsync returned.
pub fn writer_main(args: &[String]) -> i32 {
    let (Some(dir), Some(tag), Some(count)) = (args.first(), args.get(1), args.get(2).and_then(|c| c.parse::<usize>().ok())) else {
        eprintln!("usage: ublk-writer DIR TAG COUNT [LOG]");
        return 2;
    };
    match write_files(dir, tag, count, args.get(3).map(String::as_str)) {
        Ok(()) => 0,
        Err((path, e)) => {
            eprintln!("ublk-writer: {path}: {e}");
            1
        }
    }
}

type WriterResult<T> = Result<T, (String, std::io::Error)>;

fn create(path: &str) -> WriterResult<std::fs::File> {
    std::fs::File::create(path).map_err(|e| (path.to_string(), e))
}

fn write_files(dir: &str, tag: &str, count: usize, log: Option<&str>) -> WriterResult<()> {
    let path = |i: usize| format!("{dir}/{tag}-{i}");
    let mut next = if count > 0 { Some(create(&path(0))?) } else { None };
    for i in 0..count {
        let (name, p) = (format!("{tag}-{i}"), path(i));
        let Some(mut f) = next.take() else { break };
        let at = |e| (p.clone(), e);
        f.write_all(&named_content(&name, file_len(i))).map_err(at)?;
        if log.is_some() {
            f.sync_all().map_err(at)?;
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| (dir.to_string(), e))?;
        }
        // The next journal handle: the next file, or after the last one a probe file.
        let probe = format!("{dir}/.{tag}-probe");
        let confirmed = if i + 1 < count {
            create(&path(i + 1)).map(|f| next = Some(f))
        } else if log.is_some() {
            create(&probe).and_then(|_| std::fs::remove_file(&probe).map_err(|e| (probe, e)))
        } else {
            Ok(())
        };
        if let Some(log) = log {
            // fsync'd but not confirmed: noted apart (`LOG.unconfirmed`), never as durable.
            let to = if confirmed.is_ok() { log.to_string() } else { format!("{log}.unconfirmed") };
            append_line(&to, &format!("{name} {i}"))?;
        }
        confirmed?;
    }
    Ok(())
}

fn append_line(path: &str, line: &str) -> WriterResult<()> {
    let mut l =
        std::fs::OpenOptions::new().append(true).create(true).custom_flags(libc::O_SYNC).open(path).map_err(|e| (path.to_string(), e))?;
    writeln!(l, "{line}").map_err(|e| (path.to_string(), e))
}

/// Check file `dir/name` holds the content of file number `i`.
pub fn verify_file(dir: &str, name: &str, i: usize) -> Result<(), String> {
    let got = std::fs::read(format!("{dir}/{name}")).map_err(|e| format!("{name}: {e}"))?;
    if got != named_content(name, file_len(i)) {
        return Err(format!("{name}: content differs ({} bytes read, {} expected)", got.len(), file_len(i)));
    }
    Ok(())
}
