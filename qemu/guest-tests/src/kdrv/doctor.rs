// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl doctor` on the virtual board: all ok when it is healthy, and the right diagnosis and
//! fix when a module is not loaded or a device node denies the caller (reloads only hdu.ko).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use crate::fixtures::modules::wait_for;
use crate::sys::sh;
use crate::tap::{check, eq, Case, Tap};

/// An unprivileged identity for the access cases, and the group the nodes are given to.
const NOBODY: u32 = 65534;
const NODE_GID: u32 = 990;

/// One finding of `nvmedl doctor --json`.
struct Finding {
    check: String,
    status: String,
    detail: String,
    fix: String,
}

/// Run `nvmedl doctor --json`, as root or (uid NOBODY, groups `groups`); exit code + findings.
fn doctor(as_user: Option<&[u32]>) -> Result<(i32, Vec<Finding>), String> {
    let mut cmd = Command::new("/bin/nvmedl");
    cmd.args(["doctor", "--json"]);
    if let Some(groups) = as_user {
        let groups: Vec<libc::gid_t> = groups.to_vec();
        // SAFETY: between fork and exec the closure only makes async-signal-safe system calls
        // (setgroups, setgid, setuid) on data allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0 || libc::setgid(NOBODY) != 0 || libc::setuid(NOBODY) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().map_err(|e| format!("nvmedl doctor: {e}"))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!("nvmedl doctor --json: {e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })?;
    let field = |f: &serde_json::Value, k: &str| f.get(k).and_then(|x| x.as_str()).unwrap_or_default().to_string();
    let findings = v
        .as_array()
        .ok_or("nvmedl doctor --json: not an array")?
        .iter()
        .map(|f| Finding { check: field(f, "check"), status: field(f, "status"), detail: field(f, "detail"), fix: field(f, "fix") })
        .collect();
    Ok((out.status.code().unwrap_or(-1), findings))
}

fn find<'a>(f: &'a [Finding], check: &str) -> Result<&'a Finding, String> {
    f.iter().find(|x| x.check == check).ok_or(format!("no `{check}` finding"))
}

fn summary(f: &[Finding]) -> String {
    f.iter().map(|x| format!("{}={}", x.check, x.status)).collect::<Vec<_>>().join(" ")
}

const NODES: [&str; 5] = ["/dev/directnvm", "/dev/hdu0", "/dev/hdu1", "/dev/hdu2", "/dev/hdu3"];

/// The nodes' mode and group, to put back after a case changed them.
fn node_modes() -> Result<Vec<(u32, u32)>, String> {
    NODES.iter().map(|n| std::fs::metadata(n).map(|m| (m.mode() & 0o7777, m.gid())).map_err(|e| format!("{n}: {e}"))).collect()
}

fn set_node(n: &str, mode: u32, gid: u32) -> Case {
    std::os::unix::fs::chown(n, None, Some(gid)).map_err(|e| format!("chown {n}: {e}"))?;
    std::fs::set_permissions(n, std::fs::Permissions::from_mode(mode)).map_err(|e| format!("chmod {n}: {e}"))
}

fn restore(saved: &[(u32, u32)]) -> Case {
    NODES.iter().zip(saved).try_for_each(|(n, (mode, gid))| set_node(n, *mode, *gid))
}

fn reload_hdu() -> Case {
    let (ok, out) = sh("insmod /lib/modules/hdu.ko");
    check(ok, format!("insmod hdu.ko: {out}"))?;
    wait_for("hdu nodes back", Duration::from_secs(5), || (0..4).all(|n| std::path::Path::new(&format!("/dev/hdu{n}")).exists()))
}

pub(super) fn doctor_cases(t: &mut Tap) {
    t.case("nvmedl doctor on the healthy board: every check ok, exit 0", || {
        let (code, f) = doctor(None)?;
        for c in ["device-tree", "carve-out", "modules", "drivers", "device-nodes", "access", "hdu-revision", "controller", "cores"] {
            let x = find(&f, c)?;
            check(x.status == "ok", format!("{c}: {} {} ({})", x.status, x.detail, summary(&f)))?;
        }
        eq(code, 0, "exit status")
    });
    t.case("nvmedl doctor with hdu.ko not loaded: modules FAIL naming hdu, fix modprobe hdu, exit 1", || {
        let (ok, out) = sh("rmmod hdu");
        check(ok, format!("rmmod hdu: {out}"))?;
        let r = doctor(None);
        let back = reload_hdu();
        let (code, f) = r?;
        back?;
        let m = find(&f, "modules")?;
        eq(m.status.as_str(), "fail", "modules status")?;
        eq(m.detail.as_str(), "not loaded: hdu", "modules detail")?;
        check(m.fix.starts_with("modprobe hdu"), format!("fix: {}", m.fix))?;
        eq(find(&f, "controller")?.status.as_str(), "skip", "controller (needs the drivers)")?;
        eq(code, 1, "exit status")
    });
    t.case("nvmedl doctor as an unprivileged user: access ok in the nodes' group, FAIL naming /dev/hdu1 at mode 0600", || {
        let saved = node_modes()?;
        // What 99-directnvm.rules does on a board: the nodes to the group, mode 0660.
        let r = (|| {
            NODES.iter().try_for_each(|n| set_node(n, 0o660, NODE_GID))?;
            let ok = doctor(Some(&[NODE_GID]))?;
            set_node("/dev/hdu1", 0o600, NODE_GID)?;
            Ok::<_, String>((ok, doctor(Some(&[NODE_GID]))?))
        })();
        restore(&saved)?;
        let ((code, f), (code2, f2)) = r?;
        let a = find(&f, "access")?;
        check(a.status == "ok" && code == 0, format!("in group {NODE_GID}: {} {} exit {code} ({})", a.status, a.detail, summary(&f)))?;
        let (code, f) = (code2, f2);
        let a = find(&f, "access")?;
        eq(a.status.as_str(), "fail", "access status")?;
        check(a.detail.contains("/dev/hdu1") && !a.detail.contains("/dev/hdu0"), format!("detail names only /dev/hdu1: {}", a.detail))?;
        check(a.fix.contains("group directnvm") && a.fix.contains("99-directnvm.rules"), format!("fix: {}", a.fix))?;
        eq(code, 1, "exit status")
    });
}
