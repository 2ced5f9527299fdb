// SPDX-License-Identifier: MIT OR Apache-2.0
//! NVMe command arbitration (NVMe 1.3 §4.11): round robin, or weighted round robin with an
//! urgent priority class when CC.AMS = 001b.
//!
//! WRR: the admin SQ is served first by the controller (outside this arbiter); urgent SQs have
//! strict priority over the weighted classes; high, medium and low SQs share the rest in
//! proportion to HPW+1 : MPW+1 : LPW+1 (credits refilled once every backlogged class has spent
//! its share); SQs of one class are served round robin. Each turn takes at most the Arbitration
//! Burst (2^AB commands, AB = 7: unlimited) from one SQ.

/// A submission queue with work, as the arbiter sees it.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    /// Queue id.
    pub qid: u16,
    /// QPRIO (0 urgent, 1 high, 2 medium, 3 low).
    pub qprio: u8,
    /// Commands available in the SQ.
    pub available: u32,
}

/// Arbiter state.
#[derive(Debug, Default)]
pub struct Arbiter {
    credits: [u32; 4],
    last: [u16; 4],
}

/// Arbitration Burst in commands for a Set Features Arbitration value.
pub fn burst(feature: u32) -> u32 {
    match feature & 7 {
        7 => u32::MAX,
        ab => 1 << ab,
    }
}

/// Weight (1-based) of class `qprio` for an Arbitration value.
pub fn weight(feature: u32, qprio: u8) -> u32 {
    let w = match qprio {
        1 => feature >> 24,
        2 => (feature >> 16) & 0xff,
        _ => (feature >> 8) & 0xff,
    };
    (w & 0xff) + 1
}

impl Arbiter {
    /// Forget all state.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Pick the next SQ to fetch from and how many commands it may give this turn.
    /// `wrr` selects WRR + urgent; otherwise round robin over every candidate.
    pub fn pick(&mut self, cands: &[Candidate], wrr: bool, feature: u32) -> Option<(u16, u32)> {
        if cands.is_empty() {
            return None;
        }
        let b = burst(feature);
        if !wrr {
            let qid = self.round_robin(0, cands.iter().map(|c| c.qid))?;
            let c = cands.iter().find(|c| c.qid == qid)?;
            return Some((qid, c.available.min(b)));
        }
        if cands.iter().any(|c| c.qprio == 0) {
            let qid = self.round_robin(0, cands.iter().filter(|c| c.qprio == 0).map(|c| c.qid))?;
            let c = cands.iter().find(|c| c.qid == qid)?;
            return Some((qid, c.available.min(b)));
        }
        let backlogged = |class: u8| cands.iter().any(|c| c.qprio == class);
        if (1..=3u8).all(|k| !backlogged(k) || self.credits[k as usize] == 0) {
            for k in 1..=3u8 {
                self.credits[k as usize] = weight(feature, k);
            }
        }
        let class = (1..=3u8).find(|&k| backlogged(k) && self.credits[k as usize] > 0)?;
        let qid = self.round_robin(class as usize, cands.iter().filter(|c| c.qprio == class).map(|c| c.qid))?;
        let c = cands.iter().find(|c| c.qid == qid)?;
        Some((qid, c.available.min(b).min(self.credits[class as usize])))
    }

    /// Account `n` commands fetched from a queue of class `qprio` (WRR credits).
    pub fn charge(&mut self, qprio: u8, n: u32) {
        if let Some(c) = self.credits.get_mut(qprio as usize) {
            *c = c.saturating_sub(n);
        }
    }

    fn round_robin(&mut self, slot: usize, qids: impl Iterator<Item = u16> + Clone) -> Option<u16> {
        let last = self.last[slot];
        let next = qids.clone().filter(|&q| q > last).min().or_else(|| qids.min())?;
        self.last[slot] = next;
        Some(next)
    }
}
