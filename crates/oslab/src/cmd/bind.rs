//! `oslab bind`: where R ranks x T threads should run here, and the lines that put them there.

use super::{print_json, print_raw, store};
use crate::cli::BindArgs;
use crate::error::usage;
use oslab_core::binding;
use std::process::ExitCode;

pub fn run(args: BindArgs) -> anyhow::Result<ExitCode> {
    let (topology, host, allowed) = match oslab_os::machine::planned(args.topology.as_deref()) {
        Err(oslab_os::machine::PlannedError::File(why)) => return Err(usage(why)),
        planned => planned?,
    };
    let costs = store().measured_costs(&host, &topology);
    let (ranks, threads, policy) = (args.ranks, args.threads, args.policy);
    let plan = binding::plan(&topology, &allowed, ranks, threads, policy, &costs)
        .map_err(|e| usage(e.to_string()))?;
    let (lines, from) = (binding::lines(&plan, &args.program), costs.describe(&host));
    if args.json {
        print_json(&serde_json::json!({ "plan": plan, "lines": lines, "costs": from }))?;
    } else {
        // Escaped as all text, never wrapped: the lines are copied into job scripts.
        let text = oslab_report::binding::text(&plan, &lines, &from);
        print_raw(&oslab_core::text::for_terminal(&text))?;
    }
    Ok(ExitCode::SUCCESS)
}
