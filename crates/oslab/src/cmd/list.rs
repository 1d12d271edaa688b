//! `oslab list`: every probe, and whether it can run here ([`oslab_probes::registry::listing`]).

use super::{print_json, print_text};
use crate::cli::ListArgs;
use oslab_os::affinity::get_affinity;
use oslab_os::placement;
use oslab_probes::registry;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let m = oslab_os::machine::read(Duration::from_millis(10))?;
    let (allowed, isolated) = oslab_os::affinity::widened_to_isolated(get_affinity(0)?);
    let peer = placement::measuring(&m.topology, &allowed, &isolated)
        .and_then(|cpu| placement::peer(&m.topology, &allowed, cpu, &isolated));
    let listed = registry::listing(&m.environment, peer);
    if args.json {
        print_json(&listed)?;
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<(String, String, String, String, String)> = listed
        .into_iter()
        .map(|p| {
            let needs = match p.needs.is_empty() {
                true => "-".to_string(),
                false => p.needs.join(", "),
            };
            (p.id.into(), p.unit.into(), needs, p.here, p.about.into())
        })
        .collect();
    print_text(&oslab_report::views::probes(&table))?;
    Ok(ExitCode::SUCCESS)
}
