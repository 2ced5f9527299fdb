// SPDX-License-Identifier: MIT OR Apache-2.0
//! One ublk queue driven by one core's libnvmedl handle.
//!
//! The queue runs with `UBLK_F_USER_COPY`: each tag owns a buffer in the core's DMA slice,
//! and the data moves once, by the kernel, between the block request's pages and that buffer
//! (`pread`/`pwrite` on `/dev/ublkcN`). The commands of one io_uring completion batch are
//! submitted to the engine together, then the batch is drained and committed.
//!
//! Waiting for the engine: with the handle's backoff (the server's default, `--backoff
//! adaptive`) `drain` waits in `Handle::wait`, which spins while completions keep coming and
//! then yields and sleeps, so a queue whose I/O sits in a slow engine gives its CPU back;
//! without one it polls without a break.
//!
//! Requests not aligned to the engine's 4 KiB granule are widened: reads read the enclosing
//! granules, writes read them first (read-modify-write, after draining this queue).

use crate::geometry::{align, Geometry};
use libublk::io::{UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, UblkIORes};
use nvmedl::{Buffer, Completion, Handle, Request};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// A core's share of the server: its handle and one DMA buffer per tag.
pub struct CoreIo {
    pub handle: Handle,
    pub bufs: Vec<Buffer>,
}

#[derive(Clone, Copy)]
enum Kind {
    Read { off: usize },
    Write,
    Flush,
}

/// Per-queue state owned by the queue thread.
pub struct QueueIo {
    io: CoreIo,
    cdev: File,
    qid: u16,
    urgency: u16,
    geo: Geometry,
    inflight: Vec<Option<(Kind, usize)>>,
    n_inflight: usize,
    done: Vec<Completion>,
    /// Commands still to trace on stderr (`NVMEDL_UBLK_TRACE=N`).
    trace: u32,
}

/// A stuck engine must not hang the queue forever: fail what is left after this long.
const STALL: Duration = Duration::from_secs(30);

impl QueueIo {
    pub fn new(io: CoreIo, cdev: File, qid: u16, urgency: u16, geo: Geometry) -> QueueIo {
        let depth = geo.depth as usize;
        QueueIo {
            io,
            cdev,
            qid,
            urgency,
            geo,
            inflight: vec![None; depth],
            n_inflight: 0,
            done: vec![Completion { tag: 0, result: Ok(()) }; depth.max(16)],
            trace: std::env::var("NVMEDL_UBLK_TRACE").ok().and_then(|v| v.parse().ok()).unwrap_or(0),
        }
    }

    /// Handle one fetched command; after the last CQE of a batch, drain the engine.
    pub fn on_cqe(&mut self, q: &UblkQueue, tag: u16, ctx: &UblkIOCtx) {
        let iod = q.get_iod(tag);
        let op = iod.op_flags & 0xff;
        let (sector, bytes) = (iod.start_sector, u64::from(iod.nr_sectors) << 9);
        if self.trace > 0 {
            self.trace -= 1;
            eprintln!("nvmedl-ublk: q{} tag {tag} op {op} sector {sector} bytes {bytes}", self.qid);
        }
        let res = match op {
            sys::UBLK_IO_OP_READ => self.start_read(tag, sector, bytes),
            sys::UBLK_IO_OP_WRITE => self.start_write(q, tag, sector, bytes),
            sys::UBLK_IO_OP_FLUSH if self.geo.flush => self.submit(tag, Request::flush(), Kind::Flush, 0),
            // No volatile cache advertised on rev 1: every completed write is durable.
            sys::UBLK_IO_OP_FLUSH => Some(0),
            // Discard/write-zeroes are not advertised, so the block layer never sends them.
            _ => Some(-libc::EOPNOTSUPP),
        };
        if let Some(r) = res {
            complete(q, tag, r);
        }
        if ctx.is_last_cqe() {
            self.drain(q);
        }
    }

    fn user_pos(&self, tag: u16) -> u64 {
        UblkIOCtx::ublk_user_copy_pos(self.qid, tag, 0)
    }

    fn too_big(&self, off: u64, len: u64) -> bool {
        off + len > self.geo.buf_bytes
    }

