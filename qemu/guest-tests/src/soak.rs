// SPDX-License-Identifier: MIT OR Apache-2.0
//! Data integrity: every I/O of the reliability groups carries a pattern derived from the LBA
//! and a per-block generation, and every read is checked against the generation the last
//! successful write left there. `run_short` is the suite form (a few seconds on all cores);
//! `soak` is `make soak`: mixed random I/O on all cores for `SOAK_SECS` seconds.
//!
//! Environment of the soak mode: `SOAK_SECS` (default 60), `SOAK_MB` per core (16),
//! `SOAK_DEPTH` requests in flight per core (32), `SOAK_SEED` (random; printed).

use std::time::{Duration, Instant};

use nvmedl::{Buffer, Completion, Handle, Request};

use crate::fixtures::data::{dev, env_u64, fill, handle, mix, seed_from_env, verify, Rng, BLOCK, BLOCK_LBAS};
use crate::summary::{self, IOS_VERIFIED};
use crate::tap::{check, Tap};

/// Parameters of one random-I/O worker.
#[derive(Clone)]
pub struct Mix {
    /// First LBA of the worker's private range.
    pub base: u64,
    /// Blocks (4 KiB) in the range.
    pub blocks: u32,
    /// Requests in flight.
    pub depth: usize,
    /// Largest request in blocks.
    pub max_blocks: u32,
    /// Stop after this long.
    pub run_for: Duration,
    /// PRNG seed.
    pub seed: u64,
}

/// What a worker did.
#[derive(Default, Clone, Copy)]
pub struct MixStats {
    /// Reads completed and verified.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes moved.
    pub bytes: u64,
}

#[derive(Clone, Copy)]
struct Inflight {
    write: bool,
    block: u32,
    n: u32,
}

/// Mixed random reads and writes (random sizes and priorities) over a private range, with at
/// most `depth` in flight and never two in flight on the same block. The range is written
/// first and read back in full at the end, so every block's last write is verified.
pub fn random_mix(h: &mut Handle, m: &Mix) -> Result<MixStats, String> {
    let core = h.core();
    let mut rng = Rng(m.seed);
    let maxb = m.max_blocks.clamp(1, m.blocks);
    let mut bufs: Vec<Buffer> = (0..m.depth)
        .map(|_| h.buf_alloc(maxb as usize * BLOCK))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("core {core}: buffers: {e}"))?;
    let mut gens = vec![0u32; m.blocks as usize];
    let mut busy = vec![false; m.blocks as usize];
    let mut slots: Vec<Option<Inflight>> = vec![None; m.depth];
    let mut st = MixStats::default();
    let lba = |b: u32| m.base + u64::from(b) * BLOCK_LBAS;

    // Phase 1: write the whole range (generation 1), `maxb` blocks per request.
    let mut b = 0;
    while b < m.blocks {
        let n = maxb.min(m.blocks - b);
        let len = n as usize * BLOCK;
        fill(&mut bufs[0].as_mut_slice()[..len], lba(b), &vec![1; n as usize]);
        h.execute(Request::write(&bufs[0], lba(b)).len(len as u32)).map_err(|e| format!("core {core}: fill LBA {}: {e}", lba(b)))?;
        gens[b as usize..(b + n) as usize].fill(1);
        st.writes += 1;
        b += n;
    }

    // Phase 2: random mix.
    let t0 = Instant::now();
    let mut last_progress = Instant::now();
    let mut out = [Completion { tag: 0, result: Ok(()) }; 64];
    let mut stopping = false;
    loop {
        if !stopping && t0.elapsed() >= m.run_for {
            stopping = true;
        }
        // Fill free slots.
        if !stopping {
            for s in 0..m.depth {
                if slots[s].is_some() {
                    continue;
                }
                let n = 1 + rng.below(u64::from(maxb)) as u32;
                let start = rng.below(u64::from(m.blocks - n + 1)) as u32;
                if busy[start as usize..(start + n) as usize].iter().any(|&x| x) {
                    continue;
                }
                let write = rng.pct(50);
                let len = n as usize * BLOCK;
                let req = if write {
                    let next: Vec<u32> = gens[start as usize..(start + n) as usize].iter().map(|g| g + 1).collect();
                    fill(&mut bufs[s].as_mut_slice()[..len], lba(start), &next);
                    Request::write(&bufs[s], lba(start))
                } else {
                    bufs[s].as_mut_slice()[..len].fill(0x5a);
                    Request::read(&bufs[s], lba(start))
                };
                let req = req.len(len as u32).priority(rng.below(4) as u16).tag(s as u64);
                h.submit(req).map_err(|e| format!("core {core}: submit: {e}"))?;
                busy[start as usize..(start + n) as usize].fill(true);
                slots[s] = Some(Inflight { write, block: start, n });
            }
            h.kick();
        }
        let got = h.poll(&mut out);
        for c in &out[..got] {
            let s = c.tag as usize;
            let f = slots[s].take().ok_or_else(|| format!("core {core}: completion for an idle slot {s}"))?;
            c.result.map_err(|e| format!("core {core}: {} LBA {}: {e}", if f.write { "write" } else { "read" }, lba(f.block)))?;
            let r = f.block as usize..(f.block + f.n) as usize;
            let len = f.n as usize * BLOCK;
            if f.write {
                for g in &mut gens[r.clone()] {
                    *g += 1;
                }
                st.writes += 1;
            } else {
                verify(&bufs[s].as_slice()[..len], lba(f.block), &gens[r.clone()]).map_err(|e| format!("core {core}: {e}"))?;
                st.reads += 1;
            }
            st.bytes += len as u64;
            busy[r].fill(false);
        }
        if got > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > Duration::from_secs(15) {
            return Err(format!("core {core}: no completion for 15 s ({} in flight)", slots.iter().flatten().count()));
        }
        if stopping && slots.iter().all(|s| s.is_none()) {
            break;
        }
    }

    // Phase 3: read everything back.
    let mut b = 0;
    while b < m.blocks {
        let n = maxb.min(m.blocks - b);
        let len = n as usize * BLOCK;
        bufs[0].as_mut_slice()[..len].fill(0x3c);
        h.execute(Request::read(&bufs[0], lba(b)).len(len as u32)).map_err(|e| format!("core {core}: final read LBA {}: {e}", lba(b)))?;
        verify(&bufs[0].as_slice()[..len], lba(b), &gens[b as usize..(b + n) as usize])
            .map_err(|e| format!("core {core}: final pass: {e}"))?;
        st.reads += 1;
        b += n;
    }
    summary::add(&IOS_VERIFIED, st.reads + st.writes);
    for buf in bufs {
        let _ = h.buf_free(buf);
    }
    Ok(st)
}

