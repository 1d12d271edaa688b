//! The cost of moving a thread to another CPU (seed 000).
//!
//! Two views: the seed's experiment (a matrix multiply pinned on one CPU versus migrated half way
//! to another, with counters per phase; [`run_matmul`]) and a direct probe, `migration.cost`: warm
//! a working set on CPU A, then re-touch it on A, or move to B and re-touch it there. The
//! difference is what the move cost in lost cache state, per distance class (SMT sibling, shared
//! L2, shared L3, same package, other package / node).

use crate::harness::check_interrupt;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::affinity::{current_cpu, set_affinity, AffinityGuard};
use oslab_core::counters::{Group, Reading, Spec, Target};
use oslab_core::model::{Measurement, Unit};
use oslab_core::perf;
use oslab_core::{params, CpuSet, Topology};
use std::time::Instant;

/// The probe.
pub const PROBES: &[Probe] = &[Probe {
    id: "migration.cost",
    about: "time to re-touch a warm working set after moving to another cpu, minus re-touching it in place",
    unit: Unit::Ns,
    needs: &[crate::probe::Need::PeerCpu],
    run: cost,
}];

/// The distance class of two CPUs, in words.
pub fn distance_class(topology: &Topology, a: usize, b: usize) -> &'static str {
    let other_node = match (topology.cpu(a), topology.cpu(b)) {
        (Some(x), Some(y)) => x.node != y.node,
        _ => false,
    };
    match topology.distance_rank(a, b) {
        _ if other_node => "other NUMA node",
        0 => "same cpu",
        1 => "SMT sibling",
        2 => "shared L2",
        3 => "shared L3",
        4 => "same package",
        _ => "other package",
    }
}

/// One target CPU per distance class present among `allowed`, nearest class first.
pub fn targets(topology: &Topology, from: usize, allowed: &CpuSet) -> Vec<(usize, &'static str)> {
    let mut out: Vec<(u8, bool, usize, &'static str)> = Vec::new();
    for b in allowed.iter().filter(|&b| b != from) {
        let class = distance_class(topology, from, b);
        if !out.iter().any(|o| o.3 == class) {
            let node = class == "other NUMA node";
            out.push((topology.distance_rank(from, b), node, b, class));
        }
    }
    out.sort_by_key(|o| (o.1, o.0));
    out.into_iter().map(|o| (o.2, o.3)).collect()
}

/// Reads one word per cache line of `buf`.
#[inline(never)]
fn touch(buf: &[u64]) -> u64 {
    let mut s = 0u64;
    for i in (0..buf.len()).step_by(8) {
        // SAFETY: in bounds.
        s = s.wrapping_add(unsafe { std::ptr::read_volatile(buf.as_ptr().add(i)) });
    }
    s
}

fn cost(cx: &Context) -> Result<Vec<Measurement>, ProbeError> {
    let from = cx.cpu;
    let sizes: Vec<usize> = {
        let mut s: Vec<usize> = cx
            .cache_sizes()
            .iter()
            .map(|&c| (c as usize / 2).max(4096))
            .collect();
        s.push(16 << 10);
        s.sort_unstable();
        s.dedup();
        s.retain(|&x| x <= cx.memory_budget() / 4);
        s
    };
    let harness = cx.harness.scaled(0.25);
    let _restore = AffinityGuard::pin_current(&CpuSet::single(from))
        .map_err(|e| ProbeError::Failed(e.to_string()))?;
    let mut out = Vec::new();
    for (to, class) in targets(cx.topology, from, &cx.allowed) {
        for &size in &sizes {
            let buf: Vec<u64> = (0..size / 8).map(|i| i as u64).collect();
            let mut moved_ok = true;
            let [local, remote, moving] = harness.each::<3>(&mut |clock, ticks| {
                let pin = |c: usize| {
                    set_affinity(0, &CpuSet::single(c))
                        .map_err(|e| ProbeError::Failed(format!("cannot move to cpu {c}: {e}")))
                };
                // Warm on A, re-touch on A.
                pin(from)?;
                std::hint::black_box(touch(&buf));
                let a = clock.start();
                std::hint::black_box(touch(&buf));
                ticks[0] = clock.stop().wrapping_sub(a);
                // Warm on A again, move to B (timed on its own), re-touch on B.
                std::hint::black_box(touch(&buf));
                let m = clock.start();
                pin(to)?;
                ticks[2] = clock.stop().wrapping_sub(m);
                let ok = current_cpu() == Some(to);
                moved_ok &= ok;
                let b = clock.start();
                std::hint::black_box(touch(&buf));
                ticks[1] = clock.stop().wrapping_sub(b);
                Ok(ok)
            })?;
            check_interrupt()?;
            set_affinity(0, &CpuSet::single(from)).ok();
            let base = params! {"from" => from, "to" => to, "class" => class, "size" => size};
            let extra = local.median().unwrap_or(0.0);
            let diff = remote.map(|r| r - extra);
            let mut m = cx.measurement("migration.cost", base.clone(), "per_migration", &diff);
            m.note = Some(format!(
                "re-touch after the move minus re-touch in place ({:.0} ns); the move itself is `move`{}",
                extra,
                if moved_ok { "" } else { "; some moves did not land on the target (dropped)" }
            ));
            out.push(m);
            out.push(cx.measurement("migration.cost", base.clone(), "retouch_local", &local));
            out.push(cx.measurement("migration.cost", base, "move", &moving));
        }
    }
    Ok(out)
}

/// A square matrix multiply C = A x B of doubles, row-major.
pub struct Matmul {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    /// The result.
    pub c: Vec<f64>,
}

/// How C is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// i-j-k loops: B walked by column.
    Naive,
    /// Blocked i-j-k with square blocks of this many elements (edges handled when N is not a
    /// multiple).
    Blocked(usize),
}

