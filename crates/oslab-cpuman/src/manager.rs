//! The live CPU manager: a FIFO queue with a multiprogramming level, a policy deciding how many
//! processors each running job gets, a mapping that turns counts into stable CPU sets, and the
//! jobs themselves as child processes: cooperative built-in kernels told their allocation
//! through a shared page, external commands confined by the affinity of all their threads.
//!
//! Every `tick` the manager: admits arrivals, reaps finished jobs (CPU time from wait4's
//! rusage), reads iteration reports (SelfAnalyzer, as the paper's: speedup = B x T_baseline /
//! T_now, T_baseline the mean of `--baseline-iterations` iterations on B threads, B the paper's 4
//! processors at most the job's first allocation), re-allocates when anything changed, applies the new mapping (and, with manual page
//! migration, moves the pages of jobs whose nodes changed), and samples where every thread ran.

use super::channel::Channel;
use super::core::{Core, Managed};
use super::observe::{self, BalancingGuard, BurstCounter, TaskSampler};
use super::outcome::RunOutcome;
use super::tally::JobOutcome;
use super::workload::{self, JobSpec, Jobs, Source};
use super::{mapping, work};
use crate::jobs::Kind;
use crate::policy::PageMigration;
use crate::policy::{Policy, PolicyOptions};
use oslab_core::model::{EventKind, TimelineEvent};
use oslab_core::reason::BadValue;
use oslab_core::reason::Unavailable;
use oslab_core::CpuSet;
use oslab_os::perf::{self, Counter};
use oslab_os::signals;
use serde_json::Map;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a live run is set up.
#[derive(Debug, Clone)]
pub struct Config {
    /// Page migration mode.
    pub migration: PageMigration,
    /// Base multiprogramming level.
    pub mpl: usize,
    /// The CPUs managed, in placement order, with their nodes.
    pub order: Vec<(usize, usize)>,
    /// NUMA nodes of the machine.
    pub nodes: usize,
    /// How often the manager looks.
    pub tick: Duration,
    /// The program that runs built-in jobs (`PROGRAM cpuman job ...`).
    pub program: PathBuf,
    /// Per-core L2 size, for the stencil's grid.
    pub l2_bytes: u64,
    /// Seconds of one sequential iteration per kind (calibrated here).
    pub iteration_s: BTreeMap<&'static str, f64>,
    /// Workload label and load, for the outcome.
    pub workload: String,
    /// Load in percent, for generated workloads.
    pub load: Option<f64>,
    /// The SelfAnalyzer's baseline: threads (at most the managed cpus) and iterations averaged.
    pub baseline: (usize, u64),
}

/// What `oslab cpuman run` asks: the policy, the jobs, the cpus and the manager's tick.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Request {
    /// The policy and page migration.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub policy: PolicyOptions,
    /// The jobs.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub source: Source,
    /// CPUs to manage (default: all we may use), e.g. 0-7 or node:0.
    #[cfg_attr(feature = "clap", arg(long, value_name = "LIST"))]
    pub cpus: Option<String>,
    /// An external command run as a non-cooperative job at time 0 (repeatable); its threads
    /// come from OMP_NUM_THREADS and are confined by affinity.
    #[cfg_attr(feature = "clap", arg(long, value_name = "COMMAND"))]
    pub external: Vec<String>,
    /// Processors an external command requests (default: all managed).
    #[cfg_attr(feature = "clap", arg(long,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536)))]
    pub external_request: Option<usize>,
    /// How often the manager looks.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME",
        value_parser = oslab_core::units::parse_duration, default_value = "20ms"))]
    pub tick: Duration,
    /// The SelfAnalyzer's baseline: the threads its iterations run on (the paper's 4
    /// processors; at most the cpus managed), speedup = threads x T_baseline / T_now.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024)))]
    pub baseline_threads: usize,
    /// Iterations averaged for the baseline (the paper's several; 1: oslab's former single one).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 3,
        value_parser = clap::value_parser!(u64).range(1..=100)))]
    pub baseline_iterations: u64,
}

