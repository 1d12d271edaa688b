//! `oslab fleet`: the suite on every node of a Slurm cluster, and one view of the results
//! ([`oslab_fleet`] holds the logic and the results layout).

mod collect;
mod submit;
mod summary;
mod task;

use crate::cli::{FleetArgs, FleetCommand};
use std::process::ExitCode;

pub fn run(args: FleetArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        FleetCommand::Submit(a) => submit::run(a),
        FleetCommand::Collect(a) => collect::run(a),
        FleetCommand::Summary(a) => summary::run(a),
        FleetCommand::History(a) => summary::history(a),
        FleetCommand::Reference(a) => summary::reference(a),
        FleetCommand::Task(a) => task::run(a),
    }
}
