//! The statistics of coverage shifts and parity: quantiles, the two-sample Kolmogorov–Smirnov test,
//! the Wasserstein-1 distance, permutation p-values, tests of proportions, category mixes and
//! event rates, and Holm's correction for testing many groups at once.
//!
//! From `statrs` (0.18): quantiles (`OrderStatistics::quantile`, the median-unbiased estimator,
//! Hyndman–Fan type 8), the chi-squared distribution (for the homogeneity and 2×2 tests), the
//! binomial distribution (for comparing two Poisson rates), and Fisher's exact test (2×2 tables
//! with small counts). statrs has no two-sample KS test, no Kolmogorov distribution, no Wasserstein
//! distance and no permutation machinery, so those are written here, each tested against values
//! computed independently (closed forms, tables, hand-worked small samples) in this module's
//! tests:
//!
//! * [`ks_statistic`]: D = sup |F₁ − F₂| over the pooled sample, stepping over ties together.
//! * [`ks_p_asymptotic`]: the Kolmogorov limit Q(λ) = 2 Σ (−1)^(j−1) e^(−2j²λ²) with Stephens'
//!   finite-sample correction λ = (√nₑ + 0.12 + 0.11/√nₑ)·D, nₑ = nm/(n+m). It is unreliable for
//!   small samples and for data with many ties (integer milliseconds), where it is conservative;
//!   there [`permutation_p`] is used instead (see [`ks_test`]).
//! * [`wasserstein1`]: ∫ |F₁(x) − F₂(x)| dx between the empirical distributions.
//! * [`permutation_p`]: the share of random relabellings of the pooled sample whose statistic is at
//!   least the observed one, (1 + #≥)/(B + 1), with a fixed-seed generator ([`SplitMix64`]) so a
//!   report is reproducible.

use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, DiscreteCDF};
use statrs::statistics::{Data, OrderStatistics};
use statrs::stats_tests::{Alternative, fishers_exact};

use diagwire_runtime::SplitMix64;
use schemars::JsonSchema;
use serde::Serialize;

/// The finite values of `v`, sorted.
pub fn sorted_finite(v: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    s
}

/// Quantiles of a sample (statrs' median-unbiased estimator); NaN for an empty one.
pub fn quantiles(sample: &[f64], taus: &[f64]) -> Vec<f64> {
    let mut data = Data::new(sorted_finite(sample));
    taus.iter().map(|&t| data.quantile(t)).collect()
}

/// The two-sample Kolmogorov–Smirnov statistic of two sorted samples (0 when either is empty).
pub fn ks_statistic(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    d
}

/// The asymptotic p-value of a two-sample KS statistic `d` for sample sizes `n` and `m`.
pub fn ks_p_asymptotic(d: f64, n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    let ne = (n as f64 * m as f64) / (n as f64 + m as f64);
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    kolmogorov_q(lambda)
}

/// Q(λ) = P(K > λ) of the Kolmogorov distribution.
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for j in 1..=100 {
        let term = (-2.0 * (j as f64).powi(2) * lambda * lambda).exp();
        sum += sign * term;
        if term < 1e-16 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// The Wasserstein-1 (earth mover's) distance between the empirical distributions of two sorted
/// samples (0 when either is empty).
pub fn wasserstein1(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j) = (0usize, 0usize);
    let mut x = a[0].min(b[0]);
    let mut total = 0.0;
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(&p), Some(&q)) => p.min(q),
            (Some(&p), None) => p,
            (None, Some(&q)) => q,
            (None, None) => break,
        };
        total += (i as f64 / n - j as f64 / m).abs() * (next - x);
        x = next;
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
    }
    total
}

