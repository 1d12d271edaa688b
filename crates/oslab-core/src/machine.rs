//! What the machine is and what it lets us do: the fingerprint stored with every run (CPU, caches,
//! NUMA, kernel, clocksource, governor, SMT, turbo, hypervisor, mitigations), the privileges we
//! hold, whether a hardware PMU answers, and warnings about noise sources, each with its remedy.
//!
//! These are the data; `oslab-os`'s `machine` reads them. Every field is read, never assumed:
//! what the machine does not expose is `None` and is printed as "not exposed", with the reason
//! where we know it.

use crate::clock::Clock;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// Everything known about the machine before measuring: topology, fingerprint (with the
/// calibrated clock) and the environment report.
pub struct Machine {
    /// Topology.
    pub topology: Topology,
    /// Fingerprint (includes the calibrated clock).
    pub fingerprint: Fingerprint,
    /// Environment report.
    pub environment: Environment,
}

impl Machine {
    /// The calibrated clock.
    pub fn clock(&self) -> &Clock {
        &self.fingerprint.clock
    }
}

/// The machine fingerprint: enough to tell whether two runs were on comparable machines.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Host name.
    pub hostname: String,
    /// CPU vendor string (GenuineIntel, AuthenticAMD, ...).
    pub cpu_vendor: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// family/model/stepping as "6/167/1" (x86), implementer/part/variant as "0x41/0xd0c/0x3" (Arm).
    pub cpu_signature: Option<String>,
    /// Microcode revision.
    pub microcode: Option<String>,
    /// Packages (sockets).
    pub packages: usize,
    /// Physical cores.
    pub cores: usize,
    /// Logical CPUs online.
    pub threads: usize,
    /// Topology: cpus, caches, NUMA nodes and distances.
    pub topology: Topology,
    /// Total memory in bytes.
    pub memory: Option<u64>,
    /// Kernel release and version.
    pub kernel: String,
    /// Current clocksource.
    pub clocksource: Option<String>,
    /// The measuring clock.
    pub clock: Clock,
    /// cpufreq governor of the first CPU.
    pub governor: Option<String>,
    /// Whether turbo/boost is enabled.
    pub turbo: Option<bool>,
    /// SMT control state (on/off/notsupported/...).
    pub smt: Option<String>,
    /// Hypervisor vendor, when virtualized.
    pub hypervisor: Option<String>,
    /// CPU vulnerability mitigations, name -> state.
    pub mitigations: Vec<(String, String)>,
    /// Transparent huge pages mode.
    pub thp: Option<String>,
    /// When a page fault may compact memory for a transparent huge page (THP defrag).
    #[serde(default)]
    pub thp_defrag: Option<String>,
    /// The kernel's command line (mitigations=off, isolcpus, clocksource=, ...).
    #[serde(default)]
    pub cmdline: Option<String>,
    /// This process's seccomp mode (0 none, 1 strict, 2 filter): a filter taxes every system
    /// call.
    #[serde(default)]
    pub seccomp: Option<String>,
    /// The kernel's system-call audit: "off", or "on, N rules" (a rule sends every system call
    /// through the audit path); none where it cannot be asked (not root).
    #[serde(default)]
    pub audit: Option<String>,
    /// The kernel's timer tick rate in Hz (CONFIG_HZ): from its configuration, else from how far
    /// jiffies have counted since boot.
    pub tick_hz: Option<u32>,
    /// How this run was scheduled, setting -> value: the kernel's `autogroup` and `timer
    /// migration`, the process's `nice` and scheduling `class` as it started (before oslab
    /// raises its measuring thread). Each moves switch and wake-up costs.
    #[serde(default)]
    pub scheduler: Vec<(String, String)>,
}

/// What we are allowed to do here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Privileges {
    /// Effective uid is 0 in the kernel's own user namespace (root inside another is not root
    /// for the machine's settings, perf or BPF).
    pub root: bool,
    /// CAP_PERFMON (or CAP_SYS_ADMIN) in the effective set, in the kernel's own user namespace.
    pub cap_perfmon: bool,
    /// CAP_SYS_NICE in the effective set (in a user namespace, over its own processes only).
    pub cap_sys_nice: bool,
    /// Running in a user namespace other than the kernel's own (a rootless container,
    /// `unshare -U`): uid 0 and capabilities there are not the machine's.
    #[serde(default)]
    pub user_namespace: bool,
    /// SCHED_FIFO could be set (tried, then undone).
    pub sched_fifo: bool,
    /// kernel.perf_event_paranoid.
    pub perf_event_paranoid: Option<i32>,
    /// RLIMIT_MEMLOCK soft limit in bytes (None = unlimited).
    pub memlock_limit: Option<u64>,
}