/// Run `random_mix` on every core in parallel (one thread and handle per core).
pub fn all_cores(secs: f64, mb_per_core: u64, depth: usize, seed: u64) -> Result<MixStats, String> {
    let d = dev()?;
    let cores = d.cores();
    let cap = d.info().capacity_lbas;
    let blocks = ((mb_per_core << 20) / BLOCK as u64) as u32;
    let area = u64::from(cores) * u64::from(blocks) * BLOCK_LBAS;
    check(area <= cap / 4, format!("{mb_per_core} MiB x {cores} cores does not fit the last quarter of the namespace"))?;
    let base0 = cap - cap / 4;
    let t0 = Instant::now();
    let threads: Vec<_> = (0..cores)
        .map(|core| {
            let d = d.clone();
            let m = Mix {
                base: base0 + u64::from(core) * u64::from(blocks) * BLOCK_LBAS,
                blocks,
                depth,
                max_blocks: 16,
                run_for: Duration::from_secs_f64(secs),
                seed: seed ^ mix(u64::from(core) + 1),
            };
            std::thread::spawn(move || -> Result<MixStats, String> {
                let mut h = handle(&d, core, Duration::from_secs(10))?;
                random_mix(&mut h, &m)
            })
        })
        .collect();
    let mut total = MixStats::default();
    let mut err = None;
    for t in threads {
        match t.join().map_err(|_| "worker thread panicked".to_string()).and_then(|r| r) {
            Ok(s) => {
                total.reads += s.reads;
                total.writes += s.writes;
                total.bytes += s.bytes;
            }
            Err(e) => err = err.or(Some(e)),
        }
    }
    let s = t0.elapsed().as_secs_f64();
    println!(
        "# integrity: {cores} cores, seed {seed:#x}: {} reads + {} writes verified in {s:.1} s ({:.1} MB/s random), mismatches {}",
        total.reads,
        total.writes,
        total.bytes as f64 / s / 1e6,
        summary::MISMATCHES.load(std::sync::atomic::Ordering::Relaxed)
    );
    match err {
        Some(e) => Err(e),
        None => Ok(total),
    }
}

/// The suite's short form.
pub fn run_short(t: &mut Tap) {
    let seed = seed_from_env("SOAK_SEED");
    let secs = env_u64("SOAK_SHORT_SECS", 3) as f64;
    t.case(&format!("integrity: mixed random I/O on all cores, {secs} s, every read verified (seed {seed:#x})"), || {
        all_cores(secs, 1, 16, seed).map(|_| ())
    });
}

/// `make soak`: the long form.
pub fn run_soak(t: &mut Tap) {
    let seed = seed_from_env("SOAK_SEED");
    let secs = env_u64("SOAK_SECS", 60) as f64;
    let mb = env_u64("SOAK_MB", 16);
    let depth = env_u64("SOAK_DEPTH", 32) as usize;
    t.case(&format!("soak: {secs} s mixed random I/O on all cores, {mb} MiB each, depth {depth} (seed {seed:#x})"), || {
        let s = all_cores(secs, mb, depth, seed)?;
        println!("# soak: I/Os done {}, mismatches {}", s.reads + s.writes, summary::MISMATCHES.load(std::sync::atomic::Ordering::Relaxed));
        Ok(())
    });
}
