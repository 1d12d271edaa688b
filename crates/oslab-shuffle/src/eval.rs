//! Shuffling evaluated: a workload run N times without shuffling (the daemon in
//! monitor-only mode, so the lock contention is measured at the same cost) and N times with it,
//! interleaved; execution time per run, contention, shuffles, and the reduction with its
//! interval.

use crate::live::LockWait;
use crate::locks::Monitor;
use crate::{watch, Daemon};
use oslab_core::catalog::id;
use oslab_core::model::{judged, Judge, Measurement, Status, Unit};
use oslab_core::params;
use oslab_core::stats::paired::{self, Arm, Pairs};
use oslab_core::{CpuSet, Topology};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Probe id of the evaluation's measurements.
pub const PROBE: &str = id::SHUFFLE_EVAL;

/// A program to evaluate on.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Short name.
    pub name: String,
    /// Command line.
    pub argv: Vec<String>,
    /// How its cost is read: wall seconds, or seconds per operation from its own report.
    pub score: Score,
    /// What to know when reading its results.
    pub note: Option<&'static str>,
}

/// What "time" means for a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// Wall time of a fixed amount of work.
    Wall,
    /// 1 / the "operations/sec" a time-bounded benchmark prints (perf bench futex).
    PerfBenchOps,
}

/// A workload to evaluate, or its name and why it cannot run here.
pub type Candidate = Result<Workload, (String, String)>;

/// What is evaluated: `command` when one is given, else the built-in and
/// installed workloads ([`workloads`]), kept to those `names` names when any are given.
fn chosen(
    oslab: &str,
    threads: usize,
    domains: usize,
    command: &[String],
    names: &[String],
) -> Result<Vec<Candidate>, String> {
    if !command.is_empty() {
        return Ok(vec![Ok(Workload {
            name: "command".into(),
            argv: command.to_vec(),
            score: Score::Wall,
            note: None,
        })]);
    }
    let mut list = workloads(oslab, threads, domains);
    let name = |w: &Candidate| match w {
        Ok(w) => w.name.clone(),
        Err((n, _)) => n.clone(),
    };
    let known: Vec<String> = list.iter().map(name).collect();
    if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
        return Err(format!(
            "no workload {unknown:?}; known: {}",
            known.join(", ")
        ));
    }
    if !names.is_empty() {
        list.retain(|w| names.contains(&name(w)));
    }
    Ok(list)
}

/// The built-in and external workloads for `threads` threads and `domains` cache domains; the
/// external ones only where their program is installed (`Err(name, why)` otherwise).
pub fn workloads(oslab: &str, threads: usize, domains: usize) -> Vec<Candidate> {
    let t = threads.to_string();
    let w = |name: &str, argv: Vec<String>, score| {
        Workload {
        name: name.into(),
        argv,
        score,
        note: name.starts_with("stress-ng").then_some(
            "stress-ng runs its workers as child processes; shuffle watches the threads of one process, so it sees none of their waits",
        ),
    }
    };
    let installed = |tool: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
    };
    let external = |tool: &str, name: &str, argv: Vec<String>, score| {
        if installed(tool) {
            Ok(w(name, argv, score))
        } else {
            Err((
                name.to_string(),
                format!("skipped: {tool} is not installed"),
            ))
        }
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let locks = (2 * domains).max(2).to_string();
    let lockbench = |k: &str| {
        s(&[
            oslab,
            "lockbench",
            "--threads",
            &t,
            "--locks",
            k,
            "--iterations",
            "40000",
        ])
    };
    vec![
        Ok(w("lockbench", lockbench(&locks), Score::Wall)),
        Ok(w("lockbench-hot", lockbench("1"), Score::Wall)),
        external(
            "sysbench",
            "sysbench-mutex",
            s(&[
                "sysbench",
                "mutex",
                &format!("--threads={t}"),
                "--mutex-locks=100000",
                "run",
            ]),
            Score::Wall,
        ),
        external(
            "sysbench",
            "sysbench-threads",
            s(&[
                "sysbench",
                "threads",
                &format!("--threads={t}"),
                "--thread-locks=2",
                "--events=2000",
                "--time=0",
                "run",
            ]),
            Score::Wall,
        ),
        external(
            "stress-ng",
            "stress-ng-mutex",
            s(&[
                "stress-ng",
                // One worker with T threads: with several workers stress-ng 0.15 often ends with
                // "could not create any pthreads" (exit 3) on a small machine.
                "--mutex",
                "1",
                "--mutex-procs",
                &threads.clamp(2, 64).to_string(),
                "--mutex-ops",
                "200000",
                "--quiet",
            ]),
            Score::Wall,
        ),
        external(
            "perf",
            "perf-futex-lock-pi",
            s(&["perf", "bench", "futex", "lock-pi", "-t", &t, "-r", "1"]),
            Score::PerfBenchOps,
        ),
    ]
}

