// SPDX-License-Identifier: MIT OR Apache-2.0
//! The verified-I/O data pattern: every 8-byte word depends on its LBA, its word index and the
//! generation of the block's last write, so a read can tell stale data from lost data.

use crate::rng::mix;

/// 4 KiB block in 512-byte LBAs.
pub const BLOCK_LBAS: u64 = 8;
/// Bytes of one block.
pub const BLOCK: usize = 4096;

/// The pattern word `w` (0..64) of the 512-byte sector at `lba` written by generation `gen`.
pub fn pattern(lba: u64, gen: u32, w: u64) -> u64 {
    mix(lba.wrapping_mul(0x0000_0100_0000_01b3) ^ (u64::from(gen) << 40) ^ w ^ 0xd1_7ec7)
}

/// Fill `buf[..]` (whole 4 KiB blocks) with the pattern of blocks starting at `lba`, one
/// generation per block.
pub fn fill(buf: &mut [u8], lba: u64, gens: &[u32]) {
    for (i, w) in buf.chunks_exact_mut(8).enumerate() {
        let sector = lba + (i / 64) as u64;
        let gen = gens[i / (BLOCK / 8)];
        w.copy_from_slice(&pattern(sector, gen, (i % 64) as u64).to_le_bytes());
    }
}

/// Check `buf` against the pattern; `Err` names the first bad word.
pub fn compare(buf: &[u8], lba: u64, gens: &[u32]) -> Result<(), String> {
    for (i, w) in buf.chunks_exact(8).enumerate() {
        let sector = lba + (i / 64) as u64;
        let gen = gens[i / (BLOCK / 8)];
        let got = u64::from_le_bytes(w.try_into().unwrap());
        if got != pattern(sector, gen, (i % 64) as u64) {
            return Err(format!("data mismatch at LBA {sector} word {} (want generation {gen}, got {got:#x})", i % 64));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_compare() {
        let mut b = vec![0u8; 2 * BLOCK];
        fill(&mut b, 16, &[3, 4]);
        assert_eq!(compare(&b, 16, &[3, 4]), Ok(()));
        assert!(compare(&b, 16, &[3, 5]).is_err());
        assert!(compare(&b, 24, &[3, 4]).is_err());
    }
}
