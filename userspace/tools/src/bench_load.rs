// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl-bench`'s request generator: request sizes (fixed or exponential), the per-request
//! urgency mix, Poisson arrivals of the open-loop mode, and the random numbers behind them.
//! Everything here is allocation-free per request.

use std::time::Duration;

use clap::ValueEnum;

/// Granularity of every request size (the library's buffer and LBA alignment).
pub const SIZE_UNIT: u64 = 4096;

/// xorshift64*: cheap, allocation-free randomness.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (0 is replaced, xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in (0, 1]: never 0, so `-ln(u)` is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Exponentially distributed with mean `mean`.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }
}

/// How request sizes are drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum SizeDist {
    /// Every request is `--bs` bytes.
    Fixed,
    /// Exponentially distributed with mean `--bs`, rounded up to 4 KiB, at most `--bs-max`.
    Exp,
}

/// Request sizes of a job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizes {
    /// Distribution.
    pub dist: SizeDist,
    /// Fixed size, or the mean of the exponential before rounding and capping.
    pub bs: u64,
    /// Largest size (the buffers are this large).
    pub max: u64,
}

impl Sizes {
    /// Check the combination: sizes are non-zero multiples of 4 KiB, `max >= bs`.
    pub fn new(dist: SizeDist, bs: u64, max: u64) -> Result<Self, String> {
        let max = if dist == SizeDist::Fixed { bs } else { max };
        if bs == 0 || !bs.is_multiple_of(SIZE_UNIT) || max == 0 || !max.is_multiple_of(SIZE_UNIT) || max < bs {
            return Err(format!("need non-zero multiples of 4096 with --bs ({bs}) <= --bs-max ({max})"));
        }
        Ok(Sizes { dist, bs, max })
    }

    /// The next request's size in bytes.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        match self.dist {
            SizeDist::Fixed => self.bs,
            SizeDist::Exp => {
                let units = (rng.exp(self.bs as f64) / SIZE_UNIT as f64).ceil().max(1.0);
                ((units as u64) * SIZE_UNIT).min(self.max)
            }
        }
    }
}

/// A weighted choice of urgency classes, `P:W[,P:W..]` on the command line.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PrioMix {
    /// (class, cumulative weight), ascending.
    cumulative: Vec<(u16, u64)>,
}

impl PrioMix {
    /// Parse `P:W[,P:W..]`: classes 0..=3, weights >= 1, each class at most once.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (p, w) = part.split_once(':').ok_or_else(|| format!("'{part}' is not CLASS:WEIGHT"))?;
            let p: u16 = p.parse().map_err(|_| format!("'{p}' is not an urgency class"))?;
            let w: u64 = w.parse().map_err(|_| format!("'{w}' is not a weight"))?;
            if p > 3 || w == 0 || w > 1_000_000 {
                return Err(format!("'{part}': classes are 0..=3, weights 1..=1000000"));
            }
            if cumulative.iter().any(|&(q, _)| q == p) {
                return Err(format!("class {p} given twice"));
            }
            total += w;
            cumulative.push((p, total));
        }
        if cumulative.is_empty() {
            return Err("an empty class mix".into());
        }
        Ok(PrioMix { cumulative })
    }

    /// The classes of the mix, in the order given.
    pub fn classes(&self) -> impl Iterator<Item = u16> + '_ {
        self.cumulative.iter().map(|&(p, _)| p)
    }

    /// The share (0..=1) of the draws that fall on `class` (0 for a class not in the mix).
    pub fn share(&self, class: u16) -> f64 {
        let total = self.cumulative.last().map_or(1, |&(_, c)| c) as f64;
        let mut prev = 0;
        for &(p, c) in &self.cumulative {
            if p == class {
                return (c - prev) as f64 / total;
            }
            prev = c;
        }
        0.0
    }

    /// Draw a class.
    pub fn pick(&self, rng: &mut Rng) -> u16 {
        let total = self.cumulative.last().map_or(1, |&(_, c)| c);
        let x = rng.next_u64() % total;
        self.cumulative.iter().find(|&&(_, c)| x < c).map_or(0, |&(p, _)| p)
    }
}

/// Poisson arrivals at `rate` per second: exponential gaps, kept on an absolute schedule
/// (a late generator catches up instead of drifting).
#[derive(Clone, Debug)]
pub struct Arrivals {
    mean_ns: f64,
    next_ns: f64,
}

