// SPDX-License-Identifier: MIT OR Apache-2.0
//! M/D/1/K: Poisson arrivals (rate λ), deterministic service time D, one server, at most K
//! requests in the system (the one in service included); an arrival that finds K is blocked.
//! This is the paper's model for choosing staging/queue depths: it gives the blocking
//! probability and throughput per depth, per urgency class under WRR, and the smallest depth
//! within a fraction of saturation.
//!
//! Method: the embedded Markov chain at departures, solved by the forward recursion
//! u₀ = 1, u_{j+1} = (u_j − u₀a_j − Σ_{i=1..j} u_i a_{j−i+1}) / a₀ with a_n = e^{−ρ}ρⁿ/n!, then
//! p_j = π_j/(π₀ + ρ) (j < K), P_B = p_K = 1 − 1/(π₀ + ρ) (PASTA), X = λ(1 − P_B) = (1 − p₀)/D.
//! In f64 the recursion keeps P_B to ~1e-6 relative while P_B ≳ 1e-10; smaller values lose
//! everything to cancellation, so they are reported as 0 (`BLOCKING_FLOOR`). The closed
//! alternating-sum form is not used: in f64 it is wrong past K ≈ 20 for ρ < 1.

/// Blocking probabilities below this are reported as 0 (f64 cancellation, see module docs).
pub const BLOCKING_FLOOR: f64 = 1e-9;

/// Steady state of one M/D/1/K queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mdk {
    /// Depth K.
    pub depth: u32,
    /// Offered load ρ = λD.
    pub rho: f64,
    /// Probability that an arrival is blocked (queue full).
    pub blocking: f64,
    /// Throughput in requests per second.
    pub throughput: f64,
    /// Mean number in the system.
    pub mean_in_system: f64,
    /// Mean response time (queueing + service) in seconds.
    pub mean_response: f64,
}

/// Solve M/D/1/K for arrival rate `lambda` (per second), service time `service` (seconds) and
/// depth `k` (≥ 1). `None` for non-positive or non-finite inputs.
pub fn solve(lambda: f64, service: f64, k: u32) -> Option<Mdk> {
    if !(lambda > 0.0 && service > 0.0 && lambda.is_finite() && service.is_finite()) || k == 0 {
        return None;
    }
    let rho = lambda * service;
    let k = k as usize;
    // a_n for n = 0..k.
    let mut a = Vec::with_capacity(k + 1);
    let mut t = (-rho).exp();
    for n in 0..=k {
        if n > 0 {
            t *= rho / n as f64;
        }
        a.push(t);
    }
    // Unnormalised embedded-chain solution u_0..u_{k-1}.
    let mut u = vec![0.0f64; k];
    u[0] = 1.0;
    for j in 0..k.saturating_sub(1) {
        let mut s = u[j] - u[0] * a[j];
        for i in 1..=j {
            s -= u[i] * a[j - i + 1];
        }
        u[j + 1] = (s / a[0]).max(0.0);
    }
    let sum: f64 = u.iter().sum();
    let pi0 = u[0] / sum;
    let norm = pi0 + rho;
    let mut blocking = (1.0 - 1.0 / norm).max(0.0);
    if blocking < BLOCKING_FLOOR {
        blocking = 0.0;
    }
    let p0 = pi0 / norm;
    let mut mean = 0.0;
    for (j, uj) in u.iter().enumerate() {
        mean += j as f64 * (uj / sum) / norm;
    }
    mean += k as f64 * blocking;
    let throughput = (1.0 - p0) / service;
    Some(Mdk { depth: k as u32, rho, blocking, throughput, mean_in_system: mean, mean_response: mean / throughput })
}

/// One urgency class under NVMe weighted round robin: its arrival rate and weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Class {
    /// Arrival rate (requests per second).
    pub lambda: f64,
    /// WRR weight (the NVMe field plus one, 1..=256).
    pub weight: f64,
}

/// Per-class model under WRR while every class is backlogged: class c is served at the rate
/// μ·w_c/Σw, i.e. with service time D·Σw/w_c, and modelled as its own M/D/1/K at depth `k`.
/// (The paper's per-class model; it is pessimistic for a class whose peers are idle.)
pub fn solve_wrr(classes: &[Class], service: f64, k: u32) -> Vec<Option<Mdk>> {
    let total: f64 = classes.iter().map(|c| c.weight).sum();
    classes.iter().map(|c| if c.weight > 0.0 { solve(c.lambda, service * total / c.weight, k) } else { None }).collect()
}

