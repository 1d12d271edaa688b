//! Core-to-core latency for reading: the matrix (from row to column, one way) when it fits, and
//! the pairs grouped by topology class with the model's prediction beside each class.

use crate::table::{add, new_table, right};
use oslab_core::binding;
use oslab_core::catalog::id;
use oslab_core::model::Measurement;
use oslab_core::units::num;
use std::collections::BTreeMap;

/// Cpus beyond which the matrix is left to the report's heatmap.
const MATRIX_MAX: usize = 16;

fn cpu(m: &Measurement, key: &str) -> Option<usize> {
    m.params.get(key)?.as_u64().map(|v| v as usize)
}

fn median(m: &Measurement) -> Option<f64> {
    m.summary.as_ref().map(|s| s.median)
}

/// The text of `oslab c2c`: the matrix, the classes, and how many pairs of how many were measured.
pub fn text(ms: &[Measurement], pairs_total: usize) -> String {
    let hidden = hidden_siblings(ms);
    let ms: Vec<&Measurement> = ms
        .iter()
        .filter(|m| m.probe == id::C2C_LATENCY && m.status.has_value())
        .collect();
    let mut cpus: Vec<usize> = ms
        .iter()
        .flat_map(|m| [cpu(m, "from"), cpu(m, "to")])
        .flatten()
        .collect();
    cpus.sort();
    cpus.dedup();
    let mut out = format!(
        "one-way core-to-core latency, ns (half a compare-and-swap round trip); {} of {} measured\n",
        ms.len(),
        oslab_core::units::counted(pairs_total, "pair")
    );
    // The matrix's cells as printed, to see whether it fits the width before laying it out
    // (16 cpus' columns wrapped at 120): cpu numbers alone head the columns.
    let cell = |a: usize, b: usize| {
        ms.iter()
            .find(|m| {
                (cpu(m, "from"), cpu(m, "to")) == (Some(a), Some(b))
                    || (cpu(m, "from"), cpu(m, "to")) == (Some(b), Some(a))
            })
            .and_then(|m| median(m))
            .map_or_else(|| "-".to_string(), num)
    };
    let widest = cpus
        .iter()
        .flat_map(|&a| cpus.iter().map(move |&b| (a, b)))
        .map(|(a, b)| cell(a, b).chars().count())
        .chain(cpus.iter().map(|c| c.to_string().len()))
        .max()
        .unwrap_or(1);
    let needed = 12 + cpus.len() * (widest + 3);
    let fits = crate::table::width().is_none_or(|w| needed <= w as usize);
    if cpus.len() <= MATRIX_MAX && fits {
        let header: Vec<String> = std::iter::once("from \\ to".to_string())
            .chain(cpus.iter().map(|c| c.to_string()))
            .collect();
        let refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = new_table(&refs);
        for &a in &cpus {
            let row: Vec<String> = std::iter::once(a.to_string())
                .chain(cpus.iter().map(|&b| cell(a, b)))
                .collect();
            add(&mut t, row);
        }
        right(&mut t, &(1..=cpus.len()).collect::<Vec<_>>());
        out.push_str(&format!("{t}\n"));
    } else {
        let why = match crate::table::width() {
            Some(w) if cpus.len() <= MATRIX_MAX => {
                format!(" (it needs {needed} columns, {w} here: `--wide` prints it)")
            }
            _ => String::new(),
        };
        out.push_str(&format!(
            "{} cpus: the matrix is drawn by `oslab report` as a heatmap{why}\n",
            cpus.len()
        ));
    }
    let mut classes: BTreeMap<String, Vec<&Measurement>> = BTreeMap::new();
    for m in &ms {
        let class = m
            .params
            .get("class")
            .and_then(|c| c.as_str())
            .unwrap_or("?");
        classes.entry(class.to_string()).or_default().push(m);
    }
    let mut t = new_table(&[
        "class",
        "pairs",
        "median",
        "fastest",
        "slowest",
        "predicted",
        "vs model",
    ]);
    for (class, group) in &classes {
        let mut v: Vec<f64> = group.iter().filter_map(|m| median(m)).collect();
        v.sort_by(f64::total_cmp);
        let mid = oslab_core::stats::median(&v).unwrap_or(f64::NAN);
        let predicted = group.iter().find_map(|m| m.prediction.as_ref());
        add(
            &mut t,
            [
                class.clone(),
                group.len().to_string(),
                num(mid),
                num(v[0]),
                num(v[v.len() - 1]),
                predicted.map_or_else(|| "no model".into(), |p| num(p.value)),
                predicted.map_or_else(String::new, |p| format!("{:.2}x", mid / p.value)),
            ],
        );
    }
    right(&mut t, &[1, 2, 3, 4, 5, 6]);
    out.push_str(&format!("\nby topology class, ns\n{t}\n"));
    out.push_str(&hidden);
    out
}