/// One run of a workload.
#[derive(Debug, Clone)]
pub struct WorkloadRun {
    /// Its cost (seconds, or seconds per operation).
    pub cost: f64,
    /// Mean lock-wait fraction over the run's intervals.
    pub lock_fraction: f64,
    /// Shuffles performed.
    pub shuffles: u32,
    /// How lock waits were measured.
    pub method: String,
}

/// The moment process `pid`, our child, exits, seen by a thread that waits for it without
/// reaping it (`WNOWAIT`): the daemon notices an exit only at the end of its interval, which
/// would round every run time up to whole intervals.
fn exit_time(pid: i32) -> std::thread::JoinHandle<Instant> {
    std::thread::spawn(move || loop {
        // SAFETY: waitid fills the siginfo we pass; WNOWAIT leaves the child to be reaped.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Instant::now();
        }
    })
}

/// Runs `w` once under a daemon (`shuffle` false: monitor only), measuring every `interval`.
pub fn run_once(
    w: &Workload,
    domains: &[Vec<usize>],
    locks: &LockWait,
    interval: Duration,
    shuffle: bool,
    stop: &dyn Fn() -> bool,
) -> Result<Option<WorkloadRun>, String> {
    let started = Instant::now();
    let mut cmd = Command::new(&w.argv[0]);
    cmd.args(&w.argv[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    oslab_os::tree::Tree::contain(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", w.argv[0]))?;
    let pid = child.id() as i32;
    // Its process group (stress-ng's workers, a script's commands) is ended with it.
    let tree = oslab_os::tree::Tree::watch(pid);
    let exited = exit_time(pid);
    let monitor = match Monitor::open(pid, locks.method) {
        Ok(m) => m,
        Err(e) => {
            let _ = tree.end_child(&mut child, oslab_os::tree::GRACE);
            return Err(e.to_string());
        }
    };
    let method = monitor.method();
    let daemon = Daemon::new(
        monitor,
        domains.to_vec(),
        locks.threshold,
        interval,
        !shuffle,
    )
    .grouping(locks.grouping);
    let watched = watch(daemon, Some(&mut child), stop, &mut |_| {});
    if watched.as_ref().map_or(true, |w| w.interrupted) {
        let _ = tree.end_child(&mut child, oslab_os::tree::GRACE);
        return watched.map(|_| None).map_err(|e| e.to_string());
    }
    let watched = watched.map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    // What it left running in its group.
    tree.end(Duration::from_millis(200), || true);
    let wall = (exited.join().unwrap_or_else(|_| Instant::now()) - started).as_secs_f64();
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let last = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("{} failed: {} {}", w.name, out.status, last.trim()));
    }
    let cost = match w.score {
        Score::Wall => wall,
        Score::PerfBenchOps => {
            let text = String::from_utf8_lossy(&out.stdout);
            let ops = text
                .split("Averaged ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|&x| x > 0.0)
                .ok_or_else(|| {
                    format!("{}: no 'Averaged N operations/sec' in its output", w.name)
                })?;
            1.0 / ops
        }
    };
    let fr = &watched.summary.lock_fractions;
    Ok(Some(WorkloadRun {
        cost,
        lock_fraction: if fr.is_empty() {
            0.0
        } else {
            fr.iter().sum::<f64>() / fr.len() as f64
        },
        shuffles: watched.summary.shuffles,
        method,
    }))
}

/// How to evaluate.
#[derive(Debug, Clone)]
pub struct Request {
    /// The workloads (`Err(name, why)`: one that cannot run here, reported as skipped).
    pub workloads: Vec<Candidate>,
    /// The cache domains threads are regrouped into.
    pub domains: Vec<Vec<usize>>,
    /// Pairs of runs (without, with) per workload.
    pub runs: usize,
    /// Daemon interval.
    pub interval: Duration,
    /// When the daemon regroups, how it measures lock waits and groups threads.
    pub locks: LockWait,
}

/// What `oslab shuffle-eval` asks.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// Runs per workload and mode (without and with shuffling alternate).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100)))]
    pub runs: usize,
    /// Workloads to run (default: all installed): lockbench, lockbench-hot, sysbench-mutex,
    /// sysbench-threads, stress-ng-mutex, perf-futex-lock-pi.
    #[cfg_attr(feature = "clap", arg(long = "workload", value_name = "NAME"))]
    pub workloads: Vec<String>,
    /// Threads per workload (default: twice the cpus we may use).
    #[cfg_attr(feature = "clap", arg(long,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)))]
    pub threads: Option<usize>,
    /// Daemon interval (the paper's 200 ms).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "200ms",
        value_parser = oslab_core::units::parse_duration))]
    pub interval: Duration,
    /// Threshold and lock-wait method of the daemon.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub locks: LockWait,
}

