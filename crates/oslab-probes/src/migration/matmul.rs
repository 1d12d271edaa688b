//! The matrix multiply a migration experiment runs: naive or blocked, computed a step of rows at a
//! time so a run can move to another cpu half way and stop on Ctrl-C, with counters per half.

use crate::harness::check_interrupt;
use crate::probe::ProbeError;
use oslab_core::CpuSet;
use oslab_os::affinity::{current_cpu, set_affinity};
use oslab_os::counters::{Group, Reading, Spec, Target};
use oslab_os::perf;
use std::time::Instant;

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
pub enum MatmulKernel {
    /// i-j-k loops: B walked by column.
    Naive,
    /// Blocked i-j-k with square blocks of this many elements (edges handled when N is not a
    /// multiple).
    Blocked(usize),
}

impl MatmulKernel {
    /// Rows computed between two checks for Ctrl-C: one, or one block row.
    pub fn rows_per_step(self) -> usize {
        match self {
            MatmulKernel::Naive => 1,
            MatmulKernel::Blocked(bs) => bs.max(1),
        }
    }

    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            MatmulKernel::Naive => "naive",
            MatmulKernel::Blocked(_) => "blocked",
        }
    }
}

impl Matmul {
    /// Seconds one whole multiply with `kernel` takes here, from timing a sample of its work with
    /// the same access pattern: the first 64 cells of row 0 (naive: each walks a column of B), or
    /// one block of one block row (blocked). Bounded at any size: timing a whole row of a
    /// 16384 x 16384 naive multiply alone took 26 s.
    pub fn estimate_seconds(&mut self, kernel: MatmulKernel) -> f64 {
        let n = self.n;
        let t = Instant::now();
        let sampled = match kernel {
            MatmulKernel::Naive => {
                let cols = n.min(64);
                std::hint::black_box(self.cell_sum(0, 0..cols));
                (n * cols) as f64
            }
            MatmulKernel::Blocked(bs) => {
                let bs = bs.clamp(1, n);
                self.block(bs, 0..bs, 0, 0);
                (bs * bs * bs) as f64
            }
        };
        t.elapsed().as_secs_f64() * (n * n) as f64 * n as f64 / sampled
    }

    /// The sum over cells (i, j) for j in `cols` of row i of A times column j of B.
    fn cell_sum(&self, i: usize, cols: std::ops::Range<usize>) -> f64 {
        let n = self.n;
        cols.map(|j| {
            (0..n)
                .map(|k| self.a[i * n + k] * self.b[k * n + j])
                .sum::<f64>()
        })
        .sum()
    }

