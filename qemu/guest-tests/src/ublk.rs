// SPDX-License-Identifier: MIT OR Apache-2.0
//! Mode `ublk`: the engine as a block device through `nvmedl-ublk`.
//! Geometry, verified raw writes with fio (4 jobs), ext4 with concurrent writer processes and
//! fsck, kill -9 + `--recover` with every fsync'd file intact, SIGTERM cleanup, bad input.

use crate::fixtures::ublk_srv::{cores_free, gone, run, ublk_devs, verify_file, Server};
use crate::sys::sh;
use crate::tap::{check, eq, Case, Tap};
use std::process::{Child, Command};

const CORES: &str = "0,1";
const MNT: &str = "/tmp/ublkfs";
const WRITERS: usize = 4;
const FILES: usize = 12;

fn read_sys(p: &str) -> String {
    std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

fn shok(cmd: &str) -> Case {
    let (ok, out) = sh(cmd);
    check(ok, format!("`{cmd}` failed: {}", out.lines().rev().take(6).collect::<Vec<_>>().join(" / ")))
}

fn writers(tag: &str, count: usize, log: Option<&str>) -> Result<Vec<Child>, String> {
    (0..WRITERS)
        .map(|p| {
            let mut c = Command::new("/bin/dnvm-guest-tests");
            c.args(["ublk-writer", MNT, &format!("{tag}{p}"), &count.to_string()]);
            if let Some(l) = log {
                c.arg(format!("{l}.{p}"));
            }
            c.spawn().map_err(|e| e.to_string())
        })
        .collect()
}

fn join(children: Vec<Child>) -> Case {
    for mut c in children {
        let st = c.wait().map_err(|e| e.to_string())?;
        check(st.success(), format!("writer exited with {st}"))?;
    }
    Ok(())
}

fn geometry(t: &mut Tap, s: &Server, capacity: u64) {
    let name = s.bdev.trim_start_matches("/dev/");
    t.case("ublk: capacity, 512-byte blocks, one queue per core, no discard/write-zeroes", || {
        eq(read_sys(&format!("/sys/block/{name}/size")), capacity.to_string(), "size in sectors")?;
        eq(read_sys(&format!("/sys/block/{name}/queue/logical_block_size")), "512".into(), "logical block size")?;
        let mq = std::fs::read_dir(format!("/sys/block/{name}/mq")).map(|r| r.count()).unwrap_or(0);
        eq(mq, 2, "hardware queues")?;
        eq(read_sys(&format!("/sys/block/{name}/queue/discard_max_bytes")), "0".into(), "discard_max_bytes")?;
        eq(read_sys(&format!("/sys/block/{name}/queue/write_zeroes_max_bytes")), "0".into(), "write_zeroes_max_bytes")
    });
}

fn fio_raw(t: &mut Tap, s: &Server) {
    t.case("ublk: fio 4 jobs random writes verified with crc32c on the raw device", || {
        let cmd = format!(
            "fio --name=v --filename={} --rw=randwrite --bs=4k --size=8M --offset_increment=8M --numjobs=4 \
             --ioengine=psync --direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting",
            s.bdev
        );
        let (ok, out) = sh(&cmd);
        check(ok && !out.contains("verify:"), format!("fio failed: {}", out.lines().rev().take(8).collect::<Vec<_>>().join(" / ")))?;
        check(out.contains("err= 0"), "fio summary without err= 0")
    });
    t.case("ublk: unaligned 512-byte O_DIRECT writes read back (read-modify-write)", || {
        let dev = &s.bdev;
        shok(&format!(
            "head -c 1536 /dev/urandom > /tmp/u.in && dd if=/tmp/u.in of={dev} bs=512 seek=4097 count=3 oflag=direct 2>/dev/null"
        ))?;
        shok(&format!("dd if={dev} of=/tmp/u.out bs=512 skip=4097 count=3 iflag=direct 2>/dev/null && cmp /tmp/u.in /tmp/u.out"))
    });
}

fn verify_all(tag: &str) -> Case {
    for p in 0..WRITERS {
        for i in 0..FILES {
            verify_file(MNT, &format!("{tag}{p}-{i}"), i)?;
        }
    }
    Ok(())
}

fn ext4(t: &mut Tap, s: &Server) {
    let dev = s.bdev.clone();
    t.case("ublk: mkfs.ext4, 4 writer processes, sync, umount, fsck -fn clean, remount, every file verified", || {
        shok(&format!("mkfs.ext4 -F -q {dev}"))?;
        shok(&format!("mkdir -p {MNT} && mount -t ext4 {dev} {MNT}"))?;
        join(writers("w", FILES, None)?)?;
        shok(&format!("sync && umount {MNT}"))?;
        shok(&format!("fsck.ext4 -fn {dev}"))?;
        shok(&format!("mount -t ext4 {dev} {MNT}"))?;
        verify_all("w")
    });
}

/// Count lines of the writers' fsync logs.
fn durable(log: &str) -> Vec<(String, usize)> {
    let mut v = Vec::new();
    for p in 0..WRITERS {
        for l in read_sys(&format!("{log}.{p}")).lines() {
            let mut it = l.split_whitespace();
            if let (Some(n), Some(i)) = (it.next(), it.next().and_then(|i| i.parse().ok())) {
                v.push((n.to_string(), i));
            }
        }
    }
    v
}

fn crash(t: &mut Tap, s: Server) -> Option<Server> {
    let (id, dev) = (s.id, s.bdev.clone());
    let log = "/tmp/ublk-fsync";
    let mut next = None;
    t.case("ublk: kill -9 during fsync'd writes, --recover, fsck clean, every fsync'd file intact", || {
        let ws = writers("k", 40, Some(log))?;
        // Kill once some files are durable, while the writers are still going.
        let mut spins = 0;
        while durable(log).len() < 8 && spins < 2000 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            spins += 1;
        }
        let before = durable(log).len();
        s.kill9();
        check(std::path::Path::new(&dev).exists(), format!("{dev} vanished after kill -9"))?;
        // `list` finds the orphan for whoever has to recover it.
        let (ok, out) = run(&["list"]);
        let line = out.lines().find(|l| l.split_whitespace().next() == Some(&id.to_string()));
        check(
            ok && line.is_some_and(|l| l.contains("quiesced") && l.contains(&format!("--recover {id}"))),
            format!("list after kill -9: {out:?}"),
        )?;
        let r = Server::start(&["--cores", CORES, "--recover", &id.to_string()])?;
        next = Some(r);
        join(ws)?;
        check(before > 0, "no file was fsync'd before the kill")?;
        shok(&format!("sync && umount {MNT}"))?;
        shok(&format!("fsck.ext4 -fn {dev}"))?;
        shok(&format!("mount -t ext4 {dev} {MNT}"))?;
        let d = durable(log);
        println!("# ublk crash: server killed after {before} fsync'd files; {} fsync'd in all, verifying", d.len());
        eq(d.len(), WRITERS * 40, "files fsync'd in all")?;
        for (n, i) in &d {
            verify_file(MNT, n, *i)?;
        }
        verify_all("w")?;
        shok(&format!("umount {MNT}"))
    });
    next
}

