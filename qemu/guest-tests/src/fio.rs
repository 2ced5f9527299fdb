// SPDX-License-Identifier: MIT OR Apache-2.0
//! fio through the directnvm ioengine: Debian's fio in the guest loads
//! libfio_directnvm.so; fio's own crc32c verification and exit status are the assertions,
//! plus the engine's refusals of bad jobs (one line each, no I/O: the region they would
//! overwrite still holds what the test wrote there through libnvmedl).
//!
//! The kernel-stack baseline: one crc32c-verified io_uring job on a polled queue of QEMU's
//! emulated NVMe (/dev/nvme0n1; qemu/run.sh attaches it in this mode).
//!
//! Job files: userspace/fio/jobs/check/ (compiled in). DNVM_FIO_MB sets the MiB each job
//! writes and verifies (default 8).

use std::process::Command;

use nvmedl::Device;
use serde_json::Value;

use crate::tap::{check, Case, Tap};

const FIO: &str = "/usr/bin/fio";
const ENGINE: &str = "/usr/lib/fio/libfio_directnvm.so";

const VERIFY_4CORES: &str = include_str!("../../../userspace/fio/jobs/check/verify-4cores.fio");
const VERIFY_BSSPLIT: &str = include_str!("../../../userspace/fio/jobs/check/verify-bssplit.fio");
const VERIFY_CLONES: &str = include_str!("../../../userspace/fio/jobs/check/verify-clones.fio");
const VERIFY_DETECTS: &str = include_str!("../../../userspace/fio/jobs/check/verify-detects.fio");
const BAD: &str = include_str!("../../../userspace/fio/jobs/check/bad.fio");
const NVME_BASELINE: &str = include_str!("../../../userspace/fio/jobs/check/nvme-baseline.fio");

/// The region every bad job would overwrite (bad.fio: offset=512m size=1m), in 512-byte LBAs.
const GUARD_LBA: u64 = 512 << 11;
const GUARD_LEN: usize = 1 << 20;
const CHUNK: usize = 64 << 10;

fn mb() -> u64 {
    std::env::var("DNVM_FIO_MB").ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0 && v <= 64).unwrap_or(8)
}

/// One fio run: exit status, stderr, and the JSON report when fio wrote one.
pub struct Run {
    pub code: i32,
    pub stderr: String,
    pub json: Option<Value>,
}

/// Run fio on the job text `job` (written to /tmp/fio-`name`.fio) through the engine.
pub fn fio(name: &str, job: &str) -> Result<Run, String> {
    let path = format!("/tmp/fio-{name}.fio");
    let out = format!("/tmp/fio-{name}.json");
    std::fs::write(&path, job).map_err(|e| format!("{path}: {e}"))?;
    let _ = std::fs::remove_file(&out);
    let o = Command::new(FIO)
        .args(["--output-format=json", &format!("--output={out}"), &path])
        .env("DNVM_ENGINE", ENGINE)
        .env("DNVM_MB", mb().to_string())
        .current_dir("/tmp")
        .output()
        .map_err(|e| format!("run {FIO}: {e}"))?;
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    // fio may print warnings before the JSON object: parse from the first '{'.
    let json = std::fs::read_to_string(&out).ok().and_then(|s| s.find('{').and_then(|i| serde_json::from_str(&s[i..]).ok()));
    Ok(Run { code: o.status.code().unwrap_or(-1), stderr, json })
}

/// The `jobs` array of fio's JSON report.
pub fn jobs(r: &Run) -> Result<&Vec<Value>, String> {
    r.json.as_ref().and_then(|j| j["jobs"].as_array()).ok_or_else(|| format!("no JSON report; stderr: {}", r.stderr.trim()))
}

/// fio exited 0, every job reported error 0, wrote `bytes` and read them all back (verify).
fn verified(r: &Run, njobs: usize, bytes: u64) -> Case {
    check(r.code == 0, format!("fio exit {}; stderr: {}", r.code, r.stderr.trim()))?;
    let js = jobs(r)?;
    check(js.len() == njobs, format!("{} jobs reported, expected {njobs}", js.len()))?;
    for j in js {
        let name = j["jobname"].as_str().unwrap_or("?");
        let err = j["error"].as_i64().unwrap_or(-1);
        let w = j["write"]["io_bytes"].as_u64().unwrap_or(0);
        let rd = j["read"]["io_bytes"].as_u64().unwrap_or(0);
        check(err == 0, format!("job {name}: error {err}"))?;
        check(w == bytes, format!("job {name}: wrote {w} bytes, expected {bytes}"))?;
        check(rd == w, format!("job {name}: verified (read back) {rd} of {w} bytes"))?;
    }
    Ok(())
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 9)) as u8
}

/// Fill the guard region through libnvmedl (core 3), or compare it with that fill.
fn guard(write: bool) -> Case {
    let d = Device::open().map_err(|e| format!("open /dev/directnvm: {e}"))?;
    let mut h = d.handle(3).map_err(|e| format!("handle 3: {e}"))?;
    let mut b = h.buf_alloc(CHUNK).map_err(|e| e.to_string())?;
    for off in (0..GUARD_LEN).step_by(CHUNK) {
        let lba = GUARD_LBA + (off / 512) as u64;
        if write {
            for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
                *x = pattern(off + i);
            }
            h.write(&b, lba).map_err(|e| format!("guard write: {e}"))?;
        } else {
            h.read(&b, lba).map_err(|e| format!("guard read: {e}"))?;
            if let Some(i) = b.as_slice().iter().enumerate().position(|(i, &x)| x != pattern(off + i)) {
                return Err(format!("guard region changed at byte {} (a refused job did I/O)", off + i));
            }
        }
    }
    Ok(())
}

