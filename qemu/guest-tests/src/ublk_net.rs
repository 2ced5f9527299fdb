// SPDX-License-Identifier: MIT OR Apache-2.0
//! The NVMe/TCP export of the ublk device over loopback: export through nvmet configfs,
//! connect with nvme-cli, data written through the fabric read back through ublk and the
//! other way round, disconnect, unexport leaves configfs empty; port in use is an error.

use crate::fixtures::ublk_srv::{run as srv, Server};
use crate::sys::sh;
use crate::tap::{check, Case, Tap};

const ADDR: &str = "127.0.0.1:4420";
const HOSTID: &str = "6a1f0b1e-0000-4000-8000-000000000016";
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:6a1f0b1e-0000-4000-8000-000000000016";

fn shok(cmd: &str) -> Case {
    let (ok, out) = sh(cmd);
    check(ok, format!("`{cmd}` failed: {}", out.lines().rev().take(6).collect::<Vec<_>>().join(" / ")))
}

/// The block device of the fabric controller whose subsystem is `nqn`.
fn fabric_bdev(nqn: &str) -> Option<String> {
    for _ in 0..200 {
        for e in std::fs::read_dir("/sys/block").ok()?.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let sub = std::fs::read_to_string(format!("/sys/block/{n}/device/subsysnqn")).unwrap_or_default();
            if n.starts_with("nvme") && sub.trim() == nqn {
                return Some(format!("/dev/{n}"));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    None
}

fn empty(dir: &str) -> bool {
    std::fs::read_dir(dir).map(|mut r| r.next().is_none()).unwrap_or(false)
}

pub fn run(t: &mut Tap, s: &Server) {
    let nqn = format!("nqn.2026-01.io.directnvm:ublk{}", s.id);
    let id = s.id.to_string();
    t.case("nvme/tcp: export, connect over loopback, data verified both ways, disconnect, unexport", || {
        shok("ip link set lo up")?;
        let (ok, out) = srv(&["export", "--dev", &id, "--tcp", ADDR]);
        check(ok, format!("export: {out}"))?;
        let (ok2, out2) = srv(&["export", "--dev", &id, "--tcp", ADDR, "--nqn", "nqn.2026-01.io.directnvm:other"]);
        let r = (|| {
            check(!ok2 && out2.contains("already"), format!("second export on the same port: {out2:?}"))?;
            shok(&format!("nvme connect -t tcp -a 127.0.0.1 -s 4420 -n {nqn} --hostnqn {HOSTNQN} --hostid {HOSTID}"))?;
            let fab = fabric_bdev(&nqn).ok_or("no fabric namespace block device appeared")?;
            let r = (|| {
                shok("head -c 262144 /dev/urandom > /tmp/n.in && head -c 262144 /dev/urandom > /tmp/n2.in")?;
                shok(&format!("dd if=/tmp/n.in of={fab} bs=64k seek=64 oflag=direct 2>/dev/null"))?;
                shok(&format!(
                    "dd if={} of=/tmp/n.out bs=64k skip=64 count=4 iflag=direct 2>/dev/null && cmp /tmp/n.in /tmp/n.out",
                    s.bdev
                ))?;
                shok(&format!("dd if=/tmp/n2.in of={} bs=64k seek=128 oflag=direct 2>/dev/null", s.bdev))?;
                shok(&format!("dd if={fab} of=/tmp/n2.out bs=64k skip=128 count=4 iflag=direct 2>/dev/null && cmp /tmp/n2.in /tmp/n2.out"))
            })();
            let d = shok(&format!("nvme disconnect -n {nqn}"));
            r.and(d)
        })();
        let (ok3, out3) = srv(&["unexport", "--dev", &id]);
        r?;
        check(ok3, format!("unexport: {out3}"))?;
        check(
            empty("/sys/kernel/config/nvmet/subsystems") && empty("/sys/kernel/config/nvmet/ports"),
            "configfs nvmet not empty after unexport",
        )
    });
    t.case("nvme/tcp: export --allow-host: that host connects, another host NQN is refused, unexport removes the host entry", || {
        let (ok, out) = srv(&["export", "--dev", &id, "--tcp", "127.0.0.1:4423", "--allow-host", HOSTNQN]);
        check(ok && out.contains("hosts allowed"), format!("export --allow-host: {out}"))?;
        let r = (|| {
            let other = "00000000-0000-4000-8000-0000000000aa";
            let (bad_ok, bad_out) = sh(&format!(
                "nvme connect -t tcp -a 127.0.0.1 -s 4423 -n {nqn} --hostnqn nqn.2014-08.org.nvmexpress:uuid:{other} --hostid {other}"
            ));
            check(!bad_ok, format!("a host that is not allowed connected: {bad_out}"))?;
            shok(&format!("nvme connect -t tcp -a 127.0.0.1 -s 4423 -n {nqn} --hostnqn {HOSTNQN} --hostid {HOSTID}"))?;
            let found = fabric_bdev(&nqn).is_some();
            shok(&format!("nvme disconnect -n {nqn}"))?;
            check(found, "the allowed host got no namespace block device")
        })();
        let (ok3, out3) = srv(&["unexport", "--dev", &id]);
        r?;
        check(ok3, format!("unexport: {out3}"))?;
        check(
            ["subsystems", "ports", "hosts"].iter().all(|d| empty(&format!("/sys/kernel/config/nvmet/{d}"))),
            "configfs nvmet not empty after unexport",
        )
    });
    t.case("nvme/tcp: export on a port another program listens on is a clear error, nothing left", || {
        let held = std::net::TcpListener::bind("127.0.0.1:4421").map_err(|e| format!("bind 4421: {e}"))?;
        let (ok, out) = srv(&["export", "--dev", &id, "--tcp", "127.0.0.1:4421"]);
        drop(held);
        check(!ok && out.contains("4421") && out.lines().count() == 1, format!("{out:?}"))?;
        check(empty("/sys/kernel/config/nvmet/subsystems") && empty("/sys/kernel/config/nvmet/ports"), "configfs nvmet not empty")
    });
    t.case("nvme/tcp: unexport of what is not exported is a clear error", || {
        let (ok, out) = srv(&["unexport", "--dev", &id]);
        check(!ok && out.contains("not exported") && out.lines().count() == 1, format!("{out:?}"))
    });
}