impl Kernel {
    /// Rows computed between two checks for Ctrl-C: one, or one block row.
    pub fn rows_per_step(self) -> usize {
        match self {
            Kernel::Naive => 1,
            Kernel::Blocked(bs) => bs.max(1),
        }
    }

    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Naive => "naive",
            Kernel::Blocked(_) => "blocked",
        }
    }
}

impl Matmul {
    /// Seconds one whole multiply with `kernel` takes here, from timing one step of rows.
    pub fn estimate_seconds(&mut self, kernel: Kernel) -> f64 {
        let step = kernel.rows_per_step().min(self.n);
        let t = Instant::now();
        self.rows(kernel, 0..step);
        t.elapsed().as_secs_f64() * self.n as f64 / step as f64
    }

    /// Deterministic inputs of size `n` x `n`.
    pub fn new(n: usize) -> Matmul {
        let a = (0..n * n).map(|i| ((i % 7) as f64) * 0.5 + 1.0).collect();
        let b = (0..n * n).map(|i| ((i % 5) as f64) * 0.25 - 0.5).collect();
        Matmul {
            n,
            a,
            b,
            c: vec![0.0; n * n],
        }
    }

    /// Computes rows `rows` of C with `kernel` (rows are overwritten).
    pub fn rows(&mut self, kernel: Kernel, rows: std::ops::Range<usize>) {
        let n = self.n;
        let (a, b, c) = (&self.a, &self.b, &mut self.c);
        match kernel {
            Kernel::Naive => {
                for i in rows {
                    for j in 0..n {
                        let mut s = 0.0;
                        for k in 0..n {
                            s += a[i * n + k] * b[k * n + j];
                        }
                        c[i * n + j] = s;
                    }
                }
            }
            Kernel::Blocked(bs) => {
                let bs = bs.max(1);
                c[rows.start * n..rows.end * n].fill(0.0);
                for ii in rows.clone().step_by(bs) {
                    let i_end = (ii + bs).min(rows.end);
                    for kk in (0..n).step_by(bs) {
                        let k_end = (kk + bs).min(n);
                        for jj in (0..n).step_by(bs) {
                            let j_end = (jj + bs).min(n);
                            for i in ii..i_end {
                                for k in kk..k_end {
                                    let aik = a[i * n + k];
                                    for j in jj..j_end {
                                        c[i * n + j] += aik * b[k * n + j];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether the run stays on one CPU or moves half way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// All rows on CPU A.
    Pinned,
    /// First half on A, second half on B.
    Migrated,
}

impl Variant {
    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Pinned => "pinned",
            Variant::Migrated => "migrated",
        }
    }
}

/// One phase of one run: where it ran, how long, its counters.
#[derive(Debug, Clone)]
pub struct Phase {
    /// The CPU it ran on (checked with sched_getcpu after the move).
    pub cpu: Option<usize>,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Counter readings.
    pub counters: Vec<Reading>,
}

/// One run: its phases (two; the pinned variant's second phase also runs on A).
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The two halves.
    pub phases: [Phase; 2],
    /// CPU migrations the kernel counted between the halves (the move itself), when countable.
    pub moves: Option<u64>,
}

impl RunResult {
    /// Total seconds.
    pub fn seconds(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }
}

/// Runs one multiply of size `n` with `kernel`: the first half of the rows on `from`, the second
/// on `from` (pinned) or `to` (migrated), counting `specs` per phase.
pub fn run_matmul(
    m: &mut Matmul,
    kernel: Kernel,
    variant: Variant,
    from: usize,
    to: usize,
    specs: &[Spec],
) -> Result<RunResult, ProbeError> {
    let n = m.n;
    let pin = |c: usize| {
        set_affinity(0, &CpuSet::single(c))
            .map_err(|e| ProbeError::Failed(format!("cannot move to cpu {c}: {e}")))
    };
    let mut phase = |rows: std::ops::Range<usize>, cpu: usize| -> Result<Phase, ProbeError> {
        pin(cpu)?;
        let group = Group::open(specs, Target::ThisThread);
        group
            .start()
            .map_err(|e| ProbeError::Failed(format!("counters: {e}")))?;
        let t = Instant::now();
        // Row by row (a block row for the blocked kernel), so Ctrl-C stops even a huge multiply
        // within a row's time.
        let step = kernel.rows_per_step();
        for start in rows.clone().step_by(step) {
            m.rows(kernel, start..(start + step).min(rows.end));
            check_interrupt()?;
        }
        let seconds = t.elapsed().as_secs_f64();
        let counters = group
            .stop()
            .map_err(|e| ProbeError::Failed(format!("counters: {e}")))?;
        check_interrupt()?;
        Ok(Phase {
            cpu: current_cpu(),
            seconds,
            counters,
        })
    };
    let first = phase(0..n / 2, from)?;
    let second_cpu = if variant == Variant::Migrated {
        to
    } else {
        from
    };
    // Count the move itself with the cpu-migrations software counter.
    let counter = perf::Counter::open(perf::TYPE_SOFTWARE, perf::SW_CPU_MIGRATIONS, true)
        .or_else(|_| perf::Counter::open(perf::TYPE_SOFTWARE, perf::SW_CPU_MIGRATIONS, false))
        .ok();
    if let Some(c) = &counter {
        c.start().ok();
    }
    pin(second_cpu)?;
    let moves = counter.and_then(|c| c.stop().ok());
    let second = phase(n / 2..n, second_cpu)?;
    if second.cpu != Some(second_cpu) {
        return Err(ProbeError::Failed(format!(
            "the second half ran on cpu {:?}, not {second_cpu}: the move did not happen",
            second.cpu
        )));
    }
    Ok(RunResult {
        phases: [first, second],
        moves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_and_naive_agree_also_when_blocks_do_not_divide_n() {
        for (n, bs) in [(37, 16), (64, 16), (33, 8), (5, 16)] {
            let mut naive = Matmul::new(n);
            naive.rows(Kernel::Naive, 0..n);
            let mut blocked = Matmul::new(n);
            blocked.rows(Kernel::Blocked(bs), 0..n / 2);
            blocked.rows(Kernel::Blocked(bs), n / 2..n);
            for (x, y) in naive.c.iter().zip(&blocked.c) {
                assert!(
                    (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                    "n={n} bs={bs}: {x} vs {y}"
                );
            }
        }
    }

    #[test]
    fn a_migrated_run_really_moves() {
        let allowed = oslab_core::affinity::get_affinity(0).unwrap();
        let cpus: Vec<usize> = allowed.iter().collect();
        if cpus.len() < 2 {
            return;
        }
        let (a, b) = (cpus[0], cpus[1]);
        let _back = AffinityGuard::pin_current(&allowed).unwrap();
        let specs = vec![oslab_core::counters::parse(
            "cpu-migrations",
            &oslab_core::counters::CpuId::read(),
        )
        .unwrap()];
        let mut m = Matmul::new(64);
        let r = run_matmul(&mut m, Kernel::Blocked(16), Variant::Migrated, a, b, &specs).unwrap();
        assert_eq!(r.phases[0].cpu, Some(a));
        assert_eq!(r.phases[1].cpu, Some(b));
        assert!(r.moves.is_none_or(|n| n >= 1), "{:?}", r.moves);
        let r = run_matmul(&mut m, Kernel::Naive, Variant::Pinned, a, b, &specs).unwrap();
        assert_eq!(r.phases[1].cpu, Some(a));
        assert!(r.moves.is_none_or(|n| n == 0), "{:?}", r.moves);
    }
}
