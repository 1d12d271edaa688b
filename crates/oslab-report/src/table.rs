//! Terminal tables: measurements, stored runs, and the probe list.

use comfy_table::{
    Cell, CellAlignment, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle, Width,
};
use oslab_core::catalog::id;
use oslab_core::units::{num, scale_for};
use std::io::IsTerminal;
use std::sync::OnceLock;

/// A rule under the header and nothing else: easy to read, easy to grep.
const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('─').junction(' '));
use oslab_core::model::Measurement;
use oslab_store::RunSummary;

static WIDTH: OnceLock<Option<u16>> = OnceLock::new();

/// Makes every table fit `columns` characters (None: as wide as its content, e.g. `--wide`).
/// Without a call, tables fit `$COLUMNS`, else the terminal when standard output is one, else
/// [`PIPED_WIDTH`].
pub fn set_width(columns: Option<u16>) {
    let _ = WIDTH.set(columns);
}

/// The width of text sent to a file or a pipe without `$COLUMNS`: wide enough for every table,
/// narrow enough to read in a log (`--wide` for lines as long as their content).
pub const PIPED_WIDTH: u16 = 120;

/// The width tables and text fit: see [`set_width`].
pub fn width() -> Option<u16> {
    *WIDTH.get_or_init(|| {
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
        columns.or_else(|| match std::io::stdout().is_terminal() {
            true => Table::new().width(),
            false => Some(PIPED_WIDTH),
        })
    })
}

pub(crate) fn new_table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE).set_header(header.iter().map(cell));
    // Colour only on a terminal (comfy-table's own check), and never with NO_COLOR set.
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        t.force_no_tty();
    }
    match width() {
        // Text columns wrap to fit; numbers never do (see `right`).
        Some(w) => t
            .set_width(w)
            .set_content_arrangement(ContentArrangement::Dynamic),
        None => t.set_content_arrangement(ContentArrangement::Disabled),
    };
    // The first column names the row: it stays whole.
    whole(&mut t, &[0]);
    t
}

/// A cell of text that may come from outside (a tag, a host name, a field of an imported run):
/// made printable ([`oslab_core::text::printable`]) before it enters a table, so that its width
/// is measured on what is shown and the colours added after cannot be mistaken for it.
pub(crate) fn cell(text: impl AsRef<str>) -> Cell {
    Cell::new(oslab_core::text::printable(text.as_ref()))
}

/// Adds a row of [`cell`]s.
pub(crate) fn add(t: &mut Table, row: impl IntoIterator<Item = impl AsRef<str>>) {
    t.add_row(row.into_iter().map(cell).collect::<Vec<_>>());
}

/// A word that says how a result came out, coloured so that trouble stands out: warnings
/// (noisy, changed) yellow, failures and regressions red, improvements green, skips grey.
pub(crate) fn outcome_cell(word: &str) -> Cell {
    outcome_coloured(word, word)
}

/// `text` coloured as [`outcome_cell`] colours `word`.
pub(crate) fn outcome_coloured(word: &str, text: &str) -> Cell {
    use comfy_table::Color;
    // "noisy: spread" is coloured as "noisy"; a count of several ("1 noisy, 2 skipped") as its
    // gravest word.
    let words: Vec<&str> = word
        .split(':')
        .next()
        .unwrap_or(word)
        .split([' ', ','])
        .collect();
    let has = |w: &str| words.contains(&w);
    let color = if has("failed") || has("REGRESSION") {
        Some(Color::Red)
    } else if has("noisy") || has("changed") {
        Some(Color::Yellow)
    } else if has("better") {
        Some(Color::Green)
    } else if has("skipped") {
        Some(Color::DarkGrey)
    } else {
        None
    };
    let shown = cell(text);
    match color {
        Some(c) => shown.fg(c),
        None => shown,
    }
}

