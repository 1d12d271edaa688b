//! Processor-allocation policies for malleable parallel jobs, behind one trait that the
//! live CPU manager and the simulator both drive.
//!
//! - `native`: every job gets what it requested; the OS time-shares the machine (oversubscribed).
//! - `equip` (Equipartition): min(request, P / running jobs), what small jobs leave over shared
//!   again among the others, re-computed on every arrival and exit.
//! - `pdpa` (Performance-Driven Processor Allocation, Corbalán, Martorell and Labarta): each job
//!   gets the largest allocation that keeps its efficiency (speedup / processors) at or above a
//!   target. The rules implemented, per job, each time a new speedup measurement arrives:
//!   * `NoRef` (just started, at its equipartition share): efficiency >= target -> `Inc` (grow by
//!     `step` if CPUs are free, else `Stable`); below target -> `Dec` (shrink by `step`).
//!   * `Inc`: if efficiency is still >= target and the speedup grew since the last allocation,
//!     grow again by `step` (or `Stable` when nothing is free or the request is reached);
//!     otherwise go back to the previous allocation and become `Stable`.
//!   * `Dec`: shrink by `step` while efficiency < target (never below 1 processor); once it is
//!     reached, `Stable`.
//!   * `Stable`: keep the allocation; if efficiency falls below target - 0.1 (the application
//!     changed phase), `Dec` again.
//!
//! PDPA's multiprogramming level is dynamic: below the base level (default 4) a queued job always
//! starts; beyond it, only while processors are free and either every running job is `Stable`
//! (allocations have settled and still leave processors idle) or some job is shrinking (`Dec`: it
//! performs badly and gives processors back). As jobs finish the level falls back towards the
//! base. Native and equipartition keep the base level fixed.

use oslab_core::reason::BadValue;
use std::collections::BTreeMap;

/// Page migration mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PageMigration {
    /// First touch only.
    Off,
    /// The kernel's automatic NUMA balancing, switched on for the run.
    Kernel,
    /// The manager moves a job's pages to the nodes of its new CPUs on each reallocation.
    Manual,
}

impl PageMigration {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            PageMigration::Off => "off",
            PageMigration::Kernel => "kernel",
            PageMigration::Manual => "manual",
        }
    }
}

/// What a policy sees of a running job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView {
    /// Job id (stable over its life).
    pub id: u64,
    /// Processors it asked for.
    pub request: usize,
    /// Processors it has now.
    pub alloc: usize,
    /// Speedup measured at `alloc` since the last decision (SelfAnalyzer: T_base / T_p scaled),
    /// when a new measurement arrived.
    pub speedup: Option<f64>,
}

/// A processor-allocation policy.
pub trait Policy {
    /// Its name in parameters.
    fn name(&self) -> &'static str;
    /// The allocation of every running job (same order as `jobs`) on `cpus` processors.
    fn allocate(&mut self, jobs: &[JobView], cpus: usize) -> Vec<usize>;
    /// Whether a queued job may start now; `mpl` is the base multiprogramming level.
    fn admit(&self, running: &[JobView], cpus: usize, mpl: usize) -> bool;
    /// A job finished.
    fn remove(&mut self, _id: u64) {}
    /// Whether the policy pins jobs to CPUs (native leaves placement to the OS).
    fn pins(&self) -> bool {
        true
    }
    /// Whether jobs must measure their own speedup for it (PDPA's self-analysis).
    fn needs_speedup(&self) -> bool {
        false
    }
}

/// The allocation policies, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PolicyKind {
    /// Every job gets its request; the OS places threads.
    Native,
    /// Equipartition: processors split evenly among running jobs.
    Equip,
    /// PDPA: allocations follow each job's measured efficiency.
    Pdpa,
}

impl PolicyKind {
    /// The policy, for `cpus` processors; PDPA aims at efficiency `target` and moves by `step`
    /// processors (default 4 per 64 processors, at least 1).
    pub fn build(self, target: f64, step: Option<usize>, cpus: usize) -> Box<dyn Policy> {
        match self {
            PolicyKind::Native => Box::new(Native),
            PolicyKind::Equip => Box::new(Equip),
            PolicyKind::Pdpa => Box::new(Pdpa::new(target, step.unwrap_or((cpus / 16).max(1)))),
        }
    }
}

