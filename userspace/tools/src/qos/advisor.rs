// SPDX-License-Identifier: MIT OR Apache-2.0
//! The depth advisor behind `nvmedl advise`: the M/D/1/K table (`mdk`) per depth, per class
//! under WRR, and the smallest depth within a fraction of saturation (docs/qos.md).

use std::fmt::Write as _;

use nvmedl::{Error, Result};

use crate::qos::mdk::{self, Class, Mdk};

/// What the advisor is asked.
#[derive(Clone, Debug, PartialEq)]
pub struct AdviceInput {
    /// Measured service time of one command (seconds, e.g. the QD1 latency).
    pub service: f64,
    /// Total arrival rate (requests per second).
    pub lambda: f64,
    /// WRR classes (arrival rate and weight each); empty = one class.
    pub classes: Vec<Class>,
    /// Recommend the smallest depth whose throughput is within this fraction (0 < f ≤ 1) of
    /// the throughput at `max_depth`.
    pub fraction: f64,
    /// Largest depth considered (1 ..= 1024; the table costs O(K³)).
    pub max_depth: u32,
}

/// One printed depth.
#[derive(Clone, Debug, PartialEq)]
pub struct AdviceRow {
    /// The whole queue at this depth.
    pub total: Mdk,
    /// Each WRR class at this depth (`None` for a class of weight or rate 0).
    pub classes: Vec<Option<Mdk>>,
}

/// The advisor's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// Recommended depth of the whole queue.
    pub depth: u32,
    /// Recommended depth per WRR class (`None` where the model has no answer).
    pub class_depths: Vec<Option<u32>>,
    /// Throughput at `max_depth` (requests per second).
    pub saturation: f64,
    /// Rows at depths 1, 2, 4, … up to `max_depth`, plus the recommended depths.
    pub rows: Vec<AdviceRow>,
}

fn pick(table: &[Option<Mdk>], fraction: f64) -> Option<u32> {
    let top = table.last()?.as_ref()?.throughput;
    table.iter().flatten().find(|m| m.throughput >= fraction * top).map(|m| m.depth)
}

/// Compute the advice (`InvalidArgument` for out-of-range inputs).
pub fn advise(input: &AdviceInput) -> Result<Advice> {
    if !(1..=1024).contains(&input.max_depth) {
        return Err(Error::InvalidArgument);
    }
    let (depth, table) = mdk::advise(input.lambda, input.service, input.fraction, input.max_depth).ok_or(Error::InvalidArgument)?;
    let per_class: Vec<Vec<Option<Mdk>>> = (1..=input.max_depth).map(|k| mdk::solve_wrr(&input.classes, input.service, k)).collect();
    let class_depths = (0..input.classes.len())
        .map(|c| {
            let col: Vec<Option<Mdk>> = per_class.iter().map(|row| row[c]).collect();
            pick(&col, input.fraction)
        })
        .collect::<Vec<_>>();
    let mut shown: Vec<u32> = (0..13).map(|i| 1u32 << i).filter(|&k| k <= input.max_depth).collect();
    shown.push(input.max_depth);
    shown.push(depth);
    shown.extend(class_depths.iter().flatten());
    shown.sort_unstable();
    shown.dedup();
    let rows = shown.iter().map(|&k| AdviceRow { total: table[k as usize - 1], classes: per_class[k as usize - 1].clone() }).collect();
    Ok(Advice { depth, class_depths, saturation: table.last().map_or(0.0, |m| m.throughput), rows })
}

fn pb(p: f64) -> String {
    if p == 0.0 {
        "≈0".into()
    } else {
        format!("{p:.3e}")
    }
}

