//! Cache levels seen in a latency curve, and where a second curve leaves the first (TLB reach).
//! Pure arithmetic on (size, latency) points, so it is tested on synthetic curves.
//!
//! Levels are a piecewise-constant fit of log(latency) over the points in size order: the split
//! into segments that minimises the squared deviations from each segment's mean plus [`PENALTY`]
//! per segment (optimal partitioning by dynamic programming). A lone outlier inside a plateau
//! would need two extra segments (one for it, one for the plateau's rest) and costs less left in
//! place; a real level that differs by a factor of two or more pays for its segment even with a
//! single point. Segments that do not rise above the one before (an outlier followed by the
//! plateau it interrupted) are merged into it: latency never falls as the working set grows.

/// Cost of one more level, in squared natural-log units: a one-point level must differ from its
/// neighbour by more than a factor exp(sqrt(0.5)) ~ 2.0 to stand alone.
pub const PENALTY: f64 = 0.5;

/// A segment must be this factor above the one before to be a level of its own.
pub const MIN_RISE: f64 = 1.15;

/// One plateau of the curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// Smallest working set on the plateau (bytes).
    pub first_in: usize,
    /// Largest working set still on the plateau (bytes).
    pub last_in: usize,
    /// Smallest working set beyond it (bytes), `None` for the last plateau (memory).
    pub first_out: Option<usize>,
    /// Median latency of the points on the plateau (ns).
    pub latency: f64,
    /// Latencies of the points on the plateau.
    pub points: Vec<f64>,
}

/// Finds the plateaus of `curve` (sorted by size; non-positive latencies are ignored).
pub fn plateaus(curve: &[(usize, f64)]) -> Vec<Level> {
    let pts: Vec<(usize, f64)> = curve.iter().copied().filter(|p| p.1 > 0.0).collect();
    if pts.is_empty() {
        return Vec::new();
    }
    let logs: Vec<f64> = pts.iter().map(|p| p.1.ln()).collect();
    let mut bounds = optimal_partition(&logs, PENALTY);
    // Merge a segment that does not rise enough above the one before it, until none is left.
    loop {
        let medians: Vec<f64> = bounds
            .windows(2)
            .map(|w| segment_median(&pts[w[0]..w[1]]))
            .collect();
        match (1..medians.len()).find(|&k| medians[k] < medians[k - 1] * MIN_RISE) {
            Some(k) => {
                bounds.remove(k);
            }
            None => break,
        }
    }
    bounds
        .windows(2)
        .map(|w| {
            let seg = &pts[w[0]..w[1]];
            Level {
                first_in: seg[0].0,
                last_in: seg[seg.len() - 1].0,
                first_out: pts.get(w[1]).map(|p| p.0),
                latency: segment_median(seg),
                points: seg.iter().map(|p| p.1).collect(),
            }
        })
        .collect()
}

fn segment_median(seg: &[(usize, f64)]) -> f64 {
    let v: Vec<f64> = seg.iter().map(|p| p.1).collect();
    oslab_core::stats::median(&v).unwrap_or(f64::NAN)
}

/// Segment boundaries (0 = b0 < b1 < ... < bk = n) minimising the sum over segments of squared
/// deviations from the segment mean plus `penalty` per segment.
fn optimal_partition(x: &[f64], penalty: f64) -> Vec<usize> {
    let n = x.len();
    let mut sum = vec![0.0; n + 1];
    let mut sq = vec![0.0; n + 1];
    for (i, &v) in x.iter().enumerate() {
        sum[i + 1] = sum[i] + v;
        sq[i + 1] = sq[i] + v * v;
    }
    let cost = |i: usize, j: usize| {
        let (s, q, m) = (sum[j] - sum[i], sq[j] - sq[i], (j - i) as f64);
        (q - s * s / m).max(0.0)
    };
    let mut best = vec![0.0; n + 1];
    let mut from = vec![0usize; n + 1];
    for j in 1..=n {
        let (b, i) = (0..j)
            .map(|i| (best[i] + cost(i, j) + penalty, i))
            .fold((f64::INFINITY, 0), |a, c| if c.0 < a.0 { c } else { a });
        best[j] = b;
        from[j] = i;
    }
    let mut bounds = vec![n];
    let mut j = n;
    while j > 0 {
        j = from[j];
        bounds.push(j);
    }
    bounds.reverse();
    bounds
}