    fn start_read(&mut self, tag: u16, sector: u64, bytes: u64) -> Option<i32> {
        let (lba, off, len) = align(sector, bytes);
        if self.too_big(0, len) {
            return Some(-libc::EINVAL);
        }
        let r = Request::read(&self.io.bufs[tag as usize], lba).len(len as u32);
        self.submit(tag, r, Kind::Read { off: off as usize }, bytes as usize)
    }

    fn start_write(&mut self, q: &UblkQueue, tag: u16, sector: u64, bytes: u64) -> Option<i32> {
        let (lba, off, len) = align(sector, bytes);
        if self.too_big(0, len) {
            return Some(-libc::EINVAL);
        }
        let t = tag as usize;
        if off != 0 || len != bytes {
            // Read-modify-write: nothing else of this queue may be in flight meanwhile.
            self.drain(q);
            let r = Request::read(&self.io.bufs[t], lba).len(len as u32).priority(self.urgency);
            if self.io.handle.execute(r).is_err() {
                return Some(-libc::EIO);
            }
        }
        let pos = self.user_pos(tag);
        let dst = &mut self.io.bufs[t].as_mut_slice()[off as usize..(off + bytes) as usize];
        if self.cdev.read_exact_at(dst, pos).is_err() {
            return Some(-libc::EIO);
        }
        let r = Request::write(&self.io.bufs[t], lba).len(len as u32);
        self.submit(tag, r, Kind::Write, bytes as usize)
    }

    fn submit(&mut self, tag: u16, r: Request, kind: Kind, bytes: usize) -> Option<i32> {
        match self.io.handle.submit(r.priority(self.urgency).tag(u64::from(tag))) {
            Ok(_) => {
                self.inflight[tag as usize] = Some((kind, bytes));
                self.n_inflight += 1;
                None
            }
            Err(_) => Some(-libc::EIO),
        }
    }

    /// Wait for everything this queue has in the engine and commit each command.
    fn drain(&mut self, q: &UblkQueue) {
        let mut last = Instant::now();
        let backoff = self.io.handle.backoff().is_some();
        while self.n_inflight > 0 {
            self.io.handle.kick();
            let n = if backoff {
                // Err: the wait's own bound passed; the stall check below decides.
                self.io.handle.wait(&mut self.done).unwrap_or(0)
            } else {
                self.io.handle.poll(&mut self.done)
            };
            for i in 0..n {
                let c = std::mem::replace(&mut self.done[i], Completion { tag: 0, result: Ok(()) });
                self.finish(q, c);
            }
            if n > 0 {
                last = Instant::now();
            } else if last.elapsed() > STALL {
                self.fail_all(q);
            } else if !backoff {
                std::hint::spin_loop();
            }
        }
    }

    fn finish(&mut self, q: &UblkQueue, c: Completion) {
        let tag = c.tag as u16;
        let Some((kind, bytes)) = self.inflight.get_mut(tag as usize).and_then(Option::take) else {
            return;
        };
        self.n_inflight -= 1;
        let res = match (c.result, kind) {
            (Err(_), _) => -libc::EIO,
            (Ok(()), Kind::Read { off }) => {
                let src = &self.io.bufs[tag as usize].as_slice()[off..off + bytes];
                match self.cdev.write_all_at(src, self.user_pos(tag)) {
                    Ok(()) => bytes as i32,
                    Err(_) => -libc::EIO,
                }
            }
            (Ok(()), Kind::Write) => bytes as i32,
            (Ok(()), Kind::Flush) => 0,
        };
        complete(q, tag, res);
    }

    fn fail_all(&mut self, q: &UblkQueue) {
        for tag in 0..self.inflight.len() {
            if self.inflight[tag].take().is_some() {
                complete(q, tag as u16, -libc::EIO);
            }
        }
        self.n_inflight = 0;
        let _ = self.io.handle.reset();
    }
}

fn complete(q: &UblkQueue, tag: u16, res: i32) {
    if let Err(e) = q.complete_io_cmd_unified(tag, BufDesc::Slice(&[]), Ok(UblkIORes::Result(res))) {
        eprintln!("nvmedl-ublk: queue {} tag {tag}: commit failed: {e}", q.get_qid());
    }
}