impl Advice {
    /// The table as `nvmedl advise` prints it.
    pub fn render(&self, input: &AdviceInput) -> String {
        let mut s = String::new();
        let rho = input.lambda * input.service;
        let _ = writeln!(
            s,
            "M/D/1/K: service {:.1} us, arrivals {:.0}/s (rho {rho:.3}), fraction {}",
            input.service * 1e6,
            input.lambda,
            input.fraction
        );
        let _ = write!(s, "{:>6} {:>10} {:>12} {:>10}", "depth", "P_block", "IOPS", "W_us");
        for c in 0..input.classes.len() {
            let _ = write!(s, " | c{c}:{:>8} {:>10} {:>10}", "P_block", "IOPS", "W_us");
        }
        s.push('\n');
        for r in &self.rows {
            let t = &r.total;
            let _ = write!(s, "{:>6} {:>10} {:>12.0} {:>10.1}", t.depth, pb(t.blocking), t.throughput, t.mean_response * 1e6);
            for c in &r.classes {
                match c {
                    Some(m) => {
                        let _ = write!(s, " | {:>11} {:>10.0} {:>10.1}", pb(m.blocking), m.throughput, m.mean_response * 1e6);
                    }
                    None => {
                        let _ = write!(s, " | {:>11} {:>10} {:>10}", "-", "-", "-");
                    }
                }
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "recommended depth: {} ({:.0} IOPS, {:.1} % of the {:.0} IOPS at depth {})",
            self.depth,
            self.rows.iter().find(|r| r.total.depth == self.depth).map_or(0.0, |r| r.total.throughput),
            self.rows.iter().find(|r| r.total.depth == self.depth).map_or(0.0, |r| r.total.throughput / self.saturation * 100.0),
            self.saturation,
            input.max_depth
        );
        for (c, d) in self.class_depths.iter().enumerate() {
            match d {
                Some(d) => {
                    let _ = writeln!(s, "class {c} (weight {}): depth {d}", input.classes[c].weight);
                }
                None => {
                    let _ = writeln!(s, "class {c}: no answer (rate or weight 0)");
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(classes: Vec<Class>) -> AdviceInput {
        AdviceInput { service: 20e-6, lambda: 45_000.0, classes, fraction: 0.99, max_depth: 256 }
    }

    #[test]
    fn recommends_the_smallest_depth_within_the_fraction() {
        let i = input(vec![]);
        let a = advise(&i).unwrap();
        let row = |k: u32| a.rows.iter().find(|r| r.total.depth == k).unwrap().total;
        assert!(row(a.depth).throughput >= 0.99 * a.saturation);
        assert!(a.depth > 1);
        let below = mdk::solve(i.lambda, i.service, a.depth - 1).unwrap();
        assert!(below.throughput < 0.99 * a.saturation, "depth {} is not the smallest", a.depth);
        // ρ = 0.9: saturation is the arrival rate minus a vanishing loss.
        assert!((a.saturation - 45_000.0).abs() < 45.0, "{}", a.saturation);
        let text = a.render(&i);
        assert!(text.contains(&format!("recommended depth: {}", a.depth)), "{text}");
        assert!(text.lines().count() >= 10, "{text}");
    }

    #[test]
    fn wrr_classes_get_their_own_depths() {
        let classes = vec![Class { lambda: 20_000.0, weight: 128.0 }, Class { lambda: 20_000.0, weight: 1.0 }];
        let i = input(classes);
        let a = advise(&i).unwrap();
        assert_eq!(a.class_depths.len(), 2);
        assert!(a.class_depths[0].is_some() && a.class_depths[1].is_some());
        // Every row carries both classes; the heavy class blocks less at every depth.
        for r in &a.rows {
            let (hi, lo) = (r.classes[0].unwrap(), r.classes[1].unwrap());
            assert!(hi.blocking <= lo.blocking, "depth {}", r.total.depth);
        }
        let text = a.render(&i);
        assert!(text.contains("class 1 (weight 1)"), "{text}");
        // Per class: P_block, IOPS and the mean response of the class's own M/D/1/K.
        let head = text.lines().nth(1).unwrap();
        assert_eq!(head.matches("W_us").count(), 3, "{head}");
        let k1 = text.lines().find(|l| l.trim_start().starts_with("1 ")).unwrap();
        let cols: Vec<&str> = k1.split('|').collect();
        assert_eq!(cols.len(), 3, "{k1}");
        // Depth 1: the response is the class's service time D·Σw/w_c (129/128 and 129 x 20 µs).
        let w = |c: &str| c.split_whitespace().nth(2).unwrap().parse::<f64>().unwrap();
        assert!((w(cols[1]) - 20.2).abs() < 0.1 && (w(cols[2]) - 2580.0).abs() < 0.1, "{k1}");
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(advise(&AdviceInput { max_depth: 0, ..input(vec![]) }).is_err());
        assert!(advise(&AdviceInput { fraction: 1.5, ..input(vec![]) }).is_err());
        assert!(advise(&AdviceInput { service: -1.0, ..input(vec![]) }).is_err());
    }
}
