// SPDX-License-Identifier: MIT OR Apache-2.0
//! The clean stop of the block device under a mounted, busy ext4 (part of the `ublk` mode).
//!
//! Writer processes create files and fsync them (each logged only after its fsync returned),
//! then the server is stopped the way an administrator or a service manager does it: SIGTERM,
//! or `kill -9` followed by `nvmedl-ublk del`. After every stop: the server (or `del`) is done
//! within [`STOP_BOUND`], the writers end by themselves (EIO), `umount` works, the device and
//! the cores are released, no task stays in D state; the next server finds every fsync'd file
//! intact after the journal replay. A bound that passes dumps the kernel stacks of every task
//! in D state on the console (and `sysrq w` when the kernel has it) before the case fails.
//!
//! `DNVM_UBLK_STOP_ITERS` sets the number of stops (every third one is a `kill -9` + `del`, every
//! sixth a SIGTERM followed by `kill -9` while the stop is under way, then `del`);
//! unset, these cases and the unit cases do not run (`make ublk-stop`, or `make check
//! UBLK_STOP_ITERS=N`).

use crate::fixtures::ublk_srv::{cores_free, gone, run as srv, ublk_devs, verify_file, Server, SERVER};
use crate::sys::sh;
use crate::tap::{check, eq, Case, Tap};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const MNT: &str = "/tmp/ublkstop";
const CORES: &str = "0,1";
const WRITERS: usize = 2;
/// Files each writer would write if nothing stopped it (the stop comes long before).
const FILES: usize = 400;
/// The server, or `del`, must be done within this after the stop request.
pub const STOP_BOUND: Duration = Duration::from_secs(5);
/// Writers must notice the stop (EIO) within this.
const WRITER_BOUND: Duration = Duration::from_secs(20);

fn shok(cmd: &str) -> Case {
    let (ok, out) = sh(cmd);
    check(ok, format!("`{cmd}` failed: {}", out.lines().rev().take(6).collect::<Vec<_>>().join(" / ")))
}

/// Wait for `child` at most `bound`.
fn wait_for(child: &mut Child, bound: Duration) -> Option<ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        if t0.elapsed() > bound {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Run `cmd ARGS` with a bound: Ok(output) or Err after dumping what is blocked.
fn run_bounded(cmd: &str, args: &[&str], bound: Duration) -> Result<(ExitStatus, Duration), String> {
    let t0 = Instant::now();
    let mut c = Command::new(cmd).args(args).stdout(Stdio::null()).spawn().map_err(|e| format!("{cmd}: {e}"))?;
    match wait_for(&mut c, bound) {
        Some(st) => Ok((st, t0.elapsed())),
        None => Err(format!("`{cmd} {}` still running after {bound:?}: {}", args.join(" "), dump_blocked())),
    }
}

/// Every thread in D state: "pid/tid comm".
fn blocked_tasks() -> Vec<(String, String)> {
    let mut v = Vec::new();
    let procs = std::fs::read_dir("/proc").map(|r| r.flatten().collect::<Vec<_>>()).unwrap_or_default();
    for p in procs {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map(|r| r.flatten().collect::<Vec<_>>()).unwrap_or_default();
        for t in tasks {
            let dir = t.path().to_string_lossy().into_owned();
            let stat = std::fs::read_to_string(format!("{dir}/stat")).unwrap_or_default();
            // "tid (comm) S ...": the state follows the last ')'.
            let Some(close) = stat.rfind(')') else { continue };
            if stat[close + 1..].trim_start().starts_with('D') {
                let comm = stat[stat.find('(').map_or(0, |o| o + 1)..close].to_string();
                v.push((dir, comm));
            }
        }
    }
    v
}

/// Every thread of every nvmedl-ublk process: ("/proc/pid/task/tid", comm, state letter).
fn server_threads() -> Vec<(String, String, char)> {
    let mut v = Vec::new();
    for p in std::fs::read_dir("/proc").map(|r| r.flatten().collect::<Vec<_>>()).unwrap_or_default() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit())
            || std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim() != "nvmedl-ublk"
        {
            continue;
        }
        for t in std::fs::read_dir(format!("/proc/{pid}/task")).map(|r| r.flatten().collect::<Vec<_>>()).unwrap_or_default() {
            let dir = t.path().to_string_lossy().into_owned();
            let stat = std::fs::read_to_string(format!("{dir}/stat")).unwrap_or_default();
            let Some(close) = stat.rfind(')') else { continue };
            let comm = stat[stat.find('(').map_or(0, |o| o + 1)..close].to_string();
            v.push((dir, comm, stat[close + 1..].trim_start().chars().next().unwrap_or('?')));
        }
    }
    v
}

