//! The built-in malleable jobs: real parallel kernels with the paper's four scaling shapes. One
//! call of [`Work::iteration`] is one outer iteration, run by a team of `threads` threads (the
//! calling thread is member 0), each pinned to its CPU of the assignment when there is one.
//!
//! - swim-like: a 5-point Jacobi stencil on two grids of the per-core L2's size each, swept
//!   many times per iteration with a barrier between sweeps. Memory-bound; it can go super-linear
//!   where the split grid fits in the private caches it did not fit in alone.
//! - bt-like: independent floating-point recurrences per element: compute-bound, near-linear.
//! - hydro2d-like: 12% of the iteration serial (the others not started yet), the rest parallel:
//!   Amdahl's law, about the paper's 4.6 / 5.4 / 6.3 at 8 / 16 / 32.
//! - apsi-like: 95% serial while the other threads spin at the join (an OpenMP runtime with
//!   active waiting): no speedup, and CPU time that grows with every thread given to it.
//!
//! Each job also holds the rest of its memory, Table IV's footprint scaled to the L2 here
//! ([`Kind::footprint_on`]: bt 49 MiB on the Origin, 24 MiB beside a 2 MiB L2), which the team
//! reads and writes once an iteration: where its pages are then matters, as it did there.

use super::jobs::Kind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

/// Recurrence steps per element in the compute kernels.
const STEPS: usize = 12_000;
/// Elements of the compute kernels.
const ELEMENTS: usize = 4096;
/// Stencil sweeps per iteration.
const SWEEPS: usize = 200;
/// Serial fraction of the hydro2d-like kernel.
const HYDRO_SERIAL: f64 = 0.12;
/// Serial fraction of the apsi-like kernel.
const APSI_SERIAL: f64 = 0.95;

/// A job's data and kernel.
pub struct Work {
    kind: Kind,
    side: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    /// The rest of the job's memory (Table IV's footprint scaled to this L2, beyond the kernel's
    /// arrays), read and written once per iteration by the team: pages that are local or not.
    data: Vec<f64>,
}

/// A pointer the team shares; each member writes only its own part.
#[derive(Clone, Copy)]
struct Shared(*mut f64);
// SAFETY: members write disjoint rows / elements; reads of neighbours' rows happen only after a
// barrier that follows every write of the previous sweep.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// The pointer (a method, so closures capture the whole `Shared`, not its raw field).
    fn ptr(self) -> *mut f64 {
        self.0
    }
}

impl Work {
    /// A job of `kind`; `l2_bytes` sizes the stencil grid (one grid per L2's worth).
    pub fn new(kind: Kind, l2_bytes: u64) -> Work {
        let (side, len) = match kind {
            Kind::Swim => {
                let side = ((l2_bytes.max(64 << 10) / 8) as f64).sqrt() as usize;
                (side, side * side)
            }
            _ => (0, ELEMENTS),
        };
        // Zeroed memory is mapped lazily: the team's first iteration touches it first, so
        // first-touch placement follows the threads.
        let b = if kind == Kind::Swim { len } else { 0 };
        let rest = (kind.footprint_on(l2_bytes) / 8).saturating_sub((len + b) as u64);
        Work {
            kind,
            side,
            a: vec![0.0; len],
            b: vec![0.0; b],
            data: vec![0.0; rest as usize],
        }
    }

    /// One outer iteration with `threads` threads, member k pinned to `cpus()[k % len]` as it
    /// starts (unpinned when it is empty): read as each member starts, not once per iteration,
    /// so that a cpu the manager took away meanwhile is not taken again by a member started
    /// after (a job once ran on a cpu it had given up for 5.6 s).
    pub fn iteration(&mut self, threads: usize, cpus: Cpus) {
        let t = threads.max(1);
        match self.kind {
            Kind::Swim => self.stencil(t, cpus),
            Kind::Bt => compute(&mut self.a, 0.0, t, cpus, None),
            Kind::Hydro2d => compute(&mut self.a, HYDRO_SERIAL, t, cpus, None),
            Kind::Apsi => {
                let spin = AtomicBool::new(true);
                compute(&mut self.a, APSI_SERIAL, t, cpus, Some(&spin))
            }
        }
        sweep(&mut self.data, t, cpus);
    }

    fn stencil(&mut self, t: usize, cpus: Cpus) {
        let n = self.side;
        let (a, b) = (Shared(self.a.as_mut_ptr()), Shared(self.b.as_mut_ptr()));
        let barrier = Barrier::new(t);
        team(t, cpus, |k| {
            let (r0, r1) = split(n.saturating_sub(2), t, k);
            for sweep in 0..SWEEPS {
                let (src, dst) = if sweep % 2 == 0 { (a, b) } else { (b, a) };
                for r in (r0 + 1)..(r1 + 1) {
                    for c in 1..n - 1 {
                        // SAFETY: r and c are inside the grid; this member alone writes row r
                        // of dst in this sweep; the rows it reads were written before the
                        // last barrier.
                        unsafe {
                            let at = |p: Shared, r: usize, c: usize| *p.ptr().add(r * n + c);
                            let v = 0.25
                                * (at(src, r - 1, c)
                                    + at(src, r + 1, c)
                                    + at(src, r, c - 1)
                                    + at(src, r, c + 1))
                                + 1e-9;
                            *dst.ptr().add(r * n + c) = v;
                        }
                    }
                }
                barrier.wait();
            }
        });
    }
}