/// How the CPU manager allocates: policy, its options and page migration (one set for live
/// runs and simulations).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PolicyOptions {
    /// Allocation policy.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = PolicyKind::Equip))]
    pub policy: PolicyKind,
    /// Page migration.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = PageMigration::Off))]
    pub migration: PageMigration,
    /// Base multiprogramming level (PDPA raises it while processors stay free).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1048576)))]
    pub mpl: usize,
    /// PDPA's target efficiency, in (0, 1].
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.7, value_parser = parse_efficiency))]
    pub target: f64,
    /// PDPA's step in processors (default: 4 per 64 processors, at least 1).
    #[cfg_attr(feature = "clap", arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536)))]
    pub step: Option<usize>,
}

impl PolicyOptions {
    /// The policy, for `cpus` processors.
    pub fn build(&self, cpus: usize) -> Box<dyn Policy> {
        self.policy.build(self.target, self.step, cpus)
    }
}

/// An efficiency in (0, 1].
pub fn parse_efficiency(s: &str) -> Result<f64, BadValue> {
    s.parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && *v <= 1.0)
        .ok_or_else(|| BadValue(format!("{s:?}: an efficiency in (0, 1]")))
}

/// Native: everyone gets its request.
#[derive(Debug, Default)]
pub struct Native;

impl Policy for Native {
    fn name(&self) -> &'static str {
        "native"
    }
    fn allocate(&mut self, jobs: &[JobView], _cpus: usize) -> Vec<usize> {
        jobs.iter().map(|j| j.request.max(1)).collect()
    }
    fn admit(&self, running: &[JobView], _cpus: usize, mpl: usize) -> bool {
        running.len() < mpl
    }
    fn pins(&self) -> bool {
        false
    }
}

/// Equipartition with leftovers redistributed (water filling), earlier jobs first for the
/// remainder of the integer division.
pub fn equipartition(requests: &[usize], cpus: usize) -> Vec<usize> {
    let n = requests.len();
    let mut alloc = vec![0usize; n];
    if n == 0 {
        return alloc;
    }
    let mut left = cpus;
    let mut open: Vec<usize> = (0..n).collect();
    loop {
        if open.is_empty() || left == 0 {
            break;
        }
        let share = left / open.len();
        let extra = left % open.len();
        // Jobs that want less than the share are satisfied; the rest is shared again.
        let small: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&i| requests[i].max(1) - alloc[i] <= share)
            .collect();
        if small.is_empty() {
            for (k, &i) in open.iter().enumerate() {
                alloc[i] += share + usize::from(k < extra);
            }
            break;
        }
        for &i in &small {
            left -= requests[i].max(1) - alloc[i];
            alloc[i] = requests[i].max(1);
        }
        open.retain(|i| !small.contains(i));
    }
    // More jobs than processors: everyone still runs on at least one (time-shared).
    alloc.iter().map(|&a| a.max(1)).collect()
}

/// Equipartition.
#[derive(Debug, Default)]
pub struct Equip;

impl Policy for Equip {
    fn name(&self) -> &'static str {
        "equip"
    }
    fn allocate(&mut self, jobs: &[JobView], cpus: usize) -> Vec<usize> {
        equipartition(&jobs.iter().map(|j| j.request).collect::<Vec<_>>(), cpus)
    }
    fn admit(&self, running: &[JobView], _cpus: usize, mpl: usize) -> bool {
        running.len() < mpl
    }
}

/// PDPA's per-job state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No measurement yet.
    NoRef,
    /// Growing.
    Inc,
    /// Shrinking.
    Dec,
    /// Settled.
    Stable,
}

#[derive(Debug, Clone)]
struct Tracked {
    state: State,
    alloc: usize,
    previous: Option<(usize, f64)>,
}

