// SPDX-License-Identifier: MIT OR Apache-2.0
//! PRP (physical region page) walking: turn PRP1/PRP2 of a command into guest memory segments.

use super::spec::sc;
use crate::mem::GuestMem;

const PAGE: u64 = 4096;

/// Segments `(guest address, length)` covering `len` bytes described by `prp1`/`prp2`
/// (memory page size 4 KiB), or the NVMe status to fail the command with.
pub fn segments(mem: &GuestMem, prp1: u64, prp2: u64, len: u64) -> Result<Vec<(u64, u64)>, u16> {
    let mut segs = Vec::new();
    let first = len.min(PAGE - (prp1 % PAGE));
    segs.push((prp1, first));
    let mut left = len - first;
    if left == 0 {
        return Ok(segs);
    }
    if left <= PAGE {
        if !prp2.is_multiple_of(PAGE) {
            return Err(sc::INVALID_PRP_OFFSET);
        }
        segs.push((prp2, left));
        return Ok(segs);
    }
    // PRP2 points to a PRP list (qword aligned, may start inside a page).
    if !prp2.is_multiple_of(8) {
        return Err(sc::INVALID_PRP_OFFSET);
    }
    let mut list = prp2;
    // Every list page but a degenerate one carries data entries; bound the walk anyway so a
    // self-referencing chain cannot loop forever.
    let mut pages_left = len / PAGE + 2;
    while left > 0 {
        if pages_left == 0 {
            return Err(sc::INVALID_FIELD);
        }
        pages_left -= 1;
        let entries_in_page = (PAGE - list % PAGE) / 8;
        for i in 0..entries_in_page {
            let e = mem.load64(list + 8 * i).map_err(|_| sc::DATA_TRANSFER_ERROR)?;
            // The last entry of a list page chains to the next list page if more remain.
            if i == entries_in_page - 1 && left > PAGE {
                if e % 8 != 0 {
                    return Err(sc::INVALID_PRP_OFFSET);
                }
                list = e;
                break;
            }
            if e % PAGE != 0 {
                return Err(sc::INVALID_PRP_OFFSET);
            }
            let n = left.min(PAGE);
            segs.push((e, n));
            left -= n;
            if left == 0 {
                break;
            }
        }
    }
    Ok(segs)
}
