// SPDX-License-Identifier: MIT OR Apache-2.0
//! Buffers: `BufferMap`, the allocations of the handle's DMA data slice, and the handle's
//! buffer calls (allocation, free, and the C ABI's pointer lookups).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::alloc::{PageAlloc, PAGE};
use crate::error::{Error, Result};
use crate::platform::Region;
use crate::request::{Buffer, Op, Request};

use super::Handle;

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// The data slice and its allocations.
pub(super) struct BufferMap {
    data: Region,
    alloc: PageAlloc,
    /// Pages of the allocation that starts at each page (0: no allocation starts there).
    runs: Vec<u32>,
    /// For each page, 1 + the first page of the allocation holding it (0: free): the C ABI
    /// bounds a pointer into an allocation by the end of that allocation.
    starts: Vec<u32>,
    /// Owner id of this handle's buffers and requests (unique in the process).
    uid: u64,
}

impl BufferMap {
    /// Every page of `data` free.
    pub(super) fn new(data: Region) -> Self {
        let pages = data.len / PAGE;
        BufferMap {
            data,
            alloc: PageAlloc::new(pages),
            runs: vec![0; pages],
            starts: vec![0; pages],
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Owner id of this map's buffers.
    #[inline(always)]
    pub(super) fn uid(&self) -> u64 {
        self.uid
    }

    /// Bus address of the slice.
    #[inline(always)]
    pub(super) fn bus(&self) -> u64 {
        self.data.bus
    }

    /// Size of the slice in bytes.
    pub(super) fn len(&self) -> usize {
        self.data.len
    }

    /// Free bytes.
    pub(super) fn free_bytes(&self) -> usize {
        self.alloc.free_pages() * PAGE
    }

    /// Allocate `len` bytes (rounded up to 4 KiB).
    pub(super) fn alloc(&mut self, len: usize) -> Result<Buffer> {
        if len == 0 {
            return Err(Error::BadLength);
        }
        let pages = len.div_ceil(PAGE);
        let page = self.alloc.alloc(pages).ok_or(Error::NoBuffers)?;
        self.runs[page] = pages as u32;
        self.starts[page..page + pages].fill(page as u32 + 1);
        Ok(self.buffer(page, pages))
    }

    fn buffer(&self, page: usize, pages: usize) -> Buffer {
        let off = page * PAGE;
        // SAFETY: `page + pages` lies inside the data slice (allocator bounds).
        let ptr = unsafe { self.data.ptr.add(off) };
        Buffer { owner: self.uid, page, pages, ptr, bus: self.data.bus + off as u64 }
    }

    /// Give `buf` back.
    pub(super) fn free(&mut self, buf: Buffer) -> Result<()> {
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

    /// The allocation that starts at `ptr`.
    pub(super) fn buffer_at_ptr(&self, ptr: *const u8) -> Result<Buffer> {
        let off = self.slice_offset(ptr)?;
        match self.runs[off / PAGE] {
            0 => Err(Error::NotFromSlice),
            n => Ok(self.buffer(off / PAGE, n as usize)),
        }
    }

    /// A request on the allocation holding `ptr`, bounded by the end of that allocation.
    pub(super) fn request_at_ptr(&self, op: Op, ptr: *const u8, lba: u64, len: u32) -> Result<Request> {
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

impl Handle {
    /// Allocate a buffer of `len` bytes (rounded up to 4 KiB) from the data slice.
    pub fn buf_alloc(&mut self, len: usize) -> Result<Buffer> {
        self.bufs.alloc(len)
    }

    /// Return a buffer to the data slice.
    pub fn buf_free(&mut self, buf: Buffer) -> Result<()> {
        self.bufs.free(buf)
    }

    /// The buffer that `nvmedl_buf_alloc` returned as `ptr` (C ABI support).
    pub fn buffer_at_ptr(&self, ptr: *const u8) -> Result<Buffer> {
        self.bufs.buffer_at_ptr(ptr)
    }

    /// A request on memory of one `buf_alloc` allocation at `ptr` (C ABI support): `ptr` must be
    /// 4 KiB aligned and inside an allocation (its start or any page of it), and `[ptr, ptr +
    /// len)` must end within that allocation (`BadLength` otherwise, checked at submit), so a
    /// request can never spill into the next allocation.
    pub fn request_at_ptr(&self, op: Op, ptr: *const u8, lba: u64, len: u32) -> Result<Request> {
        self.bufs.request_at_ptr(op, ptr, lba, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_bounded_by_their_allocation() {
        let mut mem = vec![0u8; 8 * PAGE];
        let mut m = BufferMap::new(Region { ptr: mem.as_mut_ptr(), bus: 0x4000_0000, len: mem.len() });
        assert_eq!(m.alloc(0).unwrap_err(), Error::BadLength);
        let a = m.alloc(2 * PAGE).unwrap();
        let b = m.alloc(1).unwrap();
        assert_eq!((a.len(), b.len(), b.bus()), (2 * PAGE, PAGE, 0x4000_0000 + 2 * PAGE as u64));
        assert_eq!(m.free_bytes(), 5 * PAGE);
        // Any page of `a` names `a`, bounded by its end.
        // SAFETY: inside the test's memory.
        let second = unsafe { a.as_ptr().add(PAGE) };
        let r = m.request_at_ptr(Op::Read, second, 0, 4096).unwrap();
        assert_eq!((r.data_off, r.buf_len, r.owner), (PAGE, PAGE, m.uid()));
        assert_eq!(m.buffer_at_ptr(second).unwrap_err(), Error::NotFromSlice, "not the start of an allocation");
        // SAFETY: inside the test's memory.
        assert_eq!(m.request_at_ptr(Op::Read, unsafe { a.as_ptr().add(1) }, 0, 4096).unwrap_err(), Error::Misaligned);
        // SAFETY: inside the test's memory (not allocated).
        assert_eq!(m.buffer_at_ptr(unsafe { a.as_ptr().add(5 * PAGE) }).unwrap_err(), Error::NotFromSlice);
        let b2 = m.buffer_at_ptr(b.as_ptr()).unwrap();
        m.free(b).unwrap();
        assert_eq!(m.free(b2).unwrap_err(), Error::NotFromSlice, "freed twice");
        assert_eq!(m.free_bytes(), 6 * PAGE);
    }
}
