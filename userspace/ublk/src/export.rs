// SPDX-License-Identifier: MIT OR Apache-2.0
//! `export` / `unexport`: the ublk block device as namespace 1 of an NVMe-oF subsystem on a
//! TCP port of the kernel target (nvmet), set up and torn down through configfs.

use crate::cli::{default_nqn, ExportArgs, UnexportArgs};
use crate::error::{io_err, Result, UblkSrvError};
use std::fs;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

const CONFIGFS: &str = "/sys/kernel/config";
const NVMET: &str = "/sys/kernel/config/nvmet";

fn write(path: &Path, val: &str) -> Result<()> {
    fs::write(path, val).map_err(|e| io_err(path.display().to_string(), e))
}

fn mkdir(path: &Path) -> Result<()> {
    fs::create_dir(path).map_err(|e| io_err(path.display().to_string(), e))
}

/// Mount configfs if needed; the nvmet directory must then exist.
fn nvmet_root() -> Result<PathBuf> {
    if !Path::new(NVMET).exists() && Path::new(CONFIGFS).exists() {
        let _ = std::process::Command::new("mount").args(["-t", "configfs", "none", CONFIGFS]).status();
    }
    if !Path::new(NVMET).exists() {
        return Err(UblkSrvError::Nvmet(format!("{NVMET} missing: no NVMe target in this kernel (CONFIG_NVME_TARGET)")));
    }
    Ok(PathBuf::from(NVMET))
}