/// The permutation p-value of `stat` (larger = more different) for two samples: `b` random
/// relabellings of the pooled sample with a generator seeded with `seed`.
pub fn permutation_p(
    a: &[f64],
    b: &[f64],
    stat: impl Fn(&[f64], &[f64]) -> f64,
    rounds: usize,
    seed: u64,
) -> f64 {
    let observed = stat(a, b);
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut rng = SplitMix64::new(seed);
    let mut at_least = 0usize;
    for _ in 0..rounds {
        rng.shuffle(&mut pooled);
        let (x, y) = pooled.split_at(a.len());
        let mut x = x.to_vec();
        let mut y = y.to_vec();
        x.sort_by(f64::total_cmp);
        y.sort_by(f64::total_cmp);
        if stat(&x, &y) >= observed - 1e-12 {
            at_least += 1;
        }
    }
    (1 + at_least) as f64 / (rounds + 1) as f64
}

/// The permutation p-value of the two-sample KS statistic, computed on the sorted pooled sample:
/// each round deals the pooled values' labels at random and scans once, O(n + m) per round.
pub fn ks_permutation_p(a: &[f64], b: &[f64], rounds: usize, seed: u64) -> f64 {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    let observed = ks_statistic(a, b);
    let pooled = sorted_finite(&a.iter().chain(b).copied().collect::<Vec<_>>());
    // Where each group of tied values ends.
    let mut ends = Vec::new();
    for i in 0..pooled.len() {
        if i + 1 == pooled.len() || pooled[i + 1] != pooled[i] {
            ends.push(i);
        }
    }
    let mut labels: Vec<bool> = (0..pooled.len()).map(|i| i < n).collect();
    let mut rng = SplitMix64::new(seed);
    let (nf, mf) = (n as f64, m as f64);
    let mut at_least = 0usize;
    for _ in 0..rounds {
        rng.shuffle(&mut labels);
        let (mut ca, mut cb, mut d, mut k) = (0usize, 0usize, 0.0f64, 0usize);
        for (i, &in_a) in labels.iter().enumerate() {
            if in_a {
                ca += 1;
            } else {
                cb += 1;
            }
            if ends.get(k) == Some(&i) {
                k += 1;
                d = d.max((ca as f64 / nf - cb as f64 / mf).abs());
            }
        }
        if d >= observed - 1e-12 {
            at_least += 1;
        }
    }
    (1 + at_least) as f64 / (rounds + 1) as f64
}

/// How a p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PMethod {
    /// A closed form (asymptotic distribution).
    ClosedForm,
    /// Random relabellings of the pooled sample.
    Permutation,
    /// An exact test.
    Exact,
}

impl PMethod {
    /// As machine output writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PMethod::ClosedForm => "closed_form",
            PMethod::Permutation => "permutation",
            PMethod::Exact => "exact",
        }
    }
}

/// The share of distinct values in a pooled sample (1 = no ties).
pub fn distinct_share(a: &[f64], b: &[f64]) -> f64 {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    if all.is_empty() {
        return 1.0;
    }
    all.sort_by(f64::total_cmp);
    let mut distinct = 1;
    for w in all.windows(2) {
        if w[0] != w[1] {
            distinct += 1;
        }
    }
    distinct as f64 / all.len() as f64
}

/// The two-sample KS test of two sorted samples: (D, p, method). The closed form is used when
/// both samples have at least `closed_form_min_n` values and at least half the pooled values are
/// distinct; otherwise `rounds` permutations.
pub fn ks_test(
    a: &[f64],
    b: &[f64],
    closed_form_min_n: usize,
    rounds: usize,
    seed: u64,
) -> (f64, f64, PMethod) {
    let d = ks_statistic(a, b);
    if a.len().min(b.len()) >= closed_form_min_n && distinct_share(a, b) >= 0.5 {
        (d, ks_p_asymptotic(d, a.len(), b.len()), PMethod::ClosedForm)
    } else {
        (
            d,
            ks_permutation_p(a, b, rounds, seed),
            PMethod::Permutation,
        )
    }
}

