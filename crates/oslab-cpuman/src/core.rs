//! The scheduler core the live manager and the simulator share: jobs arrive into a queue, the
//! policy admits them, and on every change it reallocates processors, which [`super::mapping`]
//! turns into stable cpu sets. The drivers differ only in what a running job is and in how time
//! passes (the clock and real processes, or events of a model).

use super::mapping;
use super::policy::{JobView, Policy};
use super::workload::{JobSpec, Jobs};
use std::collections::{BTreeMap, VecDeque};
use std::iter::Peekable;

/// A running job as the core sees it.
pub trait Managed {
    /// What was submitted.
    fn spec(&self) -> &JobSpec;
    /// Its processors now.
    fn alloc(&self) -> usize;
    /// The speedup it reported since the last reallocation, handed over once.
    fn take_speedup(&mut self) -> Option<f64>;
}

/// Arrivals, the queue and the cpu sets of running jobs.
pub struct Core {
    pending: Peekable<Jobs>,
    queue: VecDeque<JobSpec>,
    mapping: BTreeMap<u64, Vec<usize>>,
    order: Vec<(usize, usize)>,
    mpl: usize,
    peak: usize,
}

impl Core {
    /// A core over the cpus of `order` (placement order, with nodes) for `jobs` (taken as they
    /// arrive), admitting at least `mpl` jobs at a time.
    pub fn new(jobs: Jobs, order: Vec<(usize, usize)>, mpl: usize) -> Core {
        Core {
            pending: jobs.peekable(),
            queue: VecDeque::new(),
            mapping: BTreeMap::new(),
            order,
            mpl,
            peak: 0,
        }
    }

    /// When the next job arrives.
    pub fn next_arrival(&mut self) -> Option<f64> {
        self.pending.peek().map(|j| j.submit_s)
    }

    /// Jobs not yet arrived, and jobs queued.
    pub fn waiting(&self) -> (usize, usize) {
        (self.pending.len(), self.queue.len())
    }

    /// The most jobs that ran at once (the multiprogramming level PDPA reached).
    pub fn peak_running(&self) -> usize {
        self.peak
    }

    /// Whether every job has been admitted.
    pub fn drained(&mut self) -> bool {
        self.pending.peek().is_none() && self.queue.is_empty()
    }

    /// Moves the jobs that arrived by `t` into the queue.
    pub fn arrive(&mut self, t: f64) {
        while let Some(j) = self.pending.next_if(|j| j.submit_s <= t + 1e-12) {
            self.queue.push_back(j);
        }
    }

    /// Admits queued jobs while the policy allows, each made running by `start`; returns
    /// whether any was.
    pub fn admit<J: Managed>(
        &mut self,
        policy: &dyn Policy,
        running: &mut Vec<J>,
        mut start: impl FnMut(JobSpec) -> J,
    ) -> bool {
        let mut admitted = false;
        while !self.queue.is_empty() {
            let views: Vec<JobView> = running.iter().map(|j| view(j, None)).collect();
            if !policy.admit(&views, self.order.len(), self.mpl) {
                break;
            }
            let Some(spec) = self.queue.pop_front() else {
                break;
            };
            running.push(start(spec));
            self.peak = self.peak.max(running.len());
            admitted = true;
        }
        admitted
    }

    /// The policy's allocation of every running job and the cpus it maps to (none for a policy
    /// that leaves placement to the OS), in `running`'s order.
    pub fn reallocate<J: Managed>(
        &mut self,
        policy: &mut dyn Policy,
        running: &mut [J],
    ) -> Vec<(usize, Vec<usize>)> {
        let views: Vec<JobView> = running
            .iter_mut()
            .map(|j| {
                let s = j.take_speedup();
                view(j, s)
            })
            .collect();
        let allocs = mapping::reallocate(policy, &views, &self.order, &mut self.mapping);
        views
            .iter()
            .zip(allocs)
            .map(|(v, a)| {
                let set = match policy.pins() {
                    true => self.mapping.get(&v.id).cloned().unwrap_or_default(),
                    false => Vec::new(),
                };
                (a, set)
            })
            .collect()
    }

    /// A job ended: the policy and the mapping forget it.
    pub fn finished(&mut self, policy: &mut dyn Policy, id: u64) {
        policy.remove(id);
        self.mapping.remove(&id);
    }
}

fn view<J: Managed>(j: &J, speedup: Option<f64>) -> JobView {
    JobView {
        id: j.spec().id,
        request: j.spec().request,
        alloc: j.alloc(),
        speedup,
    }
}
