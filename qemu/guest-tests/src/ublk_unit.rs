// SPDX-License-Identifier: MIT OR Apache-2.0
//! The systemd units of `nvmedl-ublk` (userspace/ublk/systemd, installed in the initramfs as
//! `make install` renders them), run the way systemd runs them, since the initramfs has no
//! systemd: `Environment=` then `EnvironmentFile=`, `%i`, `${VAR}` as one word and `$VAR` split,
//! `NOTIFY_SOCKET` for `Type=notify`, `KillSignal=` within `TimeoutStopSec=`, and
//! `Restart=on-failure` as a second `ExecStart` after a crash. Then the export unit, and the
//! initiator's commands exactly as `nvmedl-ublk export` prints them, from a guest without
//! `/etc/nvme/hostnqn` or `hostid`.

use crate::fixtures::ublk_srv::{gone, verify_file};
use crate::sys::sh;
use crate::tap::{check, Case, Tap};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const UNITS: &str = "/lib/systemd/system";
const ID: &str = "6";
const CONF_DIR: &str = "/etc/nvmedl-ublk";
const MNT: &str = "/tmp/ublkunit";
const NOTIFY: &str = "/tmp/nvmedl-ublk.notify";

/// The parts of a unit file this test acts on.
struct Unit {
    /// `Key=` → values in file order (`Environment=` and `EnvironmentFile=` repeat).
    keys: HashMap<String, Vec<String>>,
}

impl Unit {
    fn load(name: &str) -> Result<Unit, String> {
        let text = std::fs::read_to_string(format!("{UNITS}/{name}")).map_err(|e| format!("{UNITS}/{name}: {e}"))?;
        let mut keys: HashMap<String, Vec<String>> = HashMap::new();
        for l in text.lines().map(str::trim).filter(|l| !l.starts_with('#') && !l.starts_with('[')) {
            if let Some((k, v)) = l.split_once('=') {
                keys.entry(k.to_string()).or_default().push(v.to_string());
            }
        }
        Ok(Unit { keys })
    }

    fn one(&self, key: &str) -> Result<String, String> {
        self.keys.get(key).and_then(|v| v.last().cloned()).ok_or(format!("no {key}="))
    }

    /// The service's environment for instance `inst`: `Environment=`, then the files.
    fn env(&self, inst: &str) -> HashMap<String, String> {
        let mut env = HashMap::new();
        for e in self.keys.get("Environment").into_iter().flatten() {
            if let Some((k, v)) = e.split_once('=') {
                env.insert(k.to_string(), v.to_string());
            }
        }
        for f in self.keys.get("EnvironmentFile").into_iter().flatten() {
            let path = f.trim_start_matches('-').replace("%i", inst);
            for l in std::fs::read_to_string(path).unwrap_or_default().lines() {
                if let Some((k, v)) = l.trim().split_once('=') {
                    env.insert(k.to_string(), v.trim_matches('"').to_string());
                }
            }
        }
        env
    }

    /// The argv of command line `key` for instance `inst`, expanded as systemd does.
    fn argv(&self, key: &str, inst: &str) -> Result<Vec<String>, String> {
        let env = self.env(inst);
        let mut argv = Vec::new();
        for w in self.one(key)?.replace("%i", inst).split_whitespace() {
            if let Some(name) = w.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
                argv.push(env.get(name).cloned().unwrap_or_default());
            } else if let Some(name) = w.strip_prefix('$') {
                argv.extend(env.get(name).map(|v| v.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap_or_default());
            } else {
                argv.push(w.to_string());
            }
        }
        Ok(argv)
    }

    fn timeout_stop(&self) -> Duration {
        Duration::from_secs(self.one("TimeoutStopSec").ok().and_then(|s| s.parse().ok()).unwrap_or(90))
    }
}

fn shok(cmd: &str) -> Case {
    let (ok, out) = sh(cmd);
    check(ok, format!("`{cmd}` failed: {}", out.lines().rev().take(6).collect::<Vec<_>>().join(" / ")))
}

