//! `oslab shuffle-eval`: workloads run with and without shuffling
//! ([`oslab_sched::shuffle::eval::evaluate`]).

use super::session::Session;
use crate::cli::ShuffleEvalArgs;
use crate::error::usage;
use oslab_core::signals;
use oslab_sched::shuffle::domains;
use oslab_sched::shuffle::eval::{self, Request};
use std::process::ExitCode;

pub fn run(args: ShuffleEvalArgs) -> anyhow::Result<ExitCode> {
    let mut session = Session::open(false, None, None, &args.out)?;
    let doms = domains(&session.machine.topology, &session.allowed);
    let threads = args
        .threads
        .map_or(2 * session.allowed.len(), |t| t as usize);
    let me = std::env::current_exe()?.to_string_lossy().to_string();
    let list =
        eval::chosen(&me, threads, doms.len(), &args.command, &args.workload).map_err(usage)?;
    let req = Request {
        workloads: list,
        domains: doms,
        runs: args.runs as usize,
        threshold: args.locks.threshold,
        interval: args.interval,
        method: args.locks.method,
    };
    let e = eval::evaluate(&req, &signals::interrupted, &mut |l| eprintln!("{l}"));
    let text = format!("{threads} threads per workload; {}", e.text);
    session.finish(&e.measurements, &[], e.interrupted, Some(text))
}
