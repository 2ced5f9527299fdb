// SPDX-License-Identifier: MIT OR Apache-2.0
//! Page allocator over a core's data slice: one bit per 4 KiB page, first fit for contiguous
//! runs. Buffers are set-up objects (allocate them before the I/O loop); the bitmap is sized
//! once at handle creation and never grows.

/// Bytes per allocation unit (the engines' buffer alignment).
pub const PAGE: usize = 4096;

/// Bitmap allocator of `pages` pages.
pub struct PageAlloc {
    used: Vec<u64>,
    pages: usize,
    free: usize,
}

impl PageAlloc {
    /// All `pages` free.
    pub fn new(pages: usize) -> Self {
        Self { used: vec![0; pages.div_ceil(64)], pages, free: pages }
    }

    fn is_used(&self, p: usize) -> bool {
        self.used[p / 64] & (1 << (p % 64)) != 0
    }

    fn set(&mut self, p: usize, used: bool) {
        if used {
            self.used[p / 64] |= 1 << (p % 64);
        } else {
            self.used[p / 64] &= !(1 << (p % 64));
        }
    }

    /// Allocate `n` contiguous pages; the index of the first.
    pub fn alloc(&mut self, n: usize) -> Option<usize> {
        if n == 0 || n > self.free {
            return None;
        }
        let mut run = 0;
        let mut p = 0;
        while p < self.pages {
            if self.used[p / 64] == u64::MAX && p % 64 == 0 {
                run = 0;
                p += 64;
                continue;
            }
            if self.is_used(p) {
                run = 0;
            } else {
                run += 1;
                if run == n {
                    let first = p + 1 - n;
                    for q in first..=p {
                        self.set(q, true);
                    }
                    self.free -= n;
                    return Some(first);
                }
            }
            p += 1;
        }
        None
    }

    /// Free `n` pages starting at `first`; false (and nothing changed) if any was not in use.
    pub fn free(&mut self, first: usize, n: usize) -> bool {
        let Some(end) = first.checked_add(n) else { return false };
        if end > self.pages || !(first..end).all(|p| self.is_used(p)) {
            return false;
        }
        for p in first..end {
            self.set(p, false);
        }
        self.free += n;
        true
    }

    /// Free pages.
    pub fn free_pages(&self) -> usize {
        self.free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_and_free() {
        let mut a = PageAlloc::new(130);
        assert_eq!(a.alloc(1), Some(0));
        assert_eq!(a.alloc(64), Some(1));
        assert_eq!(a.alloc(65), Some(65));
        assert_eq!(a.alloc(1), None);
        assert!(a.free(1, 64));
        assert!(!a.free(1, 1));
        assert_eq!(a.alloc(2), Some(1));
        assert_eq!(a.free_pages(), 62);
        assert_eq!(a.alloc(0), None);
        assert!(!a.free(129, 2));
    }
}
