//! `oslab shuffle`: the lock-contention shuffler on a live process (seed 001).

use super::session::Session;
use crate::cli::ShuffleArgs;
use crate::error::usage;
use oslab_core::affinity::{get_affinity, set_affinity};
use oslab_core::model::{Measurement, Unit};
use oslab_core::{params, signals, CpuSet, Status};
use oslab_probes::probe::judged;
use oslab_sched::locks::{self, Monitor, MonitorError};
use oslab_sched::shuffle::{self, Daemon};
use std::process::ExitCode;

pub fn run(args: ShuffleArgs) -> anyhow::Result<ExitCode> {
    if let Some(pid) = args.pid {
        if pid <= 0 {
            return Err(usage(format!("--pid {pid}: not a process id")));
        }
        locks::threads(pid).map_err(|e| match e {
            MonitorError::Gone(_) => usage(format!("--pid {pid}: no such process")),
            other => anyhow::anyhow!("{other}"),
        })?;
    }
    let mut session = Session::open(false, None, None, &args.store)?;
    let mut child = None;
    let pid = match args.pid {
        Some(p) => p,
        None => {
            let mut cmd = std::process::Command::new(&args.command[0]);
            cmd.args(&args.command[1..]);
            // The command we started (and pinned) dies with us, even if we are killed.
            oslab_core::signals::die_with_parent(&mut cmd);
            if args.json {
                // Our standard output carries the JSON: the command's goes to standard error.
                use std::os::fd::AsFd;
                cmd.stdout(std::io::stderr().as_fd().try_clone_to_owned()?);
            }
            let c = cmd
                .spawn()
                .map_err(|e| usage(format!("cannot start {:?}: {e}", args.command[0])))?;
            let p = c.id() as i32;
            child = Some(c);
            p
        }
    };
    let (allowed, monitor) = match prepare(pid, &args) {
        Ok(p) => p,
        Err(e) => {
            if let Some(mut c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
            return Err(e);
        }
    };
    let domains = shuffle::domains(&session.machine.topology, &allowed);
    let method = monitor.method();
    eprintln!("lock waits measured by {method}");
    let daemon = Daemon::new(
        monitor,
        domains.clone(),
        args.locks.threshold,
        args.interval,
        args.monitor_only,
    );
    let watched = shuffle::watch(daemon, child.as_mut(), &signals::interrupted, &mut |l| {
        eprintln!("{l}")
    })?;
    let (summary, timeline, interrupted) = (watched.summary, watched.timeline, watched.interrupted);
    if let Some(mut c) = child {
        if interrupted {
            // We started it: it ends with us (SIGTERM, then reaped).
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        c.wait()?;
    }
    let base = params! {
        "pid" => pid,
        "domains" => domains.len(),
        "threshold" => args.locks.threshold,
        "interval_ms" => args.interval.as_millis() as u64,
        "mode" => if args.monitor_only { "monitor-only" } else { "shuffle" },
        "method" => if method.starts_with("eBPF") { "ebpf" } else { "proxy" },
    };
    let one_domain = (domains.len() < 2).then_some(
        "the target may use one cache domain only: regrouping cannot separate anything on this machine",
    );
    let single = |metric: &str, unit: Unit, v: f64, note: String| {
        let mut m = judged(
            "shuffle",
            base.clone(),
            metric,
            unit,
            &[v],
            Some(note),
            None,
        );
        m.status = Status::Ok;
        m
    };
    let mut ms: Vec<Measurement> = vec![judged(
        "shuffle",
        base.clone(),
        "lock_fraction",
        Unit::Ratio,
        &summary.lock_fractions,
        Some(format!("per interval; method: {method}")),
        None,
    )];
    ms.push(single(
        "shuffles",
        Unit::Count,
        summary.shuffles as f64,
        one_domain.unwrap_or("placements applied").to_string(),
    ));
    if let Some(b) = summary.before {
        ms.push(single(
            "lock_before",
            Unit::Ratio,
            b,
            "mean lock-wait fraction before the first shuffle".into(),
        ));
    }
    if let Some(a) = summary.after {
        ms.push(single(
            "lock_after",
            Unit::Ratio,
            a,
            "mean lock-wait fraction after the first shuffle".into(),
        ));
    }
    if let Some(o) = summary.overhead {
        ms.push(single(
            "overhead",
            Unit::Ratio,
            o,
            "the daemon's CPU time / the target's CPU time".into(),
        ));
    }
    let text = format!(
        "shuffle summary: {} intervals, {} shuffles, lock wait {} before / {} after, daemon overhead {}, {} affinities restored\nmethod: {}\n{}",
        summary.intervals,
        summary.shuffles,
        pct(summary.before),
        pct(summary.after),
        pct(summary.overhead),
        summary.restored,
        method,
        one_domain.unwrap_or("")
    );
    session.finish(&ms, &timeline, interrupted, args.json, Some(text))
}

/// The target's CPUs and its lock monitor, or why it cannot be watched (and moved).
fn prepare(pid: i32, args: &ShuffleArgs) -> anyhow::Result<(CpuSet, Monitor)> {
    let allowed =
        get_affinity(pid).map_err(|e| anyhow::anyhow!("cannot read the affinity of {pid}: {e}"))?;
    if !args.monitor_only {
        // Setting it to what it is: fails now, not half way, when we may not move its threads.
        set_affinity(pid, &allowed).map_err(|e| {
            anyhow::anyhow!(
                "may not change the affinity of process {pid}: {e} (another user's process: run as its owner or root, or use --monitor-only)"
            )
        })?;
    }
    Ok((allowed, Monitor::open(pid, args.locks.method)?))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}
