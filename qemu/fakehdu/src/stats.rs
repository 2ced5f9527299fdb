// SPDX-License-Identifier: MIT OR Apache-2.0
//! Counters the model keeps for tests and the control interfaces.

/// Per-HDU counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HduStats {
    /// STARTs accepted.
    pub starts: u64,
    /// STARTs dropped (busy, or injected).
    pub dropped_starts: u64,
    /// STARTs accepted while a batch ran (rev 2 START queue).
    pub queued_starts: u64,
    /// Batches that set DONE.
    pub batches: u64,
    /// Entries executed or failed.
    pub entries: u64,
    /// SQ tail doorbells written.
    pub sq_doorbells: u64,
    /// CQ head doorbells written.
    pub cq_doorbells: u64,
    /// Fetch bursts crossing 4 KiB (rev 1, NREQS >= 171).
    pub protocol_violations: u64,
    /// Staging fetch beats that hit unmapped memory (read as zeros, like the RTL ignoring RRESP).
    pub fetch_errors: u64,
    /// Entries completed with a non-zero status (rev 2).
    pub errors: u64,
    /// DMA window violations (rev 2).
    pub window_faults: u64,
    /// Entries aborted by reset (rev 2).
    pub aborted: u64,
    /// Resets (rev 2).
    pub resets: u64,
}

/// Controller counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NvmeStats {
    /// Admin commands completed.
    pub admin_commands: u64,
    /// Admin commands completed with an error.
    pub admin_errors: u64,
    /// I/O commands completed.
    pub io_commands: u64,
    /// I/O commands completed with an error.
    pub io_errors: u64,
    /// Read commands.
    pub reads: u64,
    /// Write commands.
    pub writes: u64,
    /// Flush commands.
    pub flushes: u64,
    /// Bytes moved SSD → host.
    pub bytes_read: u64,
    /// Bytes moved host → SSD.
    pub bytes_written: u64,
    /// Doorbell writes with an out-of-range value, or to a queue that does not exist.
    pub invalid_doorbells: u64,
    /// Times the controller entered the fatal state (CSTS.CFS).
    pub fatal: u64,
    /// Controller enables (CC.EN 0 → 1 that reached RDY).
    pub enables: u64,
    /// I/O completions per SQ id (index = QID).
    pub completions_per_sq: Vec<u64>,
}

/// A snapshot of everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Per HDU, in index order.
    pub hdus: Vec<HduStats>,
    /// The controller.
    pub nvme: NvmeStats,
}

impl Stats {
    /// One line of `key=value` pairs (the control socket's `stats` reply).
    pub fn to_kv(&self) -> String {
        let n = &self.nvme;
        let mut s = format!(
            "admin_commands={} admin_errors={} io_commands={} io_errors={} reads={} writes={} flushes={} bytes_read={} bytes_written={} invalid_doorbells={} fatal={} enables={}",
            n.admin_commands, n.admin_errors, n.io_commands, n.io_errors, n.reads, n.writes, n.flushes,
            n.bytes_read, n.bytes_written, n.invalid_doorbells, n.fatal, n.enables
        );
        for (i, h) in self.hdus.iter().enumerate() {
            s += &format!(
                " hdu{i}.starts={} hdu{i}.dropped_starts={} hdu{i}.queued_starts={} hdu{i}.batches={} hdu{i}.entries={} hdu{i}.sq_doorbells={} hdu{i}.cq_doorbells={} hdu{i}.protocol_violations={} hdu{i}.fetch_errors={} hdu{i}.errors={} hdu{i}.window_faults={} hdu{i}.aborted={} hdu{i}.resets={}",
                h.starts, h.dropped_starts, h.queued_starts, h.batches, h.entries, h.sq_doorbells, h.cq_doorbells,
                h.protocol_violations, h.fetch_errors, h.errors, h.window_faults, h.aborted, h.resets
            );
        }
        s
    }
}
