//! Cache levels seen in a latency curve: plateaus of load latency over working-set size, each
//! ending where latency rises by more than [`RISE`] over the plateau. Pure arithmetic on
//! (size, latency) points, so it is tested on synthetic curves.

/// A latency more than this factor above the plateau's first point ends the plateau.
pub const RISE: f64 = 1.3;

/// One plateau of the curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// Largest working set still on the plateau (bytes).
    pub last_in: usize,
    /// Smallest working set beyond it (bytes), `None` for the last plateau (memory).
    pub first_out: Option<usize>,
    /// Median latency of the points on the plateau (ns).
    pub latency: f64,
    /// Latencies of the points on the plateau.
    pub points: Vec<f64>,
}

/// Finds the plateaus in `curve` (sorted by size). Points on a rise between two plateaus belong
/// to neither: a new plateau starts at the first point whose successor is within [`RISE`] of it.
pub fn plateaus(curve: &[(usize, f64)]) -> Vec<Level> {
    let mut levels = Vec::new();
    let mut i = 0;
    while i < curve.len() {
        // Skip the rise: a plateau starts where the next point stays close.
        while i + 1 < curve.len() && curve[i + 1].1 > curve[i].1 * RISE {
            i += 1;
        }
        let base = curve[i].1;
        let start = i;
        while i + 1 < curve.len() && curve[i + 1].1 <= base * RISE {
            i += 1;
        }
        let points: Vec<f64> = curve[start..=i].iter().map(|p| p.1).collect();
        levels.push(Level {
            last_in: curve[i].0,
            first_out: curve.get(i + 1).map(|p| p.0),
            latency: oslab_core::stats::median(&points).unwrap_or(base),
            points,
        });
        i += 1;
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_three_caches_and_memory() {
        let kib = |k: usize| k << 10;
        let curve = vec![
            (kib(4), 1.4),
            (kib(16), 1.4),
            (kib(32), 1.5),
            (kib(64), 4.7),
            (kib(256), 4.8),
            (kib(1024), 5.5),
            (kib(2048), 20.0),
            (kib(4096), 42.0),
            (kib(8192), 45.0),
            (kib(16384), 140.0),
            (kib(65536), 200.0),
            (kib(262144), 230.0),
        ];
        let l = plateaus(&curve);
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!((l[0].last_in, l[0].first_out), (kib(32), Some(kib(64))));
        assert_eq!((l[1].last_in, l[1].first_out), (kib(1024), Some(kib(2048))));
        assert_eq!(
            (l[2].last_in, l[2].first_out),
            (kib(8192), Some(kib(16384)))
        );
        assert_eq!(l[3].first_out, None);
        assert!((l[0].latency - 1.4).abs() < 1e-9);
    }

    #[test]
    fn a_flat_curve_is_one_level_and_empty_is_none() {
        let l = plateaus(&[(4096, 1.0), (8192, 1.1), (16384, 1.2)]);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].first_out, None);
        assert!(plateaus(&[]).is_empty());
    }
}
