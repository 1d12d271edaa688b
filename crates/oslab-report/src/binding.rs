//! `oslab bind` for reading: where each rank goes and why, then the lines that put it there
//! (never wrapped: they are copied into job scripts; the prose around them is).

use crate::table::{add, new_table, right};
use oslab_core::binding::{Lines, Plan, Policy};
use oslab_core::cpuset::CpuSet;

/// The plan, what it rests on (`costs`: which run's measurements, or why none) and its lines.
pub fn text(plan: &Plan, lines: &Lines, costs: &str) -> String {
    let prose = |s: &str| match crate::table::width() {
        Some(w) => oslab_core::text::wrap(s, w as usize),
        None => s.to_string(),
    };
    let threads = plan.ranks.first().map_or(0, |r| r.cpus.len());
    let policy = match plan.policy {
        Policy::Compact => "compact: ranks side by side from the first package",
        Policy::Spread => "spread: ranks balanced over packages, then nodes, dies and L3s",
        Policy::ByCost => "by cost: spread, on the measured hand-over and memory latencies",
    };
    let mut out = prose(&format!(
        "{} x {}, {policy}\n{}\n",
        oslab_core::units::counted(plan.ranks.len(), "rank"),
        oslab_core::units::counted(threads, "thread"),
        match plan.shared_cores {
            0 => "each thread its own core".to_string(),
            1 => "1 core holds two threads or more (SMT siblings)".to_string(),
            n => format!("{n} cores hold two threads or more (SMT siblings)"),
        }
    ));
    let mut t = new_table(&["rank", "domain", "cpus", "memory"]);
    for r in &plan.ranks {
        add(
            &mut t,
            [
                r.rank.to_string(),
                r.domain.clone(),
                r.cpus.iter().copied().collect::<CpuSet>().to_list(),
                match r.memory.as_slice() {
                    [one] => format!("node {one}"),
                    many => format!(
                        "nodes {} (interleaved)",
                        many.iter().copied().collect::<CpuSet>().to_list()
                    ),
                },
            ],
        );
    }
    right(&mut t, &[0]);
    out.push_str(&format!("{t}\n"));
    out.push_str(&prose(&format!("costs: {costs}\n")));
    for n in &plan.notes {
        out.push_str(&prose(&format!("note: {n}\n")));
    }
    let block = |title: &str, ls: &[String]| {
        let body: String = ls.iter().map(|l| format!("  {l}\n")).collect();
        format!("\n{title}\n{body}")
    };
    out.push_str(&block("numactl, one line per rank:", &lines.numactl));
    out.push_str(&block(
        "Slurm, the whole node; then every node of an allocation of like nodes:",
        &[lines.srun.clone(), lines.srun_per_node.clone()],
    ));
    out.push_str(&block(
        "Open MPI (ppr when the plan is that regular; the wrapper below always):",
        &lines.openmpi,
    ));
    out.push_str(&block("Intel MPI:", std::slice::from_ref(&lines.intel_mpi)));
    out.push_str(&block("hwloc-bind, one line per rank:", &lines.hwloc_bind));
    out.push_str(&block(
        "OpenMP, each rank's environment (with the rank bound as above):",
        &lines.openmp,
    ));
    out.push_str(&block("likwid-pin, one line per rank:", &lines.likwid_pin));
    out.push_str(&prose(
        "\na wrapper for any launcher (its local rank from SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK or MPI_LOCALRANKID), saved as bind.sh and run as `srun --cpu-bind=none sh bind.sh PROGRAM` or `mpirun --bind-to none sh bind.sh PROGRAM`:\n",
    ));
    out.push_str(&lines.wrapper);
    oslab_core::text::trim_line_ends(&out).into_owned()
}
