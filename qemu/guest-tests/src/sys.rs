// SPDX-License-Identifier: MIT OR Apache-2.0
//! Thin, errno-returning wrappers over open/ioctl/mmap for the device nodes under test.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Open `path` read-write.
pub fn open(path: &str) -> io::Result<OwnedFd> {
    let c = CString::new(path).unwrap();
    // SAFETY: valid C string; the returned fd is owned by the OwnedFd.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// ioctl with a pointer argument to `arg` (any size: tests pass wrong sizes on purpose).
pub fn ioctl<T>(fd: &OwnedFd, cmd: u32, arg: &mut T) -> io::Result<()> {
    // SAFETY: `arg` is valid for size_of::<T>() bytes; the kernel checks the size it copies.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, arg as *mut T) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// ioctl without argument.
pub fn ioctl_none(fd: &OwnedFd, cmd: u32) -> io::Result<()> {
    // SAFETY: no memory is passed.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, 0usize) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Errno of an io::Error (0 if none).
pub fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// A shared mapping that is unmapped on drop.
pub struct Map {
    ptr: *mut u8,
    len: usize,
}

impl Map {
    /// mmap `len` bytes at `offset` of `fd` with `prot` and `flags`.
    pub fn new(fd: &OwnedFd, len: usize, offset: u64, prot: i32, flags: i32) -> io::Result<Map> {
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory is affected.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd.as_raw_fd(), offset as libc::off_t) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map { ptr: p.cast(), len })
    }

    /// Read-write shared mapping.
    pub fn shared(fd: &OwnedFd, len: usize, offset: u64) -> io::Result<Map> {
        Map::new(fd, len, offset, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
    }

    /// Volatile 64-bit load at byte offset `off` (aligned; registers need exactly this).
    pub fn rd64(&self, off: usize) -> u64 {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: in bounds and aligned; the mapping is live while `self` is.
        unsafe { std::ptr::read_volatile(self.ptr.add(off).cast::<u64>()) }
    }

    /// Volatile 64-bit store.
    pub fn wr64(&self, off: usize, v: u64) {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: in bounds and aligned.
        unsafe { std::ptr::write_volatile(self.ptr.add(off).cast::<u64>(), v) }
    }

    /// The mapping as a byte slice (for normal memory: staging, data).
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, live and exclusively borrowed here.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we created.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Full barrier: make earlier stores (entries) visible before a later doorbell store.
pub fn barrier() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Run a shell command, returning (success, combined output).
pub fn sh(cmd: &str) -> (bool, String) {
    match std::process::Command::new("/bin/sh").arg("-c").arg(cmd).output() {
        Ok(o) => {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), s)
        }
        Err(e) => (false, e.to_string()),
    }
}

/// Read a device-tree property as big-endian u64 cells pairs (address, size).
pub fn dt_reg(node: &str) -> io::Result<Vec<(u64, u64)>> {
    let b = std::fs::read(format!("/sys/firmware/devicetree/base/{node}/reg"))?;
    Ok(b.chunks_exact(16)
        .map(|c| (u64::from_be_bytes(c[0..8].try_into().unwrap()), u64::from_be_bytes(c[8..16].try_into().unwrap())))
        .collect())
}
