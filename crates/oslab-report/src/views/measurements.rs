//! The table of a run's measurements: a full layout where it fits, a compact one (names
//! stacked over their parameters) where not; sweeps summarised, the model's notes after.

use crate::table::*;
use comfy_table::{Cell, ColumnConstraint, Table, Width};
use oslab_core::model::Measurement;
use oslab_core::units::{num, scale_for};

/// A probe's rows far from their model for one cause: how far (the lowest and highest
/// measured/predicted), how many, and the row's own figure (kept while only one row has it).
struct Far<'a> {
    probe: &'a str,
    why: &'a str,
    lo: f64,
    hi: f64,
    rows: usize,
    own: Option<&'a str>,
}

/// What the model says of the rows of a table, once per probe: why some are far from their
/// prediction (with the range of measured/predicted), and why some have none.
pub(crate) fn model_notes(ms: &[Measurement]) -> String {
    let mut far: Vec<Far> = Vec::new();
    // Each reason a row has no model, with the probes it is given for.
    let mut none: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in ms.iter().filter(|m| m.status.has_value()) {
        if let (Some(gap), Some(e)) = (
            m.prediction.as_ref().and_then(|p| p.gap.as_deref()),
            m.efficiency(),
        ) {
            let why = gap.split_once(": ").map_or(gap, |(_, w)| w);
            // The cause shared with other rows; the row's own figure stays with the row.
            let (why, own) = why
                .split_once(oslab_core::model::GAP_THIS_ROW)
                .map_or((why, None), |(w, o)| (w, Some(o)));
            match far.iter_mut().find(|f| f.probe == m.probe && f.why == why) {
                Some(f) => {
                    f.lo = f.lo.min(e);
                    f.hi = f.hi.max(e);
                    f.rows += 1;
                    f.own = None;
                }
                None => far.push(Far {
                    probe: &m.probe,
                    why,
                    lo: e,
                    hi: e,
                    rows: 1,
                    own,
                }),
            }
        }
        if let Some(why) = m.no_model.as_deref() {
            match none.iter_mut().find(|(w, _)| *w == why) {
                Some((_, probes)) if !probes.contains(&m.probe.as_str()) => probes.push(&m.probe),
                Some(_) => {}
                None => none.push((why, vec![&m.probe])),
            }
        }
    }
    let mut out = String::new();
    if !far.is_empty() {
        // By cause: the probes one reason is given for, under it, said once (a reason only
        // one probe has stays on its line).
        let mut causes: Vec<(&str, Vec<String>)> = Vec::new();
        for Far {
            probe,
            why,
            lo,
            hi,
            rows,
            own,
        } in far
        {
            let range = match (rows, own) {
                (1, Some(own)) => format!("{lo:.2}x: {own}"),
                (1, None) => format!("{lo:.2}x"),
                _ => format!("{rows} rows, {lo:.2}x to {hi:.2}x"),
            };
            let entry = format!("{probe} ({range})");
            match causes.iter_mut().find(|c| c.0 == why) {
                Some(c) if !c.1.contains(&entry) => c.1.push(entry),
                Some(_) => {}
                None => causes.push((why, vec![entry])),
            }
        }
        out.push_str("\nmore than 2x from the model (measured/predicted), by cause:\n");
        for (why, probes) in causes {
            match &probes[..] {
                [one] => out.push_str(&format!("  {one}: {why}\n")),
                many => out.push_str(&format!("  {why}:\n    {}\n", many.join("; "))),
            }
        }
    }
    if !none.is_empty() {
        out.push_str(
            "
no model:
",
        );
        for (why, probes) in none {
            match &probes[..] {
                [one] => out.push_str(&format!("  {one}: {why}\n")),
                many => out.push_str(&format!("  {why}:\n    {}\n", many.join(", "))),
            }
        }
    }
    out
}