impl Options {
    /// The evaluation of `command` (or of the chosen workloads when it is empty) on the cache
    /// domains of `allowed`; `oslab` runs the built-in workloads. Returns it with the threads
    /// per workload.
    pub fn request(
        &self,
        topology: &Topology,
        allowed: &CpuSet,
        oslab: &str,
        command: &[String],
    ) -> Result<(Request, usize), String> {
        let domains = super::domains(topology, allowed);
        let threads = self.threads.unwrap_or(2 * allowed.len());
        let workloads = chosen(oslab, threads, domains.len(), command, &self.workloads)?;
        let req = Request {
            workloads,
            domains,
            runs: self.runs,
            interval: self.interval,
            locks: self.locks,
        };
        Ok((req, threads))
    }
}

/// What an evaluation produced.
pub struct Evaluation {
    /// Per workload and mode: time, lock-wait share and shuffles; per workload the reduction.
    pub measurements: Vec<Measurement>,
    /// One line per workload with the verdict, and the methods used.
    pub text: String,
    /// Whether it was stopped (what completed is kept).
    pub interrupted: bool,
}

fn mode(arm: Arm) -> &'static str {
    match arm {
        Arm::A => "without",
        Arm::B => "with",
    }
}

/// Runs every workload `runs` times without and with shuffling, alternating; `stop` is polled,
/// `progress` hears of each run.
pub fn evaluate(
    req: &Request,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(String),
) -> Evaluation {
    let mut text = format!(
        "{} cache domain(s) among the cpus we may use, {} runs per mode\n",
        req.domains.len(),
        req.runs
    );
    if req.domains.len() < 2 {
        text.push_str("note: with one cache domain, shuffling can only re-pin threads inside it: expect little or no gain here\n");
    }
    let not_taken = |name: &str, status| {
        Measurement::not_taken(
            PROBE,
            params! {"workload" => name},
            "time",
            Unit::Ns,
            status,
        )
    };
    let mut ms = Vec::new();
    let mut interrupted = false;
    let mut methods = BTreeSet::new();
    for w in &req.workloads {
        let w = match w {
            Ok(w) => w,
            Err((name, why)) => {
                let why = why.trim_start_matches("skipped: ").to_string();
                ms.push(not_taken(name, Status::Skipped(why)));
                continue;
            }
        };
        let pairs = paired::alternate(req.runs, |arm, r| {
            let shuffle = arm == Arm::B;
            let o = run_once(w, &req.domains, &req.locks, req.interval, shuffle, stop)?;
            if let Some(o) = &o {
                progress(format!(
                    "{} {} run {}/{}: {:.3} s, lock wait {:.1}%, {} shuffles",
                    w.name,
                    mode(arm),
                    r + 1,
                    req.runs,
                    o.cost,
                    o.lock_fraction * 100.0,
                    o.shuffles
                ));
            }
            Ok::<_, String>(o)
        });
        match pairs {
            Ok(pairs) => {
                summarise(&mut text, &mut ms, w, &pairs);
                methods.extend(pairs.a.iter().chain(&pairs.b).map(|o| o.method.clone()));
                if pairs.stopped {
                    interrupted = true;
                    break;
                }
            }
            Err(e) => ms.push(not_taken(&w.name, Status::Failed(e))),
        }
    }
    for m in &methods {
        let _ = writeln!(text, "lock waits measured by {m}");
    }
    Evaluation {
        measurements: ms,
        text,
        interrupted,
    }
}