/// Print the kernel stack of every task in D state on the console; returns a one-line summary.
fn dump_blocked() -> String {
    let tasks = blocked_tasks();
    for (dir, comm) in &tasks {
        let stack = std::fs::read_to_string(format!("{dir}/stack")).unwrap_or_else(|e| format!("(no stack: {e})"));
        let wchan = std::fs::read_to_string(format!("{dir}/wchan")).unwrap_or_default();
        println!("# D state: {dir} ({comm}) wchan {wchan}");
        for l in stack.lines() {
            println!("#   {l}");
        }
    }
    // The server's threads whatever their state (a server waiting in S or spinning in R is
    // what the blocked ones wait for).
    for (dir, comm, state) in server_threads() {
        let stack = std::fs::read_to_string(format!("{dir}/stack")).unwrap_or_else(|e| format!("(no stack: {e})"));
        let wchan = std::fs::read_to_string(format!("{dir}/wchan")).unwrap_or_default();
        println!("# server thread: {dir} ({comm}) state {state} wchan {wchan}");
        for l in stack.lines() {
            println!("#   {l}");
        }
    }
    if std::path::Path::new("/proc/sysrq-trigger").exists() {
        let _ = std::fs::write("/proc/sysrq-trigger", "w");
    }
    let names: Vec<String> = tasks.iter().map(|(d, c)| format!("{c} ({})", d.trim_start_matches("/proc/"))).collect();
    format!("tasks in D state: [{}] (stacks above)", names.join(", "))
}

