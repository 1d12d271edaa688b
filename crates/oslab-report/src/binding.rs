//! `oslab bind` for reading: where each rank goes and why, then the lines that put it there
//! (never wrapped: they are copied into job scripts).

use crate::table::{add, new_table, right};
use oslab_core::binding::{Lines, Plan, Policy};
use oslab_core::cpuset::CpuSet;

/// The plan, what it rests on (`costs`: which run's measurements, or why none) and its lines.
pub fn text(plan: &Plan, lines: &Lines, costs: &str) -> String {
    let threads = plan.ranks.first().map_or(0, |r| r.cpus.len());
    let policy = match plan.policy {
        Policy::Compact => "compact: ranks side by side from the first package",
        Policy::Spread => "spread: each rank its own package, node or L3",
        Policy::ByCost => "by cost: spread, on the measured hand-over and memory latencies",
    };
    let mut out = format!(
        "{} rank(s) x {threads} thread(s), {policy}\n{}\n",
        plan.ranks.len(),
        match plan.shared_cores {
            0 => "each thread its own core".to_string(),
            n => format!("{n} thread(s) on a core shared with an SMT sibling"),
        }
    );
    let mut t = new_table(&["rank", "domain", "cpus", "memory"]);
    for r in &plan.ranks {
        add(
            &mut t,
            [
                r.rank.to_string(),
                r.domain.clone(),
                r.cpus.iter().copied().collect::<CpuSet>().to_list(),
                format!("node {}", r.memory),
            ],
        );
    }
    right(&mut t, &[0]);
    out.push_str(&format!("{t}\ncosts: {costs}\n"));
    for n in &plan.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    let block = |title: &str, ls: &[String]| {
        let body: String = ls.iter().map(|l| format!("  {l}\n")).collect();
        format!("\n{title}\n{body}")
    };
    out.push_str(&block("numactl, one line per rank:", &lines.numactl));
    out.push_str(&block("Slurm:", std::slice::from_ref(&lines.srun)));
    out.push_str(&block(
        "OpenMP, each rank's environment (with the rank bound as above):",
        &lines.openmp,
    ));
    out.push_str(&block("likwid-pin, one line per rank:", &lines.likwid_pin));
    out
}