/// Whether hardware performance counters can be opened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PmuStatus {
    /// A hardware cycles counter opened for this thread.
    pub available: bool,
    /// Why not, when not.
    pub reason: Option<String>,
}

/// A condition that makes measurements less trustworthy, with what to do about it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Warning {
    /// Short name, e.g. `hypervisor`, `governor`.
    pub kind: String,
    /// What we saw.
    pub message: String,
    /// What the user can do.
    pub remedy: String,
}

/// The environment report stored with every run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    /// Privileges held.
    pub privileges: Privileges,
    /// Hardware counters.
    pub pmu: PmuStatus,
    /// 1-minute load average when the run started.
    pub loadavg: Option<f64>,
    /// Runnable tasks when the run started (from /proc/loadavg, includes us).
    pub runnable: Option<u32>,
    /// kernel.numa_balancing.
    pub numa_balancing: Option<String>,
    /// Kernel command line parameters that isolate CPUs (isolcpus, nohz_full, ...).
    pub isolation: Vec<String>,
    /// Noise sources and missing capabilities, each with a remedy.
    pub warnings: Vec<Warning>,
    /// What this process may use, and how the kernel pools and tiers memory.
    #[serde(default)]
    pub limits: Limits,
    /// Other work on the machine as the run began (none when /proc could not be read).
    #[serde(default)]
    pub other_work: Option<OtherWork>,
}

/// The cpu time other processes took over a short window as a run began: a runaway process or
/// a job beside the run, named, where a load average says only that something ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OtherWork {
    /// The window, in seconds.
    pub window_s: f64,
    /// The cpus' worth of time every other process took in it (1.0: one cpu busy throughout).
    pub cpus: f64,
    /// The busiest of them, most first: those that took at least [`OtherWork::NAMED`].
    pub busiest: Vec<BusyProcess>,
}

/// One process that took cpu time beside a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusyProcess {
    /// Its pid.
    pub pid: u32,
    /// Its command name (the kernel's comm).
    pub command: String,
    /// The cpus' worth of time it took.
    pub cpus: f64,
}

impl OtherWork {
    /// The least cpus' worth a process takes to be named (a tenth of a cpu).
    pub const NAMED: f64 = 0.1;
    /// The other work that competes with a run: a third of a cpu or more, as a probe counts
    /// contention.
    pub const COMPETES: f64 = 0.3;

    /// "runaway (pid 149) 0.98 cpus; 1.02 cpus in all": the busiest named, and the total.
    pub fn describe(&self) -> String {
        let named: Vec<String> = self
            .busiest
            .iter()
            .map(|p| format!("{} (pid {}) {:.2} cpus", p.command, p.pid, p.cpus))
            .collect();
        match named.is_empty() {
            true => format!("{:.2} cpus in all", self.cpus),
            false => format!("{}; {:.2} cpus in all", named.join(", "), self.cpus),
        }
    }
}

/// What the process may use and how the kernel pools and tiers memory, as a run found them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// The cpus and memory nodes this process may use, when fewer than the machine has (a
    /// cgroup cpuset, a Slurm step, taskset): `cpus 0-5 of 0-7; memory nodes 0 of 0-1`. Isolated
    /// cpus, left out of every default affinity, do not count as a restriction.
    pub cpuset: Option<String>,
    /// Huge page pools: (page size, pages, free pages).
    pub hugepages: Vec<(String, u64, u64)>,
    /// Memory tiers the kernel keeps (its name, its nodes), when it tiers memory.
    pub memory_tiers: Vec<(String, String)>,
    /// The cpus' worth of time a cgroup quota allows this process (0.5: half a cpu), when one
    /// applies.
    #[serde(default)]
    pub cpu_quota: Option<f64>,
    /// How many more processes and threads a pids cgroup allows, when one applies.
    #[serde(default)]
    pub pids_left: Option<u64>,
}

/// What an emulated CPU's timings are worth, said in warnings and in every timing's note.
pub const EMULATED: &str = "timings mean nothing there (every instruction is translated in software); topology, page placement and scheduling behaviour are real";

impl Fingerprint {
    /// Whether the CPU is emulated in software (QEMU's TCG), not run natively by a hypervisor.
    pub fn emulated_cpu(&self) -> bool {
        self.hypervisor.as_deref() == Some("QEMU (TCG)")
    }
}

impl Warning {
    /// A warning of `kind`: what was seen and what to do about it.
    pub fn new(kind: &str, message: String, remedy: &str) -> Warning {
        Warning {
            kind: kind.into(),
            message,
            remedy: remedy.into(),
        }
    }
}

/// One row of `oslab info --counters`: a counter, its definition here, and whether it opens.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Availability {
    /// Counter name.
    pub name: String,
    /// Its definition on this CPU (or why there is none).
    pub definition: String,
    /// `None` when it opens on this thread, else why not.
    pub unavailable: Option<String>,
}
