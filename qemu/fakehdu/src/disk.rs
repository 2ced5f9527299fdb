// SPDX-License-Identifier: MIT OR Apache-2.0
//! Namespace data in a sparse disk-image file (unwritten blocks read as zeros).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Open (or create) `path` read-write, extended to at least `len` bytes (sparse); a longer
/// file keeps its size and contents. Disk images and the shared guest-memory file use it.
pub(crate) fn open_sized(path: &Path, len: u64) -> Result<File> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(Error::io(path.display()))?;
    let have = file.metadata().map_err(Error::io(path.display()))?.len();
    if have < len {
        file.set_len(len).map_err(Error::io(format!("{}: set_len", path.display())))?;
    }
    Ok(file)
}

/// The backing store of namespace 1.
#[derive(Debug)]
pub struct Disk {
    file: File,
    size: u64,
}

impl Disk {
    /// Open (or create) a sparse image of `size` bytes; an existing shorter file is extended.
    pub fn open(path: &Path, size: u64) -> Result<Self> {
        Ok(Self { file: open_sized(path, size)?, size })
    }

    /// A sparse image in the temporary directory, deleted as soon as it is open.
    pub fn temp(size: u64) -> Result<Self> {
        static N: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!("fakehdu-{}-{}.img", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let disk = Self::open(&path, size)?;
        let _ = std::fs::remove_file(&path);
        Ok(disk)
    }

    /// A second handle on the same image (a device restart keeps the namespace data).
    pub fn try_clone(&self) -> Result<Self> {
        Ok(Self { file: self.file.try_clone().map_err(Error::io("disk image"))?, size: self.size })
    }

    /// Capacity in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Read `buf.len()` bytes at byte offset `off` (must be inside the capacity).
    pub fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.check(off, buf.len())?;
        let mut done = 0;
        while done < buf.len() {
            let n = self.file.read_at(&mut buf[done..], off + done as u64)?;
            if n == 0 {
                buf[done..].fill(0);
                break;
            }
            done += n;
        }
        Ok(())
    }

    /// Write `buf` at byte offset `off` (must be inside the capacity).
    pub fn write_at(&self, off: u64, buf: &[u8]) -> std::io::Result<()> {
        self.check(off, buf.len())?;
        self.file.write_all_at(buf, off)
    }

    /// Make written data durable.
    pub fn flush(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    fn check(&self, off: u64, len: usize) -> std::io::Result<()> {
        match off.checked_add(len as u64) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "beyond disk capacity")),
        }
    }
}
