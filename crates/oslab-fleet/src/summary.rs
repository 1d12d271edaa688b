//! One view of a fleet run: the same measurements taken on many nodes, each node's value against
//! the fleet median, and the nodes that stand out by a robust z-score (median and MAD, so one bad
//! node cannot hide itself by inflating the spread). The slow node with a misconfigured governor or
//! a bad DIMM is what users look for.

use oslab_core::model::{Measurement, Unit};
use oslab_core::stats::compare::key;
use oslab_core::stats::{median, robust_z, OUTLIER_Z};
use serde::Serialize;

/// One node's run.
#[derive(Debug, Clone)]
pub struct NodeRun {
    /// Node name (the Slurm node).
    pub node: String,
    /// Its run id in the store.
    pub run_id: i64,
    /// Its measurements.
    pub measurements: Vec<Measurement>,
    /// Its machine's shape (`Topology::shape`), when the run recorded it.
    pub shape: Option<String>,
}

/// One node's value of one measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The node's median.
    pub value: f64,
    /// (value - fleet median) / fleet median.
    pub deviation: f64,
    /// Robust z-score, when the fleet has at least three values that are not all equal.
    pub z: Option<f64>,
    /// |z| above [`OUTLIER_Z`].
    pub outlier: bool,
}

/// One measurement across the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct FleetRow {
    /// Probe id.
    pub probe: String,
    /// Parameters (placement left out, as in compare).
    pub params: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: Unit,
    /// Median of the nodes' values.
    pub median: f64,
    /// Per node, in [`FleetSummary::nodes`] order; None where the node has no value.
    pub cells: Vec<Option<Cell>>,
}

