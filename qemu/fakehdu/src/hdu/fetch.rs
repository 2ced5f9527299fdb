// SPDX-License-Identifier: MIT OR Apache-2.0
//! Staging-queue fetch: the HDU's read master.
//!
//! Rev 1 reproduces the RTL burst schedule: bursts of up to 32 entries (768 bytes) from
//! REQBUF + 768·k, never split at 4 KiB. A burst that crosses a 4 KiB boundary (NREQS ≥ 171
//! from an aligned staging queue) is an AXI4 protocol violation; the model counts it and
//! returns what a slave that increments only address bits [11:0] returns: the beats past the
//! boundary wrap to the start of the same 4 KiB page. Beats that hit unmapped memory read as
//! zeros (the RTL ignores RRESP).

use directnvm_abi::{DnvmEntry, DNVM_ENTRY_SIZE};

use crate::mem::GuestMem;

/// Largest burst in entries (DISPATCH_QUEUE_DEPTH / 2).
pub const REV1_BURST_ENTRIES: u32 = 32;

/// Decode a 24-byte entry (the ABI's one packing, `DnvmEntry::from_bytes`).
pub fn entry_from_bytes(b: &[u8]) -> DnvmEntry {
    DnvmEntry::from_bytes(b).unwrap_or_default()
}

/// Result of one rev 1 burst.
pub struct Burst {
    /// The entries, in order.
    pub entries: Vec<DnvmEntry>,
    /// The burst crossed a 4 KiB boundary.
    pub crossed: bool,
    /// Beats that hit unmapped memory.
    pub bad_beats: u32,
}

/// Read `n` entries as one rev 1 burst starting at `addr`.
pub fn rev1_burst(mem: &GuestMem, addr: u64, n: u32) -> Burst {
    let len = n as usize * DNVM_ENTRY_SIZE;
    let mut buf = vec![0u8; len];
    let page = addr & !0xfff;
    let crossed = (addr & 0xfff) as usize + len > 4096;
    let mut bad_beats = 0;
    for (b, beat) in buf.chunks_mut(8).enumerate() {
        let lin = addr.wrapping_add(8 * b as u64);
        let a = if crossed { page | (lin & 0xfff) } else { lin };
        if mem.read(a, beat).is_err() {
            beat.fill(0);
            bad_beats += 1;
        }
    }
    Burst { entries: buf.chunks_exact(DNVM_ENTRY_SIZE).map(entry_from_bytes).collect(), crossed, bad_beats }
}

/// Rev 2: read entry `i` of the staging array at `reqbuf` (bursts split at 4 KiB, so a plain
/// read); `None` if it is not in RAM.
pub fn rev2_entry(mem: &GuestMem, reqbuf: u64, i: u32) -> Option<DnvmEntry> {
    let mut b = [0u8; DNVM_ENTRY_SIZE];
    let addr = reqbuf.checked_add(u64::from(i) * DNVM_ENTRY_SIZE as u64)?;
    mem.read(addr, &mut b).ok()?;
    Some(entry_from_bytes(&b))
}