/// The chi-squared statistic of a 2×k table of counts (columns with no count dropped) and its
/// degrees of freedom.
pub fn chi_squared_2xk(a: &[u64], b: &[u64]) -> (f64, usize) {
    let cols: Vec<(f64, f64)> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| **x + **y > 0)
        .map(|(x, y)| (*x as f64, *y as f64))
        .collect();
    let na: f64 = cols.iter().map(|c| c.0).sum();
    let nb: f64 = cols.iter().map(|c| c.1).sum();
    let n = na + nb;
    if cols.len() < 2 || na == 0.0 || nb == 0.0 {
        return (0.0, 0);
    }
    let mut stat = 0.0;
    for (x, y) in &cols {
        let col = x + y;
        let ea = na * col / n;
        let eb = nb * col / n;
        stat += (x - ea).powi(2) / ea + (y - eb).powi(2) / eb;
    }
    (stat, cols.len() - 1)
}

/// The upper tail of the chi-squared distribution.
pub fn chi_squared_sf(stat: f64, df: usize) -> f64 {
    if df == 0 || !stat.is_finite() {
        return 1.0;
    }
    ChiSquared::new(df as f64).map_or(1.0, |c| c.sf(stat).clamp(0.0, 1.0))
}

/// The total variation distance between two category mixes (0 when either is empty).
pub fn total_variation(a: &[u64], b: &[u64]) -> f64 {
    let na: u64 = a.iter().sum();
    let nb: u64 = b.iter().sum();
    if na == 0 || nb == 0 {
        return 0.0;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 / na as f64 - *y as f64 / nb as f64).abs())
        .sum::<f64>()
        / 2.0
}

/// The homogeneity test of two category mixes: (chi-squared, p, method). When an expected count is
/// below 5 the chi-squared approximation is unreliable, and `rounds` permutations of the pooled
/// labels give the p-value instead.
pub fn mix_test(a: &[u64], b: &[u64], rounds: usize, seed: u64) -> (f64, f64, PMethod) {
    let (stat, df) = chi_squared_2xk(a, b);
    if df == 0 {
        return (0.0, 1.0, PMethod::ClosedForm);
    }
    let na: u64 = a.iter().sum();
    let nb: u64 = b.iter().sum();
    let n = (na + nb) as f64;
    let small = a
        .iter()
        .zip(b)
        .filter(|(x, y)| **x + **y > 0)
        .any(|(x, y)| (na.min(nb) as f64) * ((x + y) as f64) / n < 5.0);
    let too_big = na + nb > 200_000;
    if !small || too_big {
        return (stat, chi_squared_sf(stat, df), PMethod::ClosedForm);
    }
    let mut labels: Vec<usize> = Vec::new();
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        labels.extend(std::iter::repeat_n(k, (x + y) as usize));
    }
    let mut rng = SplitMix64::new(seed);
    let mut at_least = 0usize;
    for _ in 0..rounds {
        rng.shuffle(&mut labels);
        let mut pa = vec![0u64; a.len()];
        let mut pb = vec![0u64; a.len()];
        for (i, &l) in labels.iter().enumerate() {
            if (i as u64) < na {
                pa[l] += 1;
            } else {
                pb[l] += 1;
            }
        }
        if chi_squared_2xk(&pa, &pb).0 >= stat - 1e-12 {
            at_least += 1;
        }
    }
    (
        stat,
        (1 + at_least) as f64 / (rounds + 1) as f64,
        PMethod::Permutation,
    )
}

