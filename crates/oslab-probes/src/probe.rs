//! What a probe is: a row of the registry table, and the context it runs in.

pub use crate::error::ProbeError;
use crate::harness::{Harness, Timing};
use oslab_core::catalog::Entry;
use oslab_core::machine::{Environment, Fingerprint};
use oslab_core::model::{judged, Judge, Measurement, Unit};
use oslab_core::{CpuSet, Topology};
use serde_json::{Map, Value};

/// Something a probe needs from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A second CPU we may run on (for cross-CPU measurements; same-CPU parts still run).
    PeerCpu,
    /// Root privileges.
    Root,
    /// A hardware PMU.
    Pmu,
    /// A program on PATH.
    Tool(&'static str),
    /// To be named (`oslab run fs.cache-size`): it disturbs what other probes and programs rely
    /// on (why, in words), so the default suite leaves it out. Never gates a named probe.
    Named(&'static str),
}

impl Need {
    /// Short text for `oslab list`.
    pub fn label(&self) -> String {
        match self {
            Need::PeerCpu => "2 cpus".into(),
            Need::Root => "root".into(),
            Need::Pmu => "PMU".into(),
            Need::Tool(t) => format!("{t} on PATH"),
            Need::Named(why) => format!("to be named ({why})"),
        }
    }
}

/// What a probe whose work grows with the machine will do on this one.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    /// In words: its teams, cells or pairs, and how they stay bounded.
    pub what: String,
    /// Its work relative to the 2-cpu guest its [`Probe::cost`] was timed on.
    pub work: f64,
}

/// One probe: a row of the registry table.
pub struct Probe {
    /// What it is: id, description, metrics (the catalog's entry).
    pub entry: &'static Entry,
    /// What it needs. `PeerCpu` only limits parts of a probe; the others gate the whole probe.
    pub needs: &'static [Need],
    /// Roughly how long it takes relative to a one-measurement probe (timer.rdtsc = 1), timed on
    /// a 2-vCPU guest: times [`crate::HarnessConfig::seconds_per_cost`], the progress bar's and
    /// `--plan`'s estimate.
    pub cost: f64,
    /// What it will measure on this machine, for a probe whose work grows with the machine
    /// (threads, nodes) and how that stays bounded: `oslab run --plan` prints it.
    pub plan: Option<fn(&Context) -> Plan>,
    /// Runs it, given its own entry (every measurement it returns is under that id, and of one of
    /// its metrics).
    pub run: fn(&Context, &'static Entry) -> Result<Vec<Measurement>, ProbeError>,
}

impl Probe {
    /// Its id.
    pub fn id(&self) -> &'static str {
        self.entry.id
    }
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("id", &self.entry.id)
            .finish_non_exhaustive()
    }
}

/// What a probe runs with.
pub struct Context<'a> {
    /// The timing harness.
    pub harness: &'a Harness,
    /// The machine.
    pub topology: &'a Topology,
    /// The environment (privileges, PMU).
    pub environment: &'a Environment,
    /// The fingerprint (cpu, caches, mitigations, ...): what the machine model reads.
    pub fingerprint: &'a Fingerprint,
    /// The CPU the measuring thread is pinned to.
    pub cpu: usize,
    /// A second CPU for cross-CPU measurements, when we have one.
    pub peer_cpu: Option<usize>,
    /// Every CPU we may use.
    pub allowed: CpuSet,
    /// What the user chose for probes that take parameters.
    pub options: &'a Options,
}

/// Probe parameters the user can set (`oslab run --file-size ... --temp-dir ...`).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// Size of the file the page-fault probe maps, e.g. 2.8G, 512M (default: from RAM and the
    /// memory budget).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE", value_parser = oslab_core::units::parse_bytes))]
    pub file_size: Option<u64>,
    /// Directory for that file (default: $TMPDIR, else /var/tmp); it is never left behind.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub temp_dir: Option<std::path::PathBuf>,
    /// An executable that runs `task-helper REQUEST` (the oslab binary): the minimal parent that
    /// process creation is timed from. None: timed from this process, and said so.
    #[cfg_attr(feature = "clap", arg(skip))]
    pub helper: Option<std::path::PathBuf>,
    /// The memory, for the bandwidth predictions where the firmware does not say: TYPE-RATExCHANNELS,
    /// e.g. DDR5-4800x12 or DDR4-3200x2.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SPEC", env = "OSLAB_MEMORY",
        value_parser = |s: &str| oslab_model::memory::MemorySpec::parse(s).map(|_| s.to_string())))]
    pub memory: Option<String>,
    /// Measure every cell of the NUMA matrix (`oslab numa`); in the suite it is sampled to a
    /// time target past one cell of each distance.
    #[cfg_attr(feature = "clap", arg(skip))]
    pub whole_matrix: bool,
}

impl Context<'_> {
    /// Why `need` is not met here, or `None` when it is.
    pub fn unmet(&self, need: Need) -> Option<String> {
        unmet(need, self.environment, self.peer_cpu)
    }

    /// Turns a timing into a measurement: summary, status, cycles, overhead and raw samples.
    pub fn measurement(
        &self,
        probe: &str,
        params: Map<String, Value>,
        metric: &str,
        t: &Timing,
    ) -> Measurement {
        self.measurement_judged(probe, params, metric, t, Judge::Median)
    }

    /// Like [`Context::measurement`], judged as `judge` says.
    pub fn measurement_judged(
        &self,
        probe: &str,
        params: Map<String, Value>,
        metric: &str,
        t: &Timing,
        judge: Judge,
    ) -> Measurement {
        let mut m = judged(
            probe,
            params,
            metric,
            Unit::Ns,
            &t.samples,
            t.note.clone(),
            judge,
        );
        m.cycles = m
            .summary
            .as_ref()
            .and_then(|s| Some(s.median * self.harness.clock.cycles_per_ns()?));
        m.batch = Some(t.batch);
        m.overhead = Some(t.overhead_ns);
        m
    }

    /// Sizes of the caches the measuring CPU uses, level by level.
    pub fn cache_sizes(&self) -> Vec<u64> {
        self.topology
            .caches_of(self.cpu)
            .iter()
            .map(|c| c.size)
            .collect()
    }

    /// Bytes a memory probe may use: the harness's memory budget, but never more than half the
    /// memory available now (a larger request would swap or meet the OOM killer, not measure).
    pub fn memory_budget(&self) -> usize {
        let available = crate::buffer::available_memory().map_or(usize::MAX, |a| a as usize / 2);
        self.harness.config.memory_max.min(available).max(4 << 20)
    }

    /// Converts TSC cycles to ns, when the clock is the TSC.
    pub fn cycles_to_ns(&self, cycles: f64) -> Option<f64> {
        Some(cycles / self.harness.clock.cycles_per_ns()?)
    }
}

/// Why `need` is not met on a machine with this environment and peer CPU, or `None` when it is.
pub fn unmet(need: Need, environment: &Environment, peer_cpu: Option<usize>) -> Option<String> {
    match need {
        Need::PeerCpu => peer_cpu
            .is_none()
            .then(|| "needs a second cpu in our affinity mask".to_string()),
        Need::Root => {
            (!environment.privileges.root).then(|| "needs root (run with sudo)".to_string())
        }
        Need::Pmu => (!environment.pmu.available).then(|| {
            environment
                .pmu
                .reason
                .clone()
                .unwrap_or_else(|| "no PMU".into())
        }),
        Need::Tool(t) => (!on_path(t)).then(|| format!("{t} is not installed")),
        Need::Named(_) => None,
    }
}

/// Whether an executable named `tool` is on PATH.
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}