/// The largest request of core 0's handle (bytes).
fn max_request() -> Result<u64, String> {
    let d = Device::open().map_err(|e| format!("open /dev/directnvm: {e}"))?;
    let h = d.handle(0).map_err(|e| format!("handle 0: {e}"))?;
    Ok(h.max_request())
}

/// fio refused the case: non-zero exit, the reason on one stderr line, the guard intact.
fn refused(name: &str, sections: &str, reason: &str) -> Case {
    guard(true)?;
    let r = fio(name, &format!("{BAD}\n{sections}\n"))?;
    check(r.code != 0, format!("fio exit 0 for a bad job; stderr: {}", r.stderr.trim()))?;
    check(r.stderr.lines().any(|l| l.contains(reason)), format!("no stderr line with '{reason}'; stderr: {}", r.stderr.trim()))?;
    guard(false)
}

pub fn run(t: &mut Tap) {
    let bytes = mb() << 20;
    t.case("fio: the directnvm engine loads and fio runs", || {
        let o = Command::new(FIO).arg("--version").output().map_err(|e| format!("run {FIO}: {e}"))?;
        check(o.status.success(), "fio --version failed")?;
        check(std::path::Path::new(ENGINE).is_file(), format!("{ENGINE} missing"))
    });
    t.case("fio: verify=crc32c + verify_backlog on all four cores at once, one urgency class each", || {
        verified(&fio("verify-4cores", VERIFY_4CORES)?, 4, bytes)
    });
    t.case("fio: verify=crc32c with bssplit 4k..128k, iodepth 32, batched doorbells, priority scheduler", || {
        verified(&fio("verify-bssplit", VERIFY_BSSPLIT)?, 1, bytes)
    });
    t.case("fio: numjobs clones take distinct cores (4 auto, then 4 split over cpus_allowed=0-3), verify=crc32c", || {
        verified(&fio("verify-clones", VERIFY_CLONES)?, 8, bytes)
    });
    t.case("fio: kernel NVMe baseline: io_uring hipri on a polled queue of /dev/nvme0n1, verify=crc32c", || {
        let poll = std::fs::read_to_string("/sys/block/nvme0n1/queue/io_poll")
            .map_err(|e| format!("/sys/block/nvme0n1/queue/io_poll: {e} (no emulated NVMe attached?)"))?;
        check(poll.trim() == "1", format!("nvme0n1 io_poll is {} (no polled queues: nvme.poll_queues)", poll.trim()))?;
        verified(&fio("nvme-baseline", NVME_BASELINE)?, 1, bytes)
    });
    t.case("fio: verification fails on data written without headers (negative control)", || {
        let r = fio("verify-detects", VERIFY_DETECTS)?;
        check(r.code != 0, "fio exit 0 although the data has no verify headers")?;
        check(r.stderr.contains("verify"), format!("no verify failure on stderr: {}", r.stderr.trim()))
    });

    let cases: [(&str, &str, &str); 10] = [
        ("bs-not-block", "[bad]\nbs=6k", "block size 6144 is not a multiple of the 4096-byte block"),
        ("range", "[bad]\noffset=1020m\nsize=8m", "is beyond the namespace capacity"),
        ("numjobs", "[bad]\nnumjobs=5", "5 directnvm jobs run together but the engine has 4 cores"),
        ("core-twice", "[reader]\nrw=read\ncore=1\n[bad]\ncore=1", "core 1 already claimed by another job of this run"),
        ("cpus-twice", "[reader]\nrw=read\ncpus_allowed=1\n[bad]\ncpus_allowed=1", "core 1 already claimed by another job of this run"),
        ("thread", "[bad]\nthread=0", "needs thread=1"),
        ("scheduler", "[bad]\nscheduler=bogus", "unknown scheduler 'bogus'"),
        ("depth", "[bad]\niodepth=2048", "iodepth 2048 is above the handle's 1024 requests"),
        ("unknown-option", "[bad]\ncorez=1", "Bad option <corez=1>"),
        ("priority-range", "[bad]\npriority=7", "priority: max value out of range"),
    ];
    for (name, sections, reason) in cases {
        t.case(&format!("fio: bad job refused before any I/O ({name}): {reason}"), || refused(name, sections, reason));
    }
    t.case("fio: bad job refused before any I/O (bs above the maximum transfer)", || {
        let big = max_request()? + 4096;
        refused("bs-max", &format!("[bad]\nbs={big}\nsize={}", 2 * big), "is above the maximum transfer")
    });
    t.case("fio: bad job refused before any I/O (core claimed by another process)", || {
        let d = Device::open().map_err(|e| format!("open /dev/directnvm: {e}"))?;
        let _held = d.handle(2).map_err(|e| format!("handle 2: {e}"))?;
        let r = fio("core-held", &format!("{BAD}\n[bad]\ncore=2\n"))?;
        check(r.code != 0, format!("fio exit 0 with core 2 held; stderr: {}", r.stderr.trim()))?;
        check(r.stderr.contains("core 2 already claimed (by another process)"), format!("stderr: {}", r.stderr.trim()))
    });
}