/// The two-sided p-value that two proportions `ka/na` and `kb/nb` are equal: Fisher's exact test
/// (statrs) for tables of at most 1,000 observations, the chi-squared test of the 2×2 table above.
pub fn two_proportions(ka: u64, na: u64, kb: u64, nb: u64) -> (f64, PMethod) {
    let (ka, kb) = (ka.min(na), kb.min(nb));
    if na == 0 || nb == 0 {
        return (1.0, PMethod::Exact);
    }
    if na + nb <= 1000 {
        let table = [ka, na - ka, kb, nb - kb];
        if let Ok(p) = fishers_exact(&table, Alternative::TwoSided) {
            return (p.clamp(0.0, 1.0), PMethod::Exact);
        }
    }
    let (stat, df) = chi_squared_2xk(&[ka, na - ka], &[kb, nb - kb]);
    (chi_squared_sf(stat, df), PMethod::ClosedForm)
}

/// The two-sided p-value that two Poisson rates are equal: `ca` events in exposure `ta` against
/// `cb` in `tb`. Conditional on the total, `ca` is binomial with p = ta/(ta+tb) under the null
/// (statrs' binomial distribution); the two tails are doubled.
pub fn rate_test(ca: u64, ta: f64, cb: u64, tb: f64) -> f64 {
    let n = ca + cb;
    if n == 0 || ta <= 0.0 || tb <= 0.0 || !ta.is_finite() || !tb.is_finite() {
        return 1.0;
    }
    let p = ta / (ta + tb);
    let Ok(bin) = Binomial::new(p, n) else {
        return 1.0;
    };
    let lower = bin.cdf(ca);
    let upper = if ca == 0 { 1.0 } else { bin.sf(ca - 1) };
    (2.0 * lower.min(upper)).clamp(0.0, 1.0)
}

/// The permutations needed for `tests` Holm-adjusted tests at level `alpha`: enough that the
/// smallest attainable p-value, 1/(B + 1), can pass the strictest Holm step, `alpha / tests`.
pub fn rounds_for(tests: usize, alpha: f64) -> usize {
    if alpha <= 0.0 || !alpha.is_finite() {
        return 0;
    }
    ((2.0 * tests as f64 / alpha).ceil() as usize).min(1_000_000)
}

/// Holm's step-down adjustment of p-values (keeps the family-wise error rate at the level used).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let v = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(v);
        adjusted[i] = running;
    }
    adjusted
}