/// A live run ready to start.
pub struct Prepared {
    /// The manager's configuration (the built-in jobs calibrated).
    pub config: Config,
    /// The jobs, in submit order.
    pub jobs: Jobs,
    /// What to know about how the jobs were read, and what was done to NUMA balancing.
    pub notes: Vec<String>,
    /// NUMA balancing as the page migration mode needs it, from the calibration on (it moved
    /// 205 pages of a calibration once); put back when dropped, after the run.
    pub balancing: Option<BalancingGuard>,
}

impl Request {
    /// Why this run cannot be done here, found before anything is measured or started.
    pub fn check(&self) -> Result<(), Unavailable> {
        match self.policy.migration {
            PageMigration::Kernel => observe::balancing_check(),
            _ => Ok(()),
        }
    }

    /// The managed cpus of `allowed` and the jobs; `program` runs the built-in jobs. Calibrates
    /// the built-in jobs' iterations (one thread each), saying so through `say`.
    pub fn prepare(
        &self,
        topology: &oslab_core::Topology,
        allowed: &CpuSet,
        program: PathBuf,
        say: &mut dyn FnMut(&str),
    ) -> Result<Prepared, BadValue> {
        let order = mapping::managed(topology, allowed, self.cpus.as_deref())?;
        let src = Source {
            external: self.external.clone(),
            external_request: self.external_request,
            ..self.source.clone()
        };
        let jobs = workload::resolve(&src, order.len())?;
        jobs.notes.iter().for_each(|n| say(&format!("note: {n}")));
        let l2_bytes = mapping::l2_bytes(topology, order[0].0);
        let order_len = order.len();
        let mut notes = jobs.notes;
        let balancing = balancing_for(self.policy.migration, topology.nodes.len(), &mut notes)
            .map_err(|e| e.to_string())?;
        say("calibrating the built-in jobs' iterations (one thread each) ...");
        let config = Config {
            migration: self.policy.migration,
            mpl: self.policy.mpl,
            order,
            nodes: topology.nodes.len(),
            tick: self.tick,
            program,
            l2_bytes,
            iteration_s: work::calibrate(l2_bytes),
            workload: jobs.label,
            load: jobs.load,
            baseline: (
                self.baseline_threads.min(order_len).max(1),
                self.baseline_iterations,
            ),
        };
        Ok(Prepared {
            config,
            jobs: jobs.jobs,
            notes,
            balancing,
        })
    }
}

/// Errors that end a live run before it starts or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A job could not be started.
    #[error("cannot start job {id} ({what}): {source}")]
    Spawn {
        /// Job number.
        id: u64,
        /// Its command.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// The run's set-up failed (page migration mode not available, ...).
    #[error("{0}")]
    Setup(String),
}

/// A job the manager has admitted.
struct Running {
    spec: JobSpec,
    outcome: JobOutcome,
    pid: i32,
    channel: Option<Channel>,
    seen: u64,
    alloc: usize,
    cpus: Vec<usize>,
    since: f64,
    /// The baseline iterations' times so far; their mean once all are in.
    base_ns: Vec<f64>,
    speedup: Option<f64>,
    migrations: Option<Counter>,
    sampler: TaskSampler,
    slots: BTreeMap<i32, usize>,
    /// How it ended, once reaped.
    exit: Option<String>,
    /// Its process group, ended with it (and by its guard if the manager is killed).
    tree: Option<oslab_os::tree::Tree>,
}

