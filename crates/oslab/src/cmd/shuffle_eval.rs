//! `oslab shuffle-eval`: workloads run with and without shuffling
//! ([`oslab_shuffle::eval::evaluate`]).

use super::session::{Pace, RecordedSession};
use crate::cli::ShuffleEvalArgs;
use crate::error::usage;
use oslab_os::signals;
use oslab_shuffle::eval;
use std::process::ExitCode;

pub fn run(args: ShuffleEvalArgs) -> anyhow::Result<ExitCode> {
    let mut session = RecordedSession::open(Pace::Full, None, None, &args.out)?;
    let me = std::env::current_exe()?.to_string_lossy().to_string();
    let (req, threads) = args
        .options
        .request(
            &session.machine.topology,
            &session.allowed,
            &me,
            &args.command,
        )
        .map_err(usage)?;
    let e = eval::evaluate(&req, &signals::interrupted, &mut |l| eprintln!("{l}"));
    let text = format!("{threads} threads per workload; {}", e.text);
    session.finish(&e.measurements, &[], e.interrupted, Some(text))
}
