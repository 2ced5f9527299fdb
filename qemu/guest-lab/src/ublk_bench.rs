// SPDX-License-Identifier: MIT OR Apache-2.0
//! Mode `ublkbench` (not in `make check`): 4 KiB random-read IOPS and
//! p50/p99 latency at QD1 and QD32, same boot, through libnvmedl directly (`nvmedl-bench`),
//! through `/dev/ublkbN`, and through NVMe/TCP loopback onto that device.

use dnvm_guest_tests::fixtures::ublk_srv::{run as srv, Server};
use dnvm_guest_tests::sys::sh;

const SECS: u32 = 5;

/// The number after `"key" :` at or after `from` in fio's JSON.
fn num_after(s: &str, key: &str, from: usize) -> Option<(f64, usize)> {
    let k = format!("\"{key}\" : ");
    let at = s[from..].find(&k)? + from + k.len();
    let end = s[at..].find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-' || c == '+'))? + at;
    Some((s[at..end].parse().ok()?, end))
}

/// (IOPS, p50 µs, p99 µs) of fio's read side.
fn fio(dev: &str, qd: u32) -> Option<(f64, f64, f64)> {
    let cmd = format!(
        "fio --name=b --filename={dev} --rw=randread --bs=4k --size=64M --runtime={SECS} --time_based --direct=1 \
         --ioengine=io_uring --iodepth={qd} --output-format=json"
    );
    let (ok, out) = sh(&cmd);
    if !ok {
        println!("ublkbench: `{cmd}` failed: {}", out.lines().rev().take(4).collect::<Vec<_>>().join(" / "));
        return None;
    }
    let r = out.find("\"read\" : {")?;
    let (iops, _) = num_after(&out, "iops", r)?;
    let c = out[r..].find("\"clat_ns\"")? + r;
    let (p50, _) = num_after(&out, "50.000000", c)?;
    let (p99, _) = num_after(&out, "99.000000", c)?;
    Some((iops, p50 / 1000.0, p99 / 1000.0))
}

/// (IOPS, p50 µs, p99 µs) of nvmedl-bench on core 2.
fn direct(qd: u32) -> Option<(f64, f64, f64)> {
    let cmd = format!("nvmedl-bench --rw rand-read --cores 2 --iodepth {qd} --runtime {SECS}");
    let (_, out) = sh(&cmd);
    let total = out.lines().find(|l| l.starts_with("total:"))?;
    // "total: N I/Os in S s: X IOPS, Y MB/s"
    let tw: Vec<&str> = total.split_whitespace().collect();
    let iops = tw.get(tw.iter().position(|w| w.starts_with("IOPS"))?.checked_sub(1)?)?.parse().ok()?;
    let lat = out.lines().find(|l| l.starts_with("latency"))?;
    let w: Vec<&str> = lat.split_whitespace().collect();
    let at = |k: &str| w.iter().position(|x| *x == k).and_then(|i| w.get(i + 1)).and_then(|v| v.parse().ok());
    Some((iops, at("p50")?, at("p99")?))
}

fn report(path: &str, qd: u32, r: Option<(f64, f64, f64)>) -> bool {
    match r {
        Some((iops, p50, p99)) => {
            println!("ublkbench: {path:<9} QD{qd:<2}: {iops:>8.0} IOPS  p50 {p50:>7.1} us  p99 {p99:>7.1} us");
            true
        }
        None => {
            println!("ublkbench: {path} QD{qd}: no figure");
            false
        }
    }
}

/// The whole mode; true if every figure was measured.
pub fn run() -> bool {
    let mut ok = true;
    for qd in [1, 32] {
        ok &= report("libnvmedl", qd, direct(qd));
    }
    let s = match Server::start(&["--cores", "0"]) {
        Ok(s) => s,
        Err(e) => {
            println!("ublkbench: {e}");
            return false;
        }
    };
    for qd in [1, 32] {
        ok &= report("ublk", qd, fio(&s.bdev, qd));
    }
    let nqn = format!("nqn.2026-01.io.directnvm:ublk{}", s.id);
    let _ = sh("ip link set lo up");
    let (e, out) = srv(&["export", "--dev", &s.id.to_string(), "--tcp", "127.0.0.1:4420"]);
    let hostnqn = "nqn.2014-08.org.nvmexpress:uuid:6a1f0b1e-0000-4000-8000-000000000016";
    let (c, cout) =
        sh(&format!("nvme connect -t tcp -a 127.0.0.1 -s 4420 -n {nqn} --hostnqn {hostnqn} --hostid 6a1f0b1e-0000-4000-8000-000000000016"));
    if e && c {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let (_, dev) = sh(&format!("grep -l {nqn} /sys/block/nvme*/device/subsysnqn | head -1 | cut -d/ -f4"));
        for qd in [1, 32] {
            ok &= report("nvme/tcp", qd, fio(&format!("/dev/{}", dev.trim()), qd));
        }
        let _ = sh(&format!("nvme disconnect -n {nqn}"));
    } else {
        println!("ublkbench: export/connect failed: {out} {cout}");
        ok = false;
    }
    let _ = srv(&["unexport", "--dev", &s.id.to_string()]);
    ok &= s.stop().is_ok();
    ok
}