impl Managed for Running {
    fn spec(&self) -> &JobSpec {
        &self.spec
    }
    fn alloc(&self) -> usize {
        self.alloc
    }
    fn take_speedup(&mut self) -> Option<f64> {
        self.speedup.take()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Never leave a job behind: whatever is still running in its group is killed and the
        // process reaped.
        if self.pid > 0 {
            // SAFETY: signalling and waiting for our own child's process group.
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// An open span of a thread on a CPU, extended while consecutive samples agree.
struct Span {
    cpu: usize,
    start: f64,
    end: f64,
    job: u64,
    slot: usize,
}

/// What the live status line shows.
#[derive(Debug, Clone)]
pub struct TickState {
    /// Seconds since the start.
    pub t: f64,
    /// Jobs not yet arrived.
    pub pending: usize,
    /// Jobs queued.
    pub queued: usize,
    /// Running jobs with their allocation.
    pub running: Vec<(u64, usize)>,
    /// Finished jobs.
    pub done: usize,
}

impl TickState {
    /// One line for a terminal.
    pub fn line(&self) -> String {
        let running: Vec<String> = self
            .running
            .iter()
            .map(|(j, a)| format!("{j}:{a}"))
            .collect();
        format!(
            "{:6.1} s  running [{}]  queued {}  to arrive {}  done {}",
            self.t,
            running.join(" "),
            self.queued,
            self.pending,
            self.done
        )
    }
}

/// Runs `jobs` under `policy`; `status` is called every tick. Returns what happened; an
/// interrupt (Ctrl-C, SIGTERM) stops the jobs, and the outcome holds what completed.
pub fn run(
    policy: &mut dyn Policy,
    cfg: &Config,
    jobs: Jobs,
    status: &mut dyn FnMut(&TickState),
) -> Result<RunOutcome, ManagerError> {
    let mut live = Live::new(cfg);
    if cfg.migration != PageMigration::Off && cfg.nodes < 2 {
        live.notes.push(format!(
            "one NUMA node: page migration ({}) has nothing to move here; the run shows its overhead only",
            cfg.migration.name()
        ));
    }
    let cpus: Vec<usize> = cfg.order.iter().map(|&(c, _)| c).collect();
    let bursts = BurstCounter::start(&cpus);
    let pages_before = observe::pages_migrated();
    let t0 = Instant::now();
    let now = || t0.elapsed().as_secs_f64();
    let mut core = Core::new(jobs, cfg.order.clone(), cfg.mpl);
    let first_arrival = core.next_arrival().unwrap_or(0.0);
    let mut interrupted = false;
    loop {
        let t = now();
        if signals::interrupted() {
            interrupted = true;
            break;
        }
        core.arrive(t);
        let mut changed = live.reap(&mut core, policy, t);
        changed |= live.read_reports();
        changed |= core.admit(policy, &mut live.running, |spec| admitted(spec, t));
        if changed {
            let placed = core.reallocate(policy, &mut live.running);
            live.place(policy, placed, t)?;
        }
        live.sample(t);
        let (pending, queued) = core.waiting();
        status(&TickState {
            t,
            pending,
            queued,
            running: live.running.iter().map(|r| (r.spec.id, r.alloc)).collect(),
            done: live.finished.len(),
        });
        if core.drained() && live.running.is_empty() {
            break;
        }
        // A long tick must not hold Ctrl-C: the loop's top sees the flag.
        oslab_os::signals::sleep_unless_stopped(cfg.tick);
    }
    if interrupted {
        stop_all(&mut live.running, &mut live.finished, now());
        live.notes
            .push("interrupted: jobs still running were stopped; only completed jobs count".into());
    }
    let pages = live.pages_moved(pages_before);
    Ok(live.outcome(policy, &core, first_arrival, bursts, pages))
}

/// Only the mode asked for moves pages: the kernel's automatic NUMA balancing on for `kernel`,
/// off for the others on several nodes (where it would move pages of its own), restored when
/// the guard drops; what was done is said in `notes`.
fn balancing_for(
    migration: PageMigration,
    nodes: usize,
    notes: &mut Vec<String>,
) -> Result<Option<BalancingGuard>, ManagerError> {
    Ok(match (migration, nodes >= 2) {
        (PageMigration::Kernel, _) => {
            let g = BalancingGuard::set(true).map_err(ManagerError::Setup)?;
            if let Some(g) = &g {
                notes.push(format!(
                    "automatic NUMA balancing switched on for the run (was {}), restored after",
                    g.previous()
                ));
            }
            g
        }
        (mode, true) => match BalancingGuard::set(false) {
            Ok(g) => {
                if let Some(g) = &g {
                    notes.push(format!(
                        "automatic NUMA balancing switched off for the run (was {}) so that {}, restored after",
                        g.previous(),
                        if mode == PageMigration::Manual { "only the manager moves pages" } else { "no page moves after first touch" }
                    ));
                }
                g
            }
            Err(e) => {
                notes.push(format!("automatic NUMA balancing is on and stays on ({e}): the kernel may move pages during this run too"));
                None
            }
        },
        (_, false) => None,
    })
}

/// The live machine between ticks: the jobs running and finished, what their threads ran
/// where, the speedups they reported, the pages the manager moved.
struct Live<'a> {
    cfg: &'a Config,
    notes: Vec<String>,
    running: Vec<Running>,
    finished: Vec<JobOutcome>,
    timeline: Vec<TimelineEvent>,
    speedups: BTreeMap<(Kind, usize), Vec<f64>>,
    spans: BTreeMap<(u64, i32), Span>,
    /// When the threads were last sampled.
    last_sample: f64,
    /// Migrations the kernel counted while the manager's own moves ran (pgmigrate_success around
    /// each migrate_pages call): beside each job's numa_maps change, the check that they agree.
    kernel_counted: u64,
    /// Node-set changes of running jobs, and those that left a node the job held (only these
    /// move pages): a stream that moves nothing says why.
    node_changes: usize,
    nodes_left: usize,
    /// Seconds each job's threads ran on cpus it had been given none of, whole sampling
    /// intervals after its last change (a cpu given away must be free).
    outside: BTreeMap<u64, f64>,
}

impl<'a> Live<'a> {
    fn new(cfg: &'a Config) -> Live<'a> {
        Live {
            cfg,
            notes: Vec::new(),
            running: Vec::new(),
            finished: Vec::new(),
            timeline: Vec::new(),
            speedups: BTreeMap::new(),
            spans: BTreeMap::new(),
            last_sample: 0.0,
            kernel_counted: 0,
            node_changes: 0,
            nodes_left: 0,
            outside: BTreeMap::new(),
        }
    }

    /// Takes out the jobs that ended (a failure said in the notes); whether any did.
    fn reap(&mut self, core: &mut Core, policy: &mut dyn Policy, t: f64) -> bool {
        let mut changed = false;
        let mut k = 0;
        while k < self.running.len() {
            if let Some(end) = reap(&mut self.running[k], t) {
                let mut r = self.running.remove(k);
                if !r.outcome.completed {
                    self.notes.push(failure(&r));
                }
                close_spans(&mut self.spans, &mut self.timeline, Some(r.spec.id));
                account(&mut r, end);
                self.timeline.push(r.outcome.span_event());
                core.finished(policy, r.spec.id);
                self.finished.push(r.outcome.clone());
                r.pid = 0; // reaped
                changed = true;
            } else {
                k += 1;
            }
        }
        changed
    }

    /// The iterations the jobs reported since the last look: points of each kind's speedup
    /// curve, and the SelfAnalyzer's speedup against a job's baseline; whether one is new.
    fn read_reports(&mut self) -> bool {
        let mut changed = false;
        for r in &mut self.running {
            let Some(ch) = &r.channel else { continue };
            let (reports, seen) = ch.reports_since(r.seen);
            r.seen = seen;
            for rep in reports {
                // Every iteration after the warm-up is a point of the kind's curve.
                let seq = self.cfg.iteration_s.get(r.spec.kind.name());
                if let (true, Some(seq)) = (rep.index >= 1 && rep.threads > 0, seq) {
                    self.speedups
                        .entry((r.spec.kind, rep.threads))
                        .or_default()
                        .push(seq / (rep.ns.max(1) as f64 / 1e9));
                }
                match rep.index {
                    0 => {} // warm-up: first touch of the data
                    i if ch.baseline() > 0 && i <= ch.baseline_iterations() => {
                        r.base_ns.push(rep.ns as f64)
                    }
                    _ => {
                        let whole = r.base_ns.len() as u64 == ch.baseline_iterations();
                        let base = r.base_ns.iter().sum::<f64>() / r.base_ns.len().max(1) as f64;
                        if let Some(base) = whole.then_some(base).filter(|_| rep.threads == r.alloc)
                        {
                            r.speedup = Some(ch.baseline() as f64 * base / (rep.ns.max(1)) as f64);
                            changed = true;
                        }
                    }
                }
            }
        }
        changed
    }

    /// Applies the policy's allocation: a new job started on its cpus, a running one moved
    /// there, and under manual migration its pages after it when its nodes changed.
    fn place(
        &mut self,
        policy: &dyn Policy,
        placed: Vec<(usize, Vec<usize>)>,
        t: f64,
    ) -> Result<(), ManagerError> {
        let cfg = self.cfg;
        let p = cfg.order.len();
        for (r, (a, set)) in self.running.iter_mut().zip(placed) {
            if r.pid != 0 && a == r.alloc && set == r.cpus {
                continue;
            }
            r.outcome.alloc_integral += r.alloc.min(p) as f64 * (t - r.since);
            r.since = t;
            let old_nodes = nodes_of(&cfg.order, &r.cpus);
            r.alloc = a;
            r.cpus = set;
            if r.pid == 0 {
                start(r, cfg, policy.needs_speedup())?;
            } else {
                apply(r);
                let new_nodes = nodes_of(&cfg.order, &r.cpus);
                if cfg.migration == PageMigration::Manual
                    && cfg.nodes > 1
                    && !new_nodes.is_empty()
                    && new_nodes != old_nodes
                {
                    self.node_changes += 1;
                    self.nodes_left +=
                        usize::from(old_nodes.iter().any(|n| !new_nodes.contains(n)));
                    // The job's pages per node just before and after the move.
                    let before = observe::node_pages(r.pid);
                    let counted = observe::pages_migrated();
                    match observe::migrate_process_pages(r.pid, &new_nodes, cfg.nodes) {
                        Ok(_) => {
                            if let (Some(b), Some(a)) = (before, observe::node_pages(r.pid)) {
                                let moved = observe::moved(&b, &a, &new_nodes);
                                *r.outcome.pages_moved.get_or_insert(0) += moved;
                            }
                            if let (Some(c0), Some(c1)) = (counted, observe::pages_migrated()) {
                                self.kernel_counted += c1.saturating_sub(c0);
                            }
                        }
                        // A job that ended as it moved has no pages left to move: no failure.
                        Err(e) if !oslab_os::restorer::pid_alive(r.pid as u32) => {
                            self.notes.push(format!(
                            "job {}: had ended when its pages were to move ({e}): nothing to move",
                            r.spec.id
                        ))
                        }
                        Err(e) => self
                            .notes
                            .push(format!("job {}: migrate_pages failed: {e}", r.spec.id)),
                    }
                }
            }
            self.timeline
                .push(r.outcome.alloc_event(r.alloc, &r.cpus, t));
        }
        Ok(())
    }

    /// Where every thread ran since the last look; time a job ran on cpus it no longer held.
    fn sample(&mut self, t: f64) {
        for r in &mut self.running {
            let from = self.last_sample.max(r.outcome.start_s.unwrap_or(0.0));
            let outside = sample(r, &mut self.spans, &mut self.timeline, from, t);
            if outside > 0.0 {
                *self.outside.entry(r.spec.id).or_default() += outside;
                // A thread started on the old assignment (read just before the change): off.
                confine(r);
            }
        }
        self.last_sample = t;
    }

    /// The pages moved over the run: the manager's own moves job by job under manual
    /// migration (with the kernel's counts beside them in the notes), else the kernel's count,
    /// which is system-wide (compaction, khugepaged and other processes' moves in it).
    fn pages_moved(&mut self, before: Option<u64>) -> Result<u64, Unavailable> {
        let system = match (before, observe::pages_migrated()) {
            (Some(a), Some(b)) => Ok(b.saturating_sub(a)),
            _ => Err(Unavailable::from("/proc/vmstat has no pgmigrate_success")),
        };
        let ours: Option<u64> = self
            .finished
            .iter()
            .filter_map(|j| j.pages_moved)
            .reduce(|a, b| a + b);
        match (self.cfg.migration, ours) {
            (PageMigration::Manual, moved) if self.cfg.nodes > 1 => {
                let moved = moved.unwrap_or(0);
                if let Ok(all) = &system {
                    self.notes.push(format!("pages moved: {moved} by the manager (each job's numa_maps before and after its moves); the kernel counted {} during those moves, {all} over the run (every cause, system-wide)", self.kernel_counted));
                }
                if moved == 0 {
                    self.notes.push(format!("no page moved: running jobs' node sets changed {} times, {} of them leaving a node the job held (only those move its pages there); this stream's arrivals {}", self.node_changes, self.nodes_left, match self.nodes_left {
                        0 => "only ever grew a job's nodes: another --stream may shrink some",
                        _ => "left nodes whose pages had already gone (or none were first touched there)",
                    }));
                }
                Ok(moved)
            }
            _ => system,
        }
    }

    /// The run's outcome, its spans closed.
    fn outcome(
        mut self,
        policy: &dyn Policy,
        core: &Core,
        first_arrival: f64,
        bursts: Result<BurstCounter, Unavailable>,
        pages: Result<u64, Unavailable>,
    ) -> RunOutcome {
        close_spans(&mut self.spans, &mut self.timeline, None);
        for (job, s) in &self.outside {
            self.notes.push(format!(
                "job {job} ran {} on cpus it no longer held (seen in the manager's samples after its change): another job shared them",
                oslab_core::units::value(s * 1e9, oslab_core::model::Unit::Ns)
            ));
        }
        let end = self
            .finished
            .iter()
            .filter_map(|j| j.end_s)
            .fold(0.0, f64::max);
        RunOutcome {
            policy: policy.name().to_string(),
            migration: self.cfg.migration.name().to_string(),
            workload: self.cfg.workload.clone(),
            load: self.cfg.load,
            cpus: self.cfg.order.len(),
            jobs: self.finished.into_iter().collect(),
            bursts: bursts.and_then(BurstCounter::finish),
            page_migrations: pages,
            makespan_s: end - first_arrival,
            timeline: self.timeline,
            notes: self.notes,
            simulated: false,
            speedups: self.speedups,
            first_touch: None,
            peak_running: core.peak_running(),
        }
    }
}

fn admitted(spec: JobSpec, t: f64) -> Running {
    let outcome = JobOutcome::started(&spec, t);
    Running {
        spec,
        outcome,
        pid: 0,
        channel: None,
        seen: 0,
        alloc: 0,
        cpus: Vec::new(),
        since: t,
        base_ns: Vec::new(),
        speedup: None,
        migrations: None,
        sampler: TaskSampler::default(),
        slots: BTreeMap::new(),
        exit: None,
        tree: None,
    }
}

/// What the policy sees; `take` hands over (and clears) the speedups measured since last time.
fn nodes_of(order: &[(usize, usize)], cpus: &[usize]) -> Vec<usize> {
    let mut n: Vec<usize> = order
        .iter()
        .filter(|(c, _)| cpus.contains(c))
        .map(|&(_, n)| n)
        .collect();
    n.sort_unstable();
    n.dedup();
    n
}

/// Starts a job's process with its first assignment.
fn start(r: &mut Running, cfg: &Config, self_analyze: bool) -> Result<(), ManagerError> {
    let threads = r.alloc.max(1);
    let set: CpuSet = r.cpus.iter().copied().collect();
    let (mut cmd, what, channel) = match &r.spec.command {
        Some(argv) => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..])
                .env("OMP_NUM_THREADS", threads.to_string())
                .stdout(Stdio::null());
            (c, argv.join(" "), None)
        }
        None => {
            let ch = Channel::create().map_err(|source| ManagerError::Spawn {
                id: r.spec.id,
                what: "shared page".into(),
                source,
            })?;
            ch.publish(threads, &r.cpus);
            if self_analyze {
                // On the processors it starts with, at most the baseline's: more threads than
                // cpus would time-share and read a slower baseline.
                let (threads_b, iterations_b) = cfg.baseline;
                ch.set_baseline(threads_b.min(threads.max(1)), iterations_b);
            }
            let iters = iterations(cfg, r.spec.kind, r.spec.seq_s);
            let mut c = Command::new(&cfg.program);
            c.args(["cpuman", "job", "--kind", r.spec.kind.name()])
                .arg("--iterations")
                .arg(iters.to_string())
                .arg("--channel-fd")
                .arg(ch.fd().to_string())
                .arg("--l2-bytes")
                .arg(cfg.l2_bytes.to_string())
                .stdout(Stdio::null());
            (
                c,
                format!("built-in {} x {iters}", r.spec.kind.name()),
                Some(ch),
            )
        }
    };
    cmd.stdin(Stdio::null());
    // A job and what it starts never outlive the manager, even one killed with SIGKILL; its own
    // process group: terminal signals go to the manager, which stops jobs.
    oslab_os::tree::Tree::contain(&mut cmd);
    let fd = channel.as_ref().map_or(-1, |c| c.fd());
    // Every job starts on its allocation, so what it first touches lands on the allocation's
    // nodes (a built-in job's threads then pin themselves one cpu each).
    // SAFETY: between fork and exec only async-signal-safe calls: fcntl, sched_setaffinity,
    // with data prepared before the fork.
    unsafe {
        let raw = oslab_os::placement::cpu_set_t(&set);
        cmd.pre_exec(move || {
            if fd >= 0 {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            if !set_is_empty(&raw) {
                libc::sched_setaffinity(0, std::mem::size_of_val(&raw), &raw);
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|source| ManagerError::Spawn {
        id: r.spec.id,
        what,
        source,
    })?;
    r.pid = child.id() as i32;
    r.tree = Some(oslab_os::tree::Tree::watch(r.pid));
    r.channel = channel;
    // Counting thread migrations over the job's life (threads created later inherit it).
    r.migrations =
        Counter::open_inherited(perf::TYPE_SOFTWARE, perf::SW_CPU_MIGRATIONS, r.pid).ok();
    if r.spec.command.is_some() {
        apply(r);
    }
    Ok(())
}

fn set_is_empty(raw: &libc::cpu_set_t) -> bool {
    // SAFETY: reading a plain-data set.
    unsafe { libc::CPU_COUNT(raw) == 0 }
}

/// Iterations that make `seq_s` seconds of sequential work of `kind` (at least a warm-up, the
/// baseline's and one measured).
fn iterations(cfg: &Config, kind: Kind, seq_s: f64) -> u64 {
    let per = cfg.iteration_s.get(kind.name()).copied().unwrap_or(0.05);
    ((seq_s / per).round() as u64).max(cfg.baseline.1 + 2)
}

/// Tells a running job its new assignment: through the shared page for built-in jobs, and by
/// the affinity of every thread (for external jobs the only way; new threads are caught at the
/// next change or sample).
fn apply(r: &mut Running) {
    // A cooperative job reads its cpus only between iterations: until then its threads are
    // confined to the new set, so that a cpu given away is free at once (a shrunk job once ran
    // on the cpu it had given up for 5.6 s while the job it went to had none).
    if let Some(ch) = &r.channel {
        ch.publish(r.alloc, &r.cpus);
    }
    confine(r);
}

fn confine(r: &Running) {
    if r.cpus.is_empty() {
        return;
    }
    let set: CpuSet = r.cpus.iter().copied().collect();
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", r.pid)) {
        for tid in dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        {
            // A thread that exited meanwhile is simply gone.
            let _ = oslab_os::affinity::set_affinity(tid, &set);
        }
    }
}

/// Reaps the job if it ended; returns the time.
fn reap(r: &mut Running, t: f64) -> Option<f64> {
    if r.pid == 0 {
        return None;
    }
    let mut status = 0;
    // SAFETY: rusage is plain data filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child without blocking.
    let rc = unsafe { libc::wait4(r.pid, &mut status, libc::WNOHANG, &mut usage) };
    if rc != r.pid {
        // External jobs get their new threads confined as they appear.
        if r.channel.is_none() {
            confine(r);
        }
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    r.outcome.cpu_s = Some(tv(usage.ru_utime) + tv(usage.ru_stime));
    r.outcome.completed = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    r.exit = Some(if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    });
    Some(t)
}

/// Why a job that ended did not complete, in words.
fn failure(r: &Running) -> String {
    let what = match &r.spec.command {
        Some(argv) => format!(
            "{} (split at spaces, without shell quoting: put a shell command in a script)",
            argv.join(" ")
        ),
        None => format!("built-in {}", r.spec.kind.name()),
    };
    let how = r.exit.as_deref().unwrap_or("ended");
    format!("job {} did not complete: {what} {how}", r.spec.id)
}

fn account(r: &mut Running, end: f64) {
    r.outcome.alloc_integral += r.alloc as f64 * (end - r.since);
    r.outcome.end_s = Some(end);
    r.outcome.migrations = r.migrations.as_ref().and_then(|c| c.read().ok());
    // The whole group is gone with its leader for built-in jobs; an external command's
    // stragglers are killed by the drop.
}

fn stop_all(running: &mut Vec<Running>, finished: &mut Vec<JobOutcome>, t: f64) {
    for r in running.iter() {
        if let Some(ch) = &r.channel {
            ch.request_stop();
        }
        // SAFETY: signalling our own child's group.
        unsafe { libc::kill(-r.pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while !running.is_empty() && Instant::now() < deadline {
        let mut k = 0;
        while k < running.len() {
            if let Some(end) = reap(&mut running[k], t) {
                let mut r = running.remove(k);
                account(&mut r, end);
                r.outcome.completed = false;
                finished.push(r.outcome.clone());
                r.pid = 0;
            } else {
                k += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for mut r in running.drain(..) {
        account(&mut r, t);
        finished.push(r.outcome.clone());
        // Drop kills and reaps.
    }
}

fn sample(
    r: &mut Running,
    spans: &mut BTreeMap<(u64, i32), Span>,
    timeline: &mut Vec<TimelineEvent>,
    from: f64,
    to: f64,
) -> f64 {
    let (ran, live) = r.sampler.sample(r.pid);
    // Threads that ran where the job holds no cpu, over an interval wholly after its change.
    let outside = match r.since <= from && !r.cpus.is_empty() {
        true => ran
            .iter()
            .filter(|x| !r.cpus.contains(&x.cpu))
            .map(|x| x.ns as f64 / 1e9)
            .sum(),
        false => 0.0,
    };
    // Thread slots: a thread keeps its slot; a new one takes the lowest free.
    r.slots.retain(|tid, _| live.contains(tid));
    for tid in &live {
        if !r.slots.contains_key(tid) {
            let used: Vec<usize> = r.slots.values().copied().collect();
            let slot = (0..).find(|s| !used.contains(s)).unwrap_or(0);
            r.slots.insert(*tid, slot);
        }
    }
    let id = r.spec.id;
    for x in ran {
        let slot = r.slots.get(&x.tid).copied().unwrap_or(0);
        match spans.get_mut(&(id, x.tid)) {
            Some(s) if s.cpu == x.cpu && (s.end - from).abs() < 1e-9 => s.end = to,
            _ => {
                if let Some(old) = spans.remove(&(id, x.tid)) {
                    timeline.push(span_event(&old));
                }
                spans.insert(
                    (id, x.tid),
                    Span {
                        cpu: x.cpu,
                        start: from,
                        end: to,
                        job: id,
                        slot,
                    },
                );
            }
        }
    }
    outside
}

fn close_spans(
    spans: &mut BTreeMap<(u64, i32), Span>,
    timeline: &mut Vec<TimelineEvent>,
    job: Option<u64>,
) {
    let keys: Vec<(u64, i32)> = spans
        .keys()
        .filter(|(j, _)| job.is_none_or(|x| x == *j))
        .copied()
        .collect();
    for k in keys {
        if let Some(s) = spans.remove(&k) {
            timeline.push(span_event(&s));
        }
    }
}

fn span_event(s: &Span) -> TimelineEvent {
    let mut args = Map::new();
    args.insert("job".into(), s.job.into());
    args.insert("slot".into(), s.slot.into());
    args.insert("cpu".into(), s.cpu.into());
    TimelineEvent {
        track: format!("cpu {}", s.cpu),
        kind: EventKind::Run,
        start_ns: s.start * 1e9,
        dur_ns: (s.end - s.start) * 1e9,
        args,
    }
}