impl FleetRow {
    /// "probe params metric", for one line of text.
    pub fn label(&self) -> String {
        [&self.probe, &self.params, &self.metric]
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What one node looks like against the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct NodeVerdict {
    /// Node name.
    pub node: String,
    /// Its run id.
    pub run_id: i64,
    /// Measurements with a value.
    pub measured: usize,
    /// Measurements where it is an outlier.
    pub outliers: usize,
    /// Its largest |z| (row label, deviation, z).
    pub worst: Option<(String, f64, f64)>,
}

/// The fleet view.
#[derive(Debug, Clone, Serialize)]
pub struct FleetSummary {
    /// Node names, sorted.
    pub nodes: Vec<String>,
    /// Each machine shape and its nodes, when the nodes are not all of one shape: their values
    /// differ by design, not as outliers of one kind of machine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<(String, Vec<String>)>,
    /// One row per measurement, in first-seen order.
    pub rows: Vec<FleetRow>,
    /// One verdict per node, in `nodes` order.
    pub verdicts: Vec<NodeVerdict>,
}

impl FleetSummary {
    /// The nodes with at least one outlier value.
    pub fn outlier_nodes(&self) -> Vec<&str> {
        self.verdicts
            .iter()
            .filter(|v| v.outliers > 0)
            .map(|v| v.node.as_str())
            .collect()
    }
}

/// The value a measurement contributes: its median, when it was measured.
fn value(m: &Measurement) -> Option<f64> {
    m.status
        .has_value()
        .then(|| m.summary.as_ref().map(|s| s.median))
        .flatten()
        .filter(|v| v.is_finite())
}

/// Lines the nodes' runs up measurement by measurement and scores every value.
pub fn summarize(runs: &[NodeRun]) -> FleetSummary {
    let mut runs: Vec<&NodeRun> = runs.iter().collect();
    runs.sort_by(|a, b| a.node.cmp(&b.node));
    let mut keys: Vec<(String, String, String)> = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    let mut values: Vec<Vec<Option<f64>>> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for m in &r.measurements {
            let k = key(m);
            let row = match keys.iter().position(|x| *x == k) {
                Some(p) => p,
                None => {
                    keys.push(k);
                    units.push(m.unit);
                    values.push(vec![None; runs.len()]);
                    keys.len() - 1
                }
            };
            // A measurement repeated within a run: its first value counts.
            if values[row][i].is_none() {
                values[row][i] = value(m);
            }
        }
    }
    let rows: Vec<FleetRow> = keys
        .into_iter()
        .zip(units)
        .zip(values)
        .filter_map(|(((probe, params, metric), unit), vals)| {
            let present: Vec<f64> = vals.iter().flatten().copied().collect();
            let med = median(&present)?;
            let z = robust_z(&present);
            let mut zi = z.iter().flatten();
            let cells = vals
                .iter()
                .map(|v| {
                    v.map(|value| {
                        let z = z.as_ref().and_then(|_| zi.next().copied());
                        Cell {
                            value,
                            deviation: if med != 0.0 {
                                (value - med) / med.abs()
                            } else {
                                0.0
                            },
                            z,
                            outlier: z.is_some_and(|z| z.abs() > OUTLIER_Z),
                        }
                    })
                })
                .collect();
            Some(FleetRow {
                probe,
                params,
                metric,
                unit,
                median: med,
                cells,
            })
        })
        .collect();
    let verdicts = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mine = rows
                .iter()
                .filter_map(|row| row.cells[i].as_ref().map(|c| (row, c)));
            NodeVerdict {
                node: r.node.clone(),
                run_id: r.run_id,
                measured: mine.clone().count(),
                outliers: mine.clone().filter(|(_, c)| c.outlier).count(),
                worst: mine
                    .filter_map(|(row, c)| c.z.map(|z| (row.label(), c.deviation, z)))
                    .max_by(|a, b| a.2.abs().total_cmp(&b.2.abs())),
            }
        })
        .collect();
    let mut shapes: Vec<(String, Vec<String>)> = Vec::new();
    for r in &runs {
        let shape = r
            .shape
            .clone()
            .unwrap_or_else(|| "shape not recorded".into());
        match shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, nodes)) => nodes.push(r.node.clone()),
            None => shapes.push((shape, vec![r.node.clone()])),
        }
    }
    if shapes.len() < 2 {
        shapes.clear();
    }
    FleetSummary {
        shapes,
        nodes: runs.iter().map(|r| r.node.clone()).collect(),
        rows,
        verdicts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::Status;
    use oslab_core::params;
    use oslab_core::stats::Summary;

    fn m(probe: &str, cpu: usize, v: f64) -> Measurement {
        let mut m = Measurement::not_taken(
            probe,
            params! {"cpu" => cpu},
            "per_call",
            Unit::Ns,
            Status::Ok,
        );
        m.summary = Summary::new(&[v, v * 1.01, v * 0.99]);
        m
    }

    #[test]
    fn the_slow_node_stands_out_and_the_others_do_not() {
        let runs: Vec<NodeRun> = (0..8)
            .map(|i| NodeRun {
                node: format!("n{i:02}"),
                run_id: i + 1,
                measurements: vec![
                    // n05 is 40% slower at syscalls; everyone is within 2% otherwise.
                    m(
                        "syscall",
                        i as usize,
                        if i == 5 {
                            140.0
                        } else {
                            100.0 + i as f64 * 0.3
                        },
                    ),
                    m("fork", 0, 50_000.0 * (1.0 + 0.004 * i as f64)),
                ],
                shape: Some("1 socket x 2 cores x 1 thread, 1 NUMA node".into()),
            })
            .collect();
        let s = summarize(&runs);
        assert_eq!(s.nodes.len(), 8);
        // Placement (cpu) is not part of the match: one row per probe.
        assert_eq!(s.rows.len(), 2);
        assert_eq!(s.outlier_nodes(), vec!["n05"]);
        let v = &s.verdicts[5];
        let (label, dev, z) = v.worst.clone().unwrap();
        assert!(label.starts_with("syscall"), "{label}");
        assert!(dev > 0.35 && z > OUTLIER_Z, "{dev} {z}");
        assert_eq!(v.measured, 2);
        assert!(s.shapes.is_empty(), "one shape: nothing to say");
    }

    #[test]
    fn two_nodes_or_missing_values_never_invent_an_outlier() {
        let mut failed = m("syscall", 0, 1.0);
        failed.status = Status::Failed("no".into());
        failed.summary = None;
        let runs = vec![
            NodeRun {
                node: "b".into(),
                run_id: 2,
                measurements: vec![m("syscall", 0, 100.0)],
                shape: Some("2 sockets".into()),
            },
            NodeRun {
                node: "a".into(),
                run_id: 1,
                measurements: vec![m("syscall", 0, 300.0)],
                shape: Some("1 socket".into()),
            },
            NodeRun {
                node: "c".into(),
                run_id: 3,
                measurements: vec![failed],
                shape: None,
            },
        ];
        let s = summarize(&runs);
        assert_eq!(s.nodes, vec!["a", "b", "c"]);
        let row = &s.rows[0];
        assert_eq!(row.median, 200.0);
        assert!(row.cells[2].is_none());
        assert!(row
            .cells
            .iter()
            .flatten()
            .all(|c| c.z.is_none() && !c.outlier));
        assert_eq!(s.verdicts[2].measured, 0);
        // Nodes of different shapes are named with their shape.
        assert_eq!(
            s.shapes,
            vec![
                ("1 socket".to_string(), vec!["a".to_string()]),
                ("2 sockets".to_string(), vec!["b".to_string()]),
                ("shape not recorded".to_string(), vec!["c".to_string()]),
            ]
        );
    }
}