/// Performance-Driven Processor Allocation.
#[derive(Debug, Clone)]
pub struct Pdpa {
    /// Target efficiency (speedup / processors), default 0.7.
    pub target: f64,
    /// Processors added or removed per step.
    pub step: usize,
    jobs: BTreeMap<u64, Tracked>,
}

impl Pdpa {
    /// PDPA with a target efficiency and a step.
    pub fn new(target: f64, step: usize) -> Pdpa {
        Pdpa {
            target,
            step: step.max(1),
            jobs: BTreeMap::new(),
        }
    }

    /// A job's state (for timelines and tests).
    pub fn state(&self, id: u64) -> Option<State> {
        self.jobs.get(&id).map(|t| t.state)
    }

    /// Space sharing: takes processors from the jobs holding the most (never below one) until
    /// `jobs` hold no more than `cpus` together. Newcomers each start with at least one, which
    /// the settled jobs may not have left free (two arrivals, one free cpu). A job that was
    /// growing loses its reference: its speedup was read on more processors than it keeps.
    fn fit(&mut self, jobs: &[JobView], cpus: usize) {
        let mut total: usize = jobs.iter().map(|j| self.jobs[&j.id].alloc).sum();
        while total > cpus {
            let largest = jobs
                .iter()
                .map(|j| j.id)
                .filter(|id| self.jobs[id].alloc > 1)
                .max_by_key(|id| (self.jobs[id].alloc, std::cmp::Reverse(*id)));
            // More jobs than processors: each keeps one, time-shared.
            let Some(id) = largest else { break };
            let t = self.jobs.get_mut(&id).expect("tracked");
            t.alloc -= 1;
            if t.state == State::Inc {
                t.state = State::Stable;
                t.previous = None;
            }
            total -= 1;
        }
    }
}

