// SPDX-License-Identifier: MIT OR Apache-2.0
//! Fault injection: what tests (control socket or guest mailbox) can make the device do wrong.

/// An NVMe I/O error rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoFault {
    /// LBA range `[start, end)` the command must overlap.
    pub lba_start: u64,
    /// End of the LBA range (exclusive).
    pub lba_end: u64,
    /// Opcode to match, or `None` for any I/O opcode.
    pub opcode: Option<u8>,
    /// NVMe status field to complete with.
    pub status: u16,
    /// Hits left before the rule disarms; `None` = forever.
    pub remaining: Option<u32>,
}

/// All injected faults.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// I/O error rules, checked in order.
    pub io: Vec<IoFault>,
    /// STARTs to drop, per HDU index.
    pub drop_start: Vec<u32>,
    /// HDUs whose DONE is never set.
    pub stuck: Vec<bool>,
    /// SSD time multiplier in 1/1000 (1000 = normal).
    pub slow_permille: u64,
    /// Entries that fail the DMA window check, per HDU index (rev 2).
    pub window: Vec<u32>,
}

impl Faults {
    /// No faults for `hdus` HDUs.
    pub fn new(hdus: usize) -> Self {
        Self { io: Vec::new(), drop_start: vec![0; hdus], stuck: vec![false; hdus], slow_permille: 1000, window: vec![0; hdus] }
    }

    /// Remove every fault.
    pub fn clear(&mut self) {
        *self = Self::new(self.drop_start.len());
    }

    /// Status for an I/O command, if a rule hits (consumes one hit).
    pub fn io_status(&mut self, opcode: u8, slba: u64, nblocks: u64) -> Option<u16> {
        let end = slba.saturating_add(nblocks);
        let idx = self.io.iter().position(|f| f.opcode.is_none_or(|o| o == opcode) && slba < f.lba_end && end > f.lba_start)?;
        let f = &mut self.io[idx];
        let status = f.status;
        if let Some(r) = f.remaining.as_mut() {
            *r = r.saturating_sub(1);
            if *r == 0 {
                self.io.remove(idx);
            }
        }
        Some(status)
    }

    /// Consume one dropped START of `hdu`.
    pub fn take_drop_start(&mut self, hdu: usize) -> bool {
        take(&mut self.drop_start, hdu)
    }

    /// Consume one forced window violation of `hdu`.
    pub fn take_window(&mut self, hdu: usize) -> bool {
        take(&mut self.window, hdu)
    }

    /// Is `hdu` stuck?
    pub fn is_stuck(&self, hdu: usize) -> bool {
        self.stuck.get(hdu).copied().unwrap_or(false)
    }
}

fn take(v: &mut [u32], i: usize) -> bool {
    match v.get_mut(i) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}
