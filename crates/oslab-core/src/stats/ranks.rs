//! Rank statistics for two independent samples, as comparisons of few replicates need them: the
//! Mann-Whitney U test (with the exact null distribution when the samples are small, where the
//! normal approximation is poor) and the Hodges-Lehmann shift with its distribution-free
//! confidence interval (order statistics of the pairwise differences).

/// Up to this many values in both samples together, p-values and interval ranks come from the
/// exact null distribution of U (counts stay exact in an f64); beyond, from the normal one.
const EXACT_UP_TO: usize = 30;

/// At most this many values per side enter the pairwise differences (evenly spaced order
/// statistics beyond), so a comparison of thousands of jobs stays quick.
const PAIRWISE_SIDE_MAX: usize = 1500;

/// P(U = u) for u in 0..=n1 n2 when both samples come from one continuous distribution: the
/// coefficients of the Gaussian binomial [n1 + n2 choose n1] over C(n1 + n2, n1).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    let len = n1 * n2 + 1;
    let mut c = vec![0.0; len];
    c[0] = 1.0;
    // The product over i of (1 - q^(n2 + i)) / (1 - q^i); every partial product is a polynomial.
    for i in 1..=n1 {
        let k = n2 + i;
        for u in (k..len).rev() {
            c[u] -= c[u - k];
        }
        for u in i..len {
            c[u] += c[u - i];
        }
    }
    let total: f64 = c.iter().sum();
    c.iter().map(|x| x / total).collect()
}

/// Twice the mid-rank of every value of `a` then `b` (twice: a tied run's mid-rank may be a
/// half).
fn doubled_ranks(a: &[f64], b: &[f64]) -> Vec<usize> {
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&x, &y| all[x].total_cmp(&all[y]));
    let mut ranks = vec![0; all.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && all[order[j + 1]] == all[order[i]] {
            j += 1;
        }
        for &k in &order[i..=j] {
            ranks[k] = i + j + 2; // 2 x the mid-rank (i + j) / 2 + 1
        }
        i = j + 1;
    }
    ranks
}

/// P(the doubled ranks of `n1` values drawn from `ranks` sum to s), for every s: the exact
/// permutation distribution of the rank sum, ties included (they are held as they fell).
fn rank_sum_distribution(ranks: &[usize], n1: usize) -> Vec<f64> {
    let top: usize = ranks.iter().sum();
    // ways[k][s]: subsets of k of the ranks seen so far summing to s.
    let mut ways = vec![vec![0.0f64; top + 1]; n1 + 1];
    ways[0][0] = 1.0;
    for &r in ranks {
        for k in (1..=n1).rev() {
            for s in (r..=top).rev() {
                ways[k][s] += ways[k - 1][s - r];
            }
        }
    }
    let total: f64 = ways[n1].iter().sum();
    ways[n1].iter().map(|w| w / total).collect()
}

/// U of `a` (the number of pairs in which the `a` value is the larger, ties counting half) and
/// the tie correction term sum(t^3 - t).
fn u_statistic(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut rank_a, mut ties, mut i) = (0.0, 0.0, 0);
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0; // mid-rank of the tied run
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_a += all[i..=j].iter().filter(|x| x.1).count() as f64 * rank;
        i = j + 1;
    }
    let n1 = a.len() as f64;
    (rank_a - n1 * (n1 + 1.0) / 2.0, ties)
}

/// Two-sided p-value of the Mann-Whitney U test: how likely samples this different are if both
/// come from one distribution. Exact for small samples, ties included (the permutation
/// distribution of the rank sum with the ties as they fell: 3 against 3 never reads below 0.1,
/// however the values tie); otherwise the normal approximation with tie and continuity
/// corrections. None when either side is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (u, ties) = u_statistic(a, b);
    if n1 + n2 <= EXACT_UP_TO {
        let ranks = doubled_ranks(a, b);
        let sum: usize = ranks[..n1].iter().sum();
        let dist = rank_sum_distribution(&ranks, n1);
        let below: f64 = dist[..=sum].iter().sum();
        let above: f64 = dist[sum..].iter().sum();
        return Some((2.0 * below.min(above)).min(1.0));
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let nf = n1f + n2f;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)).max(1.0));
    if var <= 0.0 {
        return Some(1.0); // every value equal
    }
    let z = ((u - n1f * n2f / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * normal_tail(z)).min(1.0))
}