    /// Adds the products of block (rows, kk..kk+bs) of A and block (kk.., jj..) of B into C.
    fn block(&mut self, bs: usize, rows: std::ops::Range<usize>, kk: usize, jj: usize) {
        let n = self.n;
        let (a, b, c) = (&self.a, &self.b, &mut self.c);
        let (k_end, j_end) = ((kk + bs).min(n), (jj + bs).min(n));
        for i in rows {
            for k in kk..k_end {
                let aik = a[i * n + k];
                for j in jj..j_end {
                    c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
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

    /// Computes rows `rows` of C with `kernel` (rows are overwritten). Returns early, leaving
    /// the rows part done, when Ctrl-C was pressed: it is checked every output cell (naive) or
    /// block (blocked), so a row of a large matrix never delays stopping by seconds.
    pub fn rows(&mut self, kernel: MatmulKernel, rows: std::ops::Range<usize>) {
        let n = self.n;
        let stop = oslab_os::signals::interrupted;
        match kernel {
            MatmulKernel::Naive => {
                for i in rows {
                    for j in 0..n {
                        if stop() {
                            return;
                        }
                        self.c[i * n + j] = self.cell_sum(i, j..j + 1);
                    }
                }
            }
            MatmulKernel::Blocked(bs) => {
                let bs = bs.max(1);
                self.c[rows.start * n..rows.end * n].fill(0.0);
                for ii in rows.clone().step_by(bs) {
                    let i_end = (ii + bs).min(rows.end);
                    for kk in (0..n).step_by(bs) {
                        for jj in (0..n).step_by(bs) {
                            if stop() {
                                return;
                            }
                            self.block(bs, ii..i_end, kk, jj);
                        }
                    }
                }
            }
        }
    }

    /// The address of every page the three matrices fill (a page they share with other data at
    /// either end is left out: the allocator's, it need not follow).
    pub fn pages(&self) -> Vec<*mut u8> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
        let mut out = Vec::new();
        for v in [&self.a, &self.b, &self.c] {
            let start = (v.as_ptr() as usize).next_multiple_of(page);
            let end = (v.as_ptr() as usize + std::mem::size_of_val(v.as_slice())) / page * page;
            out.extend((start..end).step_by(page).map(|a| a as *mut u8));
        }
        out
    }

    /// Moves the matrices' pages to `node`, timed: the move and how many pages are there after.
    pub fn move_to(&self, node: usize) -> Result<PageMove, ProbeError> {
        let pages = self.pages();
        let t = Instant::now();
        let status = oslab_os::numa::move_to(&pages, node)
            .map_err(|e| ProbeError::Failed(format!("move_pages to node {node}: {e}")))?;
        Ok(PageMove {
            seconds: t.elapsed().as_secs_f64(),
            pages: pages.len(),
            on_node: status.iter().filter(|&&s| s == node as i32).count(),
        })
    }

    /// Bytes the three matrices of an `n` x `n` multiply take.
    pub fn bytes(n: usize) -> u64 {
        3 * (n * n) as u64 * std::mem::size_of::<f64>() as u64
    }
}

/// Whether the run stays on one CPU or moves half way, and where its pages are. Every run starts
/// with its pages on A's node (where a program that first touched them on A has them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// All rows on CPU A.
    Pinned,
    /// First half on A, second half on B, the pages left on A's node.
    Migrated,
    /// All rows on CPU B, the pages on A's node: the control the migrated run's second half is
    /// compared with (same cpu, same memory, caches warm), so its cost is the move's alone.
    Control,
    /// First half on A, then the thread and its pages move to B and B's node (move_pages, timed
    /// apart): only where A and B are on different nodes.
    MigratedFollow,
    /// All rows on CPU B with the pages on B's node: the control of the pages-follow variant.
    ControlLocal,
}

impl Variant {
    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Pinned => "pinned",
            Variant::Migrated => "migrated",
            Variant::Control => "pinned on B",
            Variant::MigratedFollow => "migrated, pages follow",
            Variant::ControlLocal => "pinned on B, pages on B",
        }
    }

    /// The cpus of its two halves, for a run from `a` to `b`.
    pub fn cpus(self, a: usize, b: usize) -> (usize, usize) {
        match self {
            Variant::Pinned => (a, a),
            Variant::Migrated | Variant::MigratedFollow => (a, b),
            Variant::Control | Variant::ControlLocal => (b, b),
        }
    }

    /// Where the pages are at the start (`a`'s node or `b`'s), and whether they move to `b`'s at
    /// the switch.
    fn pages(self) -> (bool, bool) {
        match self {
            Variant::ControlLocal => (true, false),
            Variant::MigratedFollow => (false, true),
            _ => (false, false),
        }
    }
}

/// A timed move of a run's pages.
#[derive(Debug, Clone, Copy)]
pub struct PageMove {
    /// How long move_pages took.
    pub seconds: f64,
    /// Pages asked to move.
    pub pages: usize,
    /// Pages on the target node after it.
    pub on_node: usize,
}

/// One phase of one run: where it ran, how long, its counters.
#[derive(Debug, Clone)]
pub struct Phase {
    /// The CPU it ran on (checked with sched_getcpu after the move).
    pub cpu: Option<usize>,
    /// Wall time in seconds.
    pub seconds: f64,
    /// CPU time of the thread in seconds: the wall time less any wait for the cpu (another task
    /// on it), so a busy cpu does not read as a cost of the move.
    pub cpu_seconds: f64,
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
    /// The pages' move between the halves, for the pages-follow variant.
    pub page_move: Option<PageMove>,
}

impl RunResult {
    /// Total seconds.
    pub fn seconds(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }
}

