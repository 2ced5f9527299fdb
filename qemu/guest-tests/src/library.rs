//! libnvmedl in the guest: the Rust API in this process, the C example, the `nvmedl` CLI and
//! a short verified `nvmedl-bench` run on each core, and 4 threads on 4 cores writing and
//! reading back distinct ranges. Needs the fake device (cases fail, never hang, without it).
//!
//! Size per core of the 4-core runs: `DNVM_LIB_MB` (default 8; the full run uses 64).

use std::time::{Duration, Instant};

use nvmedl::{Buffer, Device, Error, HandleOptions, Request};

use crate::sys::sh;
use crate::tap::{check, eq, Case, Tap};

fn mb_per_core() -> u64 {
    std::env::var("DNVM_LIB_MB").ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0).unwrap_or(8)
}

fn word(off: u64) -> u64 {
    off.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed_1234
}

fn fill(b: &mut Buffer, lba: u64) {
    for (i, w) in b.as_mut_slice().chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&word(lba * 512 + 8 * i as u64).to_le_bytes());
    }
}

/// Index of the first 8-byte word that differs from the pattern, if any.
fn verify(b: &Buffer, lba: u64) -> Option<usize> {
    b.as_slice().chunks_exact(8).enumerate().position(|(i, w)| {
        u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) != word(lba * 512 + 8 * i as u64)
    })
}

fn dev() -> Result<Device, String> {
    let d = Device::open().map_err(|e| format!("open /dev/directnvm: {e}"))?;
    check(d.info().flags & directnvm_abi::DNVM_INFO_READY != 0, "controller not ready")?;
    Ok(d)
}

fn api_basics() -> Case {
    let d = dev()?;
    let mut h = d.handle(0).map_err(|e| format!("handle 0: {e}"))?;
    let mut b = h.buf_alloc(8192).map_err(|e| e.to_string())?;
    fill(&mut b, 4096);
    h.write(&b, 4096).map_err(|e| format!("write: {e}"))?;
    b.as_mut_slice().fill(0);
    h.read(&b, 4096).map_err(|e| format!("read: {e}"))?;
    check(verify(&b, 4096).is_none(), "read-back mismatch")?;
    eq(h.submit(Request::read(&b, 3)).err(), Some(Error::Misaligned), "unaligned LBA")?;
    eq(h.submit(Request::read(&b, h.capacity_lbas())).err(), Some(Error::InvalidLba), "LBA past the end")?;
    eq(h.submit(Request::read(&b, 0).len(0)).err(), Some(Error::BadLength), "zero length")?;
    eq(d.handle(0).err(), Some(Error::Busy), "second claim of core 0")?;
    let mut out = [nvmedl::Completion { tag: 0, result: Ok(()) }; 4];
    eq(h.poll(&mut out), 0, "poll with nothing pending")?;
    if h.revision() >= 2 {
        h.flush().map_err(|e| format!("flush: {e}"))?;
    } else {
        eq(h.flush().err(), Some(Error::Revision), "flush on rev 1")?;
    }
    Ok(())
}