/// A `Type=notify` service started by its `ExecStart=`: (child, its first stdout line) once
/// READY=1 arrived.
fn start(u: &Unit) -> Result<(Child, String), String> {
    let argv = u.argv("ExecStart", ID)?;
    let _ = std::fs::remove_file(NOTIFY);
    let sock = UnixDatagram::bind(NOTIFY).map_err(|e| format!("bind {NOTIFY}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_secs(60))).map_err(|e| e.to_string())?;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("NOTIFY_SOCKET", NOTIFY)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{argv:?}: {e}"))?;
    let mut buf = [0u8; 256];
    let ready = sock.recv(&mut buf).map(|n| String::from_utf8_lossy(&buf[..n]).contains("READY=1")).unwrap_or(false);
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("no READY=1 from {argv:?} within 60 s (stdout {line:?})"));
    }
    Ok((child, line))
}

/// Stop as systemd does: `KillSignal=` to the main process, then wait `TimeoutStopSec=`.
fn stop(u: &Unit, mut child: Child) -> Result<Duration, String> {
    let sig = match u.one("KillSignal")?.as_str() {
        "SIGTERM" => libc::SIGTERM,
        "SIGINT" => libc::SIGINT,
        other => return Err(format!("KillSignal={other} not expected")),
    };
    let t0 = Instant::now();
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return if st.success() { Ok(t0.elapsed()) } else { Err(format!("server exited with {st} on KillSignal")) };
        }
        if t0.elapsed() > u.timeout_stop() {
            let _ = child.kill();
            return Err(format!("still running after TimeoutStopSec={:?}: systemd would SIGKILL it", u.timeout_stop()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn writer(tag: &str, count: usize, log: &str) -> Result<Child, String> {
    Command::new("/bin/dnvm-guest-tests").args(["ublk-writer", MNT, tag, &count.to_string(), log]).spawn().map_err(|e| e.to_string())
}

fn logged(log: &str) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

fn serve_unit(t: &mut Tap) {
    t.case("ublk unit: ExecStart (Type=notify READY=1), kill -9 then Restart's ExecStart recovers, KillSignal with ext4 mounted stops within TimeoutStopSec, data and fsck intact", || {
        let u = Unit::load("nvmedl-ublk@.service")?;
        check(u.one("Restart")? == "on-failure" && u.one("Type")? == "notify", "Restart=on-failure and Type=notify expected")?;
        std::fs::create_dir_all(CONF_DIR).map_err(|e| e.to_string())?;
        std::fs::write(format!("{CONF_DIR}/{ID}.conf"), "NVMEDL_UBLK_CORES=2,3\n").map_err(|e| e.to_string())?;
        let bdev = format!("/dev/ublkb{ID}");
        let (child, line) = start(&u)?;
        check(line.contains(&bdev) && line.contains("ready") && line.contains("2 queue(s)"), format!("ready line {line:?}"))?;
        shok(&format!("mkfs.ext4 -F -q {bdev} && mkdir -p {MNT} && mount -t ext4 {bdev} {MNT}"))?;
        let log = "/tmp/ublkunit.log";
        let mut w = writer("unit", 30, log)?;
        let t0 = Instant::now();
        while logged(log).len() < 3 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // The crash, then what Restart=on-failure does.
        let mut dead = child;
        let _ = dead.kill();
        let _ = dead.wait();
        check(std::path::Path::new(&bdev).exists(), "the device must survive a crash")?;
        let (child, line) = start(&u)?;
        check(line.contains("recovered"), format!("restart's ready line {line:?}"))?;
        let st = w.wait().map_err(|e| e.to_string())?;
        check(st.success(), format!("writer across the crash: {st}"))?;
        let took = stop(&u, child)?;
        println!("# ublk unit: stopped {took:?} after KillSignal with ext4 mounted");
        shok(&format!("umount {MNT}"))?;
        check(gone(&bdev), format!("{bdev} left after the stop and umount"))?;
        let (child, line) = start(&u)?;
        let r = (|| {
            check(line.contains("ready"), format!("fresh start's ready line {line:?}"))?;
            shok(&format!("mount -t ext4 {bdev} {MNT}"))?;
            let files = logged(log);
            check(files.len() == 30, format!("{} of 30 files fsync'd", files.len()))?;
            for (n, i) in &files {
                verify_file(MNT, n, *i)?;
            }
            shok(&format!("umount {MNT} && fsck.ext4 -fn {bdev}"))
        })();
        let s = stop(&u, child);
        r.and(s.map(|_| ()))
    });
}

fn export_unit(t: &mut Tap) {
    t.case("ublk unit: export unit's ExecStart, the initiator commands as export prints them (no /etc/nvme files), data through the fabric, ExecStop", || {
        let serve = Unit::load("nvmedl-ublk@.service")?;
        let export = Unit::load("nvmedl-ublk-export@.service")?;
        std::fs::write(format!("{CONF_DIR}/{ID}.conf"), "NVMEDL_UBLK_CORES=2\nNVMEDL_UBLK_EXPORT_TCP=127.0.0.1:4422\n")
            .map_err(|e| e.to_string())?;
        shok("ip link set lo up && rm -rf /etc/nvme")?;
        let (child, _) = start(&serve)?;
        let r = (|| {
            let argv = export.argv("ExecStart", ID)?;
            let o = Command::new(&argv[0]).args(&argv[1..]).output().map_err(|e| e.to_string())?;
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            check(o.status.success(), format!("export: {out} {}", String::from_utf8_lossy(&o.stderr)))?;
            let lines: Vec<&str> = out.lines().skip_while(|l| !l.contains("on the initiator")).skip(1).map(str::trim).collect();
            check(lines.len() == 4, format!("initiator lines in {out:?}"))?;
            let nqn = format!("nqn.2026-01.io.directnvm:ublk{ID}");
            for l in &lines {
                let (ok, o) = sh(l);
                check(ok, format!("`{l}`: {o}"))?;
                if l.contains("discover") {
                    check(o.contains(&nqn), format!("discovery log lacks {nqn}: {o}"))?;
                }
            }
            let fab = (0..200)
                .find_map(|_| {
                    std::thread::sleep(Duration::from_millis(25));
                    std::fs::read_dir("/sys/block").ok()?.flatten().find_map(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        let sub = std::fs::read_to_string(format!("/sys/block/{n}/device/subsysnqn")).unwrap_or_default();
                        (n.starts_with("nvme") && sub.trim() == nqn).then(|| format!("/dev/{n}"))
                    })
                })
                .ok_or("no fabric namespace appeared")?;
            let io = shok(&format!(
                "head -c 131072 /dev/urandom > /tmp/u6.in && dd if=/tmp/u6.in of={fab} bs=64k seek=16 oflag=direct 2>/dev/null \
                 && dd if=/dev/ublkb{ID} of=/tmp/u6.out bs=64k skip=16 count=2 iflag=direct 2>/dev/null && cmp /tmp/u6.in /tmp/u6.out"
            ));
            let d = shok(&format!("nvme disconnect -n {nqn}"));
            let stop = export.argv("ExecStop", ID).and_then(|a| {
                let (ok, o) = crate::fixtures::ublk_srv::run(&a[1..].iter().map(String::as_str).collect::<Vec<_>>());
                check(ok, format!("ExecStop: {o}"))
            });
            io.and(d).and(stop)
        })();
        let s = stop(&serve, child);
        let _ = std::fs::remove_file(format!("{CONF_DIR}/{ID}.conf"));
        r.and(s.map(|_| ()))
    });
}

pub fn run(t: &mut Tap) {
    serve_unit(t);
    export_unit(t);
}
