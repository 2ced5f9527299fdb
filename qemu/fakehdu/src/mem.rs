// SPDX-License-Identifier: MIT OR Apache-2.0
//! Guest-physical memory, shared with the guest (QEMU memory file) or anonymous (in-process).
//!
//! Every access is bounds-checked against the mapped RAM; register accesses are aligned
//! atomic 32/64-bit loads and stores because the guest writes the same memory concurrently.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use vm_memory::{Bytes, FileOffset, GuestAddress, GuestMemoryBackend, GuestMemoryMmap};

use crate::error::Error;

/// A guest access outside RAM or misaligned for an atomic access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemFault {
    /// Guest-physical address of the access.
    pub addr: u64,
    /// Length of the access in bytes.
    pub len: u64,
}

impl std::fmt::Display for MemFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "guest access {:#x}+{:#x} outside RAM or misaligned", self.addr, self.len)
    }
}

/// Guest RAM `[base, base + size)`, cheap to clone (all clones see the same memory).
#[derive(Clone)]
pub struct GuestMem {
    inner: Arc<GuestMemoryMmap>,
    base: u64,
    size: u64,
}

impl GuestMem {
    /// Anonymous, lazily populated memory (for in-process use and tests).
    pub fn anonymous(base: u64, size: u64) -> crate::Result<Self> {
        let len = usize::try_from(size).map_err(|_| Error::Memory(format!("size {size:#x} too large")))?;
        let inner = GuestMemoryMmap::from_ranges(&[(GuestAddress(base), len)]).map_err(|e| Error::Memory(format!("anonymous: {e}")))?;
        Ok(Self { inner: Arc::new(inner), base, size })
    }

    /// Map `size` bytes of a shared memory file (QEMU `memory-backend-file,share=on`); file offset
    /// `file_offset` is guest-physical `base`. The file is created and sized if it is too short.
    pub fn from_file(path: &Path, base: u64, size: u64, file_offset: u64) -> crate::Result<Self> {
        let need = file_offset.checked_add(size).ok_or_else(|| Error::Memory("memory file size overflows".into()))?;
        let file = crate::disk::open_sized(path, need)?;
        let len = usize::try_from(size).map_err(|_| Error::Memory(format!("size {size:#x} too large")))?;
        let inner = GuestMemoryMmap::from_ranges_with_files([(GuestAddress(base), len, Some(FileOffset::new(file, file_offset)))])
            .map_err(|e| Error::Memory(format!("mapping {}: {e}", path.display())))?;
        Ok(Self { inner: Arc::new(inner), base, size })
    }

    /// Guest-physical base of RAM.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size of RAM in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// True if `[addr, addr + len)` lies entirely inside RAM.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base && addr.checked_add(len).is_some_and(|end| end <= self.base + self.size)
    }

    fn fault(addr: u64, len: usize) -> MemFault {
        MemFault { addr, len: len as u64 }
    }

    /// Copy guest memory into `buf`.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if !self.contains(addr, buf.len() as u64) {
            return Err(Self::fault(addr, buf.len()));
        }
        self.inner.read_slice(buf, GuestAddress(addr)).map_err(|_| Self::fault(addr, buf.len()))
    }

    /// Copy `buf` into guest memory.
    pub fn write(&self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        if !self.contains(addr, buf.len() as u64) {
            return Err(Self::fault(addr, buf.len()));
        }
        self.inner.write_slice(buf, GuestAddress(addr)).map_err(|_| Self::fault(addr, buf.len()))
    }

    /// Fill `len` bytes with `byte`.
    pub fn fill(&self, addr: u64, len: u64, byte: u8) -> Result<(), MemFault> {
        let chunk = [byte; 4096];
        let mut off = 0;
        while off < len {
            let n = (len - off).min(4096) as usize;
            self.write(addr + off, &chunk[..n])?;
            off += n as u64;
        }
        Ok(())
    }

    /// Atomic 32-bit load (acquire).
    pub fn load32(&self, addr: u64) -> Result<u32, MemFault> {
        if !addr.is_multiple_of(4) || !self.contains(addr, 4) {
            return Err(Self::fault(addr, 4));
        }
        self.inner.load(GuestAddress(addr), Ordering::Acquire).map_err(|_| Self::fault(addr, 4))
    }

    /// Atomic 64-bit load (acquire).
    pub fn load64(&self, addr: u64) -> Result<u64, MemFault> {
        if !addr.is_multiple_of(8) || !self.contains(addr, 8) {
            return Err(Self::fault(addr, 8));
        }
        self.inner.load(GuestAddress(addr), Ordering::Acquire).map_err(|_| Self::fault(addr, 8))
    }

    /// Atomic 32-bit store (release: everything written before is visible first).
    pub fn store32(&self, addr: u64, v: u32) -> Result<(), MemFault> {
        if !addr.is_multiple_of(4) || !self.contains(addr, 4) {
            return Err(Self::fault(addr, 4));
        }
        self.inner.store(v, GuestAddress(addr), Ordering::Release).map_err(|_| Self::fault(addr, 4))
    }

    /// Atomic 64-bit store (release).
    pub fn store64(&self, addr: u64, v: u64) -> Result<(), MemFault> {
        if !addr.is_multiple_of(8) || !self.contains(addr, 8) {
            return Err(Self::fault(addr, 8));
        }
        self.inner.store(v, GuestAddress(addr), Ordering::Release).map_err(|_| Self::fault(addr, 8))
    }

    /// Host pointer to `[addr, addr + len)`, if that range is inside RAM. The pointer stays
    /// valid as long as any clone of this `GuestMem` lives. Accesses through it race with the
    /// device model exactly like the guest's do: use volatile or atomic accesses.
    pub fn host_ptr(&self, addr: u64, len: u64) -> Option<*mut u8> {
        if !self.contains(addr, len) {
            return None;
        }
        self.inner.get_host_address(GuestAddress(addr)).ok()
    }
}
