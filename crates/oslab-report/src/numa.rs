//! The NUMA matrix as people read it: rows are cpu nodes, columns memory nodes; bandwidth (the
//! average of STREAM's four kernels), its ratio to the local cell, idle latency and its ratio,
//! and the kernel's SLIT distances beside them.

use oslab_core::catalog::id;
use oslab_core::model::Measurement;
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
    let mut out = format!("{title}\n{:>10}", "");
    for c in cols {
        out.push_str(&format!("{:>10}", format!("mem {c}")));
    }
    out.push('\n');
    for &r in rows {
        out.push_str(&format!("{:>10}", format!("cpu {r}")));
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

/// The matrix views of a run's `numa.matrix` measurements, or None when it has none.
pub fn matrix(ms: &[Measurement]) -> Option<String> {
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
    if rows.len() == 1 && cols.len() == 1 {
        out.push_str(
            "1x1: this machine has one NUMA node, so there is no remote cell to compare\n",
        );
    }
    Some(out)
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
        let text = matrix(&ms).unwrap();
        assert!(text.contains("mem 2"), "{text}");
        assert!(!text.contains("cpu 2"), "{text}");
        assert!(
            text.contains("0.50") && text.contains("0.25") && text.contains("1.50"),
            "{text}"
        );
        assert!(text.contains("SLIT"));
        assert!(matrix(&[]).is_none());
    }
}