/// No task in D state, allowing `bound` for I/O that is legitimately under way to finish.
fn none_blocked(bound: Duration) -> Case {
    let t0 = Instant::now();
    while !blocked_tasks().is_empty() {
        if t0.elapsed() > bound {
            return Err(dump_blocked());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn spawn_writers(tag: &str, log: &str) -> Result<Vec<Child>, String> {
    (0..WRITERS)
        .map(|p| {
            Command::new("/bin/dnvm-guest-tests")
                .args(["ublk-writer", MNT, &format!("{tag}{p}"), &FILES.to_string(), &format!("{log}.{p}")])
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// The files the writers' logs name: fsync'd, so acknowledged by the device.
fn durable(log: &str) -> Vec<(String, usize)> {
    logged(log, "")
}

/// The files whose fsync returned 0 after the journal had aborted (see `ublk-writer`).
fn unconfirmed(log: &str) -> Vec<(String, usize)> {
    logged(log, ".unconfirmed")
}

fn logged(log: &str, suffix: &str) -> Vec<(String, usize)> {
    let mut v = Vec::new();
    for p in 0..WRITERS {
        for l in std::fs::read_to_string(format!("{log}.{p}{suffix}")).unwrap_or_default().lines() {
            let mut it = l.split_whitespace();
            if let (Some(n), Some(i)) = (it.next(), it.next().and_then(|i| i.parse().ok())) {
                v.push((n.to_string(), i));
            }
        }
    }
    v
}

/// Let the writers get `n` files durable, bounded.
fn until_durable(log: &str, n: usize) -> Case {
    let t0 = Instant::now();
    while durable(log).len() < n {
        check(t0.elapsed() < Duration::from_secs(60), format!("only {} files fsync'd in 60 s", durable(log).len()))?;
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// The writers must end by themselves once the device is gone (their I/O fails).
fn writers_end(ws: Vec<Child>) -> Case {
    for mut w in ws {
        if wait_for(&mut w, WRITER_BOUND).is_none() {
            let _ = w.kill();
            let gone = wait_for(&mut w, Duration::from_secs(5)).is_some();
            return Err(format!("a writer still ran {WRITER_BOUND:?} after the stop (killed: {gone}); {}", dump_blocked()));
        }
    }
    Ok(())
}

/// How a stop is requested.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum How {
    Term,
    Kill9Del,
    /// SIGTERM, then `kill -9` while the stop is under way (a service manager's stop timeout),
    /// then `del`: the server must still be gone at once, nothing left in D state.
    TermKill9,
}

/// Stop the server the way `how` says; Ok(time until the server or `del` was done).
fn stop(s: Server, how: How) -> Result<Duration, String> {
    let id = s.id.to_string();
    match how {
        How::Term => s.term_within(STOP_BOUND).map_err(|e| format!("{e}; {}", dump_blocked())),
        How::Kill9Del => {
            s.kill9();
            let (st, took) = run_bounded(SERVER, &["del", &id], STOP_BOUND)?;
            check(st.success(), format!("`nvmedl-ublk del {id}` exited with {st}"))?;
            Ok(took)
        }
        How::TermKill9 => {
            let t0 = Instant::now();
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe { libc::kill(s.pid(), libc::SIGTERM) };
            std::thread::sleep(Duration::from_millis(20));
            s.kill9();
            // The device may be gone already (the stop finished first): then `del` says so.
            let (st, _) = run_bounded(SERVER, &["del", &id], STOP_BOUND)?;
            check(
                st.success() || !std::path::Path::new(&format!("/dev/ublkc{id}")).exists(),
                format!("`nvmedl-ublk del {id}` exited with {st}"),
            )?;
            Ok(t0.elapsed())
        }
    }
}

/// After a stop: writers ended, umount works, device and cores released, nothing blocked.
fn after_stop(ws: Vec<Child>, bdev: &str) -> Case {
    writers_end(ws)?;
    let (st, _) = run_bounded("umount", &[MNT], Duration::from_secs(20))?;
    check(st.success(), format!("umount {MNT} after the stop: {st}"))?;
    let cdev = bdev.replace("ublkb", "ublkc");
    check(gone(bdev) && gone(&cdev), format!("still present after umount: {:?}", ublk_devs()))?;
    cores_free(&[0, 1])?;
    none_blocked(Duration::from_secs(5))
}

/// Start a server and mount its ext4 (`fresh`: make the file system first).
fn serve_and_mount(fresh: bool) -> Result<Server, String> {
    let s = Server::start(&["--cores", CORES])?;
    let r = (|| {
        if fresh {
            shok(&format!("mkfs.ext4 -F -q {}", s.bdev))?;
        }
        shok(&format!("mkdir -p {MNT} && mount -t ext4 {} {MNT}", s.bdev))
    })();
    match r {
        Ok(()) => Ok(s),
        Err(e) => {
            let _ = s.stop();
            Err(e)
        }
    }
}

/// Verify and then remove the files of an earlier round (keeps the file system small).
fn verify_and_drop(files: &[(String, usize)]) -> Case {
    for (n, i) in files {
        verify_file(MNT, n, *i)?;
        let _ = std::fs::remove_file(format!("{MNT}/{n}"));
    }
    Ok(())
}

/// Of the files that were not confirmed durable, how many are missing; removes the others.
fn count_missing(files: &[(String, usize)]) -> usize {
    files.iter().filter(|(n, _)| std::fs::remove_file(format!("{MNT}/{n}")).is_err()).count()
}

/// What a round leaves: the durable files, the unconfirmed ones, the time the stop took.
type Round = (Vec<(String, usize)>, Vec<(String, usize)>, Duration);

/// One round: mount, verify the last round's durable files, write, stop.
fn round(i: usize, how: How, prev: &Round, missing: &mut usize) -> Result<Round, String> {
    let s = serve_and_mount(false)?;
    let bdev = s.bdev.clone();
    let log = format!("/tmp/ublkstop-{i}");
    *missing += count_missing(&prev.1);
    let ws = match verify_and_drop(&prev.0).and_then(|()| spawn_writers(&format!("s{i}p"), &log)) {
        Ok(ws) => ws,
        Err(e) => {
            let _ = sh(&format!("umount {MNT}"));
            let _ = s.stop();
            return Err(e);
        }
    };
    if let Err(e) = until_durable(&log, 2) {
        let _ = stop(s, How::Term);
        let _ = after_stop(ws, &bdev);
        return Err(e);
    }
    let took = stop(s, how)?;
    after_stop(ws, &bdev).map_err(|e| format!("after {how:?}: {e}"))?;
    Ok((durable(&log), unconfirmed(&log), took))
}

/// The suite's cases; `iters` stops in the loop.
pub fn run(t: &mut Tap, iters: usize) {
    t.case("ublk stop: SIGTERM with ext4 mounted and writers in fsync: server gone < 5 s, umount works, a new serve has every fsync'd file (sha256), fsck clean", || {
        let s = serve_and_mount(true)?;
        let bdev = s.bdev.clone();
        let log = "/tmp/ublkstop-sha";
        let ws = spawn_writers("sha", log)?;
        until_durable(log, 4)?;
        let names: Vec<String> = durable(log).into_iter().map(|(n, _)| n).collect();
        shok(&format!("cd {MNT} && sha256sum {} > /tmp/ublkstop.sha256", names.join(" ")))?;
        let took = stop(s, How::Term)?;
        after_stop(ws, &bdev)?;
        println!("# ublk stop: server gone {took:?} after SIGTERM, {} files fsync'd before it", durable(log).len());
        let s = serve_and_mount(false)?;
        let r = (|| {
            shok(&format!("cd {MNT} && sha256sum -c -s /tmp/ublkstop.sha256"))?;
            verify_and_drop(&durable(log))?;
            shok(&format!("umount {MNT}"))?;
            shok(&format!("fsck.ext4 -fn {}", s.bdev))
        })();
        let _ = sh(&format!("umount {MNT} 2>/dev/null"));
        s.stop()?;
        r
    });
    t.case(&format!("ublk stop: {iters} stops (SIGTERM; every third kill -9 + del; every sixth SIGTERM then kill -9 mid-stop + del) under fsync'd writes: each done < 5 s, no task left in D state, every fsync'd file intact, fsck clean"), || {
        let (mut longest, mut files, mut unconf, mut missing) = (Duration::ZERO, 0, 0, 0);
        let mut prev: Round = (Vec::new(), Vec::new(), Duration::ZERO);
        for i in 0..iters {
            let how = match (i % 3, i % 6) {
                (2, _) => How::Kill9Del,
                (_, 4) => How::TermKill9,
                _ => How::Term,
            };
            prev = round(i, how, &prev, &mut missing).map_err(|e| format!("round {i} ({how:?}): {e}"))?;
            files += prev.0.len();
            unconf += prev.1.len();
            longest = longest.max(prev.2);
        }
        let s = serve_and_mount(false)?;
        let r = (|| {
            missing += count_missing(&prev.1);
            verify_and_drop(&prev.0)?;
            shok(&format!("umount {MNT}"))?;
            shok(&format!("fsck.ext4 -fn {}", s.bdev))
        })();
        let _ = sh(&format!("umount {MNT} 2>/dev/null"));
        s.stop()?;
        r?;
        println!("# ublk stop: {iters} stops, longest {longest:?}, {files} fsync'd files verified");
        println!("# ublk stop: {unconf} fsync'd files not confirmed (the journal had aborted), {missing} of them missing");
        eq(ublk_devs(), Vec::<String>::new(), "ublk devices left")
    });
    t.case("ublk stop: `del` of a served device with ext4 mounted returns at once and stops its server", || {
        let s = serve_and_mount(false)?;
        let bdev = s.bdev.clone();
        let id = s.id.to_string();
        let log = "/tmp/ublkstop-del";
        let ws = spawn_writers("del", log)?;
        until_durable(log, 2)?;
        let (st, took) = run_bounded(SERVER, &["del", &id], STOP_BOUND)?;
        check(st.success(), format!("del exited with {st}"))?;
        let (ok, _) = s.wait_within(STOP_BOUND).map_err(|e| format!("{e}; {}", dump_blocked()))?;
        check(ok, "the server of a deleted device exited with an error")?;
        after_stop(ws, &bdev)?;
        println!("# ublk stop: del returned in {took:?}");
        let (ok, out) = srv(&["del", &id]);
        check(!ok && out.contains("does not exist"), format!("second del: {out:?}"))
    });
}

/// The stop count of this boot (`DNVM_UBLK_STOP_ITERS`; unset: the stop and unit cases do not
/// run in this boot).
pub fn iters() -> Option<usize> {
    std::env::var("DNVM_UBLK_STOP_ITERS").ok().and_then(|v| v.parse().ok())
}