/// The measurement table: probe, params, metric, median, CI95, unit, predicted, status; as wide
/// as its content (`--wide`, or no terminal width known) also the best sample (min for times, max
/// for rates, none for differences), the 99th percentile, the sample count with outliers, and
/// cycles. Values of one
/// probe and metric share one unit, chosen from their typical median.
pub fn measurements(ms: &[Measurement]) -> String {
    let wide = width().is_none();
    // The cpu most measurements name (the measuring cpu) is said once above, not on each row.
    let mut cpus: std::collections::BTreeMap<String, usize> = Default::default();
    for m in ms {
        if let Some(c) = m.params.get("cpu") {
            *cpus.entry(c.to_string()).or_default() += 1;
        }
    }
    let one_cpu = cpus.into_iter().max_by_key(|(_, n)| *n).map(|(c, _)| c);
    let stripped: Vec<Measurement>;
    let ms = match &one_cpu {
        Some(cpu) => {
            stripped = ms
                .iter()
                .cloned()
                .map(|mut m| {
                    let this = m.params.get("cpu").map(ToString::to_string);
                    if this.as_deref() == Some(cpu.as_str()) {
                        m.params.remove("cpu");
                    }
                    m
                })
                .collect();
            &stripped[..]
        }
        None => ms,
    };
    let mut typical: std::collections::HashMap<(&str, &str), Vec<f64>> = Default::default();
    for m in ms {
        if let Some(s) = &m.summary {
            typical
                .entry((&m.probe, &m.metric))
                .or_default()
                .push(s.median);
        }
    }
    // Every cell of every row, full layout; the compact one regroups them.
    let rows: Vec<Row> = ms
        .iter()
        .map(|m| {
            // A failed result keeps its numbers in JSON for a post-mortem, never on screen.
            let value = m
                .summary
                .as_ref()
                .filter(|_| m.status.has_value())
                .map(|s| {
                    let group = &typical[&(m.probe.as_str(), m.metric.as_str())];
                    let (div, sym) =
                        scale_for(m.unit, oslab_core::stats::median(group).unwrap_or(s.median));
                    let num = |v: f64| oslab_core::units::figure(v, m.unit);
                    Value {
                        median: match m.difference_spans_zero() {
                            true => "≈ 0".to_string(),
                            false => s.median_text(div, m.unit),
                        },
                        ci: s.interval_text(div, m.unit),
                        best: m.best().map_or_else(|| "-".into(), |b| num(b / div)),
                        p99: s.p99.map_or_else(|| "-".into(), |t| num(t / div)),
                        unit: sym.to_string(),
                        n: s.n.to_string(),
                        outliers: s.outliers.to_string(),
                        cycles: m.cycles.map(|c| format!("{c:.0}")).unwrap_or_default(),
                        predicted: m
                            .prediction
                            .as_ref()
                            .map_or_else(|| "no model".into(), |p| num(p.value / div)),
                        versus: versus(m),
                    }
                });
            Row {
                probe: m.probe.clone(),
                params: m.params_text(),
                metric: m.metric.clone(),
                value,
                status: crate::summary::status_text(m),
            }
        })
        .collect();
    let t = match (wide, width()) {
        (true, _) => full_table(&rows, true),
        (false, Some(w)) if !full_fits(&rows, w) => compact_table(&rows, stacking(&rows, w)),
        (false, _) => full_table(&rows, false),
    };
    let mut out = match one_cpu {
        Some(cpu) => format!("measured on cpu {cpu} unless a row names another\n{t}"),
        None => t.to_string(),
    };
    // Why rows were skipped or failed, each reason once per probe, after the table.
    let mut said: Vec<(&str, &str)> = Vec::new();
    for m in ms {
        if let Some(why) = m.status.reason() {
            if !said.contains(&(m.probe.as_str(), why)) {
                said.push((&m.probe, why));
            }
        }
    }
    if !said.is_empty() {
        out.push_str("\n\nskipped or failed:\n");
        for (probe, why) in said {
            out.push_str(&format!("  {probe}: {why}\n"));
        }
    }
    out.push_str(&model_notes(ms));
    out
}