fn summarise(
    text: &mut String,
    ms: &mut Vec<Measurement>,
    w: &Workload,
    pairs: &Pairs<WorkloadRun>,
) {
    let unit = match w.score {
        Score::Wall => "s",
        Score::PerfBenchOps => "s per op",
    };
    // The reduction first (the answer: `show`'s main figure is a probe's first metric), each
    // arm's own figures after it.
    let mut per_arm = Vec::new();
    for (arm, runs) in [(Arm::A, &pairs.a), (Arm::B, &pairs.b)] {
        let p = params! {"workload" => w.name.clone(), "mode" => mode(arm)};
        let row = |metric: &str, unit, f: &dyn Fn(&WorkloadRun) -> f64, note: Option<String>| {
            let samples: Vec<f64> = runs.iter().map(f).collect();
            judged(
                PROBE,
                p.clone(),
                metric,
                unit,
                &samples,
                note,
                Judge::Median,
            )
        };
        let what = format!("{unit} of the workload, one sample per run");
        per_arm.push(row("time", Unit::Ns, &|o| o.cost * 1e9, Some(what)));
        per_arm.push(row(
            "lock_fraction",
            Unit::Share,
            &|o| o.lock_fraction,
            None,
        ));
        per_arm.push(row(
            "shuffles",
            Unit::Count,
            &|o| f64::from(o.shuffles),
            None,
        ));
    }
    // Reduction = (without - with) / without, per pair.
    let reductions = pairs.differences(|o| -o.cost);
    let reductions: Vec<f64> = reductions
        .iter()
        .zip(&pairs.a)
        .map(|(d, a)| d / a.cost)
        .collect();
    let mean = |v: &[WorkloadRun], f: fn(&WorkloadRun) -> f64| {
        v.iter().map(f).sum::<f64>() / v.len().max(1) as f64
    };
    let verdict = paired::verdict_text(&reductions, |v| format!("{:+.1}%", v * 100.0));
    let (wait_a, wait_b) = (
        mean(&pairs.a, |o| o.lock_fraction),
        mean(&pairs.b, |o| o.lock_fraction),
    );
    let shuffles = mean(&pairs.b, |o| f64::from(o.shuffles));
    let effect = effect(&reductions, wait_a, wait_b, shuffles);
    let _ = writeln!(
        text,
        "{:<20} without {:.4} {unit} (lock wait {:.1}%), with {:.4} {unit} (lock wait {:.1}%, {:.1} shuffles per run): reduction {verdict}{}",
        w.name,
        mean(&pairs.a, |o| o.cost),
        wait_a * 100.0,
        mean(&pairs.b, |o| o.cost),
        wait_b * 100.0,
        shuffles,
        effect.map_or(String::new(), |e| format!("\n{:<20} {e}", "")),
    );
    // A share, so a loss reads as a negative percentage just as a gain reads as a positive one.
    let m = paired::measurement(
        PROBE,
        params! {"workload" => w.name.clone()},
        "reduction",
        Unit::Share,
        &reductions,
        format!("reduction {verdict}"),
    );
    ms.push(m);
    ms.extend(per_arm);
}

/// Lock-wait points shuffling may add before it is said to have raised the wait: two runs of a
/// workload differ by a few points honestly.
const WAIT_RISE: f64 = 0.05;