fn stop(t: &mut Tap, s: Server) {
    let cdev = format!("/dev/ublkc{}", s.id);
    let bdev = s.bdev.clone();
    t.case("ublk: SIGTERM leaves no ublk device and no claimed core", || {
        s.stop()?;
        check(gone(&bdev) && gone(&cdev), format!("still present: {:?}", ublk_devs()))?;
        cores_free(&[0, 1])
    });
}

fn bad_input(t: &mut Tap) {
    t.case("ublk bad input: core claimed by another process is a clear error, nothing left", || {
        let dev = nvmedl::Device::open().map_err(|e| e.to_string())?;
        let held = dev.handle(3).map_err(|e| e.to_string())?;
        let (ok, out) = run(&["serve", "--cores", "2,3"]);
        drop(held);
        check(!ok && out.contains("core 3") && out.lines().count() == 1, format!("want one-line core 3 error, got {out:?}"))?;
        check(ublk_devs().is_empty(), format!("left behind: {:?}", ublk_devs()))?;
        cores_free(&[2, 3])
    });
    t.case("ublk bad input: nonexistent device id (recover, export, del) is a clear error", || {
        for args in [&["serve", "--cores", "2", "--recover", "7"][..], &["export", "--dev", "7", "--tcp", "127.0.0.1:4420"], &["del", "7"]]
        {
            let (ok, out) = run(args);
            check(!ok && (out.contains("does not exist")), format!("{args:?}: {out:?}"))?;
        }
        cores_free(&[2])
    });
    t.case("ublk bad input: a second server on the same device is refused, nothing left", || {
        let a = Server::start(&["--cores", "2", "--id", "5"])?;
        let (ok, out) = run(&["serve", "--cores", "3", "--id", "5"]);
        let (ok2, out2) = run(&["serve", "--cores", "3", "--recover", "5"]);
        let r = (|| {
            check(!ok && out.contains("already exists"), format!("second --id 5: {out:?}"))?;
            check(!ok2 && out2.contains("is live"), format!("--recover of a live device: {out2:?}"))?;
            cores_free(&[3])
        })();
        a.stop()?;
        r?;
        check(gone("/dev/ublkb5"), "ublkb5 left")?;
        cores_free(&[2, 3])
    });
}

/// The whole mode.
pub fn run_mode(t: &mut Tap) {
    let capacity = match nvmedl::Device::open().and_then(|d| d.handle(0).map(|h| h.capacity_lbas())) {
        Ok(c) => c,
        Err(e) => {
            t.case("ublk: open the device", || Err(e.to_string()));
            return;
        }
    };
    // The first server traces its start and first commands on stderr (the console log).
    std::env::set_var("NVMEDL_UBLK_TRACE", "20");
    let first = Server::start(&["--cores", CORES]);
    std::env::remove_var("NVMEDL_UBLK_TRACE");
    let s = match first {
        Ok(s) => s,
        Err(e) => {
            t.case("ublk: server starts on cores 0,1", || Err(e));
            return;
        }
    };
    geometry(t, &s, capacity);
    fio_raw(t, &s);
    crate::ublk_net::run(t, &s);
    ext4(t, &s);
    if let Some(s) = crash(t, s) {
        stop(t, s);
    }
    if let Some(iters) = crate::ublk_stop::iters() {
        crate::ublk_stop::run(t, iters);
        crate::ublk_unit::run(t);
    }
    bad_input(t);
}