/// 4 threads, one per core, each writing then verifying its own `mb` MiB range.
fn four_cores_rust(mb: u64) -> Case {
    let d = dev()?;
    let cores = d.cores().min(4);
    let per_core = mb << 20;
    check(u64::from(cores) * per_core / 512 <= d.info().capacity_lbas, "namespace too small")?;
    let t0 = Instant::now();
    let threads: Vec<_> = (0..cores)
        .map(|core| {
            let d = d.clone();
            std::thread::spawn(move || -> Result<(), String> {
                let opts = HandleOptions { timeout: Duration::from_secs(10), ..HandleOptions::default() };
                let mut h = d.handle_with(core, opts).map_err(|e| format!("core {core}: {e}"))?;
                let chunk = 128 * 1024usize;
                let depth = 8usize;
                let mut bufs: Vec<Buffer> = (0..depth).map(|_| h.buf_alloc(chunk)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
                let base = u64::from(core) * per_core / 512;
                let rounds = (per_core as usize).div_ceil(chunk * depth);
                for write in [true, false] {
                    for r in 0..rounds {
                        let lba = |i: usize| base + ((r * depth + i) * chunk / 512) as u64;
                        for (i, b) in bufs.iter_mut().enumerate() {
                            if write {
                                fill(b, lba(i));
                            }
                            let req = if write { Request::write(b, lba(i)) } else { Request::read(b, lba(i)) };
                            h.submit(req.tag(i as u64)).map_err(|e| format!("core {core}: submit: {e}"))?;
                        }
                        h.drain().map_err(|e| format!("core {core}: drain: {e}"))?;
                        let mut out = [nvmedl::Completion { tag: 0, result: Ok(()) }; 8];
                        let mut got = 0;
                        while got < depth {
                            let n = h.poll(&mut out);
                            for c in &out[..n] {
                                c.result.map_err(|e| format!("core {core}: LBA {}: {e}", lba(c.tag as usize)))?;
                            }
                            got += n;
                        }
                        if !write {
                            for (i, b) in bufs.iter().enumerate() {
                                if let Some(w) = verify(b, lba(i)) {
                                    return Err(format!("core {core}: mismatch at LBA {} word {w}", lba(i)));
                                }
                            }
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "thread panicked".to_string())??;
    }
    let s = t0.elapsed().as_secs_f64();
    println!("# rust 4-core: {} MiB written+verified per core in {s:.2} s ({:.1} MB/s total)", mb, (2 * u64::from(cores) * per_core) as f64 / s / 1e6);
    Ok(())
}

fn run_ok(cmd: &str) -> Result<String, String> {
    let (ok, out) = sh(cmd);
    if ok {
        Ok(out)
    } else {
        Err(format!("`{cmd}` failed: {}", out.lines().rev().take(3).collect::<Vec<_>>().join(" | ")))
    }
}

fn cli() -> Case {
    let out = run_ok("/bin/nvmedl info")?;
    check(out.contains("ready           true"), format!("info: {out}"))?;
    run_ok("/bin/nvmedl identify")?;
    run_ok("/bin/nvmedl layout")?;
    run_ok("/bin/busybox dd if=/dev/urandom of=/tmp/lib-in bs=4096 count=33 2>/dev/null")?;
    run_ok("/bin/nvmedl write 1 65536 /tmp/lib-in")?;
    run_ok("/bin/nvmedl verify 1 65536 /tmp/lib-in")?;
    run_ok("/bin/nvmedl read 1 65536 135168 /tmp/lib-out")?;
    run_ok("/bin/busybox cmp /tmp/lib-in /tmp/lib-out")?;
    let (ok, _) = sh("/bin/nvmedl verify 1 65544 /tmp/lib-in");
    check(!ok, "verify at a shifted LBA must fail")?;
    Ok(())
}

fn bench(core: u32) -> Case {
    let out = run_ok(&format!("/bin/nvmedl-bench --rw mixed --cores {core} --iodepth 32 --ios 3000 --size 4M --verify --json"))?;
    check(out.contains("\"ok\":true"), format!("bench: {out}"))?;
    println!("# bench core {core}: {}", out.lines().find(|l| l.starts_with('{')).unwrap_or("").chars().take(200).collect::<String>());
    Ok(())
}

fn c_example(pages: u64, cores: u32) -> Case {
    let out = run_ok(&format!("/bin/dlexample {pages} {cores} 1 64"))?;
    for l in out.lines() {
        println!("# dlexample: {l}");
    }
    check(out.matches("verify ok").count() == 2, "dlexample did not verify both phases")
}

/// Informational figures (the case passes when every run completes without error).
fn figures() -> Case {
    for args in [
        "--rw rand-read --cores 0 --iodepth 1 --size 8M --runtime 1",
        "--rw rand-read --cores 0 --iodepth 32 --size 8M --runtime 1",
        "--rw rand-read --cores 0,1,2,3 --iodepth 32 --size 8M --runtime 1",
        "--rw seq-read --cores 0 --bs 128k --iodepth 32 --size 16M --runtime 1",
        "--rw seq-write --cores 0 --bs 128k --iodepth 32 --size 16M --runtime 1",
    ] {
        let out = run_ok(&format!("/bin/nvmedl-bench {args}"))?;
        let total = out.lines().find(|l| l.starts_with("total:")).unwrap_or("");
        let lat = out.lines().find(|l| l.starts_with("latency")).unwrap_or("");
        println!("# nvmedl-bench {args}: {total}; {lat}");
    }
    Ok(())
}

/// Run the library cases.
pub fn run(t: &mut Tap) {
    let mb = mb_per_core();
    t.case("library: Rust API basics and bad inputs", api_basics);
    t.case("library: C example (dlexample) 1 core", || c_example(256, 1));
    t.case("library: nvmedl CLI info/identify/layout/write/verify/read", cli);
    for core in 0..4 {
        t.case(&format!("library: verified nvmedl-bench on core {core}"), || bench(core));
    }
    t.case(&format!("library: 4 threads x 4 cores, {mb} MiB each, verified (Rust API)"), || four_cores_rust(mb));
    // The C example keeps one core's range in one buffer: at most 8 MiB (the data slice).
    let pages = (mb.min(8) << 20) / 4096;
    t.case(&format!("library: 4 threads x 4 cores, {} MiB each, verified (C example)", mb.min(8)), || c_example(pages, 4));
    t.case("library: nvmedl-bench figures (informational)", figures);
}