/// One measurement's cells.
struct Row {
    probe: String,
    params: String,
    metric: String,
    value: Option<Value>,
    status: String,
}

/// The cells of a measured value, in its group's unit.
struct Value {
    median: String,
    ci: String,
    best: String,
    p99: String,
    unit: String,
    n: String,
    outliers: String,
    cycles: String,
    predicted: String,
    versus: String,
}

/// Narrowest the parameters column may get before the compact layout is used instead: below it
/// `size=4096 order=random` breaks into a letter per line.
pub(crate) const MIN_PARAMS: usize = 24;

/// A measurement named on several lines, for narrow terminals: the probe, then indented its
/// metric and its parameters wrapped to [`COMPACT_NAME`] (comfy-table's wrap would not indent).
pub(crate) fn stacked_name(probe: &str, metric: &str, params: &str) -> String {
    let mut lines = vec![probe.to_string(), format!("  {metric}")];
    let mut line = String::new();
    for word in params_words(params) {
        if !line.is_empty() && 2 + line.len() + 1 + word.len() > COMPACT_NAME {
            lines.push(format!("  {line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(format!("  {line}"));
    }
    lines.join("\n")
}

/// How wide a column of [`stacked_name`]s of these (probe, metric) is: its longest probe or
/// indented metric, and at least the width the parameters wrap to.
pub(crate) fn stacked_width<'a>(names: impl Iterator<Item = (&'a str, &'a str)>) -> usize {
    names
        .map(|(p, m)| p.len().max(m.len() + 2))
        .fold(COMPACT_NAME, usize::max)
}

/// Keeps column 0 of `t`, holding [`stacked_name`]s of these (probe, metric), as wide as its
/// longest name line, so that nothing in it wraps again.
pub(crate) fn stacked_column<'a>(t: &mut Table, names: impl Iterator<Item = (&'a str, &'a str)>) {
    if let Some(c) = t.column_mut(0) {
        // A constraint counts the padding too.
        let w = stacked_width(names) as u16 + 2;
        c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(w)));
    }
}

