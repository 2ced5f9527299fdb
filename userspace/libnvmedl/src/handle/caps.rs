// SPDX-License-Identifier: MIT OR Apache-2.0
//! `Cap`: what a handle's engine can do, asked by name (`Handle::has`) instead of by revision
//! number, so clients (the C ABI's `nvmedl_handle_has`, the fio engine, the ublk server) say
//! what they need.

use super::Handle;

/// cbindgen:ignore
/// A capability of a handle's engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cap {
    /// Per-request status: NVMe and HDU errors reported per request, early completion, a
    /// lost START detected (rev 2; rev 1 reports every finished batch as success).
    Status,
    /// The Flush command (`Handle::flush`; rev 2).
    Flush,
    /// Engine reset after a timeout (`Handle::reset`; rev 1 recovers only by a late DONE).
    Reset,
    /// Urgency classes served by engines of their own, weighted by the NVMe arbitration
    /// (WRR): the request priority reaches the SSD (rev 2 with more than one engine).
    UrgencyClasses,
    /// The START queue: a second batch starts behind the running one (rev 2 with
    /// `HduCaps::start_queue`).
    StartQueue,
}

impl Cap {
    /// cbindgen:ignore
    /// Every capability, in the order of the C ABI's `NVMEDL_CAP_*` numbers (1, 2, ...).
    pub const ALL: [Cap; 5] = [Cap::Status, Cap::Flush, Cap::Reset, Cap::UrgencyClasses, Cap::StartQueue];

    /// The C ABI number (`NVMEDL_CAP_*`).
    pub fn code(self) -> i32 {
        Cap::ALL.iter().position(|&c| c == self).map_or(0, |i| i as i32 + 1)
    }

    /// The capability of C ABI number `code` (`None` if unknown).
    pub fn from_code(code: i32) -> Option<Cap> {
        let i = usize::try_from(code).ok()?.checked_sub(1)?;
        Cap::ALL.get(i).copied()
    }
}

impl Handle {
    /// Whether this handle's engine has capability `c`.
    pub fn has(&self, c: Cap) -> bool {
        let rev = self.engine.revision();
        match c {
            Cap::Status => rev.has_status(),
            Cap::Flush => rev.has_flush(),
            Cap::Reset => rev.can_reset(),
            Cap::UrgencyClasses => rev.has_sized_entries() && self.engine.caps().engines > 1,
            Cap::StartQueue => self.engine.start_queue(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cap;

    #[test]
    fn c_numbers_round_trip() {
        for c in Cap::ALL {
            assert_eq!(Cap::from_code(c.code()), Some(c));
        }
        assert_eq!(Cap::Status.code(), 1);
        assert_eq!((Cap::from_code(0), Cap::from_code(-1), Cap::from_code(Cap::ALL.len() as i32 + 1)), (None, None, None));
    }
}
