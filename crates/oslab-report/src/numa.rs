//! The NUMA matrix as people read it: rows are cpu nodes, columns memory nodes; bandwidth (the
//! average of STREAM's four kernels), its ratio to the local cell, idle latency and its ratio,
//! and the kernel's SLIT distances beside them.

use oslab_core::catalog::id;
use oslab_core::model::Measurement;
use oslab_core::topology::HMAT_LATENCY;
use oslab_core::units::num;
use std::collections::BTreeMap;

type Cells = BTreeMap<(u64, u64), f64>;

fn cells(ms: &[Measurement], metric: &str, kernel: Option<&str>) -> Cells {
    ms.iter()
        .filter(|m| m.probe == id::NUMA_MATRIX && m.metric == metric && m.status.has_value())
        .filter(|m| {
            kernel.is_none_or(|k| m.params.get("kernel").and_then(|v| v.as_str()) == Some(k))
        })
        .filter_map(|m| {
            let c = m.params.get("cpu_node")?.as_u64()?;
            let n = m.params.get("mem_node")?.as_u64()?;
            Some(((c, n), m.summary.as_ref()?.median))
        })
        .collect()
}

fn grid(
    title: &str,
    rows: &[u64],
    cols: &[u64],
    value: impl Fn(u64, u64) -> Option<String>,
) -> String {
    let mut out = format!("{title}\n{:>14}", "");
    for c in cols {
        out.push_str(&format!("{:>10}", format!("mem {c}")));
    }
    out.push('\n');
    for &r in rows {
        out.push_str(&format!("{:>14}", format!("cpu node {r}")));
        for &c in cols {
            out.push_str(&format!(
                "{:>10}",
                value(r, c).unwrap_or_else(|| "-".into())
            ));
        }
        out.push('\n');
    }
    out
}

/// What the memory the matrix measured runs on: why a firmware table's order may not show in
/// the measured latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// A software-emulated cpu (QEMU TCG): every node's memory is the emulator's, all one.
    Emulated,
    /// A virtual machine: its nodes may lie on one host node, or move between them.
    Virtual,
    /// The machine itself.
    Metal,
}

impl Host {
    /// From a stored run: emulated where the environment warned so, virtual under a hypervisor.
    pub fn of(
        fingerprint: &serde_json::Value,
        env: Option<&oslab_core::machine::Environment>,
    ) -> Host {
        if env.is_some_and(|e| e.warnings.iter().any(|w| w.kind == "emulated")) {
            Host::Emulated
        } else if fingerprint.get("hypervisor").is_some_and(|h| !h.is_null()) {
            Host::Virtual
        } else {
            Host::Metal
        }
    }

    /// Why the measured order and the table's differ, most likely.
    fn why_not_seen(self) -> &'static str {
        match self {
            Host::Emulated => "the emulator (QEMU TCG) serves every node's memory alike, so no latency here can show the table's order: the table may well be right",
            Host::Virtual => "a virtual machine's nodes may share one host node (or move between them), which the table the hypervisor presents does not say",
            Host::Metal => "the firmware's table does not describe this machine's memory (common under SNC/NPS modes)",
        }
    }
}

/// The matrix views of a run's `numa.matrix` measurements, or None when it has none.
pub fn matrix(ms: &[Measurement], host: Host) -> Option<String> {
    let bw = cells(ms, "bandwidth", Some("average"));
    let lat = cells(ms, "latency", None);
    let distance: Cells = ms
        .iter()
        .filter(|m| m.probe == id::NUMA_MATRIX)
        .filter_map(|m| {
            let c = m.params.get("cpu_node")?.as_u64()?;
            let n = m.params.get("mem_node")?.as_u64()?;
            Some(((c, n), m.params.get("distance")?.as_f64()?))
        })
        .collect();
    let mut rows: Vec<u64> = distance.keys().map(|k| k.0).collect();
    let mut cols: Vec<u64> = distance.keys().map(|k| k.1).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    if rows.is_empty() {
        return None;
    }
    // Local = the cell on the diagonal; a row without one (no memory on its node) uses its best.
    let local = |t: &Cells, r: u64, higher_better: bool| {
        t.get(&(r, r)).copied().or_else(|| {
            let row = t.iter().filter(|(k, _)| k.0 == r).map(|(_, v)| *v);
            if higher_better {
                row.reduce(f64::max)
            } else {
                row.reduce(f64::min)
            }
        })
    };
    let mut out = String::new();
    out.push_str(&grid(
        "NUMA bandwidth, GB/s (average of STREAM copy/scale/add/triad, median)",
        &rows,
        &cols,
        |r, c| bw.get(&(r, c)).map(|v| num(*v)),
    ));
    out.push_str(&grid("bandwidth / local", &rows, &cols, |r, c| {
        Some(format!("{:.2}", bw.get(&(r, c))? / local(&bw, r, true)?))
    }));
    out.push_str(&grid(
        "idle latency, ns (chunk-random chain, median)",
        &rows,
        &cols,
        |r, c| lat.get(&(r, c)).map(|v| num(*v)),
    ));
    out.push_str(&grid("latency / local", &rows, &cols, |r, c| {
        Some(format!("{:.2}", lat.get(&(r, c))? / local(&lat, r, false)?))
    }));
    out.push_str(&grid("SLIT distance (kernel)", &rows, &cols, |r, c| {
        distance.get(&(r, c)).map(|d| format!("{d:.0}"))
    }));
    let hmat: Cells = ms
        .iter()
        .filter(|m| m.probe == id::NUMA_MATRIX && m.metric == "latency")
        .filter_map(|m| {
            let c = m.params.get("cpu_node")?.as_u64()?;
            let n = m.params.get("mem_node")?.as_u64()?;
            Some(((c, n), m.context.get(HMAT_LATENCY)?.as_f64()?))
        })
        .collect();
    if !hmat.is_empty() {
        let title = if hmat.len() == lat.len() {
            "HMAT read latency, ns (firmware, every pair)"
        } else {
            "HMAT read latency, ns (firmware; as the kernel gives it, from each memory's nearest cpus)"
        };
        out.push_str(&grid(title, &rows, &cols, |r, c| {
            hmat.get(&(r, c)).map(|d| format!("{d:.0}"))
        }));
    }
    for (source, reference) in [("SLIT", &distance), ("HMAT", &hmat)] {
        if let Some(line) = order_not_seen(source, reference, &lat, host) {
            out.push_str(&line);
        }
    }
    if rows.len() == 1 && cols.len() == 1 {
        out.push_str(
            "1x1: this machine has one NUMA node, so there is no remote cell to compare\n",
        );
    }
    Some(out)
}