/// `levels` without the edges of claimed caches: a level whose every point lies from 0.75x up
/// to (not including) 1.5x a claimed cache's size (where the sweep puts its extra points), faster
/// than the level after it and slower than the one before, is that cache partly hit, not a level
/// of its own. On a 2 MiB L2, the 2 MiB point (10.9 ns, between L2's 4.5 and L3's 33 ns), or the
/// 1.5 and 2 MiB points together, were called L3, and the real L3 "level 4".
pub fn without_cache_edges(levels: Vec<Level>, claimed: &[u64]) -> Vec<Level> {
    let in_an_edge = |l: &Level| {
        claimed.iter().any(|&c| {
            let c = c as f64;
            l.first_in as f64 >= 0.75 * c && (l.last_in as f64) < 1.5 * c
        })
    };
    let edge = |k: usize| {
        let l = &levels[k];
        let between = k > 0
            && levels
                .get(k + 1)
                .is_some_and(|next| levels[k - 1].latency < l.latency && l.latency < next.latency);
        between && in_an_edge(l)
    };
    let edges: Vec<usize> = (0..levels.len()).filter(|&k| edge(k)).collect();
    levels
        .into_iter()
        .enumerate()
        .filter(|(k, _)| !edges.contains(k))
        .map(|(_, l)| l)
        .collect()
}