/// The words of a parameter list, a value with a unit kept whole (`size=64 MiB` is one).
fn params_words(params: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in params.split_whitespace() {
        match words.last_mut() {
            Some(last) if !w.contains('=') => {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    words
}

/// Width the compact layout wraps parameters to: what 80 columns leave beside the numbers.
const COMPACT_NAME: usize = 22;

/// Whether the full layout leaves the parameters [`MIN_PARAMS`] columns in `width`.
fn full_fits(rows: &[Row], width: u16) -> bool {
    let column = |header: &str, f: fn(&Row) -> Option<&str>| {
        widest(std::iter::once(header).chain(rows.iter().filter_map(f)))
    };
    let widths = [
        column("probe", |r| Some(&r.probe)),
        column("metric", |r| Some(&r.metric)),
        column("median", |r| r.value.as_ref().map(|v| v.median.as_str())),
        column("CI95", |r| r.value.as_ref().map(|v| v.ci.as_str())),
        column("unit", |r| r.value.as_ref().map(|v| v.unit.as_str())),
        column("predicted", |r| {
            r.value.as_ref().map(|v| v.predicted.as_str())
        }),
        column("vs model", |r| r.value.as_ref().map(|v| v.versus.as_str())),
        column("status", |r| Some(r.status.as_str())),
        MIN_PARAMS,
    ];
    fits(widths.into_iter(), width)
}

/// Probe, params, metric, median, CI95, unit, predicted, status; `wide` adds the best sample,
/// the 99th percentile, the sample count with outliers, and cycles.
fn full_table(rows: &[Row], wide: bool) -> Table {
    let columns: &[&str] = if wide {
        &[
            "probe",
            "params",
            "metric",
            "median",
            "CI95",
            "best",
            "p99",
            "unit",
            "n",
            "outliers",
            "TSC ticks",
            "predicted",
            "vs model",
            "status",
        ]
    } else {
        &[
            "probe",
            "params",
            "metric",
            "median",
            "CI95",
            "unit",
            "predicted",
            "vs model",
            "status",
        ]
    };
    let mut t = new_table(columns);
    for r in rows {
        let mut row = vec![r.probe.clone(), r.params.clone(), r.metric.clone()];
        match &r.value {
            Some(v) => {
                row.extend([v.median.clone(), v.ci.clone()]);
                if wide {
                    row.extend([v.best.clone(), v.p99.clone()]);
                }
                row.push(v.unit.clone());
                if wide {
                    row.extend([v.n.clone(), v.outliers.clone(), v.cycles.clone()]);
                }
                row.extend([v.predicted.clone(), v.versus.clone()]);
            }
            None => row.resize(columns.len() - 1, String::new()),
        }
        let mut cells: Vec<Cell> = row.into_iter().map(cell).collect();
        cells.push(outcome_cell(&r.status));
        t.add_row(cells);
    }
    // Numbers right, names whole; parameters wrap.
    let numbers = [
        "median",
        "CI95",
        "best",
        "p99",
        "n",
        "outliers",
        "TSC ticks",
        "predicted",
        "vs model",
    ];
    right(&mut t, &places(columns, &numbers));
    whole(&mut t, &places(columns, &["metric", "unit", "status"]));
    t
}

/// The cells of [`compact_table`]: median with its unit, CI95, measured over predicted.
fn compact_cells(r: &Row) -> [String; 3] {
    match &r.value {
        Some(v) => [
            format!("{} {}", v.median, v.unit).trim_end().to_string(),
            v.ci.clone(),
            match v.versus.is_empty() {
                true => v.predicted.clone(),
                false => v.versus.clone(),
            },
        ],
        None => Default::default(),
    }
}

/// How [`compact_table`] places a row's values beside its name: in columns side by side, in two
/// stacks (median over CI95, vs model over status), or in one stack for the narrowest terminals.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stacking {
    SideBySide,
    Two,
    One,
}

/// The widest [`Stacking`] of these rows that fits `width`.
fn stacking(rows: &[Row], width: u16) -> Stacking {
    let cells: Vec<[String; 3]> = rows.iter().map(compact_cells).collect();
    let name = stacked_width(rows.iter().map(|r| (r.probe.as_str(), r.metric.as_str())));
    let column = |i: usize, header: &str| {
        widest(std::iter::once(header).chain(cells.iter().map(|c| c[i].as_str())))
    };
    let status = widest(std::iter::once("status").chain(rows.iter().map(|r| r.status.as_str())));
    let word = widest(std::iter::once("status").chain(rows.iter().map(status_word)));
    let [median, ci, versus] = [
        column(0, "median"),
        column(1, "CI95"),
        column(2, "vs model"),
    ];
    if fits([name, median, ci, versus, status].into_iter(), width) {
        Stacking::SideBySide
    } else if fits([name, median.max(ci), versus.max(word)].into_iter(), width) {
        Stacking::Two
    } else {
        Stacking::One
    }
}

/// The status without a noisy result's cause, for stacked layouts (the wide ones say it).
fn status_word(r: &Row) -> &str {
    // A busy figure that holds reads `tight`, as in the headline.
    match r.status.ends_with(", tight") {
        true => "tight",
        false => r.status.split(':').next().unwrap_or_default(),
    }
}

/// For a terminal too narrow for [`full_table`]: the probe with its metric and parameters on
/// the lines under it (they wrap), then the median with its unit, CI95, measured over predicted
/// and status, placed as `stacking` says.
fn compact_table(rows: &[Row], stacking: Stacking) -> Table {
    let header: &[&str] = match stacking {
        Stacking::SideBySide => &["measurement", "median", "CI95", "vs model", "status"],
        Stacking::Two => &["measurement", "median\nCI95", "vs model\nstatus"],
        Stacking::One => &["measurement", "median\nCI95\nvs model, status"],
    };
    let mut t = new_table(header);
    for r in rows {
        let name = stacked_name(&r.probe, &r.metric, &r.params);
        let [median, ci, versus] = compact_cells(r);
        let row = match stacking {
            Stacking::SideBySide => vec![
                cell(name),
                cell(median),
                cell(ci),
                cell(versus),
                outcome_cell(&r.status),
            ],
            Stacking::Two => vec![
                cell(name),
                cell(format!("{median}\n{ci}")),
                outcome_coloured(&r.status, &format!("{versus}\n{}", status_word(r))),
            ],
            Stacking::One => {
                let verdict = [versus.as_str(), status_word(r)]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(", ");
                vec![
                    cell(name),
                    outcome_coloured(&r.status, &format!("{median}\n{ci}\n{verdict}")),
                ]
            }
        };
        t.add_row(row);
    }
    stacked_column(
        &mut t,
        rows.iter().map(|r| (r.probe.as_str(), r.metric.as_str())),
    );
    match stacking {
        // Nothing wraps: the parameters are wrapped above, numbers and the status stay whole.
        Stacking::SideBySide => {
            right(&mut t, &[1, 2, 3]);
            whole(&mut t, &[4]);
        }
        Stacking::Two => right(&mut t, &[1, 2]),
        Stacking::One => right(&mut t, &[1]),
    }
    t
}

/// Sizes a probe must sweep (for one metric) to be shown as a sweep table.
const SWEEP_MIN: usize = 6;

/// Sweeps as lmbench prints them: for every probe and metric measured at [`SWEEP_MIN`] or more
/// sizes, one table with the size down and the other parameters that vary across (e.g. the
/// stride), values in one unit, `~` after a noisy one. Returns the tables and the measurements
/// left for the details table.
/// The columns of a table of `header` and `rows` in panels that each fit the width: the first
/// column (the row's name) in every panel, the others in order, as many as fit (one at least).
fn panels(header: &[String], rows: &[Vec<String>]) -> Vec<Vec<usize>> {
    let width = |c: usize| {
        rows.iter()
            .map(|r| r[c].chars().count())
            .chain(std::iter::once(header[c].chars().count()))
            .max()
            .unwrap_or(0)
            + 3
    };
    let room = crate::table::width().map_or(usize::MAX, |w| w as usize);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut used = usize::MAX;
    for c in 1..header.len() {
        if used.saturating_add(width(c)) > room || out.is_empty() {
            out.push(vec![0]);
            used = width(0);
        }
        out.last_mut().expect("pushed above").push(c);
        used += width(c);
    }
    if out.is_empty() {
        out.push(vec![0]);
    }
    out
}

pub(super) fn sweeps(ms: &[Measurement]) -> (String, Vec<Measurement>) {
    use std::collections::{BTreeMap, BTreeSet};
    let size = |m: &Measurement| m.params.get("size").and_then(|v| v.as_u64());
    let mut groups: Vec<((&str, &str), Vec<&Measurement>)> = Vec::new();
    for m in ms
        .iter()
        .filter(|m| size(m).is_some() && m.summary.is_some() && m.status.has_value())
    {
        match groups
            .iter_mut()
            .find(|(k, _)| *k == (m.probe.as_str(), m.metric.as_str()))
        {
            Some((_, g)) => g.push(m),
            None => groups.push(((&m.probe, &m.metric), vec![m])),
        }
    }
    let mut out = String::new();
    let mut shown: Vec<*const Measurement> = Vec::new();
    for ((probe, metric), g) in groups {
        let sizes: BTreeSet<u64> = g.iter().filter_map(|m| size(m)).collect();
        if sizes.len() < SWEEP_MIN {
            continue;
        }
        // The parameters besides the size (and the cpu) that vary make the columns; those that
        // do not are said once in the title.
        let others = |m: &Measurement| {
            let mut p = m.params.clone();
            p.remove("size");
            p.remove("cpu");
            p
        };
        let all_keys: BTreeSet<String> = g
            .iter()
            .flat_map(|m| others(m).keys().cloned().collect::<Vec<_>>())
            .collect();
        let (varying, fixed): (Vec<String>, Vec<String>) = all_keys
            .into_iter()
            .partition(|k| g.iter().any(|m| m.params.get(k) != g[0].params.get(k)));
        let pick = |m: &Measurement, keys: &[String]| {
            let p: serde_json::Map<String, serde_json::Value> = others(m)
                .into_iter()
                .filter(|(k, _)| keys.contains(k))
                .collect();
            oslab_core::model::readable_pairs(p.iter())
        };
        let label = |m: &Measurement| pick(m, &varying);
        let mut columns: Vec<String> = Vec::new();
        for m in &g {
            let l = label(m);
            if !columns.contains(&l) {
                columns.push(l);
            }
        }
        // One parameter across: its values head the columns and its name the title.
        let across = (varying.len() == 1).then(|| varying[0].clone());
        let short = |c: &str| match &across {
            _ if c.is_empty() => metric.to_string(),
            Some(k) => c.strip_prefix(&format!("{k}=")).unwrap_or(c).to_string(),
            None => c.to_string(),
        };
        let common = pick(g[0], &fixed);
        let medians: Vec<f64> = g
            .iter()
            .filter_map(|m| m.summary.as_ref().map(|s| s.median))
            .collect();
        let (div, sym) = scale_for(
            g[0].unit,
            oslab_core::stats::median(&medians).unwrap_or(1.0),
        );
        let mut cells: BTreeMap<(u64, usize), String> = BTreeMap::new();
        for m in &g {
            let (Some(sz), Some(s)) = (size(m), &m.summary) else {
                continue;
            };
            let col = columns.iter().position(|c| *c == label(m)).unwrap_or(0);
            let mark = if m.status == oslab_core::Status::Ok {
                ""
            } else {
                "~"
            };
            cells.insert((sz, col), format!("{}{mark}", num(s.median / div)));
            shown.push(*m as *const Measurement);
        }
        // One value per size: its prediction beside it.
        let model = columns.len() == 1;
        let mut predicted: BTreeMap<u64, String> = BTreeMap::new();
        if model {
            for m in &g {
                if let (Some(sz), Some(p)) = (size(m), &m.prediction) {
                    predicted.insert(sz, format!("{} {}", num(p.value / div), versus(m)));
                }
            }
        }
        let mut header = vec!["size".to_string()];
        header.extend(columns.iter().map(|c| short(c)));
        if model && !predicted.is_empty() {
            header.push("model, vs".to_string());
        }
        let rows: Vec<Vec<String>> = sizes
            .iter()
            .map(|sz| {
                let mut row = vec![oslab_core::units::bytes(*sz)];
                row.extend(
                    (0..columns.len()).map(|c| cells.get(&(*sz, c)).cloned().unwrap_or_default()),
                );
                if model && !predicted.is_empty() {
                    row.push(predicted.get(sz).cloned().unwrap_or_default());
                }
                row
            })
            .collect();
        let fixed = if common.is_empty() {
            String::new()
        } else {
            format!(", {common}")
        };
        let across = across.map_or(String::new(), |k| format!(", {k} across"));
        out.push_str(&format!(
            "{probe} {metric} in {sym}{fixed}: size down{across} (~ noisy)\n"
        ));
        // Columns that do not fit the width go in a second panel under the first, the sizes
        // repeated (at 80 columns the stride table's tenth column wrapped every row in two).
        for (i, panel) in panels(&header, &rows).into_iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let head: Vec<&str> = panel.iter().map(|&c| header[c].as_str()).collect();
            let mut t = new_table(&head);
            for row in &rows {
                add(
                    &mut t,
                    panel.iter().map(|&c| row[c].clone()).collect::<Vec<_>>(),
                );
            }
            right(&mut t, &(0..panel.len()).collect::<Vec<_>>());
            out.push_str(&format!("{t}\n"));
        }
        out.push('\n');
    }
    let rest = ms
        .iter()
        .filter(|m| !shown.contains(&(*m as *const Measurement)))
        .cloned()
        .collect();
    (out, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::{Status, Unit};
    use oslab_core::params;
    use oslab_core::stats::Summary;

    #[test]
    fn rows_show_values_units_and_reasons() {
        let mut ok = Measurement::not_taken(
            "task.fork",
            params! {"cpu" => 1},
            "create",
            Unit::Ns,
            Status::Ok,
        );
        ok.summary = Summary::new(&[52_000.0, 50_000.0, 51_000.0]);
        ok.cycles = Some(140_000.0);
        let skipped = Measurement::not_taken(
            "switch.process.pipe",
            params! {},
            "wakeup",
            Unit::Ns,
            Status::Skipped("needs a second cpu".into()),
        );
        let out = measurements(&[ok, skipped]);
        assert!(out.contains("51.0") && out.contains("µs"), "{out}");
        // Cycles are a --wide column (tests/output.rs checks them there).
        assert!(out.contains("no model"), "{out}");
        assert!(
            out.contains("skipped or failed:\n  switch.process.pipe: needs a second cpu"),
            "{out}"
        );
    }

    #[test]
    fn misses_are_grouped_by_their_shared_cause_with_each_rows_own_figure() {
        let far = |probe: &str, own: &str| {
            let mut m = Measurement::not_taken(probe, params! {}, "switch", Unit::Ns, Status::Ok);
            m.summary = Summary::new(&[300.0; 3]);
            let gap = format!(
                "measured 3.0x the prediction: SRSO's returns{}{own}",
                oslab_core::model::GAP_THIS_ROW
            );
            m.prediction = serde_json::from_value(serde_json::json!({
                "value": 100.0, "model": "switch", "inputs": {}, "formula": "", "sources": {}, "gap": gap
            }))
            .unwrap();
            m
        };
        let notes = model_notes(&[
            far("switch.thread.pipe", "3,420 cycles over"),
            far("switch.process.pipe", "3,172 cycles over"),
        ]);
        assert!(
            notes.contains("  SRSO's returns:\n    switch.thread.pipe (3.00x: 3,420 cycles over); switch.process.pipe (3.00x: 3,172 cycles over)"),
            "{notes}"
        );
    }

    #[test]
    fn sweeps_print_size_down_and_the_varying_parameter_across() {
        let mut ms = Vec::new();
        for size in [4096u64, 8192, 16384, 32768, 65536, 1 << 20] {
            for stride in [8u64, 64] {
                let mut m = Measurement::not_taken(
                    "memory.latency.stride",
                    params! {"size" => size, "stride" => stride, "cpu" => 1},
                    "per_load",
                    Unit::Ns,
                    Status::Ok,
                );
                m.summary = Summary::new(&[size as f64 / 4096.0 + stride as f64; 3]);
                ms.push(m);
            }
        }
        let mut other = ms[0].clone();
        other.probe = "timer.rdtsc".into();
        other.params = params! {"cpu" => 1};
        ms.push(other);
        let (text, rest) = sweeps(&ms);
        assert!(text.contains("size down, stride across"), "{text}");
        let header = text.lines().nth(1).unwrap();
        assert!(
            header.contains("8 B") && header.contains("64 B") && !header.contains("stride="),
            "{header}"
        );
        assert!(text.contains("1 MiB"), "{text}");
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].probe, "timer.rdtsc");
    }
}
