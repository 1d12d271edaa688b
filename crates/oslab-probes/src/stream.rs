//! STREAM-style runs: three arrays, a team of pinned threads each first-touching and then working
//! on its own slice, best-of-N repetitions timed from the first thread's start to the last one's
//! end. Used by the bandwidth probes and the NUMA matrix.

use crate::buffer::{Buffer, Pages};
use crate::harness::check_interrupt;
use crate::kernels::{self, Kernel, Stores, UNIT};
use crate::probe::ProbeError;
use oslab_core::CpuSet;
use oslab_os::affinity::set_affinity;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Where each array's data starts in its mapping (destination, sources): 17 and 34 lines apart.
/// Three page-aligned arrays put every element of the three at the same page offset, and a load
/// whose address matches an earlier store's low 12 bits waits for it (4K aliasing): the triad
/// read 9% under likwid-bench's. STREAM staggers its arrays for the same reason.
const STAGGER: [usize; 3] = [0, 17 * 64, 34 * 64];

/// The three arrays of a STREAM run (destination and two sources), not yet touched.
pub struct Arrays {
    /// Destination.
    pub d: Buffer,
    /// First source.
    pub x: Buffer,
    /// Second source.
    pub y: Buffer,
    /// Bytes per array (a multiple of [`UNIT`]).
    pub bytes: usize,
}

impl Arrays {
    /// Maps three arrays of `bytes` each (rounded down to a multiple of [`UNIT`]).
    pub fn new(bytes: usize, pages: Pages) -> Result<Arrays, ProbeError> {
        let bytes = (bytes / UNIT).max(1) * UNIT;
        Ok(Arrays {
            d: Buffer::new(bytes + STAGGER[0], pages)?,
            x: Buffer::new(bytes + STAGGER[1], pages)?,
            y: Buffer::new(bytes + STAGGER[2], pages)?,
            bytes,
        })
    }

    /// The first byte of array `which` (0: destination, 1 and 2: the sources), its stagger in.
    fn start(&self, which: usize) -> *mut u8 {
        // SAFETY: each mapping holds its stagger and `bytes` more.
        unsafe { self.buffers()[which].ptr().add(STAGGER[which]) }
    }

    /// The three buffers.
    pub fn buffers(&self) -> [&Buffer; 3] {
        [&self.d, &self.x, &self.y]
    }

    /// Thread `t` of `threads`'s slice: (offset, length) in bytes, both multiples of [`UNIT`].
    pub fn slice(&self, t: usize, threads: usize) -> (usize, usize) {
        let units = self.bytes / UNIT;
        let (base, extra) = (units / threads, units % threads);
        let start = t * base + t.min(extra);
        let len = base + usize::from(t < extra);
        (start * UNIT, len * UNIT)
    }

    /// First touch of one slice: every page of it is written by the calling thread.
    fn fill(&self, (off, len): (usize, usize)) {
        for (which, v) in [0.0f64, 1.0, 2.0].into_iter().enumerate() {
            // SAFETY: the slice lies inside each array; f64 slots are 8-byte aligned.
            let s = unsafe {
                std::slice::from_raw_parts_mut(self.start(which).add(off) as *mut f64, len / 8)
            };
            s.fill(v);
        }
    }

    /// First touch of all three arrays by the calling thread.
    pub fn first_touch(&self) {
        self.fill((0, self.bytes));
    }

    /// One pass of `kernel` over one slice.
    fn pass(&self, kernel: Kernel, stores: Stores, (off, len): (usize, usize)) {
        if len == 0 {
            return;
        }
        // SAFETY: `team` checked kernels::available; the slice is inside all three buffers,
        // line-aligned (page-aligned mappings, staggered by whole lines); d and x are distinct mappings.
        unsafe {
            kernels::run(
                kernel,
                stores,
                self.start(0).add(off) as *mut f64,
                self.start(1).add(off) as *const f64,
                self.start(2).add(off) as *const f64,
                len,
            )
        }
    }
}

/// How many repetitions to time.
#[derive(Debug, Clone, Copy)]
pub struct Reps {
    /// At least this many (after one untimed warm-up pass).
    pub min: usize,
    /// At most this many.
    pub max: usize,
    /// Stop once this much time has passed and `min` are done.
    pub budget: Duration,
}

/// Seconds of each timed repetition of each job, first start to last end over the team.
pub type JobTimes = Vec<Vec<f64>>;

/// One thread's (start, end) of each repetition of each job.
type ThreadTimes = Vec<Vec<(Instant, Instant)>>;

