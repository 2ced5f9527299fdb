// SPDX-License-Identifier: MIT OR Apache-2.0
//! SSD timing model: a serial controller stage (per-command cost = 1 / IOPS), flash channels
//! working in parallel (per-4-KiB-page cost = channels * 4096 / bandwidth, pages striped over
//! channels), plus a fixed per-command latency.
//!
//! Defaults: Samsung 970 EVO Plus 250 GB data sheet figures — sequential read 3,500 MB/s,
//! sequential write 2,300 MB/s, random 4 KiB read 250,000 IOPS and write 550,000 IOPS at QD32,
//! 8 flash channels; the fixed latencies (read 40 µs, write 10 µs, flush 100 µs) are chosen so
//! QD1 4 KiB random read lands near the data sheet's ~17-19k IOPS (~55 µs per read).

/// Kind of media operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaOp {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Flush.
    Flush,
}

/// Parameters of the SSD model.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    /// Independent flash channels.
    pub channels: u32,
    /// Random 4 KiB read IOPS (controller stage limit).
    pub read_iops: u64,
    /// Random 4 KiB write IOPS.
    pub write_iops: u64,
    /// Sequential read bandwidth, bytes per second.
    pub read_bw: u64,
    /// Sequential write bandwidth, bytes per second.
    pub write_bw: u64,
    /// Fixed read latency, ns.
    pub read_latency_ns: u64,
    /// Fixed write latency, ns.
    pub write_latency_ns: u64,
    /// Flush latency, ns.
    pub flush_latency_ns: u64,
}

impl Default for SsdParams {
    fn default() -> Self {
        Self {
            channels: 8,
            read_iops: 250_000,
            write_iops: 550_000,
            read_bw: 3_500_000_000,
            write_bw: 2_300_000_000,
            read_latency_ns: 40_000,
            write_latency_ns: 10_000,
            flush_latency_ns: 100_000,
        }
    }
}

/// State of the timing model.
#[derive(Debug)]
pub struct Ssd {
    params: SsdParams,
    ctrl_free: u64,
    chan_free: Vec<u64>,
    /// Multiplier in 1/1000 applied to every time (fault injection: slow device).
    pub slow_permille: u64,
}

impl Ssd {
    /// A fresh model.
    pub fn new(params: SsdParams) -> Self {
        let ch = params.channels.max(1) as usize;
        Self { params, ctrl_free: 0, chan_free: vec![0; ch], slow_permille: 1000 }
    }

    /// The parameters.
    pub fn params(&self) -> &SsdParams {
        &self.params
    }

    fn scale(&self, ns: u64) -> u64 {
        ns.saturating_mul(self.slow_permille) / 1000
    }

    /// Schedule an operation of `bytes` starting at LBA `slba` (512-byte units) arriving at
    /// `now`; returns its completion time.
    pub fn schedule(&mut self, now: u64, op: MediaOp, slba: u64, bytes: u64) -> u64 {
        let p = &self.params;
        let (iops, bw, lat) = match op {
            MediaOp::Read => (p.read_iops, p.read_bw, p.read_latency_ns),
            MediaOp::Write => (p.write_iops, p.write_bw, p.write_latency_ns),
            MediaOp::Flush => {
                let lat = self.scale(p.flush_latency_ns);
                let start = now.max(self.ctrl_free);
                return start + lat;
            }
        };
        let t_cmd = self.scale(1_000_000_000 / iops.max(1));
        let ch = self.chan_free.len() as u64;
        let t_page = self.scale(ch * 4096 * 1_000_000_000 / bw.max(1));
        let start = now.max(self.ctrl_free);
        self.ctrl_free = start + t_cmd;
        let pages = bytes.div_ceil(4096).max(1);
        let first = slba / 8;
        let mut done = self.ctrl_free;
        for i in 0..pages {
            let c = ((first + i) % ch) as usize;
            let s = self.chan_free[c].max(self.ctrl_free);
            self.chan_free[c] = s + t_page;
            done = done.max(self.chan_free[c]);
        }
        done + self.scale(lat)
    }

    /// Forget queued work (controller reset).
    pub fn reset(&mut self, now: u64) {
        self.ctrl_free = now;
        self.chan_free.iter_mut().for_each(|c| *c = now);
    }
}