/// This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs one multiply of size `n` with `kernel`: its halves on the cpus of `variant`
/// ([`Variant::cpus`]), counting `specs` per phase. `nodes` are A's and B's NUMA nodes when they
/// differ: the pages are placed (untimed) where the variant starts them, and follow the thread
/// at the switch where it says so.
pub fn run_matmul(
    m: &mut Matmul,
    kernel: MatmulKernel,
    variant: Variant,
    (from, to): (usize, usize),
    nodes: Option<(usize, usize)>,
    specs: &[Spec],
) -> Result<RunResult, ProbeError> {
    let n = m.n;
    let (start_on_b, follow) = variant.pages();
    if let Some((node_a, node_b)) = nodes {
        m.move_to(if start_on_b { node_b } else { node_a })?;
    } else if start_on_b || follow {
        return Err(ProbeError::Failed(format!(
            "the {} variant needs A and B on different NUMA nodes",
            variant.name()
        )));
    }
    let pin = |c: usize| {
        set_affinity(0, &CpuSet::single(c))
            .map_err(|e| ProbeError::Failed(format!("cannot move to cpu {c}: {e}")))
    };
    let phase =
        |m: &mut Matmul, rows: std::ops::Range<usize>, cpu: usize| -> Result<Phase, ProbeError> {
            pin(cpu)?;
            let group = Group::open(specs, Target::ThisThread);
            group
                .start()
                .map_err(|e| ProbeError::Failed(format!("counters: {e}")))?;
            let t = Instant::now();
            let cpu0 = thread_cpu_seconds();
            // Row by row (a block row for the blocked kernel), so Ctrl-C stops even a huge multiply
            // within a row's time.
            let step = kernel.rows_per_step();
            for start in rows.clone().step_by(step) {
                m.rows(kernel, start..(start + step).min(rows.end));
                check_interrupt()?;
            }
            let seconds = t.elapsed().as_secs_f64();
            let cpu_seconds = thread_cpu_seconds() - cpu0;
            let counters = group
                .stop()
                .map_err(|e| ProbeError::Failed(format!("counters: {e}")))?;
            check_interrupt()?;
            Ok(Phase {
                cpu: current_cpu(),
                seconds,
                cpu_seconds,
                counters,
            })
        };
    let (first_cpu, second_cpu) = variant.cpus(from, to);
    let first = phase(m, 0..n / 2, first_cpu)?;
    // Count the move itself with the cpu-migrations software counter.
    let counter = perf::Counter::open(perf::TYPE_SOFTWARE, perf::SW_CPU_MIGRATIONS, true)
        .or_else(|_| perf::Counter::open(perf::TYPE_SOFTWARE, perf::SW_CPU_MIGRATIONS, false))
        .ok();
    if let Some(c) = &counter {
        c.start().ok();
    }
    pin(second_cpu)?;
    let moves = counter.and_then(|c| c.stop().ok());
    let page_move = match nodes {
        Some((_, node_b)) if follow => Some(m.move_to(node_b)?),
        _ => None,
    };
    let second = phase(m, n / 2..n, second_cpu)?;
    if second.cpu != Some(second_cpu) {
        return Err(ProbeError::Failed(format!(
            "the second half ran on cpu {:?}, not {second_cpu}: the move did not happen",
            second.cpu
        )));
    }
    Ok(RunResult {
        phases: [first, second],
        moves,
        page_move,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_and_naive_agree_also_when_blocks_do_not_divide_n() {
        for (n, bs) in [(37, 16), (64, 16), (33, 8), (5, 16)] {
            let mut naive = Matmul::new(n);
            naive.rows(MatmulKernel::Naive, 0..n);
            let mut blocked = Matmul::new(n);
            blocked.rows(MatmulKernel::Blocked(bs), 0..n / 2);
            blocked.rows(MatmulKernel::Blocked(bs), n / 2..n);
            for (x, y) in naive.c.iter().zip(&blocked.c) {
                assert!(
                    (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                    "n={n} bs={bs}: {x} vs {y}"
                );
            }
        }
    }

    #[test]
    #[ignore = "needs two cpus in the affinity mask"]
    fn a_migrated_run_really_moves() {
        let allowed = oslab_os::affinity::get_affinity(0).unwrap();
        let cpus: Vec<usize> = allowed.iter().collect();
        assert!(cpus.len() >= 2, "this test needs two cpus");
        let (a, b) = (cpus[0], cpus[1]);
        let _back = oslab_os::affinity::AffinityGuard::pin_current(&allowed).unwrap();
        let specs =
            vec![
                oslab_os::counters::parse("cpu-migrations", &oslab_os::counters::CpuId::read())
                    .unwrap(),
            ];
        let mut m = Matmul::new(64);
        let r = run_matmul(
            &mut m,
            MatmulKernel::Blocked(16),
            Variant::Migrated,
            (a, b),
            None,
            &specs,
        )
        .unwrap();
        assert_eq!(r.phases[0].cpu, Some(a));
        assert_eq!(r.phases[1].cpu, Some(b));
        assert!(r.moves.is_none_or(|n| n >= 1), "{:?}", r.moves);
        let r = run_matmul(
            &mut m,
            MatmulKernel::Naive,
            Variant::Pinned,
            (a, b),
            None,
            &specs,
        )
        .unwrap();
        assert_eq!(r.phases[1].cpu, Some(a));
        assert!(r.moves.is_none_or(|n| n == 0), "{:?}", r.moves);
    }
}