fn read_trim(p: &Path) -> String {
    fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

fn dirs(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(p).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    v.sort();
    v
}

fn same_addr(port: &Path, addr: SocketAddr) -> bool {
    read_trim(&port.join("addr_traddr")) == addr.ip().to_string() && read_trim(&port.join("addr_trsvcid")) == addr.port().to_string()
}

pub fn export(a: ExportArgs) -> Result<()> {
    let bdev = format!("/dev/ublkb{}", a.dev);
    if !Path::new(&bdev).exists() {
        return Err(UblkSrvError::Nvmet(format!("{bdev} does not exist (is `nvmedl-ublk serve` running?)")));
    }
    let addr: SocketAddr = a.tcp.parse().map_err(|_| UblkSrvError::Nvmet(format!("bad address {:?}, want ADDR:PORT", a.tcp)))?;
    let root = nvmet_root()?;
    for p in dirs(&root.join("ports")) {
        if same_addr(&p, addr) {
            return Err(UblkSrvError::Nvmet(format!("{addr} is already an nvmet port ({})", p.display())));
        }
    }
    if let Err(e) = TcpListener::bind(addr) {
        return Err(UblkSrvError::Nvmet(format!("{addr}: {e}")));
    }
    let nqn = a.nqn.clone().unwrap_or_else(|| default_nqn(a.dev));
    let sub = root.join("subsystems").join(&nqn);
    if sub.exists() {
        return Err(UblkSrvError::Nvmet(format!("{nqn} is already exported")));
    }
    for h in &a.allow_hosts {
        if h.is_empty() || h.contains('/') || h.len() > 223 {
            return Err(UblkSrvError::Nvmet(format!("bad host NQN {h:?}")));
        }
    }
    let r = build(&root, &sub, &nqn, &bdev, addr, &a.allow_hosts);
    if r.is_err() {
        let _ = teardown(&root, &nqn, Some(addr));
    }
    let port = r?;
    let who =
        if a.allow_hosts.is_empty() { "any host may connect".to_string() } else { format!("hosts allowed: {}", a.allow_hosts.join(", ")) };
    println!("nvmedl-ublk: {bdev} exported as {nqn} on tcp {addr} (nvmet port {port}); {who}");
    let host = if addr.ip().is_unspecified() { "<this board's address>".to_string() } else { addr.ip().to_string() };
    println!("nvmedl-ublk: on the initiator, as root (the first two lines once per host):");
    for l in host_setup(&host, &addr.port().to_string(), &nqn) {
        println!("  {l}");
    }
    Ok(())
}

/// What an initiator runs to reach an export: its host NQN and host ID files (the kernel's
/// fabrics driver refuses a second connection from a host whose ID it derived itself but whose
/// NQN differs, and nvme-cli needs them to be stable), then discovery and connect. The same
/// lines are in docs/ublk.md (a test checks it) and the guest suite runs them as printed.
pub fn host_setup(addr: &str, port: &str, nqn: &str) -> [String; 4] {
    [
        "[ -s /etc/nvme/hostnqn ] || { mkdir -p /etc/nvme && nvme gen-hostnqn > /etc/nvme/hostnqn; }".to_string(),
        "[ -s /etc/nvme/hostid ] || { sed -n 's/.*:uuid://p' /etc/nvme/hostnqn | grep . || cat /proc/sys/kernel/random/uuid; } > /etc/nvme/hostid"
            .to_string(),
        format!("nvme discover -t tcp -a {addr} -s {port}"),
        format!("nvme connect -t tcp -a {addr} -s {port} -n {nqn}"),
    ]
}

fn build(root: &Path, sub: &Path, nqn: &str, bdev: &str, addr: SocketAddr, hosts: &[String]) -> Result<u32> {
    mkdir(sub)?;
    write(&sub.join("attr_allow_any_host"), if hosts.is_empty() { "1" } else { "0" })?;
    for h in hosts {
        let host = root.join("hosts").join(h);
        if !host.exists() {
            mkdir(&host)?;
        }
        std::os::unix::fs::symlink(&host, sub.join("allowed_hosts").join(h)).map_err(|e| io_err(format!("allow host {h}"), e))?;
    }
    let ns = sub.join("namespaces/1");
    mkdir(&ns)?;
    write(&ns.join("device_path"), bdev)?;
    write(&ns.join("enable"), "1")?;
    let ports = root.join("ports");
    let id = (1..).find(|i| !ports.join(i.to_string()).exists()).unwrap_or(1);
    let port = ports.join(id.to_string());
    mkdir(&port)?;
    write(&port.join("addr_trtype"), "tcp")?;
    write(&port.join("addr_adrfam"), if addr.is_ipv4() { "ipv4" } else { "ipv6" })?;
    write(&port.join("addr_traddr"), &addr.ip().to_string())?;
    write(&port.join("addr_trsvcid"), &addr.port().to_string())?;
    let link = port.join("subsystems").join(nqn);
    std::os::unix::fs::symlink(sub, &link).map_err(|e| io_err(format!("enable port {addr}"), e))?;
    Ok(id)
}

/// Remove every trace of `nqn`: its port links (and the ports left empty), the namespace,
/// the subsystem. Returns whether the subsystem existed.
fn teardown(root: &Path, nqn: &str, half_made: Option<SocketAddr>) -> Result<bool> {
    for p in dirs(&root.join("ports")) {
        let link = p.join("subsystems").join(nqn);
        let ours = link.symlink_metadata().is_ok();
        if ours {
            fs::remove_file(&link).map_err(|e| io_err(link.display().to_string(), e))?;
        }
        // A port of ours now without subsystems, or the one a failed export half-made.
        let half_made = half_made.is_some_and(|a| same_addr(&p, a));
        if (ours || half_made) && dirs(&p.join("subsystems")).is_empty() {
            fs::remove_dir(&p).map_err(|e| io_err(p.display().to_string(), e))?;
        }
    }
    let sub = root.join("subsystems").join(nqn);
    if !sub.exists() {
        return Ok(false);
    }
    for link in dirs(&sub.join("allowed_hosts")) {
        fs::remove_file(&link).map_err(|e| io_err(link.display().to_string(), e))?;
    }
    // Host entries no other subsystem allows any more.
    let in_use: Vec<PathBuf> = dirs(&root.join("subsystems"))
        .iter()
        .filter(|s| s.as_path() != sub)
        .flat_map(|s| dirs(&s.join("allowed_hosts")))
        .filter_map(|l| l.file_name().map(PathBuf::from))
        .collect();
    for h in dirs(&root.join("hosts")) {
        if h.file_name().is_some_and(|n| !in_use.iter().any(|u| u.as_os_str() == n)) {
            let _ = fs::remove_dir(&h);
        }
    }
    for ns in dirs(&sub.join("namespaces")) {
        let _ = fs::write(ns.join("enable"), "0");
        fs::remove_dir(&ns).map_err(|e| io_err(ns.display().to_string(), e))?;
    }
    fs::remove_dir(&sub).map_err(|e| io_err(sub.display().to_string(), e))?;
    Ok(true)
}

pub fn unexport(a: UnexportArgs) -> Result<()> {
    let root = nvmet_root()?;
    let bdev = format!("/dev/ublkb{}", a.dev);
    let by_device = || {
        dirs(&root.join("subsystems"))
            .into_iter()
            .find(|s| dirs(&s.join("namespaces")).iter().any(|ns| read_trim(&ns.join("device_path")) == bdev))
            .and_then(|s| s.file_name().map(|n| n.to_string_lossy().into_owned()))
    };
    let nqn = a.nqn.or_else(by_device).unwrap_or_else(|| default_nqn(a.dev));
    if !teardown(&root, &nqn, None)? {
        return Err(UblkSrvError::Nvmet(format!("{nqn} is not exported")));
    }
    println!("nvmedl-ublk: {nqn} unexported");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::host_setup;

    #[test]
    fn the_docs_show_the_host_setup_that_export_prints() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/ublk.md")).expect("docs/ublk.md");
        for l in host_setup("ADDR", "PORT", "NQN") {
            assert!(doc.lines().any(|d| d.trim() == l), "docs/ublk.md lacks the line {l:?}");
        }
    }
}