/// Where `upper` (e.g. the fully random chain) leaves `lower` (the chain that stays within each
/// TLB-reach chunk): the first size at which `upper` is more than `ratio` above `lower` and stays
/// so at the next size too (one noisy point is not a departure), with the size before it.
/// Sizes present in only one curve are ignored. `None` when the curves never part, or part at
/// the first size (nothing to say where the reach ends).
pub fn departure(
    lower: &[(usize, f64)],
    upper: &[(usize, f64)],
    ratio: f64,
) -> Option<(usize, usize)> {
    let pairs: Vec<(usize, bool)> = upper
        .iter()
        .filter_map(|&(size, u)| {
            let &(_, l) = lower.iter().find(|p| p.0 == size)?;
            (l > 0.0).then_some((size, u > ratio * l))
        })
        .collect();
    let first = (1..pairs.len()).find(|&i| pairs[i].1 && pairs.get(i + 1).is_none_or(|p| p.1))?;
    Some((pairs[first - 1].0, pairs[first].0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1024;

    /// Powers of two from 4 KiB with a latency per size class.
    fn curve(latency: impl Fn(usize) -> f64) -> Vec<(usize, f64)> {
        (12..=30)
            .map(|b| 1usize << b)
            .map(|s| (s, latency(s)))
            .collect()
    }

    /// A Zen 4 guest as seen: L1 to 32 KiB, L2 to 512 KiB, an effective L3 to 2 MiB, DRAM.
    fn zen4(s: usize) -> f64 {
        match s {
            s if s <= 32 * KIB => 1.2,
            s if s <= 512 * KIB => 4.2,
            s if s <= 2048 * KIB => 10.0,
            _ => 115.0 + (s as f64).log2(),
        }
    }

    fn ends(levels: &[Level]) -> Vec<(usize, Option<usize>)> {
        levels.iter().map(|l| (l.last_in, l.first_out)).collect()
    }

    #[test]
    fn finds_three_caches_and_memory() {
        let l = plateaus(&curve(zen4));
        assert_eq!(
            ends(&l),
            vec![
                (32 * KIB, Some(64 * KIB)),
                (512 * KIB, Some(1024 * KIB)),
                (2048 * KIB, Some(4096 * KIB)),
                (1 << 30, None)
            ],
            "{l:?}"
        );
        assert!((l[0].latency - 1.2).abs() < 1e-9 && l[0].first_in == 4 * KIB);
    }

    #[test]
    fn one_outlier_in_a_plateau_does_not_split_it() {
        // The point that split L1 in two on a Zen 4 guest: 24 KiB read 1.70 ns among 1.2 ns.
        let mut c = curve(zen4);
        c.push((24 * KIB, 1.70));
        c.sort_by_key(|p| p.0);
        let l = plateaus(&c);
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!(l[0].last_in, 32 * KIB);
        // An outlier far above its plateau (a preempted point) is merged back too.
        for (at, value) in [(128 * KIB, 30.0), (8 * KIB, 9.0), (256 << 20, 900.0)] {
            let mut c = curve(zen4);
            c.iter_mut().find(|p| p.0 == at).unwrap().1 = value;
            let l = plateaus(&c);
            assert_eq!(
                ends(&l),
                ends(&plateaus(&curve(zen4))),
                "outlier at {at}: {l:?}"
            );
        }
    }

    #[test]
    fn a_level_of_one_point_is_kept() {
        // An L3 share seen at a single size between L2 and memory.
        let c = curve(|s| match s {
            s if s <= 32 * KIB => 1.5,
            s if s <= 1024 * KIB => 5.0,
            s if s == 2048 * KIB => 20.0,
            _ => 100.0,
        });
        let l = plateaus(&c);
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!((l[2].first_in, l[2].last_in), (2048 * KIB, 2048 * KIB));
    }

    #[test]
    fn a_claimed_caches_edge_is_no_level_of_its_own() {
        // A 2 MiB L2: the 2 MiB point is partly L2, partly L3; L3 is the plateau after it.
        let c = curve(|s| match s {
            s if s <= 32 * KIB => 1.2,
            s if s <= 1024 * KIB => 4.5,
            s if s == 2048 * KIB => 10.9,
            s if s <= 8192 * KIB => 33.0,
            _ => 100.0,
        });
        let found = plateaus(&c);
        assert_eq!(found.len(), 5, "{found:?}");
        let kept = without_cache_edges(found.clone(), &[32 * KIB as u64, 2048 * KIB as u64]);
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert_eq!(kept[2].latency, 33.0);
        // A one-point level away from any claimed size is a level (a VM's small L3 share).
        assert_eq!(
            without_cache_edges(found, &[32 * KIB as u64, 1024 * KIB as u64]).len(),
            5
        );
        // Two points at the edge (0.75x and 1x the claim) are the edge too.
        let mut c = curve(|s| match s {
            s if s <= 32 * KIB => 1.2,
            s if s <= 1024 * KIB => 4.5,
            s if s == 2048 * KIB => 12.6,
            s if s <= 8192 * KIB => 33.0,
            _ => 100.0,
        });
        c.push((1536 * KIB, 7.4));
        c.sort_by_key(|p| p.0);
        let found = plateaus(&c);
        let kept = without_cache_edges(found.clone(), &[32 * KIB as u64, 2048 * KIB as u64]);
        assert_eq!(kept.len(), found.len() - 1, "{found:?}\n{kept:?}");
        assert_eq!(kept[2].latency, 33.0, "{kept:?}");
    }

    #[test]
    fn transition_points_join_a_plateau_instead_of_making_one() {
        // Geometric middles between plateaus (partly cached sizes) are not levels.
        let c = curve(|s| match s {
            s if s <= 32 * KIB => 1.2,
            s if s == 64 * KIB => 2.3,
            s if s <= 512 * KIB => 4.2,
            s if s == 1024 * KIB => 6.5,
            _ => 10.0,
        });
        assert_eq!(plateaus(&c).len(), 3, "{:?}", plateaus(&c));
    }

    #[test]
    fn flat_noisy_and_empty_curves() {
        let flat = curve(|s| 1.0 + 0.05 * ((s >> 12) % 3) as f64);
        let l = plateaus(&flat);
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(l[0].first_out, None);
        assert!(plateaus(&[]).is_empty());
        assert_eq!(plateaus(&[(4096, 2.0)]).len(), 1);
        // A falling curve is never several levels.
        assert_eq!(plateaus(&curve(|s| 1e6 / s as f64)).len(), 1);
    }

    #[test]
    fn departure_is_where_the_random_curve_leaves_for_good() {
        let chunk = curve(zen4);
        // Random order pays TLB misses from 512 KiB on, once (noise) at 16 KiB, and a noisy
        // chunked point at 16 MiB reads like the random one.
        let random: Vec<(usize, f64)> = chunk
            .iter()
            .map(|&(s, l)| {
                let k = if s == 16 << 20 {
                    1.0
                } else if s >= 512 * KIB || s == 16 * KIB {
                    1.5
                } else {
                    1.0
                };
                (s, l * k)
            })
            .collect();
        assert_eq!(
            departure(&chunk, &random, 1.2),
            Some((256 * KIB, 512 * KIB))
        );
        assert_eq!(departure(&chunk, &chunk, 1.2), None);
    }
}