/// A measured latency must be this much above another's to bear out a reference that puts its
/// node farther (two chases of one memory differ by a few percent).
const SEEN: f64 = 1.05;

/// The pairs of a row that `reference` (SLIT distances, HMAT latencies) orders, a memory node
/// nearer than another, which the measured latency does not bear out (the farther one not at
/// least [`SEEN`] times slower), as a warning line; None when every ordered pair is borne out.
/// A firmware table that disagrees with the machine is common under sub-NUMA clustering and NPS
/// modes, and in virtual machines, whose tables describe memory that is all one.
fn order_not_seen(source: &str, reference: &Cells, lat: &Cells, host: Host) -> Option<String> {
    let mut ordered = 0;
    let mut not_seen: Vec<String> = Vec::new();
    for (&(r, a), &ref_a) in reference {
        for (&(r2, b), &ref_b) in reference {
            if r2 != r || ref_a >= ref_b {
                continue;
            }
            let (Some(near), Some(far)) = (lat.get(&(r, a)), lat.get(&(r, b))) else {
                continue;
            };
            ordered += 1;
            if far / near < SEEN {
                not_seen.push(format!(
                    "from cpu node {r}, mem {b} ({ref_b:.0}) reads {:.2}x mem {a} ({ref_a:.0})",
                    far / near
                ));
            }
        }
    }
    if not_seen.is_empty() {
        return None;
    }
    let shown = not_seen.len().min(3);
    Some(format!(
        "warning: the measured latency does not bear out {source}'s order in {} of {ordered} pairs: {}{}; {}\n",
        not_seen.len(),
        not_seen[..shown].join("; "),
        if shown < not_seen.len() { "; ..." } else { "" },
        host.why_not_seen()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::{Status, Unit};
    use oslab_core::params;
    use oslab_core::Summary;

    fn m(metric: &str, cpu: u64, mem: u64, v: f64) -> Measurement {
        let mut x = Measurement::not_taken(
            "numa.matrix",
            params! {"cpu_node" => cpu, "mem_node" => mem, "distance" => if cpu == mem { 10 } else { 20 }, "kernel" => "average"},
            metric,
            Unit::GBps,
            Status::Ok,
        );
        x.summary = Summary::new(&[v, v, v]);
        x
    }

    #[test]
    fn ratios_are_to_the_local_cell_and_memory_only_nodes_are_columns() {
        let ms = vec![
            m("bandwidth", 0, 0, 40.0),
            m("bandwidth", 0, 1, 20.0),
            m("bandwidth", 0, 2, 10.0),
            m("latency", 0, 0, 100.0),
            m("latency", 0, 1, 150.0),
            m("bandwidth", 1, 0, 16.0),
            m("bandwidth", 1, 1, 32.0),
        ];
        let text = matrix(&ms, Host::Metal).unwrap();
        assert!(text.contains("mem 2"), "{text}");
        assert!(!text.contains("cpu 2"), "{text}");
        assert!(
            text.contains("0.50") && text.contains("0.25") && text.contains("1.50"),
            "{text}"
        );
        assert!(text.contains("SLIT"));
        // SLIT's order (10 < 20) is borne out: 150 ns against 100.
        assert!(!text.contains("warning"), "{text}");
        assert!(matrix(&[], Host::Metal).is_none());
    }

    #[test]
    fn a_firmware_order_the_latency_does_not_bear_out_is_warned_of() {
        // As in a QEMU guest: SLIT says 10 and 20, the HMAT 80 and 250 ns; every cell reads alike.
        let mut ms = vec![
            m("latency", 0, 0, 100.0),
            m("latency", 0, 1, 101.0),
            m("latency", 1, 0, 99.0),
            m("latency", 1, 1, 100.0),
        ];
        for (x, v) in ms.iter_mut().zip([80, 250, 250, 80]) {
            x.context.insert(HMAT_LATENCY.into(), v.into());
        }
        let text = matrix(&ms, Host::Emulated).unwrap();
        assert!(text.contains("HMAT read latency"), "{text}");
        assert!(
            text.contains("does not bear out SLIT's order in 2 of 2 pairs")
                && text.contains("from cpu node 0, mem 1 (20) reads 1.01x mem 0 (10)")
                && text.contains("does not bear out HMAT's order in 2 of 2 pairs")
                && text.contains("the emulator (QEMU TCG) serves every node's memory alike"),
            "{text}"
        );
    }
}