/// Seconds of one sequential iteration of every kind here (best of two after a warm-up), to size
/// jobs in iterations.
pub fn calibrate(l2_bytes: u64) -> std::collections::BTreeMap<&'static str, f64> {
    Kind::ALL
        .iter()
        .map(|&k| {
            let mut w = Work::new(k, l2_bytes);
            w.iteration(1, &anywhere);
            let best = (0..2)
                .map(|_| {
                    let t = std::time::Instant::now();
                    w.iteration(1, &anywhere);
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min);
            (k.name(), best)
        })
        .collect()
}

/// Runs `f(k)` for k in 0..t: member 0 on the calling thread, the others on scoped threads,
/// each pinned to its CPU first.
/// Where a job may run now: the manager's current assignment (empty: anywhere).
pub type Cpus<'a> = &'a (dyn Fn() -> Vec<usize> + Sync);

/// Anywhere: a job that is not managed (calibration, tests).
pub fn anywhere() -> Vec<usize> {
    Vec::new()
}

fn team(t: usize, cpus: Cpus, f: impl Fn(usize) + Sync) {
    let pin = |k: usize| {
        let cpus = cpus();
        if !cpus.is_empty() {
            let set = oslab_core::CpuSet::single(cpus[k % cpus.len()]);
            // A CPU outside our cpuset is refused: the member then runs where it may.
            let _ = oslab_os::affinity::set_affinity(0, &set);
        }
    };
    std::thread::scope(|s| {
        for k in 1..t {
            let f = &f;
            s.spawn(move || {
                pin(k);
                f(k)
            });
        }
        pin(0);
        f(0);
    });
}

/// Member k's share [start, end) of `len` items split among `t`.
fn split(len: usize, t: usize, k: usize) -> (usize, usize) {
    (len * k / t, len * (k + 1) / t)
}

/// Independent recurrences over `data`: the first `serial` fraction by member 0 alone (while the
/// others spin on `spin` when given, or before they start when not), the rest split.
fn compute(data: &mut [f64], serial: f64, t: usize, cpus: Cpus, spin: Option<&AtomicBool>) {
    let cut = (data.len() as f64 * serial) as usize;
    let (head, tail) = data.split_at_mut(cut);
    let p = Shared(tail.as_mut_ptr());
    let len = tail.len();
    if spin.is_none() {
        recur(head);
    }
    let h = Shared(head.as_mut_ptr());
    team(t, cpus, |k| {
        if let Some(flag) = spin {
            if k == 0 {
                // SAFETY: member 0 alone touches `head`, and only here.
                recur(unsafe { std::slice::from_raw_parts_mut(h.ptr(), cut) });
                flag.store(false, Ordering::Release);
            } else {
                while flag.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            }
        }
        let (s, e) = split(len, t, k);
        // SAFETY: members get disjoint ranges of `tail`.
        recur(unsafe { std::slice::from_raw_parts_mut(p.ptr().add(s), e - s) });
    });
}

/// Reads and writes one value per cache line of `data`, the team splitting it: every page of
/// the job's memory used once an iteration, by the member that first touched it.
fn sweep(data: &mut [f64], t: usize, cpus: Cpus) {
    if data.is_empty() {
        return;
    }
    let p = Shared(data.as_mut_ptr());
    let len = data.len();
    team(t, cpus, |k| {
        let (s, e) = split(len, t, k);
        for i in (s..e).step_by(8) {
            // SAFETY: members get disjoint ranges of `data`.
            unsafe { *p.ptr().add(i) += 1.0 };
        }
    });
}

/// A dependent multiply-add chain per element (the compiler cannot shorten it).
fn recur(xs: &mut [f64]) {
    let (m, c) = (std::hint::black_box(0.999_999), std::hint::black_box(1e-6));
    for x in xs.iter_mut() {
        let mut v = *x;
        for _ in 0..STEPS {
            v = v * m + c;
        }
        *x = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn seconds(kind: Kind, threads: usize) -> f64 {
        let mut w = Work::new(kind, 256 << 10);
        w.iteration(threads, &anywhere);
        let t = Instant::now();
        w.iteration(threads, &anywhere);
        t.elapsed().as_secs_f64()
    }

    #[test]
    fn every_kind_computes_and_changes_its_data() {
        for kind in Kind::ALL {
            let mut w = Work::new(kind, 64 << 10);
            w.iteration(2, &|| vec![0]);
            assert!(w.a.iter().any(|&v| v != 0.0), "{kind:?}");
            assert!(w.a.iter().all(|v| v.is_finite()));
        }
        assert_eq!(split(10, 3, 0), (0, 3));
        assert_eq!(split(10, 3, 2), (6, 10));
    }

    #[test]
    fn a_job_uses_its_scaled_footprint() {
        for kind in Kind::ALL {
            let l2 = 1 << 20;
            let w = Work::new(kind, l2);
            let bytes = 8 * (w.a.len() + w.b.len() + w.data.len()) as u64;
            let want = kind.footprint_on(l2);
            assert!(
                bytes >= want && bytes <= want.max(8 * (w.a.len() + w.b.len()) as u64) + 8,
                "{kind:?}: {bytes} for {want}"
            );
        }
    }

    #[test]
    fn iterations_take_a_plausible_time() {
        // Not a speed target: an iteration is meant to be milliseconds to tens of them, never
        // seconds or microseconds (a fast core does swim's in under 2 ms).
        for kind in Kind::ALL {
            let s = seconds(kind, 1);
            assert!((0.0002..3.0).contains(&s), "{kind:?}: {s} s");
        }
    }
}
