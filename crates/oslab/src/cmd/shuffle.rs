//! `oslab shuffle`: the lock-contention shuffler on a live process.

use super::session::Session;
use crate::cli::{ShuffleArgs, ShuffleCommand, ShuffleSimulateArgs};
use crate::error::usage;
use oslab_core::signals;
use oslab_sched::shuffle::locks::{self, MonitorError};
use oslab_sched::shuffle::{self, Daemon, Setting};
use std::process::ExitCode;

pub fn run(args: ShuffleArgs) -> anyhow::Result<ExitCode> {
    if let Some(ShuffleCommand::Simulate(a)) = args.simulate {
        return simulate(a);
    }
    if let Some(pid) = args.pid {
        if pid <= 0 {
            return Err(usage(format!("--pid {pid}: not a process id")));
        }
        locks::threads(pid).map_err(|e| match e {
            MonitorError::Gone(_) => usage(format!("--pid {pid}: no such process")),
            other => anyhow::anyhow!("{other}"),
        })?;
    }
    let mut session = Session::open(false, None, None, &args.out)?;
    let mut child = None;
    let pid = match args.pid {
        Some(p) => p,
        None => {
            let mut cmd = std::process::Command::new(&args.command[0]);
            cmd.args(&args.command[1..]);
            // The command we started (and pinned) dies with us, even if we are killed.
            oslab_core::signals::die_with_parent(&mut cmd);
            if args.out.json {
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
    let (allowed, monitor) = match shuffle::prepare(pid, args.monitor_only, args.locks.method) {
        Ok(p) => p,
        Err(e) => {
            if let Some(mut c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
            return Err(anyhow::anyhow!(e));
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
    )
    .recording(args.pid.is_some());
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
    let setting = Setting {
        pid,
        domains: domains.len(),
        threshold: args.locks.threshold,
        interval: args.interval,
        monitor_only: args.monitor_only,
        method: method.to_string(),
    };
    let ms = summary.measurements(&setting);
    let text = summary.text(&setting);
    session.finish(&ms, &timeline, interrupted, Some(text))
}

/// `oslab shuffle simulate`: the study on a simulated machine, stored as a run.
fn simulate(a: ShuffleSimulateArgs) -> anyhow::Result<ExitCode> {
    let mut session = Session::open(true, None, None, &a.out)?.simulation();
    let t = std::time::Instant::now();
    let study = shuffle::study::study(&a.request, &signals::interrupted);
    eprintln!("simulated in {:.1} s", t.elapsed().as_secs_f64());
    let text = oslab_report::table::doc(&study.doc());
    session.finish(&study.measurements(), &[], study.interrupted, Some(text))
}
