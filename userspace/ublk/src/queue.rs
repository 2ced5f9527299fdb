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

use crate::error::io_err;
use crate::geometry::{align, Geometry};
use libublk::io::{BufDescList, UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, UblkError, UblkIORes};
use nvmedl::{Buffer, Completion, Handle, Request};
use std::fs::File;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// Run queue `qid` of `dev` with one core's handle until the kernel takes the queue down.
///
/// The loop is ours rather than `UblkQueue::wait_and_handle_io`, because that one hands only
/// successful fetches to its closure: when the last completion of a batch is an abort (the
/// device stopping), the closure never learns that the batch ended, and the requests it sent
/// to the engine in that batch would never be committed. Here every completion of a batch,
/// whatever its result, reaches [`QueueIo::on_cqe`], which drains the engine and commits at
/// the batch's last one, before libublk marks the queue stopping (after which it drops
/// commits). No request handed to this server is left without an answer: the kernel's stop
/// waits for exactly those.
pub fn run(qid: u16, dev: &UblkDev, io: CoreIo, urgency: u16, geo: Geometry) {
    // /dev/ublkcN opens only once (libublk holds it): use a duplicate of libublk's descriptor.
    let fd = dev.tgt.fds[0];
    // SAFETY: tgt.fds[0] is the open /dev/ublkcN of `dev`, which outlives this call; it is only
    // borrowed long enough to duplicate it.
    let cdev = match unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned() {
        Ok(f) => File::from(f),
        Err(e) => {
            eprintln!("nvmedl-ublk: queue {qid}: {}", io_err("dup /dev/ublkc", e));
            return;
        }
    };
    let mut st = QueueIo::new(io, cdev, qid, urgency, geo);
    let q = match UblkQueue::new(qid, dev).and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(None))) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("nvmedl-ublk: queue {qid}: {e}");
            return;
        }
    };
    if st.trace > 0 {
        eprintln!("nvmedl-ublk: queue {qid}: fetch commands queued");
    }
    loop {
        match q.flush_and_wake_io_tasks(|data, cqe, last| st.on_cqe(&q, data, cqe.result(), last), 1) {
            Ok(_) => {}
            Err(UblkError::QueueIsDown) => break,
            // A wait cut short (a signal, the ring momentarily busy): nothing is lost, wait again.
            Err(UblkError::IOError(e)) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {}
            Err(e) => {
                eprintln!("nvmedl-ublk: queue {qid}: {e}; the server stops");
                break;
            }
        }
    }
    // The queue is down. Anything still in the engine is waited for (bounded) so that no DMA
    // into this core's slice outlives the server; its commit can no longer reach the kernel,
    // which fails or re-issues those requests itself when /dev/ublkcN closes.
    st.drain(&q);
}

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

    /// Handle one completion of the queue's ring: a fetched command when `res` is
    /// `UBLK_IO_RES_OK` (aborts carry no request); after the batch's last one, whatever its
    /// kind, drain the engine and commit.
    fn on_cqe(&mut self, q: &UblkQueue, user_data: u64, res: i32, last: bool) {
        if res == sys::UBLK_IO_RES_OK as i32 {
            self.on_fetch(q, UblkIOCtx::user_data_to_tag(user_data) as u16);
        }
        if last {
            self.drain(q);
        }
    }

    /// Start one fetched command: answered at once, or sent to the engine.
    fn on_fetch(&mut self, q: &UblkQueue, tag: u16) {
        if usize::from(tag) >= self.inflight.len() {
            return;
        }
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
