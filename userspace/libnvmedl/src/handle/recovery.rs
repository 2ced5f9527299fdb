// SPDX-License-Identifier: MIT OR Apache-2.0
//! Recovery after a timeout: engine reset (rev 2) and the late DONE (rev 1).

use std::time::{Duration, Instant};

use directnvm_abi::DNVM_HDU_ERR_ABORTED;

use super::{Handle, Hw};
use crate::error::{Error, Result};

impl Handle {
    /// Reset the engine (rev 2): aborts the batch, clears the wedge. `Revision` on rev 1,
    /// where only a late DONE can end a wedge.
    pub fn reset(&mut self) -> Result<()> {
        self.engine.reset()?;
        self.fail_inflight(Error::Hdu { code: DNVM_HDU_ERR_ABORTED });
        self.hw = Hw::Idle;
        Ok(())
    }

    /// Bring the handle back after a timeout, on either revision. Rev 2: `reset` (the engine
    /// aborts the timed-out batch). Rev 1 has no engine reset: wait, bounded by the timeout, for
    /// the late DONE that ends the wedge. `Ok` when the handle takes requests again; `Timeout`
    /// while a rev 1 batch is still inside the device (call again later, or reload the modules).
    pub fn recover(&mut self) -> Result<()> {
        if self.engine.revision().can_reset() {
            return self.reset();
        }
        let t0 = Instant::now();
        while self.still_wedged() {
            if t0.elapsed() > self.cfg.timeout {
                return Err(Error::Timeout);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(())
    }

    /// Wedged even after looking once for the late DONE that ends a wedge (so every call
    /// recovers by itself once the device finished the timed-out batch).
    pub(super) fn still_wedged(&mut self) -> bool {
        if matches!(self.hw, Hw::Wedged { .. }) {
            self.progress(false);
        }
        matches!(self.hw, Hw::Wedged { .. })
    }

    /// True when the last batch timed out and the engine has not recovered.
    pub fn is_wedged(&self) -> bool {
        matches!(self.hw, Hw::Wedged { .. })
    }
}