/// A line per pair of cpus that hands a line over far faster than its class: two hardware
/// threads of one core the topology does not show.
fn hidden_siblings(ms: &[Measurement]) -> String {
    let pairs = binding::Costs::from_measurements(ms).pairs;
    let classes: BTreeMap<(usize, usize), &str> = ms
        .iter()
        .filter_map(|m| {
            let (a, b) = (cpu(m, "from")?, cpu(m, "to")?);
            Some(((a.min(b), a.max(b)), m.params.get("class")?.as_str()?))
        })
        .collect();
    let class = |a: usize, b: usize| classes.get(&(a, b)).copied().unwrap_or("?").to_string();
    binding::hidden_siblings(&pairs, class)
        .iter()
        .map(|h| {
            format!(
                "cpus {} and {} hand a line over in {} ns, {:.2}x the {} ns of the other {} pairs: likely two hardware threads of one core the topology does not show (a VM's vCPUs on host SMT siblings, which the host may move); `oslab bind --policy by-cost` keeps them apart\n",
                h.cpus.0, h.cpus.1, num(h.ns), h.ns / h.class_ns, num(h.class_ns), h.class
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::{Status, Unit};
    use oslab_core::params;
    use oslab_core::Summary;

    /// One pair's one-way latency, `ns`, in a shared L3.
    fn pair(from: u64, to: u64, ns: f64) -> Measurement {
        let mut m = Measurement::not_taken(
            id::C2C_LATENCY,
            params! {"from" => from, "to" => to, "class" => "shared L3"},
            "one_way",
            Unit::Ns,
            Status::Ok,
        );
        m.summary = Summary::new(&[ns, ns, ns]);
        m
    }

    #[test]
    fn sixteen_cpus_matrix_fits_the_width_or_says_where_it_is() {
        // Every pair of 16 cpus: at the width tests lay text out in (120, nothing sets it), no
        // line is wider (its columns wrapped at 120 when headed `cpu 15`).
        let ms: Vec<Measurement> = (0..16u64)
            .flat_map(|a| (a + 1..16).map(move |b| pair(a, b, 40.0 + (a * 7 + b * 3) as f64)))
            .collect();
        let text = text(&ms, 120);
        let w = crate::table::width().unwrap_or(u16::MAX) as usize;
        for line in text.lines() {
            assert!(
                line.chars().count() <= w,
                "{line:?} wider than {w}:\n{text}"
            );
        }
        assert!(
            text.contains(" 15 ") || text.contains("drawn by `oslab report`"),
            "{text}"
        );
    }

    #[test]
    fn a_pair_far_faster_than_its_class_is_named_as_hidden_siblings() {
        let ms = vec![
            pair(0, 1, 8.0),
            pair(0, 2, 60.0),
            pair(0, 3, 62.0),
            pair(1, 2, 64.0),
            pair(2, 3, 66.0),
        ];
        let text = text(&ms, 6);
        assert!(
            text.contains("cpus 0 and 1 hand a line over in 8"),
            "{text}"
        );
        assert_eq!(text.matches("hand a line over").count(), 1, "{text}");
    }
}
