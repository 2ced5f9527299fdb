// SPDX-License-Identifier: MIT OR Apache-2.0
//! The seeded PRNG of every random test (splitmix64) and seed derivation. Hand-written rather
//! than `fastrand` on purpose: a printed seed must replay the same run in every build, and the
//! guest's data patterns (`pattern.rs`) are derived with the same output function.

/// splitmix64: the seeded PRNG of every random test (seed printed for reproduction).
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    // A seeded generator with an endless stream, not an iterator (a public method now that the
    // test groups are a library).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// True with probability `pct` percent.
    pub fn pct(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// The splitmix64 output function (seed derivation).
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed from `var` (decimal or 0x-hex) or from the clock.
pub fn seed_from_env(var: &str) -> u64 {
    let parse = |s: &str| match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    };
    std::env::var(var).ok().and_then(|s| parse(&s)).unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        mix(t.as_nanos() as u64 ^ u64::from(std::process::id()))
    })
}
