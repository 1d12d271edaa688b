//! `oslab list`.

use super::{print_json, print_text};
use crate::cli::ListArgs;
use oslab_core::affinity::get_affinity;
use oslab_core::machine::Machine;
use oslab_core::placement;
use oslab_probes::runner::gate;
use oslab_probes::{registry, Need};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let m = Machine::read(Duration::from_millis(10))?;
    let allowed = get_affinity(0)?;
    let peer = placement::measuring(&m.topology, &allowed)
        .and_then(|cpu| placement::peer(&m.topology, &allowed, cpu));
    let rows: Vec<serde_json::Value> = registry::all()
        .into_iter()
        .map(|p| {
            let here = match gate(p, &m.environment, peer) {
                Some(why) => format!("skipped: {why}"),
                None if p.needs.contains(&Need::PeerCpu) && peer.is_none() => {
                    "partly: no second cpu".to_string()
                }
                None => "yes".to_string(),
            };
            serde_json::json!({
                "id": p.id,
                "about": p.about,
                "unit": p.unit.symbol(),
                "needs": p.needs.iter().map(Need::label).collect::<Vec<_>>(),
                "here": here,
            })
        })
        .collect();
    if args.json {
        print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<(String, String, String, String, String)> = rows
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            let needs: Vec<&str> = r["needs"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            let needs = if needs.is_empty() {
                "-".to_string()
            } else {
                needs.join(", ")
            };
            (s("id"), s("unit"), needs, s("here"), s("about"))
        })
        .collect();
    print_text(&oslab_report::table::probes(&table))?;
    Ok(ExitCode::SUCCESS)
}
