// SPDX-License-Identifier: MIT OR Apache-2.0
//! Buffers: allocation from the handle's DMA data slice and the C ABI's pointer lookups.

use super::*;

impl Handle {
    /// Allocate a buffer of `len` bytes (rounded up to 4 KiB) from the data slice.
    pub fn buf_alloc(&mut self, len: usize) -> Result<Buffer> {
        if len == 0 {
            return Err(Error::BadLength);
        }
        let pages = len.div_ceil(PAGE);
        let page = self.alloc.alloc(pages).ok_or(Error::NoBuffers)?;
        self.runs[page] = pages as u32;
        self.starts[page..page + pages].fill(page as u32 + 1);
        Ok(self.buffer(page, pages))
    }

    pub(super) fn buffer(&self, page: usize, pages: usize) -> Buffer {
        let off = page * PAGE;
        // SAFETY: `page + pages` lies inside the data slice (allocator bounds).
        let ptr = unsafe { self.data.ptr.add(off) };
        Buffer { owner: self.uid, page, pages, ptr, bus: self.data.bus + off as u64 }
    }

    /// Return a buffer to the data slice.
    pub fn buf_free(&mut self, buf: Buffer) -> Result<()> {
        if buf.owner != self.uid || self.runs.get(buf.page) != Some(&(buf.pages as u32)) {
            return Err(Error::NotFromSlice);
        }
        self.runs[buf.page] = 0;
        self.starts[buf.page..buf.page + buf.pages].fill(0);
        if self.alloc.free(buf.page, buf.pages) {
            Ok(())
        } else {
            Err(Error::NotFromSlice)
        }
    }

    /// Offset of `ptr` in the data slice: `NotFromSlice` outside it, `Misaligned` off a page.
    fn slice_offset(&self, ptr: *const u8) -> Result<usize> {
        let off = (ptr as usize).wrapping_sub(self.data.ptr as usize);
        if off >= self.data.len {
            return Err(Error::NotFromSlice);
        }
        if !off.is_multiple_of(PAGE) {
            return Err(Error::Misaligned);
        }
        Ok(off)
    }

    /// The buffer that `nvmedl_buf_alloc` returned as `ptr` (C ABI support).
    pub fn buffer_at_ptr(&self, ptr: *const u8) -> Result<Buffer> {
        let off = self.slice_offset(ptr)?;
        match self.runs[off / PAGE] {
            0 => Err(Error::NotFromSlice),
            n => Ok(self.buffer(off / PAGE, n as usize)),
        }
    }

    /// A request on memory of one `buf_alloc` allocation at `ptr` (C ABI support): `ptr` must be
    /// 4 KiB aligned and inside an allocation (its start or any page of it), and `[ptr, ptr +
    /// len)` must end within that allocation (`BadLength` otherwise, checked at submit), so a
    /// request can never spill into the next allocation.
    pub fn request_at_ptr(&self, op: Op, ptr: *const u8, lba: u64, len: u32) -> Result<Request> {
        let off = self.slice_offset(ptr)?;
        let first = match self.starts[off / PAGE] {
            0 => return Err(Error::NotFromSlice),
            s => s as usize - 1,
        };
        let end = (first + self.runs[first] as usize) * PAGE;
        Ok(Request {
            op,
            lba,
            len,
            owner: self.uid,
            data_off: off,
            buf_len: end - off,
            priority: None,
            deadline: None,
            tag: None,
            tenant: None,
        })
    }
}