/// Runs `jobs` in order with one thread per CPU of `cpus`: each thread pins itself, first-touches
/// its slice of `arrays`, then for every job runs one warm-up pass and timed repetitions, all
/// threads starting together behind a barrier. Threads keep the calling thread's scheduling class
/// (SCHED_FIFO when the session raised it): one run's figures under one set of conditions (at
/// SCHED_OTHER beside other work, one-thread triad read 0.33-0.39x STREAM at SCHED_FIFO).
pub fn team(
    cpus: &[usize],
    arrays: &Arrays,
    jobs: &[(Kernel, Stores)],
    reps: Reps,
) -> Result<JobTimes, ProbeError> {
    kernels::available()?;
    let n = cpus.len();
    let barrier = Barrier::new(n);
    let stop = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let per_thread: Vec<Result<ThreadTimes, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(t, &cpu)| {
                let (barrier, stop, failed) = (&barrier, &stop, &failed);
                s.spawn(move || {
                    // Every thread reaches every barrier, even after a failure, so none waits
                    // forever; a failure makes all of them stop at the next decision point.
                    let placed = set_affinity(0, &CpuSet::single(cpu))
                        .map_err(|e| format!("cannot pin a worker to cpu {cpu}: {e}"));
                    if placed.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    let slice = arrays.slice(t, n);
                    arrays.fill(slice);
                    let mut times = Vec::with_capacity(jobs.len());
                    for &(kernel, stores) in jobs {
                        let mut job = Vec::new();
                        barrier.wait();
                        arrays.pass(kernel, stores, slice); // warm-up
                        let started = Instant::now();
                        stop.store(false, Ordering::SeqCst);
                        loop {
                            barrier.wait();
                            if stop.load(Ordering::SeqCst) {
                                break;
                            }
                            let a = Instant::now();
                            arrays.pass(kernel, stores, slice);
                            job.push((a, Instant::now()));
                            if barrier.wait().is_leader() {
                                let done = job.len() >= reps.max
                                    || (job.len() >= reps.min && started.elapsed() >= reps.budget)
                                    || failed.load(Ordering::SeqCst)
                                    || check_interrupt().is_err();
                                stop.store(done, Ordering::SeqCst);
                            }
                        }
                        times.push(job);
                    }
                    placed.map(|_| times)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect()
    });
    check_interrupt()?;
    let per_thread = per_thread
        .into_iter()
        .collect::<Result<Vec<_>, String>>()
        .map_err(ProbeError::Failed)?;
    Ok((0..jobs.len())
        .map(|j| {
            let reps = per_thread[0][j].len();
            (0..reps)
                .map(|r| {
                    let start = per_thread.iter().map(|t| t[j][r].0).min();
                    let end = per_thread.iter().map(|t| t[j][r].1).max();
                    match (start, end) {
                        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
                        _ => f64::NAN,
                    }
                })
                .collect()
        })
        .collect())
}

/// GB/s per repetition, given the seconds of each and the bytes one repetition moves.
pub fn gbps(seconds: &[f64], bytes: f64) -> Vec<f64> {
    seconds
        .iter()
        .filter(|s| **s > 0.0)
        .map(|s| bytes / s / 1e9)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_array_in_units() {
        let a = Arrays::new(10 * UNIT + 5, Pages::Small).unwrap();
        assert_eq!(a.bytes, 10 * UNIT);
        let slices: Vec<_> = (0..3).map(|t| a.slice(t, 3)).collect();
        assert_eq!(
            slices,
            [(0, 4 * UNIT), (4 * UNIT, 3 * UNIT), (7 * UNIT, 3 * UNIT)]
        );
        assert_eq!(a.slice(4, 12), (4 * UNIT, UNIT));
        assert_eq!(a.slice(11, 12), (10 * UNIT, 0));
    }

    #[test]
    fn a_team_times_every_job_and_computes_the_kernel() {
        kernels::available().expect("the kernels need AVX");
        let a = Arrays::new(1 << 20, Pages::Default).unwrap();
        let cpus = oslab_os::affinity::get_affinity(0).unwrap();
        let cpus: Vec<usize> = cpus.iter().take(2).collect();
        let reps = Reps {
            min: 3,
            max: 4,
            budget: Duration::from_millis(1),
        };
        let times = team(
            &cpus,
            &a,
            &[
                (Kernel::Triad, Stores::Plain),
                (Kernel::Read, Stores::Plain),
            ],
            reps,
        )
        .unwrap();
        assert_eq!(times.len(), 2);
        assert!(times.iter().all(|t| (3..=4).contains(&t.len())));
        assert!(times.iter().flatten().all(|s| *s > 0.0 && *s < 1.0));
        // SAFETY: the arrays hold f64s written by the team.
        let d = unsafe { *(a.start(0) as *const f64).add(a.bytes / 8 - 1) };
        assert_eq!(d, 1.0 + 3.0 * 2.0);
    }
}