impl Arrivals {
    /// Arrivals at `rate` per second (> 0), the first one a random gap after 0.
    pub fn new(rate: f64, rng: &mut Rng) -> Self {
        let mean_ns = 1e9 / rate;
        Arrivals { mean_ns, next_ns: rng.exp(mean_ns) }
    }

    /// Time of the next arrival since the start.
    pub fn due(&self) -> Duration {
        Duration::from_nanos(self.next_ns as u64)
    }

    /// Take the due arrival and schedule the one after.
    pub fn advance(&mut self, rng: &mut Rng) {
        self.next_ns += rng.exp(self.mean_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_sizes_have_the_right_mean_and_bounds() {
        let s = Sizes::new(SizeDist::Exp, 16384, 256 << 10).unwrap();
        let mut rng = Rng::new(7);
        let n = 200_000u64;
        let (mut sum, mut small, mut min, mut max) = (0u64, 0u64, u64::MAX, 0u64);
        for _ in 0..n {
            let v = s.next(&mut rng);
            assert!(v.is_multiple_of(SIZE_UNIT) && (SIZE_UNIT..=s.max).contains(&v), "{v}");
            sum += v;
            small += u64::from(v == SIZE_UNIT);
            (min, max) = (min.min(v), max.max(v));
        }
        // Rounding up to 4 KiB adds about half a unit to the exponential's mean of 16 KiB.
        let mean = sum as f64 / n as f64;
        assert!((16384.0..=16384.0 + 4096.0).contains(&mean), "mean {mean}");
        // P(X <= 4096) = 1 - e^(-1/4) = 22.1 %: the shape, not only the mean, is exponential.
        let p = small as f64 / n as f64;
        assert!((p - 0.221).abs() < 0.01, "P(4 KiB) {p}");
        assert_eq!(min, SIZE_UNIT);
        assert!(max > 64 << 10, "no long tail: max {max}");
    }

    #[test]
    fn the_cap_holds_and_fixed_is_fixed() {
        let s = Sizes::new(SizeDist::Exp, 8192, 16384).unwrap();
        let mut rng = Rng::new(1);
        let capped = (0..10_000).map(|_| s.next(&mut rng)).filter(|&v| v == 16384).count();
        assert!(capped > 1000, "the cap is reached often at max = 2 x mean: {capped}");
        let f = Sizes::new(SizeDist::Fixed, 8192, 1 << 20).unwrap();
        assert_eq!(f.max, 8192);
        assert!((0..100).all(|_| f.next(&mut rng) == 8192));
        for (bs, max) in [(0, 4096), (1000, 4096), (8192, 4096), (4096, 5000)] {
            assert!(Sizes::new(SizeDist::Exp, bs, max).is_err(), "{bs} {max}");
        }
    }

    #[test]
    fn the_class_mix_follows_its_weights() {
        let m = PrioMix::parse("0:1,3:3").unwrap();
        assert_eq!(m.classes().collect::<Vec<_>>(), vec![0, 3]);
        assert_eq!((m.share(0), m.share(3), m.share(1)), (0.25, 0.75, 0.0));
        let mut rng = Rng::new(3);
        let mut count = [0u32; 4];
        for _ in 0..100_000 {
            count[m.pick(&mut rng) as usize] += 1;
        }
        assert_eq!((count[1], count[2]), (0, 0));
        let f0 = f64::from(count[0]) / 100_000.0;
        assert!((f0 - 0.25).abs() < 0.01, "class 0 fraction {f0}");
        for bad in ["", "0", "4:1", "0:0", "0:1,0:2", "x:1", "1:y", "1:2:3"] {
            assert!(PrioMix::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_exponential_gaps() {
        let mut rng = Rng::new(11);
        let mut a = Arrivals::new(10_000.0, &mut rng);
        let (mut prev, mut short) = (Duration::ZERO, 0u32);
        let n = 100_000u32;
        for _ in 0..n {
            let t = a.due();
            assert!(t >= prev);
            // P(gap < mean/2) = 1 - e^(-1/2) = 39.3 % for exponential gaps.
            short += u32::from((t - prev).as_nanos() < 50_000);
            prev = t;
            a.advance(&mut rng);
        }
        let rate = f64::from(n) / prev.as_secs_f64();
        assert!((rate - 10_000.0).abs() < 150.0, "rate {rate}");
        let p = f64::from(short) / f64::from(n);
        assert!((p - 0.393).abs() < 0.01, "short gaps {p}");
    }
}