/// What the paired runs say shuffling did, when it is more than the reduction's verdict: a
/// difference with no thread moved is the daemon's watching (or noise), not shuffling; slower
/// beyond doubt (the reductions' interval below zero) is worse; a lock wait that rose (by
/// [`WAIT_RISE`] and a tenth) is said beside the time's verdict, which it does not override.
fn effect(reductions: &[f64], wait_without: f64, wait_with: f64, shuffles: f64) -> Option<String> {
    let verdict = paired::PairedVerdict::of(reductions);
    let slower = verdict.is_some_and(|v| v.high < 0.0);
    let faster = verdict.is_some_and(|v| v.low > 0.0);
    if shuffles == 0.0 {
        return Some(match slower || faster {
            true => "no thread was moved (0 shuffles): the difference is the daemon's watching or the host, not shuffling".into(),
            false => "no thread was moved (0 shuffles)".into(),
        });
    }
    let wait =
        (wait_with > wait_without + WAIT_RISE && wait_with > wait_without * 1.1).then(|| {
            format!(
                "lock wait rose from {:.1}% to {:.1}%",
                wait_without * 100.0,
                wait_with * 100.0
            )
        });
    match (slower, faster, wait) {
        (true, _, None) => {
            Some("shuffling made it worse: slower in every plausible reading".into())
        }
        (true, _, Some(w)) => Some(format!(
            "shuffling made it worse: slower in every plausible reading; {w}"
        )),
        (_, true, Some(w)) => Some(format!("faster with shuffling, though its {w}")),
        (_, false, Some(w)) => Some(format!(
            "shuffling raised the lock wait: {w}; the time changed within noise"
        )),
        (false, _, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::Choice;

    #[test]
    fn a_loss_is_worse_a_rising_wait_is_said_and_no_shuffle_is_no_effect_of_shuffling() {
        assert_eq!(effect(&[0.05, 0.04, 0.06], 0.10, 0.11, 2.0), None);
        let why = effect(&[0.01, -0.02, 0.0], 0.08, 0.40, 2.0).unwrap();
        assert!(
            why.contains("from 8.0% to 40.0%") && !why.contains("worse"),
            "{why}"
        );
        let why = effect(&[-0.10, -0.12, -0.11, -0.09], 0.3, 0.3, 2.0).unwrap();
        assert!(why.contains("made it worse: slower"), "{why}");
        // Faster while the lock wait rose (perf bench's futex-lock-pi read +11.4%): not worse.
        let why = effect(&[0.10, 0.12, 0.11], 0.10, 0.40, 3.0).unwrap();
        assert!(why.starts_with("faster") && !why.contains("worse"), "{why}");
        // 47% slower with no thread moved is not shuffling's doing.
        let why = effect(&[-0.47, -0.45, -0.49], 0.3, 0.3, 0.0).unwrap();
        assert!(
            why.contains("not shuffling") && !why.contains("worse"),
            "{why}"
        );
    }

    #[test]
    fn a_loss_reads_as_a_negative_share_even_from_two_pairs() {
        // 117.0 s with shuffling against 67.6 s without, twice: a 73% loss, not ≈0.
        let m = paired::measurement(
            PROBE,
            Default::default(),
            "reduction",
            Unit::Share,
            &[-0.73, -0.71],
            "x".into(),
        );
        assert!(!m.difference_spans_zero(), "{m:?}");
        assert!(m.status.has_value() && m.summary.as_ref().unwrap().median < -0.7);
        let gain = paired::measurement(
            PROBE,
            Default::default(),
            "reduction",
            Unit::Share,
            &[0.07, 0.075, 0.072],
            "x".into(),
        );
        let v = oslab_core::units::value(gain.summary.unwrap().median, gain.unit);
        assert_eq!(v, "7.20 %");
    }

    fn locks(method: Choice) -> LockWait {
        LockWait {
            threshold: 0.1,
            method,
            grouping: Default::default(),
        }
    }

    #[test]
    fn missing_tools_are_skipped_with_the_reason() {
        let ws = workloads("/bin/oslab", 4, 2);
        assert!(ws[0].as_ref().unwrap().argv.contains(&"4".to_string()));
        assert_eq!(ws[1].as_ref().unwrap().argv.last().unwrap(), "40000");
        for w in &ws {
            if let Err((name, why)) = w {
                assert!(why.starts_with("skipped: ") && !name.is_empty());
            }
        }
    }

    #[test]
    fn a_run_of_a_real_program_is_timed_and_watched() {
        let w = Workload {
            name: "sleep".into(),
            argv: vec!["sleep".into(), "0.3".into()],
            score: Score::Wall,
            note: None,
        };
        let o = run_once(
            &w,
            &[vec![0]],
            &locks(Choice::Auto),
            Duration::from_millis(50),
            true,
            &|| false,
        )
        .unwrap()
        .unwrap();
        assert!(o.cost >= 0.3 && o.cost < 5.0, "{o:?}");
        assert_eq!(o.shuffles, 0, "a sleeping process waits on no lock");
        let bad = Workload {
            name: "x".into(),
            argv: vec!["/no/such".into()],
            score: Score::Wall,
            note: None,
        };
        assert!(run_once(
            &bad,
            &[vec![0]],
            &locks(Choice::Proxy),
            Duration::from_millis(50),
            true,
            &|| false
        )
        .is_err());
    }
}