/// Keeps these columns on one line (names that must stay whole).
pub(crate) fn whole(t: &mut Table, cols: &[usize]) {
    for &c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// Aligns number columns right and keeps each on one line.
pub(crate) fn right(t: &mut Table, cols: &[usize]) {
    for &c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
            col.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// A table of [`oslab_core::text`], in the terminal style of every oslab table. On a terminal
/// too narrow for all of it, its optional columns go first; then the columns after the first
/// stack into one, a line each; a text column wraps between words, never inside one.
pub fn render(table: &oslab_core::text::Table) -> String {
    let cells = |c: usize| {
        std::iter::once(&table.header[c])
            .chain(table.rows.iter().filter_map(move |r| r.get(c)))
            .map(String::as_str)
    };
    let mut keep: Vec<usize> = (0..table.header.len()).collect();
    if let Some(w) = width() {
        for c in &table.optional {
            if fits(keep.iter().map(|&k| widest(cells(k))), w) {
                break;
            }
            keep.retain(|k| k != c);
        }
        if keep.len() > 2 && !fits(keep.iter().map(|&k| widest(cells(k))), w) {
            return render_stacked(table, &keep);
        }
    }
    let header: Vec<&str> = keep.iter().map(|&c| table.header[c].as_str()).collect();
    let mut t = new_table(&header);
    for r in &table.rows {
        // Status and verdict words are coloured on a terminal, as in every oslab table.
        t.add_row(keep.iter().map(|&c| {
            let v = r.get(c).cloned().unwrap_or_default();
            match table.header[c].as_str() {
                "status" | "verdict" => outcome_cell(&v),
                _ => cell(v),
            }
        }));
    }
    let at = |c: &usize| keep.iter().position(|k| k == c);
    right(
        &mut t,
        &table.numeric.iter().filter_map(at).collect::<Vec<_>>(),
    );
    for (i, &c) in keep.iter().enumerate().skip(1) {
        if table.numeric.contains(&c) {
            continue;
        }
        let word = cells(c)
            .flat_map(|s| s.split_whitespace())
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0);
        if let Some(col) = t.column_mut(i) {
            col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(word as u16)));
        }
    }
    t.to_string()
}