impl Policy for Pdpa {
    fn name(&self) -> &'static str {
        "pdpa"
    }

    fn needs_speedup(&self) -> bool {
        true
    }

    fn allocate(&mut self, jobs: &[JobView], cpus: usize) -> Vec<usize> {
        // Newcomers start at their equipartition share of what the settled jobs leave.
        let known: usize = jobs
            .iter()
            .filter_map(|j| self.jobs.get(&j.id).map(|t| t.alloc))
            .sum();
        let newcomers: Vec<&JobView> = jobs
            .iter()
            .filter(|j| !self.jobs.contains_key(&j.id))
            .collect();
        let shares = equipartition(
            &newcomers.iter().map(|j| j.request).collect::<Vec<_>>(),
            cpus.saturating_sub(known).max(newcomers.len()),
        );
        for (j, s) in newcomers.iter().zip(shares) {
            self.jobs.insert(
                j.id,
                Tracked {
                    state: State::NoRef,
                    alloc: s,
                    previous: None,
                },
            );
        }
        self.fit(jobs, cpus);
        let mut used: usize = jobs.iter().map(|j| self.jobs[&j.id].alloc).sum();
        for j in jobs {
            let Some(speedup) = j.speedup else { continue };
            let (target, step) = (self.target, self.step);
            let t = self.jobs.get_mut(&j.id).expect("tracked above");
            let p = t.alloc.max(1);
            let eff = speedup / p as f64;
            let free = cpus.saturating_sub(used);
            let grow = |t: &mut Tracked, used: &mut usize| {
                let by = step.min(free).min(j.request.saturating_sub(t.alloc));
                if by == 0 {
                    t.state = State::Stable;
                } else {
                    t.previous = Some((t.alloc, speedup));
                    t.alloc += by;
                    *used += by;
                    t.state = State::Inc;
                }
            };
            match t.state {
                State::NoRef if eff >= target => grow(t, &mut used),
                State::NoRef | State::Dec if eff < target => {
                    let by = step.min(t.alloc - 1);
                    t.previous = Some((t.alloc, speedup));
                    t.alloc -= by;
                    used -= by;
                    t.state = if t.alloc == 1 {
                        State::Stable
                    } else {
                        State::Dec
                    };
                }
                State::Dec => t.state = State::Stable,
                State::Inc => {
                    let improved = t.previous.is_none_or(|(_, s)| speedup > s);
                    if eff >= target && improved {
                        grow(t, &mut used);
                    } else {
                        if let Some((back, _)) = t.previous {
                            used -= t.alloc - back.min(t.alloc);
                            t.alloc = back.min(t.alloc);
                        }
                        t.state = State::Stable;
                    }
                }
                State::Stable if eff < target - 0.1 => t.state = State::Dec,
                _ => {}
            }
        }
        jobs.iter().map(|j| self.jobs[&j.id].alloc.max(1)).collect()
    }

    fn admit(&self, running: &[JobView], cpus: usize, mpl: usize) -> bool {
        if running.len() < mpl {
            return true;
        }
        // A job admitted since the last allocation holds at least one cpu already.
        let used: usize = running
            .iter()
            .map(|j| self.jobs.get(&j.id).map_or(1, |t| t.alloc))
            .sum();
        let states: Vec<State> = running.iter().filter_map(|j| self.state(j.id)).collect();
        let settled = states.iter().all(|s| *s == State::Stable);
        let shrinking = states.contains(&State::Dec);
        used < cpus && (settled || shrinking)
    }

    fn remove(&mut self, id: u64) {
        self.jobs.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, request: usize, alloc: usize, speedup: Option<f64>) -> JobView {
        JobView {
            id,
            request,
            alloc,
            speedup,
        }
    }

    #[test]
    fn the_papers_example_64_cpus_for_32_32_32_2() {
        // Equipartition: the small job gets its 2, the 62 left are shared 21/21/20.
        assert_eq!(equipartition(&[32, 32, 32, 2], 64), [21, 21, 20, 2]);
        let jobs: Vec<JobView> = [32, 32, 32, 2]
            .iter()
            .enumerate()
            .map(|(i, &r)| job(i as u64, r, 0, None))
            .collect();
        assert_eq!(Native.allocate(&jobs, 64), [32, 32, 32, 2]);
        assert_eq!(Equip.allocate(&jobs, 64), [21, 21, 20, 2]);
        // Alone, a job gets its request, never more.
        assert_eq!(equipartition(&[32], 64), [32]);
        // More jobs than cpus: each still gets one (time-shared).
        assert_eq!(equipartition(&[4, 4, 4], 2), [1, 1, 1]);
        assert_eq!(equipartition(&[], 8), Vec::<usize>::new());
    }

    #[test]
    fn pdpa_grows_while_efficient_and_steps_back_when_growth_stops_paying() {
        let mut p = Pdpa::new(0.7, 4);
        // A job requesting 32 on 64 cpus starts at its equipartition share: all it asked for.
        let a = p.allocate(&[job(1, 32, 0, None)], 64);
        assert_eq!(a, [32]);
        assert_eq!(p.state(1), Some(State::NoRef));
        // Two jobs: the newcomer gets what is left (32 of 64).
        let a = p.allocate(&[job(1, 32, 32, None), job(2, 32, 0, None)], 64);
        assert_eq!(a, [32, 32]);
        // Job 1 is inefficient at 32 (speedup 12 -> 0.375): it shrinks by the step.
        let a = p.allocate(&[job(1, 32, 32, Some(12.0)), job(2, 32, 32, None)], 64);
        assert_eq!(a, [28, 32]);
        assert_eq!(p.state(1), Some(State::Dec));
        // Still inefficient at 28 (speedup 12.5): shrinks again; at 24 efficient (18/24 = 0.75): stable.
        let a = p.allocate(&[job(1, 32, 28, Some(12.5)), job(2, 32, 32, None)], 64);
        assert_eq!(a, [24, 32]);
        let a = p.allocate(&[job(1, 32, 24, Some(18.0)), job(2, 32, 32, None)], 64);
        assert_eq!(a, [24, 32]);
        assert_eq!(p.state(1), Some(State::Stable));
    }

    #[test]
    fn pdpa_increase_is_undone_when_speedup_does_not_grow() {
        let mut p = Pdpa::new(0.7, 2);
        p.allocate(&[job(1, 16, 0, None)], 8); // request 16 on 8 cpus: starts at 8
                                               // Efficient but no cpu is free: stable at 8.
        assert_eq!(p.allocate(&[job(1, 16, 8, Some(7.0))], 8), [8]);
        assert_eq!(p.state(1), Some(State::Stable));
        let mut p = Pdpa::new(0.7, 2);
        p.allocate(&[job(1, 16, 0, None), job(2, 2, 0, None)], 16); // 14 and 2
                                                                    // Job 2 leaves; job 1 is efficient at 14 and 2 cpus are free: it grows to 16.
        p.remove(2);
        assert_eq!(p.allocate(&[job(1, 16, 14, Some(12.0))], 16), [16]);
        assert_eq!(p.state(1), Some(State::Inc));
        // At 16 the speedup fell (11 < 12): back to 14, stable.
        assert_eq!(p.allocate(&[job(1, 16, 16, Some(11.0))], 16), [14]);
        assert_eq!(p.state(1), Some(State::Stable));
    }

    #[test]
    fn pdpa_never_gives_one_cpu_to_two_jobs() {
        // 4n-cxl's case: 8 cpus, a job settled on 4 and grown to the rest; two arrive at once.
        let mut p = Pdpa::new(0.7, 4);
        p.allocate(&[job(1, 8, 0, None)], 8);
        assert_eq!(p.allocate(&[job(1, 8, 8, Some(7.5))], 8), [8]);
        let a = p.allocate(
            &[job(1, 8, 8, None), job(2, 4, 0, None), job(3, 4, 0, None)],
            8,
        );
        assert_eq!(a.iter().sum::<usize>(), 8, "{a:?}");
        assert!(a.iter().all(|&x| x >= 1), "{a:?}");
        // Admission counts a job admitted since the last allocation as holding a cpu.
        let mut p = Pdpa::new(0.7, 4);
        p.allocate(&[job(1, 7, 0, None)], 8);
        p.allocate(&[job(1, 7, 7, Some(6.5))], 8);
        assert!(p.admit(&[job(1, 7, 7, None)], 8, 1));
        assert!(!p.admit(&[job(1, 7, 7, None), job(2, 4, 0, None)], 8, 1));
        // Random speedups, arrivals and departures: never more than the cpus.
        let mut p = Pdpa::new(0.7, 2);
        let mut seed = 12345u64;
        let mut rand = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut running: Vec<JobView> = Vec::new();
        let mut next = 0;
        for step in 0..2000 {
            if running.len() < 6 && (rand(3) == 0 || running.is_empty()) {
                next += 1;
                running.push(job(next, 1 + rand(8) as usize, 0, None));
            }
            if running.len() > 1 && rand(7) == 0 {
                let gone = running.remove(rand(running.len() as u64) as usize);
                p.remove(gone.id);
            }
            let a = p.allocate(&running, 8);
            assert!(a.iter().sum::<usize>() <= 8, "step {step}: {a:?}");
            for (j, n) in running.iter_mut().zip(a) {
                j.alloc = n;
                j.speedup = Some(n as f64 * (0.3 + rand(80) as f64 / 100.0));
            }
        }
    }

    #[test]
    fn pdpa_grows_the_multiprogramming_level_only_while_processors_stay_free() {
        let mut p = Pdpa::new(0.7, 4);
        // Below the base level everyone is admitted.
        assert!(p.admit(&[], 16, 1));
        let running = [job(1, 8, 0, None)];
        p.allocate(&running, 16);
        // At the base level (1 here) with job 1 unsettled: wait.
        assert!(!p.admit(&running, 16, 1));
        p.allocate(&[job(1, 8, 8, Some(7.5))], 16); // efficient, request reached: stable
        assert_eq!(p.state(1), Some(State::Stable));
        // Settled and 8 of 16 cpus free: the level grows.
        assert!(p.admit(&[job(1, 8, 8, None)], 16, 1));
        // Settled but nothing free: no.
        assert!(!p.admit(&[job(1, 8, 8, None)], 8, 1));
        // The fixed policies never go beyond the base level.
        assert!(!Equip.admit(&[job(1, 8, 8, None)], 16, 1));
        assert!(Native.admit(&[], 16, 1));
    }
}