/// P(Z > z) for a standard normal Z (Abramowitz-Stegun 7.1.26 erfc, error < 1.5e-7).
pub fn normal_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// The z with P(Z > z) = p, by bisection on [`normal_tail`] (0 < p < 1/2).
pub fn normal_quantile_upper(p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if normal_tail(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// How many pairwise differences to cut from each end so the rest covers the shift with at
/// least `confidence`: the largest k with P(U <= k - 1) <= (1 - confidence) / 2. Zero when even
/// the whole range does not reach it (too few values).
fn cut(n1: usize, n2: usize, confidence: f64) -> usize {
    let tail = (1.0 - confidence) / 2.0;
    if n1 + n2 <= EXACT_UP_TO {
        let mut cdf = 0.0;
        let mut k = 0;
        for p in u_distribution(n1, n2) {
            cdf += p;
            if cdf > tail + 1e-12 {
                break;
            }
            k += 1;
        }
        return k;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let sd = (n1f * n2f * (n1f + n2f + 1.0) / 12.0).sqrt();
    let c = (n1f * n2f / 2.0 - 0.5 - normal_quantile_upper(tail) * sd).floor();
    (c + 1.0).max(0.0) as usize
}

/// Evenly spaced order statistics of `v`, at most `max` of them.
fn thinned(v: &[f64], max: usize) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.len() <= max {
        return s;
    }
    (0..max).map(|i| s[i * (s.len() - 1) / (max - 1)]).collect()
}

/// The Hodges-Lehmann estimate of the shift from `a` to `b` (the median of every b - a) and its
/// distribution-free interval at `confidence` (order statistics of those differences, as the
/// Mann-Whitney test inverts). None when either side is empty or the samples are too small for
/// any interval to reach `confidence` (with 3 and 3 values at most 90% is reachable: the whole
/// range of the 9 differences).
pub fn shift_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<(f64, f64, f64)> {
    let (a, b) = (thinned(a, PAIRWISE_SIDE_MAX), thinned(b, PAIRWISE_SIDE_MAX));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let k = cut(a.len(), b.len(), confidence);
    if k == 0 {
        return None;
    }
    let mut d: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    let m = d.len();
    let estimate = crate::stats::quantile_sorted(&d, 0.5);
    Some((estimate, d[k - 1], d[m - k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_null_distribution_is_the_counting_one() {
        // 3 and 3: C(6,3) = 20 orderings; U = 0 and U = 9 once each, U = 4 and 5 three times.
        let d = u_distribution(3, 3);
        let counts: Vec<f64> = d.iter().map(|p| (p * 20.0).round()).collect();
        assert_eq!(counts, [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0]);
        assert!((d.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // 2 and 4: 15 orderings.
        assert!((u_distribution(2, 4)[0] - 1.0 / 15.0).abs() < 1e-12);
    }

    #[test]
    fn exact_p_for_complete_separation_is_two_over_the_orderings() {
        assert!((mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap() - 0.1).abs() < 1e-12);
        assert!((mann_whitney_p(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap() - 0.1).abs() < 1e-12);
        // Interleaved: nothing to see.
        assert_eq!(
            mann_whitney_p(&[1.0, 3.0, 5.0], &[2.0, 4.0, 6.0]).unwrap(),
            0.7
        );
        // One value a side: every ordering is as likely as the other.
        assert_eq!(mann_whitney_p(&[1.0], &[2.0]).unwrap(), 1.0);
        // Ties: never below the smallest p the sizes allow (the normal approximation read
        // 0.047 for 3 against 3), and identical sides are no difference at all.
        let tied = mann_whitney_p(&[1.0, 1.0, 2.0], &[3.0, 4.0, 4.0]).unwrap();
        assert!((tied - 0.1).abs() < 1e-12, "{tied}");
        assert_eq!(
            mann_whitney_p(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]),
            Some(1.0)
        );
        assert_eq!(
            mann_whitney_p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]),
            Some(1.0)
        );
        // Every split of few values: no p below 2 / C(n, n1).
        for (a, b) in [
            (vec![1.0, 1.0, 1.0], vec![2.0, 2.0, 2.0]),
            (vec![1.0, 2.0, 2.0], vec![2.0, 3.0, 3.0]),
            (vec![1.0, 1.0, 1.0, 1.0], vec![1.0, 1.0, 2.0, 2.0]),
        ] {
            let p = mann_whitney_p(&a, &b).unwrap();
            let orderings = if a.len() == 3 { 20.0 } else { 70.0 };
            assert!(p >= 2.0 / orderings - 1e-12, "{a:?} {b:?}: {p}");
        }
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| 110.0 + (i % 7) as f64).collect();
        assert!(mann_whitney_p(&a, &b).unwrap() < 1e-6);
        assert!(mann_whitney_p(&a, &a).unwrap() > 0.9);
        assert_eq!(mann_whitney_p(&[1.0; 5], &[1.0; 5]), Some(1.0));
        assert!(mann_whitney_p(&[], &a).is_none());
        assert!((normal_tail(1.96) - 0.025).abs() < 1e-3);
        assert!((normal_quantile_upper(0.05) - 1.6449).abs() < 1e-3);
    }

    #[test]
    fn three_against_three_reach_ninety_percent_with_the_whole_range() {
        let (est, lo, hi) = shift_interval(&[1.0, 2.0, 3.0], &[11.0, 12.0, 14.0], 0.90).unwrap();
        assert_eq!((lo, hi), (8.0, 13.0));
        assert_eq!(est, 10.0);
        assert!(shift_interval(&[1.0, 2.0, 3.0], &[11.0, 12.0, 14.0], 0.95).is_none());
        assert!(shift_interval(&[1.0, 2.0], &[3.0, 4.0], 0.90).is_none());
        assert!(shift_interval(&[1.0], &[3.0, 4.0, 5.0, 6.0, 7.0, 8.0], 0.90).is_none());
    }

    #[test]
    fn the_interval_covers_the_true_shift_about_as_often_as_it_claims() {
        // 10 and 10 draws, true shift 5: the 90% interval should miss it about 10% of the time.
        let mut rng = crate::stats::SplitMix64(11);
        let mut draw = || (rng.next_u64() % 10_000) as f64 / 100.0;
        let trials = 400;
        let mut missed = 0;
        for _ in 0..trials {
            let a: Vec<f64> = (0..10).map(|_| draw()).collect();
            let b: Vec<f64> = (0..10).map(|_| draw() + 5.0).collect();
            let (_, lo, hi) = shift_interval(&a, &b, 0.90).unwrap();
            if !(lo <= 5.0 && 5.0 <= hi) {
                missed += 1;
            }
        }
        assert!((15..=65).contains(&missed), "{missed} of {trials} missed");
    }

    #[test]
    fn thousands_of_values_are_thinned_not_refused() {
        let a: Vec<f64> = (0..5000).map(|i| i as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 1000.0).collect();
        let (est, lo, hi) = shift_interval(&a, &b, 0.90).unwrap();
        assert!(
            (est - 1000.0).abs() < 10.0 && lo < est && est < hi,
            "{est} {lo} {hi}"
        );
    }
}
