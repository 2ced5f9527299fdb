// SPDX-License-Identifier: MIT OR Apache-2.0
//! Blocking calls: one request submitted and waited for (read, write, execute, flush).

use super::Handle;
use crate::error::{Error, Result};
use crate::request::{Buffer, Request};

impl Handle {
    pub(super) fn sync(&mut self, r: Request) -> Result<()> {
        let s = self.admit(&r)?;
        let mut w = self.begin_wait();
        while self.slots.is_full() {
            self.progress(true);
            if self.pending() == 0 {
                return Err(Error::QueueFull);
            }
            self.relax(&mut w)?;
        }
        self.done.begin_sync();
        self.enqueue(s, &r, true);
        self.done.wait_for(self.seq);
        let r = loop {
            self.progress(w.spins.is_multiple_of(32));
            if let Some(r) = self.done.take_sync() {
                break r;
            }
            if let Err(e) = self.relax(&mut w) {
                break Err(e);
            }
        };
        // A request given up on (Timeout) may still complete; it must not answer a later call.
        self.done.end_sync();
        r
    }

    /// Read `buf.len()` bytes at `lba` and wait.
    pub fn read(&mut self, buf: &Buffer, lba: u64) -> Result<()> {
        self.sync(Request::read(buf, lba))
    }

    /// Write `buf` at `lba` and wait.
    pub fn write(&mut self, buf: &Buffer, lba: u64) -> Result<()> {
        self.sync(Request::write(buf, lba))
    }

    /// Submit any request and wait for it.
    pub fn execute(&mut self, r: Request) -> Result<()> {
        self.sync(r)
    }

    /// Flush the SSD's write cache and wait (rev 2; `Revision` on rev 1).
    pub fn flush(&mut self) -> Result<()> {
        self.sync(Request::flush())
    }
}