/// The `keep` columns of `table` in two: the first, and the others stacked in one, a line each.
fn render_stacked(table: &oslab_core::text::Table, keep: &[usize]) -> String {
    let (first, rest) = (keep[0], &keep[1..]);
    let stack = |cells: &[String]| -> String {
        rest.iter()
            .map(|&c| cells.get(c).map_or("", String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut t = new_table(&[table.header[first].as_str(), &stack(&table.header)]);
    let mut stacks = vec![stack(&table.header)];
    for r in &table.rows {
        stacks.push(stack(r));
        add(
            &mut t,
            [r.get(first).cloned().unwrap_or_default(), stack(r)],
        );
    }
    right(&mut t, &[1]);
    // The numbers stay whole: the first column wraps into what they leave (between words).
    if let (Some(w), Some(col)) = (width(), t.column_mut(0)) {
        let left = (w as usize).saturating_sub(widest(stacks.iter().map(String::as_str)) + 6);
        col.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(
            left.max(8) as u16
        )));
    }
    t.to_string()
}

/// Lines and tables, in order, tables indented under their text.
pub fn doc(blocks: &[oslab_core::text::Block]) -> String {
    use oslab_core::text::Block;
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Text(s) => out.push_str(s),
            Block::Table(t) => {
                for line in render(t).lines() {
                    out.push_str("  ");
                    out.push_str(line.trim_end());
                    out.push('\n');
                }
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Measured over predicted, e.g. "0.96x", with "!" when the gap is more than 2x (explained after
/// the table); empty without a prediction.
pub(crate) fn versus(m: &Measurement) -> String {
    let Some(e) = m.efficiency() else {
        return String::new();
    };
    let far = m.far_from_model();
    let e = if e.abs() >= 10.0 {
        format!("{e:.0}x")
    } else {
        format!("{e:.2}x")
    };
    if far {
        format!("{e}!")
    } else {
        e
    }
}

/// What the model says of the rows of a table, once per probe: why some are far from their
/// prediction (with the range of measured/predicted), and why some have none.
pub(crate) fn model_notes(ms: &[Measurement]) -> String {
    let mut far: Vec<(&str, &str, f64, f64, usize)> = Vec::new();
    let mut none: Vec<(&str, &str)> = Vec::new();
    for m in ms.iter().filter(|m| m.status.has_value()) {
        if let (Some(gap), Some(e)) = (
            m.prediction.as_ref().and_then(|p| p.gap.as_deref()),
            m.efficiency(),
        ) {
            let why = gap.split_once(": ").map_or(gap, |(_, w)| w);
            match far.iter_mut().find(|f| f.0 == m.probe && f.1 == why) {
                Some(f) => {
                    f.2 = f.2.min(e);
                    f.3 = f.3.max(e);
                    f.4 += 1;
                }
                None => far.push((&m.probe, why, e, e, 1)),
            }
        }
        if let Some(why) = m.no_model.as_deref() {
            if !none.contains(&(m.probe.as_str(), why)) {
                none.push((&m.probe, why));
            }
        }
    }
    let mut out = String::new();
    if !far.is_empty() {
        out.push_str(
            "
more than 2x from the model (measured/predicted):
",
        );
        for (probe, why, lo, hi, n) in far {
            let range = if n == 1 {
                format!("{lo:.2}x")
            } else {
                format!("{n} rows, {lo:.2}x to {hi:.2}x")
            };
            out.push_str(&format!(
                "  {probe} ({range}): {why}
"
            ));
        }
    }
    if !none.is_empty() {
        out.push_str(
            "
no model:
",
        );
        for (probe, why) in none {
            out.push_str(&format!(
                "  {probe}: {why}
"
            ));
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
                            false => num(s.median / div),
                        },
                        ci: s.interval_text(div, num),
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
                status: m.status.short(),
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

/// Whether columns of these content widths fit `width` (each with its padding and gap).
pub(crate) fn fits(widths: impl Iterator<Item = usize>, width: u16) -> bool {
    widths.map(|w| w + 3).sum::<usize>() <= width as usize
}

/// Display width of the widest line among `cells`.
pub(crate) fn widest<'a>(cells: impl Iterator<Item = &'a str>) -> usize {
    cells
        .flat_map(str::lines)
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
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
    // Names stay whole; parameters wrap.
    let numbers: &[usize] = if wide {
        &[3, 4, 5, 6, 8, 9, 10, 11, 12]
    } else {
        &[3, 4, 6, 7]
    };
    right(&mut t, numbers);
    let unit = if wide { 7 } else { 5 };
    whole(&mut t, &[2, unit, columns.len() - 1]);
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
    r.status.split(':').next().unwrap_or_default()
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
fn sweeps(ms: &[Measurement]) -> (String, Vec<Measurement>) {
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
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = new_table(&header_refs);
        for sz in &sizes {
            let mut row = vec![oslab_core::units::bytes(*sz)];
            row.extend(
                (0..columns.len()).map(|c| cells.get(&(*sz, c)).cloned().unwrap_or_default()),
            );
            if model && !predicted.is_empty() {
                row.push(predicted.get(sz).cloned().unwrap_or_default());
            }
            add(&mut t, row);
        }
        right(&mut t, &(0..header.len()).collect::<Vec<_>>());
        let fixed = if common.is_empty() {
            String::new()
        } else {
            format!(", {common}")
        };
        let across = across.map_or(String::new(), |k| format!(", {k} across"));
        out.push_str(&format!(
            "{probe} {metric} in {sym}{fixed}: size down{across} (~ noisy)\n{t}\n\n"
        ));
    }
    let rest = ms
        .iter()
        .filter(|m| !shown.contains(&(*m as *const Measurement)))
        .cloned()
        .collect();
    (out, rest)
}

/// A run as text: header, table, warnings.
/// A run as text: by default the headline, a line per probe, what to distrust, the model in a
/// line and the warnings ([`crate::summary`]); with `details` every row, the sweeps, the
/// model's reasons per probe and the warnings with their fixes.
pub fn run(record: &oslab_store::RunRecord, ms: &[Measurement], details: bool) -> String {
    let mut out = format!(
        "run {}  {}  {}  host {}  oslab {}{}  wall {:.1} s\n{}\n",
        record
            .id
            .map(|i| i.to_string())
            .unwrap_or_else(|| "-".into()),
        record.started,
        record.status.as_str(),
        record.hostname,
        record.oslab_version,
        record
            .git_rev
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        record.wall_s,
        record.command,
    );
    if let Some(clock) = record
        .fingerprint
        .get("clock")
        .and_then(|c| serde_json::from_value::<oslab_core::Clock>(c.clone()).ok())
    {
        out.push_str(&format!("clock: {}\n", clock.describe()));
    }
    match record.status {
        oslab_store::RunStatus::Crashed => out.push_str(&format!(
            "crashed: the process that measured this run no longer exists (killed, out of memory, or the machine went down); it holds the {} measurements of the probes that completed\n",
            ms.len()
        )),
        oslab_store::RunStatus::Running => out.push_str(&format!(
            "running: still being measured; {} measurements so far\n",
            ms.len()
        )),
        _ => {}
    }
    let repetitions = ms.iter().map(|m| m.repetition).max().unwrap_or(1);
    if repetitions > 1 {
        out.push_str(&format!(
            "{repetitions} repetitions of each probe, shown pooled: the median of their medians, the interval spanning theirs (`oslab export` has each)\n"
        ));
    }
    let ms = &oslab_core::stats::repetitions::pooled(ms);
    let env =
        serde_json::from_value::<oslab_core::machine::Environment>(record.environment.clone()).ok();
    if !details {
        return out + &summary(record, ms, env.as_ref());
    }
    if let Some(headline) = crate::headline::table(ms) {
        out.push_str("\nheadline (details below; `oslab report` draws them)\n");
        out.push_str(&render(&headline));
        out.push('\n');
        out.push_str(&crate::headline::notes(ms));
        out.push_str("\ndetails\n");
    }
    let (swept, rest) = sweeps(ms);
    out.push_str(&swept);
    out.push_str(&measurements(&rest));
    out.push('\n');
    if let Some(matrix) = crate::numa::matrix(ms) {
        out.push('\n');
        out.push_str(&matrix);
    }
    if let Some(env) = env.filter(|e| !e.warnings.is_empty()) {
        out.push_str("\nenvironment warnings (they affect these numbers):\n");
        out.push_str(&crate::machine::warnings(&env));
    }
    out
}

/// The first view of a run, after its header.
fn summary(
    record: &oslab_store::RunRecord,
    ms: &[Measurement],
    env: Option<&oslab_core::machine::Environment>,
) -> String {
    use crate::summary;
    let mut out = String::new();
    if let Some(headline) = crate::headline::table(ms) {
        out.push_str("\nheadline\n");
        out.push_str(&render(&headline));
        out.push('\n');
        out.push_str(&crate::headline::notes(ms));
    }
    let id = record
        .id
        .map_or_else(|| "RUN".to_string(), |i| i.to_string());
    out.push_str(&format!(
        "\nevery probe, its main figure (every row, the sweeps and the model's reasons: oslab show {id} --details; charts: oslab report {id})\n"
    ));
    out.push_str(&summary::probes(ms));
    out.push('\n');
    let distrust = summary::distrust(ms);
    if !distrust.is_empty() {
        out.push_str("\nwhat to distrust, by cause:\n");
        out.push_str(&distrust);
    }
    out.push_str(&summary::model_line(ms));
    let numa = ms.iter().any(|m| m.probe == id::NUMA_MATRIX);
    if summary::several_nodes(ms) {
        if let Some(matrix) = crate::numa::matrix(ms) {
            out.push('\n');
            out.push_str(&matrix);
        }
    } else if numa {
        out.push_str(
            "NUMA: one NUMA node here, so no matrix: there is no remote memory to compare\n",
        );
    }
    if let Some(env) = env.filter(|e| !e.warnings.is_empty()) {
        out.push_str("\nenvironment (`--details` says what to do about each):\n");
        out.push_str(&summary::warnings(env));
    }
    out
}

/// One line per stored run: id, start (UTC, to the minute), status, host, how many results,
/// wall time, tags (when any run has them) and the command, the program named without its
/// directory and shortened to what the other columns leave on the line.
pub fn runs(rows: &[RunSummary]) -> String {
    let tagged = rows.iter().any(|r| !r.tags.is_empty());
    let mut header = vec!["run", "started (UTC)", "status", "host", "results", "wall"];
    if tagged {
        header.push("tags");
    }
    header.push("command");
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut row = vec![
                r.id.to_string(),
                r.started.replacen('T', " ", 1).chars().take(16).collect(),
                r.status.as_str().to_string(),
                oslab_core::text::printable(&r.hostname).into_owned(),
                r.measurements.to_string(),
                format!("{:.1} s", r.wall_s),
            ];
            if tagged {
                row.push(oslab_core::text::printable(&tags.join(" ")).into_owned());
            }
            row.push(oslab_core::text::printable(&program_named(&r.command)).into_owned());
            row
        })
        .collect();
    // The command takes what the other columns leave (`oslab show` has it whole); where that
    // is too little to read, it is left out.
    if let Some(w) = width() {
        let used: usize = (0..header.len() - 1)
            .map(|c| {
                let column = cells.iter().map(|r| r[c].as_str());
                widest(std::iter::once(header[c]).chain(column)) + 3
            })
            .sum();
        let room = (w as usize).saturating_sub(used + 2);
        for row in &mut cells {
            let command = row.last_mut().expect("a command column");
            if command.chars().count() > room {
                *command = command
                    .chars()
                    .take(room.saturating_sub(1))
                    .chain(['…'])
                    .collect();
            }
            if room < MIN_COMMAND {
                row.pop();
            }
        }
        if room < MIN_COMMAND {
            header.pop();
        }
    }
    let mut t = new_table(&header);
    for row in cells {
        add(&mut t, row);
    }
    right(&mut t, &[0, 4, 5]);
    whole(&mut t, &(0..header.len()).collect::<Vec<_>>());
    t.to_string()
}

/// The narrowest command column worth showing.
const MIN_COMMAND: usize = 12;

/// A command line with its program named without its directory (`oslab run ...`).
fn program_named(command: &str) -> String {
    let (program, rest) = command.split_once(' ').unwrap_or((command, ""));
    let name = program.rsplit('/').next().unwrap_or(program);
    format!("{name} {rest}").trim_end().to_string()
}

/// One row per probe: id, unit, needs, whether it can run here, description.
pub fn probes(rows: &[(String, String, String, String, String)]) -> String {
    let mut t = new_table(&["probe", "unit", "needs", "here", "what it measures"]);
    for (id, unit, needs, here, about) in rows {
        add(&mut t, [id, unit, needs, here, about]);
    }
    t.to_string()
}

/// `oslab run --plan`: the probes whose work grows with the machine (or that will not run),
/// each with its expected seconds and what it will measure here; the others, which measure
/// the same points on any machine, in one line.
pub fn plan(rows: &[(String, f64, String)]) -> String {
    let mut t = new_table(&["probe", "time", "what it measures on this machine"]);
    right(&mut t, &[1]);
    let (shown, fixed): (Vec<_>, Vec<_>) = rows.iter().partition(|r| !r.2.is_empty());
    for (id, share, what) in &shown {
        add(&mut t, [id.clone(), format!("{share:.1} s"), what.clone()]);
    }
    if !fixed.is_empty() {
        let share: f64 = fixed.iter().map(|r| r.1).sum();
        add(
            &mut t,
            [
                format!("{} others", fixed.len()),
                format!("{share:.0} s"),
                "the same points on any machine".to_string(),
            ],
        );
    }
    t.to_string()
}

/// The fleet view of job `job`: what the columns mean, one line per node (its outliers and
/// largest deviation), then the node x measurement matrix of deviations from the fleet median
/// ("!" marks an outlier), and the outlier nodes. With more than 12 nodes, only measurements
/// with an outlier are listed unless `all`.
pub fn fleet(job: &str, s: &oslab_fleet::FleetSummary, all: bool) -> String {
    let mut text = format!(
        "fleet job {job}: {}, {} measurements; deviation from the fleet median, ! = outlier (|robust z| > {}, median/MAD)\n",
        oslab_core::units::counted(s.nodes.len(), "node"),
        s.rows.len(),
        oslab_core::stats::OUTLIER_Z
    );
    if s.nodes.len() < 3 {
        text += "note: outliers need at least 3 nodes; none can be flagged here\n";
    }
    if !s.shapes.is_empty() {
        text += "note: the nodes are not one kind of machine, so their values differ by design:\n";
        for (shape, nodes) in &s.shapes {
            text += &format!("  {shape}: {}\n", nodes.join(", "));
        }
    }
    let flagged = s.outlier_nodes();
    let end = match flagged.len() {
        0 => "no outlier nodes".to_string(),
        _ => format!("outlier nodes: {}", flagged.join(", ")),
    };
    format!("{text}{}\n{end}", fleet_tables(s, all))
}

fn fleet_tables(s: &oslab_fleet::FleetSummary, all: bool) -> String {
    let mut nodes = new_table(&["node", "run", "measured", "outliers", "largest deviation"]);
    for v in &s.verdicts {
        let worst = v.worst.as_ref().map_or(String::new(), |(label, dev, z)| {
            format!("{label}: {:+.1}% (z {z:+.1})", dev * 100.0)
        });
        add(
            &mut nodes,
            [
                v.node.clone(),
                v.run_id.to_string(),
                v.measured.to_string(),
                if v.outliers > 0 {
                    format!("{} !", v.outliers)
                } else {
                    "0".into()
                },
                worst,
            ],
        );
    }
    right(&mut nodes, &[1, 2, 3]);
    let mut header = vec!["measurement", "unit", "fleet median"];
    header.extend(s.nodes.iter().map(String::as_str));
    let mut matrix = new_table(&header);
    let few = s.nodes.len() <= 12;
    for row in &s.rows {
        if !(all || few || row.cells.iter().flatten().any(|c| c.outlier)) {
            continue;
        }
        let (div, sym) = scale_for(row.unit, row.median);
        let mut cells = vec![row.label(), sym.to_string(), num(row.median / div)];
        cells.extend(row.cells.iter().map(|c| match c {
            Some(c) => format!(
                "{:+.1}%{}",
                c.deviation * 100.0,
                if c.outlier { " !" } else { "" }
            ),
            None => "-".into(),
        }));
        add(&mut matrix, cells);
    }
    right(&mut matrix, &(2..3 + s.nodes.len()).collect::<Vec<_>>());
    // The unit and the numbers stay whole; the measurement's name wraps into what they leave.
    whole(&mut matrix, &(1..3 + s.nodes.len()).collect::<Vec<_>>());
    format!("{nodes}\n\n{matrix}")
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
        assert!(out.contains("51.00") && out.contains("µs"), "{out}");
        // Cycles are a --wide column (tests/output.rs checks them there).
        assert!(out.contains("no model"), "{out}");
        assert!(
            out.contains("skipped or failed:\n  switch.process.pipe: needs a second cpu"),
            "{out}"
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