/// The standard deviation of a sample, or 1 when it is 0 or undefined: the scale a Wasserstein
/// distance is divided by to compare it with a threshold (the "normed" Wasserstein distance).
pub fn spread(sorted: &[f64]) -> f64 {
    if sorted.len() < 2 {
        return 1.0;
    }
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    let sd = (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    if sd > 0.0 && sd.is_finite() { sd } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ks_statistic_matches_hand_worked_samples() {
        // F1 steps at 1,2,3; F2 at 2.5,3.5: the largest gap is 2/3 at x in [2, 2.5).
        assert!(close(
            ks_statistic(&[1.0, 2.0, 3.0], &[2.5, 3.5]),
            2.0 / 3.0,
            1e-12
        ));
        // Identical samples (with ties) are at distance 0.
        assert_eq!(ks_statistic(&[1.0, 1.0, 2.0], &[1.0, 1.0, 2.0]), 0.0);
        // Disjoint samples are at distance 1.
        assert_eq!(ks_statistic(&[1.0, 2.0], &[3.0, 4.0, 5.0]), 1.0);
        // Ties across samples are stepped over together: F1(1)=1/2, F2(1)=1/3, F1(2)=1, F2(2)=2/3.
        assert!(close(
            ks_statistic(&[1.0, 2.0], &[1.0, 2.0, 3.0]),
            1.0 / 3.0,
            1e-12
        ));
    }

    #[test]
    fn kolmogorov_q_matches_its_table() {
        // Critical values of the Kolmogorov distribution: Q(1.3581) = 0.05, Q(1.6276) = 0.01,
        // Q(1.2238) = 0.10.
        assert!(close(kolmogorov_q(1.3581), 0.05, 2e-4));
        assert!(close(kolmogorov_q(1.6276), 0.01, 1e-4));
        assert!(close(kolmogorov_q(1.2238), 0.10, 2e-4));
        assert_eq!(kolmogorov_q(0.0), 1.0);
        assert!(kolmogorov_q(5.0) < 1e-20);
    }

    #[test]
    fn ks_closed_form_agrees_with_permutations_on_continuous_data() {
        let mut rng = SplitMix64::new(7);
        let a = sorted_finite(&(0..300).map(|_| rng.normal()).collect::<Vec<_>>());
        let b = sorted_finite(&(0..300).map(|_| rng.normal() + 0.25).collect::<Vec<_>>());
        let d = ks_statistic(&a, &b);
        let closed = ks_p_asymptotic(d, a.len(), b.len());
        let perm = permutation_p(&a, &b, ks_statistic, 1999, 3);
        // On untied data the closed form and the permutation distribution agree (within the
        // permutation estimate's noise).
        assert!(
            (closed.ln() - perm.ln()).abs() < 0.5,
            "closed {closed}, perm {perm}"
        );
        assert!(
            closed < 0.5,
            "a shift of a quarter sd over 300 values: {closed}"
        );
    }

    #[test]
    fn fast_ks_permutations_agree_with_generic_permutations() {
        let mut rng = SplitMix64::new(5);
        let a: Vec<f64> = sorted_finite(
            &(0..60)
                .map(|_| (rng.normal() * 3.0).round())
                .collect::<Vec<_>>(),
        );
        let b: Vec<f64> = sorted_finite(
            &(0..50)
                .map(|_| (rng.normal() * 3.0 + 1.0).round())
                .collect::<Vec<_>>(),
        );
        let fast = ks_permutation_p(&a, &b, 4999, 11);
        let slow = permutation_p(&a, &b, ks_statistic, 4999, 12);
        assert!((fast - slow).abs() < 0.02, "fast {fast}, slow {slow}");
        assert!(fast < 0.2, "{fast}");
        assert_eq!(ks_permutation_p(&a, &[], 99, 1), 1.0);
    }

    #[test]
    fn ks_test_picks_permutations_for_small_or_tied_samples() {
        let a = [1.0, 1.0, 2.0, 2.0, 3.0];
        let b = [1.0, 2.0, 2.0, 3.0, 3.0];
        let (_, p, method) = ks_test(&a, &b, 30, 199, 1);
        assert_eq!(method, PMethod::Permutation);
        assert!(p > 0.5);
        let mut rng = SplitMix64::new(9);
        let c = sorted_finite(&(0..100).map(|_| rng.normal()).collect::<Vec<_>>());
        let e = sorted_finite(&(0..100).map(|_| rng.normal()).collect::<Vec<_>>());
        assert_eq!(ks_test(&c, &e, 30, 199, 1).2, PMethod::ClosedForm);
    }

    #[test]
    fn wasserstein_is_the_area_between_the_distribution_functions() {
        // A shift by 2 of the same sample moves every unit of mass by 2.
        assert!(close(
            wasserstein1(&[0.0, 1.0, 2.0], &[2.0, 3.0, 4.0]),
            2.0,
            1e-12
        ));
        // Point masses: |0 - 5|.
        assert!(close(wasserstein1(&[0.0], &[5.0]), 5.0, 1e-12));
        // SciPy's documented example: wasserstein_distance([0, 1, 3], [5, 6, 8]) = 5.0.
        assert!(close(
            wasserstein1(&[0.0, 1.0, 3.0], &[5.0, 6.0, 8.0]),
            5.0,
            1e-12
        ));
        // Worked by hand: 0.5·2.0 + 0.25·0.5 + 0·0.6 + 0.5·3.0 + 0.25·0.3 = 2.7.
        let a = sorted_finite(&[3.4, 3.9, 7.5, 7.8]);
        let b = sorted_finite(&[4.5, 1.4]);
        assert!(close(wasserstein1(&a, &b), 2.7, 1e-9));
        assert_eq!(wasserstein1(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }

    #[test]
    fn quantiles_are_statrs_type_8() {
        let q = quantiles(
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
            &[0.5, 0.9, 1.0],
        );
        assert!(close(q[0], 5.5, 1e-12));
        // h = (n + 1/3)·0.9 + 1/3 = 9.6333: between the 9th and 10th values.
        assert!(close(
            q[1],
            9.0 + (31.0 / 3.0 * 0.9 + 1.0 / 3.0 - 9.0),
            1e-9
        ));
        assert_eq!(q[2], 10.0);
        assert!(quantiles(&[], &[0.5])[0].is_nan());
    }

    #[test]
    fn chi_squared_of_a_known_table() {
        // [[10, 20], [20, 10]]: expected 15 everywhere, statistic 4 * 25/15 = 6.667, df 1.
        let (stat, df) = chi_squared_2xk(&[10, 20], &[20, 10]);
        assert!(close(stat, 20.0 / 3.0, 1e-9));
        assert_eq!(df, 1);
        assert!(close(chi_squared_sf(stat, df), 0.009823, 1e-5));
        assert_eq!(chi_squared_2xk(&[5, 0], &[7, 0]).1, 0);
    }

    #[test]
    fn mix_test_finds_a_changed_mix_and_keeps_an_equal_one() {
        let (_, p_same, _) = mix_test(&[900, 80, 20], &[890, 85, 25], 999, 1);
        assert!(p_same > 0.1, "{p_same}");
        let (_, p_diff, _) = mix_test(&[900, 80, 20], &[600, 300, 100], 999, 1);
        assert!(p_diff < 1e-6, "{p_diff}");
        let (_, p_small, method) = mix_test(&[3, 1], &[1, 3], 999, 1);
        assert_eq!(method, PMethod::Permutation);
        assert!(p_small > 0.2);
        assert!(close(total_variation(&[1, 1], &[1, 0]), 0.5, 1e-12));
    }

    #[test]
    fn proportions_and_rates() {
        // Fisher's exact test of the classic tea-tasting table [[3, 1], [1, 3]]: p = 0.4857.
        let (p, m) = two_proportions(3, 4, 1, 4);
        assert_eq!(m, PMethod::Exact);
        assert!(close(p, 0.485714, 1e-5));
        let (p_big, m_big) = two_proportions(500, 1000, 700, 1000);
        assert_eq!(m_big, PMethod::ClosedForm);
        assert!(p_big < 1e-10);
        // Equal rates: 30 in 10 minutes against 60 in 20.
        assert!(rate_test(30, 10.0, 60, 20.0) > 0.9);
        // 10 in 10 minutes against 100 in 10: far apart.
        assert!(rate_test(10, 10.0, 100, 10.0) < 1e-12);
        assert_eq!(rate_test(0, 1.0, 0, 1.0), 1.0);
    }

    #[test]
    fn holm_adjusts_step_down() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        // Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> 0.06 (monotone).
        assert!(close(adj[3], 0.02, 1e-12));
        assert!(close(adj[0], 0.03, 1e-12));
        assert!(close(adj[2], 0.06, 1e-12));
        assert!(close(adj[1], 0.06, 1e-12));
    }

    #[test]
    fn generator_is_deterministic_and_roughly_uniform() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        assert_eq!(a.next_u64(), b.next_u64());
        let mean = (0..10_000).map(|_| a.next_f64()).sum::<f64>() / 10_000.0;
        assert!(close(mean, 0.5, 0.02));
        let below: Vec<u64> = (0..1000).map(|_| a.below(3)).collect();
        assert!(below.iter().all(|x| *x < 3));
        let normals: Vec<f64> = (0..20_000).map(|_| a.normal()).collect();
        let m = normals.iter().sum::<f64>() / 20_000.0;
        let v = normals.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 20_000.0;
        assert!(close(m, 0.0, 0.03) && close(v, 1.0, 0.05));
    }
}
