//! The paper's job kinds and workloads (its Tables III and IV): four applications with the four
//! scaling shapes, their processor requests, and the mixes W1..W4. Speedup at any processor
//! count is interpolated from the measured points (1, 8, 16 and 32 processors), linearly in
//! log2(p), and held flat beyond 32: a model of the paper's numbers, not a fit to this machine.

/// A job kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// swim (SPECfp95): memory-bound stencil, super-linear speedup.
    Swim,
    /// bt (NAS class A): near-linear.
    Bt,
    /// hydro2d (SPECfp95): medium-low speedup.
    Hydro2d,
    /// apsi (SPECfp95): does not scale.
    Apsi,
}

impl Kind {
    /// All kinds, in the paper's order.
    pub const ALL: [Kind; 4] = [Kind::Swim, Kind::Bt, Kind::Hydro2d, Kind::Apsi];

    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Swim => "swim",
            Kind::Bt => "bt",
            Kind::Hydro2d => "hydro2d",
            Kind::Apsi => "apsi",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Processors requested on the paper's 64-CPU machine (32, 32, 32, 2).
    pub fn request(self) -> usize {
        if self == Kind::Apsi {
            2
        } else {
            32
        }
    }

    /// The request scaled to a machine of `cpus` processors. A parallel kind asks for at least
    /// two (where there are two): on a small machine half of it would be one processor, and a
    /// one-thread job leaves a policy nothing to decide.
    pub fn request_on(self, cpus: usize) -> usize {
        let scaled = (self.request() * cpus).div_ceil(64);
        let floor = if self.request() > 2 { 2 } else { 1 };
        scaled.max(floor).min(cpus.max(1))
    }

    /// Sequential execution time in seconds (Table III).
    pub fn sequential_s(self) -> f64 {
        match self {
            Kind::Swim => 212.0,
            Kind::Bt => 1066.0,
            Kind::Hydro2d => 223.0,
            Kind::Apsi => 99.0,
        }
    }

    /// Speedup at 8, 16 and 32 processors (Table III).
    pub fn measured(self) -> [f64; 3] {
        match self {
            Kind::Swim => [21.6, 36.5, 44.2],
            Kind::Bt => [6.1, 12.0, 20.0],
            Kind::Hydro2d => [4.6, 5.4, 6.3],
            Kind::Apsi => [0.9, 0.9, 0.9],
        }
    }

    /// Speedup on `p` processors: through (1, 1), (8, s8), (16, s16), (32, s32), linear in
    /// log2(p) between them, flat beyond 32.
    pub fn speedup(self, p: f64) -> f64 {
        if p <= 1.0 {
            return p.max(0.0);
        }
        let [s8, s16, s32] = self.measured();
        let pts = [(0.0, 1.0), (3.0, s8), (4.0, s16), (5.0, s32)];
        let x = p.log2().min(5.0);
        let i = pts.windows(2).position(|w| x <= w[1].0).unwrap_or(2);
        let ((x0, y0), (x1, y1)) = (pts[i], pts[i + 1]);
        y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }
}

/// A workload mix: the share of each kind (Table IV).
pub fn mix(name: &str) -> Option<[(Kind, f64); 4]> {
    use Kind::*;
    let m = match name {
        "W1" => [(Swim, 0.5), (Bt, 0.5), (Hydro2d, 0.0), (Apsi, 0.0)],
        "W2" => [(Swim, 0.0), (Bt, 0.5), (Hydro2d, 0.5), (Apsi, 0.0)],
        "W3" => [(Swim, 0.25), (Bt, 0.25), (Hydro2d, 0.25), (Apsi, 0.25)],
        "W4" => [(Swim, 0.0), (Bt, 1.0), (Hydro2d, 0.0), (Apsi, 0.0)],
        _ => return None,
    };
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_passes_through_table_iii() {
        for k in Kind::ALL {
            let [s8, s16, s32] = k.measured();
            assert!((k.speedup(8.0) - s8).abs() < 1e-9, "{k:?}");
            assert!((k.speedup(16.0) - s16).abs() < 1e-9);
            assert!((k.speedup(32.0) - s32).abs() < 1e-9);
            assert_eq!(k.speedup(64.0), s32);
            assert_eq!(k.speedup(1.0), 1.0);
        }
        // swim is super-linear, apsi slows down in parallel.
        assert!(Kind::Swim.speedup(8.0) > 8.0);
        assert!(Kind::Apsi.speedup(4.0) < 1.0);
        // Between points: monotone for bt.
        assert!(Kind::Bt.speedup(12.0) > 6.1 && Kind::Bt.speedup(12.0) < 12.0);
    }

    #[test]
    fn requests_and_mixes_follow_table_iv() {
        assert_eq!(Kind::Swim.request(), 32);
        assert_eq!(Kind::Apsi.request(), 2);
        assert_eq!(Kind::Bt.request_on(2), 2);
        assert_eq!(Kind::Apsi.request_on(2), 1);
        assert_eq!(Kind::Swim.request_on(1), 1);
        assert_eq!(Kind::Swim.request_on(64), 32);
        assert_eq!(Kind::Bt.request_on(16), 8);
        for w in ["W1", "W2", "W3", "W4"] {
            let m = mix(w).unwrap();
            assert!((m.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert!(mix("W5").is_none());
        assert_eq!(Kind::parse("hydro2d"), Some(Kind::Hydro2d));
    }
}
