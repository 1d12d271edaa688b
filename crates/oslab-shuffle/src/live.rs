//! The shuffler on a live process: the process watched (one already running, or a command
//! started for the watch, which ends with us), the daemon set up over the cache domains it may
//! use, and the watch until it ends or is stopped, as measurements and a timeline.

use super::locks::{self, Choice, MonitorError};
use super::{domains, prepare, watch, Daemon, Setting};
use oslab_core::model::{Measurement, TimelineEvent};
use oslab_core::Topology;
use oslab_os::pending;
use oslab_os::tree::Tree;
use std::process::{Child, Command};
use std::time::Duration;

/// How the daemon measures lock waits and when it acts (`shuffle` and `shuffle-eval`).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct LockWait {
    /// Lock-wait share of thread time above which threads are regrouped, e.g. 10%.
    #[cfg_attr(feature = "clap", arg(long, default_value = "10%",
        value_parser = oslab_core::units::parse_share))]
    pub threshold: f64,
    /// How to measure lock waits: ebpf (exact, needs root or CAP_BPF+CAP_PERFMON), proxy
    /// (sampling /proc), or auto (eBPF when it loads, else the proxy, saying why).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value = "auto", value_name = "auto|ebpf|proxy")
    )]
    pub method: Choice,
    /// How threads are grouped: lock-time (the paper's, the default: sorted by lock-wait share
    /// and cut into one group per domain) or lock (oslab's: the threads of one lock share a cache
    /// domain, as many as it has cpus; the lock is the futex word each waits on; better where
    /// locks are contended alike, which lock time cannot tell apart).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value = "lock-time", value_name = "lock-time|lock")
    )]
    pub grouping: super::Grouping,
}

/// How the daemon watches one process.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Watch {
    /// How often to measure and decide, e.g. 200ms.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "200ms",
        value_parser = oslab_core::units::parse_duration))]
    pub interval: Duration,
    /// Threshold and lock-wait method.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub locks: LockWait,
    /// Measure and decide, but never move a thread (to measure the daemon's own cost).
    #[cfg_attr(feature = "clap", arg(long))]
    pub monitor_only: bool,
}

/// The process watched.
pub enum Process {
    /// A process that was running before (its decisions are recorded on the timeline).
    Running(i32),
    /// A command started for the watch, with its process group.
    Started(Child, Tree),
}

impl Process {
    /// A running process, if there is one of that id.
    pub fn running(pid: i32) -> Result<Process, String> {
        if pid <= 0 {
            return Err(format!("--pid {pid}: not a process id"));
        }
        match locks::threads(pid) {
            Err(MonitorError::Gone(_)) => Err(format!("--pid {pid}: no such process")),
            Err(e) => Err(e.to_string()),
            Ok(_) => Ok(Process::Running(pid)),
        }
    }

    /// Starts `argv`, which dies with us even if we are killed; its standard output goes to our
    /// standard error when `quiet_stdout` (ours carries JSON).
    pub fn start(argv: &[String], quiet_stdout: bool) -> Result<Process, String> {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        Tree::contain(&mut cmd);
        if quiet_stdout {
            use std::os::fd::AsFd;
            let err = std::io::stderr().as_fd().try_clone_to_owned();
            cmd.stdout(err.map_err(|e| e.to_string())?);
        }
        cmd.spawn()
            .map(|c| {
                let tree = Tree::watch(c.id() as i32);
                Process::Started(c, tree)
            })
            .map_err(|e| format!("cannot start {:?}: {e}", argv[0]))
    }

    fn pid(&self) -> i32 {
        match self {
            Process::Running(pid) => *pid,
            Process::Started(c, _) => c.id() as i32,
        }
    }

    /// Ends a command we started and reaps it: when the watch was stopped, its whole process
    /// group (SIGTERM, then SIGKILL after [`oslab_os::tree::GRACE`]); when it ended by itself,
    /// what it left running in its group.
    fn end(self, interrupted: bool) -> std::io::Result<()> {
        if let Process::Started(mut c, tree) = self {
            let grace = if interrupted {
                oslab_os::tree::GRACE
            } else {
                std::time::Duration::from_millis(200)
            };
            tree.end_child(&mut c, grace)?;
        }
        Ok(())
    }
}

/// The claim to shuffle running process `pid` (known by its pid and start time); none where
/// no claim can be kept (no state directory of ours: nor can the originals be recorded, which
/// is said when it matters), an error when another oslab holds it.
fn claim_target(pid: i32) -> Result<Option<pending::Claim>, String> {
    let start = pending::Thread::now(pid)
        .ok_or_else(|| format!("process {pid} does not exist"))?
        .start;
    match pending::claim(&pending::default_file(), &format!("shuffle-{pid}-{start}")) {
        Ok(Ok(c)) => Ok(Some(c)),
        Ok(Err(holder)) => Err(format!(
            "{} already shuffles process {pid}: one daemon at a time (a second would take the first's pins for the threads' own affinities)",
            holder.map_or("another oslab".to_string(), |h| format!("oslab pid {h}"))
        )),
        Err(_) => Ok(None),
    }
}

/// What a watch produced.
pub struct Live {
    /// Lock-wait shares, shuffles, before/after, the daemon's cost.
    pub measurements: Vec<Measurement>,
    /// Its decisions.
    pub timeline: Vec<TimelineEvent>,
    /// The watch in words.
    pub text: String,
    /// Whether `stop()` ended it before the target did.
    pub interrupted: bool,
}

/// Watches `target` on `topology` until it ends or `stop()` says so, printing each interval's
/// status with `status`. A started command is ended and reaped on every path.
pub fn live(
    w: &Watch,
    mut target: Process,
    topology: &Topology,
    stop: &dyn Fn() -> bool,
    status: &mut dyn FnMut(&str),
) -> Result<Live, String> {
    let pid = target.pid();
    let (allowed, monitor) = match prepare(pid, w.monitor_only, w.locks.method) {
        Ok(p) => p,
        Err(e) => {
            let _ = target.end(true);
            return Err(e);
        }
    };
    // One daemon per running process: a second would take the first's pins for the originals
    // and leave its threads pinned when both end.
    let _claim = match (&target, w.monitor_only) {
        (Process::Running(_), false) => claim_target(pid)?,
        _ => None,
    };
    let domains = domains(topology, &allowed);
    let method = monitor.method().to_string();
    status(&format!("lock waits measured by {method}"));
    let daemon = Daemon::new(
        monitor,
        domains.clone(),
        w.locks.threshold,
        w.interval,
        w.monitor_only,
    )
    .recording(matches!(target, Process::Running(_)))
    .grouping(w.locks.grouping);
    let child = match &mut target {
        Process::Started(c, _) => Some(c),
        Process::Running(_) => None,
    };
    let watched = watch(daemon, child, stop, status);
    let interrupted = watched.as_ref().map_or(true, |w| w.interrupted);
    let ended = target.end(interrupted);
    let watched = watched.map_err(|e| e.to_string())?;
    ended.map_err(|e| e.to_string())?;
    let setting = Setting {
        pid,
        domains: domains.len(),
        threshold: w.locks.threshold,
        interval: w.interval,
        monitor_only: w.monitor_only,
        method,
        grouping: w.locks.grouping,
    };
    Ok(Live {
        measurements: watched.summary.measurements(&setting),
        text: watched.summary.text(&setting),
        timeline: watched.timeline,
        interrupted: watched.interrupted,
    })
}
