// SPDX-License-Identifier: MIT OR Apache-2.0
//! `nvmedl advise --json`: the advisor's table as one JSON object (serde), for scripts such as
//! `make qos-advise-wrr` (qemu/guest-lab/src/qos_runs.rs, scripts/qos-plot.py).

use crate::qos::advisor::{Advice, AdviceInput};
use crate::qos::mdk::Mdk;
use serde::Serialize;

/// One M/D/1/K solution.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct MdkJson {
    /// Depth K.
    pub depth: u32,
    /// Offered load ρ = λD (for a WRR class: λ_c·D·Σw/w_c).
    pub rho: f64,
    /// Probability that an arrival is blocked.
    pub p_block: f64,
    /// Throughput (requests per second).
    pub iops: f64,
    /// Mean number in the system.
    pub mean_in_system: f64,
    /// Mean response time (µs).
    pub w_us: f64,
}

impl From<&Mdk> for MdkJson {
    fn from(m: &Mdk) -> Self {
        MdkJson {
            depth: m.depth,
            rho: m.rho,
            p_block: m.blocking,
            iops: m.throughput,
            mean_in_system: m.mean_in_system,
            w_us: m.mean_response * 1e6,
        }
    }
}

/// One WRR class asked about.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct ClassInJson {
    /// Arrival rate (requests per second).
    pub rate: f64,
    /// WRR weight.
    pub weight: f64,
}

/// One printed depth: the whole queue and each class (`null` where the model has no answer).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RowJson {
    /// The whole queue at this depth.
    pub total: MdkJson,
    /// Each class at this depth.
    pub classes: Vec<Option<MdkJson>>,
}

/// The whole answer.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct AdviceJson {
    /// Service time (µs).
    pub service_us: f64,
    /// Total arrival rate (per second).
    pub rate: f64,
    /// The classes asked about.
    pub classes: Vec<ClassInJson>,
    /// The fraction of saturation the recommendation must reach.
    pub fraction: f64,
    /// Largest depth considered.
    pub max_depth: u32,
    /// Recommended depth of the whole queue.
    pub depth: u32,
    /// Recommended depth per class.
    pub class_depths: Vec<Option<u32>>,
    /// Throughput at `max_depth`.
    pub saturation: f64,
    /// The rows of the text table (depths 1, 2, 4, …, `max_depth`, the recommended ones).
    pub rows: Vec<RowJson>,
}

impl AdviceJson {
    /// The report of `advice` for `input`.
    pub fn of(input: &AdviceInput, advice: &Advice) -> Self {
        AdviceJson {
            service_us: input.service * 1e6,
            rate: input.lambda,
            classes: input.classes.iter().map(|c| ClassInJson { rate: c.lambda, weight: c.weight }).collect(),
            fraction: input.fraction,
            max_depth: input.max_depth,
            depth: advice.depth,
            class_depths: advice.class_depths.clone(),
            saturation: advice.saturation,
            rows: advice
                .rows
                .iter()
                .map(|r| RowJson {
                    total: MdkJson::from(&r.total),
                    classes: r.classes.iter().map(|c| c.as_ref().map(MdkJson::from)).collect(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::advisor;
    use crate::qos::mdk::Class;

    #[test]
    fn the_json_carries_the_per_class_model() {
        // 2 classes, weights 3:1, D = 100 µs, arrivals split as the weights, ρ = 1.3.
        let input = AdviceInput {
            service: 100e-6,
            lambda: 13_000.0,
            classes: vec![Class { lambda: 9_750.0, weight: 3.0 }, Class { lambda: 3_250.0, weight: 1.0 }],
            fraction: 0.99,
            max_depth: 16,
        };
        let a = advisor::advise(&input).unwrap();
        let j = AdviceJson::of(&input, &a);
        let v: serde_json::Value = serde_json::from_str(&serde_json::to_string(&j).unwrap()).unwrap();
        assert_eq!(v["service_us"], 100.0);
        assert_eq!(v["classes"][1]["weight"], 1.0);
        let rows = v["rows"].as_array().unwrap();
        let depths: Vec<u64> = rows.iter().map(|r| r["total"]["depth"].as_u64().unwrap()).collect();
        for k in [1, 2, 4, 8, 16] {
            assert!(depths.contains(&k), "depth {k} missing from {depths:?}");
        }
        for r in rows {
            let k = r["total"]["depth"].as_u64().unwrap() as u32;
            for c in 0..2 {
                let want = crate::qos::mdk::solve_wrr(&input.classes, input.service, k)[c].unwrap();
                let got = &r["classes"][c];
                // serde_json's float parsing may differ in the last bit.
                let close = |key: &str, want: f64| (got[key].as_f64().unwrap() - want).abs() <= 1e-12 * want.abs();
                assert!(close("p_block", want.blocking), "K {k} class {c}: {got}");
                assert!(close("iops", want.throughput), "K {k} class {c}: {got}");
                assert!(close("w_us", want.mean_response * 1e6), "K {k} class {c}: {got}");
                // Per-class load λ_c·D·Σw/w_c: both classes at ρ = 1.3 when the split follows the weights.
                assert!((got["rho"].as_f64().unwrap() - 1.3).abs() < 1e-9, "K {k} class {c}: {got}");
            }
        }
        assert_eq!(v["class_depths"].as_array().unwrap().len(), 2);
    }
}