/// The smallest depth in `1..=max_depth` whose throughput is within `fraction` (0..1] of the
/// throughput the queue reaches at `max_depth`; with the table of every depth.
pub fn advise(lambda: f64, service: f64, fraction: f64, max_depth: u32) -> Option<(u32, Vec<Mdk>)> {
    if !(fraction > 0.0 && fraction <= 1.0) || max_depth == 0 {
        return None;
    }
    let table: Vec<Mdk> = (1..=max_depth).map(|k| solve(lambda, service, k)).collect::<Option<_>>()?;
    let top = table.last()?.throughput;
    let pick = table.iter().find(|m| m.throughput >= fraction * top)?.depth;
    Some((pick, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    /// Reference values: the embedded chain checked against a discrete-event simulation
    /// (2·10⁵ time units), D = 1.
    #[test]
    fn matches_the_reference_table() {
        for (rho, k, pb, x) in
            [(0.5, 4, 0.00768, 0.4962), (0.9, 8, 0.02726, 0.8755), (1.2, 6, 0.18767, 0.9748), (0.95, 16, 0.01313, 0.9375)]
        {
            let m = solve(rho, 1.0, k).unwrap();
            assert!(close(m.blocking, pb, 2e-3), "rho {rho} K {k}: P_B {} want {pb}", m.blocking);
            assert!(close(m.throughput, x, 2e-3), "rho {rho} K {k}: X {} want {x}", m.throughput);
            // Flow balance: X = λ(1 − P_B).
            assert!(close(m.throughput, rho * (1.0 - m.blocking), 1e-9));
        }
    }

    #[test]
    fn depth_one_is_erlang_loss() {
        // K = 1: an arrival is blocked iff the server is busy: P_B = ρ/(1+ρ).
        let m = solve(0.7, 1.0, 1).unwrap();
        assert!(close(m.blocking, 0.7 / 1.7, 1e-12));
        assert!(close(m.mean_response, 1.0, 1e-9));
    }

    #[test]
    fn blocking_falls_and_throughput_rises_with_depth() {
        let mut last = solve(0.9, 1.0, 1).unwrap();
        for k in 2..64 {
            let m = solve(0.9, 1.0, k).unwrap();
            assert!(m.blocking <= last.blocking && m.throughput >= last.throughput - 1e-12, "K {k}");
            last = m;
        }
        assert!(last.blocking > 0.0 && last.blocking < 1e-3, "rho 0.9 K 63: {}", last.blocking);
        // ρ = 0.5, K = 40: P_B is far below what f64 resolves; reported as 0, not as noise.
        assert_eq!(solve(0.5, 1.0, 40).unwrap().blocking, 0.0);
    }

    #[test]
    fn overload_saturates_at_the_service_rate() {
        let m = solve(5.0, 1e-3 * 2.0, 64).unwrap(); // ρ = 0.01: nearly never blocked
        assert!(m.blocking < 1e-9);
        let m = solve(2000.0, 1e-3, 64).unwrap(); // ρ = 2
        assert!(close(m.throughput, 1000.0, 1e-6) && close(m.blocking, 0.5, 1e-6));
    }

    #[test]
    fn advisor_picks_the_smallest_depth_within_the_fraction() {
        let (k, table) = advise(0.95, 1.0, 0.99, 128).unwrap();
        assert!(table[k as usize - 1].throughput >= 0.99 * table[127].throughput);
        assert!(k == 1 || table[k as usize - 2].throughput < 0.99 * table[127].throughput);
        assert!(advise(1.0, 1.0, 0.0, 8).is_none());
    }

    #[test]
    fn wrr_gives_the_heavier_class_the_lower_blocking() {
        let r = solve_wrr(&[Class { lambda: 400.0, weight: 128.0 }, Class { lambda: 400.0, weight: 1.0 }], 1e-3, 16);
        let (hi, lo) = (r[0].unwrap(), r[1].unwrap());
        assert!(hi.blocking < lo.blocking && hi.throughput > lo.throughput);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(solve(0.0, 1.0, 4).is_none());
        assert!(solve(1.0, f64::NAN, 4).is_none());
        assert!(solve(1.0, 1.0, 0).is_none());
    }
}
