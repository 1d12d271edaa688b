//! The seed's evaluation, automated: a workload run N times without shuffling (the daemon in
//! monitor-only mode, so the lock contention is measured at the same cost) and N times with it,
//! interleaved; execution time per run, contention, shuffles, and the reduction with its
//! interval.

use crate::locks::{Choice, Monitor};
use crate::shuffle::{watch, Daemon};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// The built-in and external workloads for `threads` threads and `domains` cache domains; the
/// external ones only where their program is installed (`Err(name, why)` otherwise).
pub fn workloads(
    oslab: &str,
    threads: usize,
    domains: usize,
) -> Vec<Result<Workload, (String, String)>> {
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
pub struct Outcome {
    /// Its cost (seconds, or seconds per operation).
    pub cost: f64,
    /// Mean lock-wait fraction over the run's intervals.
    pub lock_fraction: f64,
    /// Shuffles performed.
    pub shuffles: u32,
    /// How lock waits were measured.
    pub method: String,
}

/// Runs `w` once under a daemon (`shuffle` false: monitor only), measuring every `interval`.
pub fn run_once(
    w: &Workload,
    domains: &[Vec<usize>],
    threshold: f64,
    interval: Duration,
    shuffle: bool,
    method: Choice,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Outcome>, String> {
    let started = Instant::now();
    let mut cmd = Command::new(&w.argv[0]);
    cmd.args(&w.argv[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    oslab_core::signals::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", w.argv[0]))?;
    let pid = child.id() as i32;
    let monitor = match Monitor::open(pid, method) {
        Ok(m) => m,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e.to_string());
        }
    };
    let method = monitor.method();
    let daemon = Daemon::new(monitor, domains.to_vec(), threshold, interval, !shuffle);
    let watched = watch(daemon, Some(&mut child), stop, &mut |_| {});
    if watched.as_ref().map_or(true, |w| w.interrupted) {
        let _ = child.kill();
        let _ = child.wait();
        return watched.map(|_| None).map_err(|e| e.to_string());
    }
    let watched = watched.map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
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
    Ok(Some(Outcome {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            0.1,
            Duration::from_millis(50),
            true,
            Choice::Auto,
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
            0.1,
            Duration::from_millis(50),
            true,
            Choice::Proxy,
            &|| false
        )
        .is_err());
    }
}
