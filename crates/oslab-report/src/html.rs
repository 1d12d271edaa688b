//! One self-contained HTML report of a run: inline CSS, inline SVG charts, no scripts, nothing
//! fetched. The headline first, then run metadata and warnings; then per probe family its charts
//! and its table (folded when long: the charts and the headline are what a reader scans); the
//! model-vs-measured analysis last, folded per family. Everything that comes from the user or the
//! machine is escaped.

use crate::plots::{self, Bar, Mark, Series, Track, XAxis};
use oslab_core::catalog::{self, id, metric, Chart, Family};
use oslab_core::machine::Environment;
use oslab_core::model::{EventKind, Measurement, Status, TimelineEvent, Unit};
use oslab_core::units::{num, scale_for, value};
use oslab_store::RunRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%}figure svg{max-width:100%;height:auto}details{margin:.4em 0}summary{cursor:pointer;color:#333}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.warn{background:#fff4e0;border-left:4px solid #e69500;padding:.4em .8em;margin:.3em 0}
.noisy,.changed{color:#a15c00;font-weight:600}.regression{color:#b00020;font-weight:700}.better{color:#1b7a2a;font-weight:700}.skipped{color:#666;font-style:italic}.failed{color:#b00020;font-weight:600}
nav.contents{margin:1em 0;font-size:.9em}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}.meta td:first-child{color:#666}
@media print{body{max-width:none}figure{break-inside:avoid}}";

/// The report of one run.
pub fn report(record: &RunRecord, ms: &[Measurement], timeline: &[TimelineEvent]) -> String {
    let ms = &oslab_core::stats::repetitions::pooled(ms);
    let mut h = String::new();
    let id = record.id.map_or("-".into(), |i| i.to_string());
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>oslab run {}</title><style>{STYLE}</style></head><body>\n<h1>oslab run {} on {}</h1>\n",
        escape(&id),
        escape(&id),
        escape(&record.hostname)
    );
    let mut families: BTreeMap<&str, Vec<&Measurement>> = BTreeMap::new();
    for m in ms {
        families
            .entry(catalog::prefix(&m.probe))
            .or_default()
            .push(m);
    }
    let order = catalog::families(ms.iter().map(|m| m.probe.as_str()));
    let headline = crate::headline::table(ms);
    let model = crate::model_view::html(ms);
    let sections: Vec<&str> = headline
        .as_ref()
        .map(|_| "headline")
        .into_iter()
        .chain(order.iter().copied())
        .chain((!timeline.is_empty()).then_some("timeline"))
        .chain(model.as_ref().map(|_| "model vs measured"))
        .collect();
    h.push_str(&contents(&sections));
    if let Some(t) = headline {
        h.push_str("<h2 id=\"headline\">headline</h2>\n");
        h.push_str(&text_table(&t));
        let notes = crate::headline::notes(ms);
        if !notes.is_empty() {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(notes.trim_end()));
        }
    }
    h.push_str(&metadata(record));
    h.push_str(&warnings(record));
    for family in order {
        let list = &families[family];
        let _ = writeln!(h, "<h2 id=\"{0}\">{0}</h2>", escape(family));
        let drawn = charts(family, &alone(list), record);
        for chart in &drawn {
            h.push_str(&figure_html(chart));
        }
        // A chart already shows the family's figures: its table waits under a click.
        h.push_str(&folded(
            &oslab_core::units::counted(list.len(), "measurement"),
            &table(list),
            drawn.is_empty() && list.len() <= OPEN_ROWS,
        ));
    }
    if !timeline.is_empty() {
        h.push_str("<h2 id=\"timeline\">timeline</h2>\n");
        if let Some(f) = timeline_chart(timeline) {
            h.push_str(&figure_html(&f));
        }
    }
    if let Some(model) = model {
        h.push_str("<h2 id=\"model-vs-measured\">model vs measured</h2>\n");
        h.push_str(&model);
    }
    h.push_str("</body></html>\n");
    h
}

/// A family without a chart shows its table open when it has at most this many rows; longer
/// tables are folded under their summary (a default run's memory and bandwidth tables run to
/// hundreds of rows).
const OPEN_ROWS: usize = 12;

/// `body` under a `<details>` whose summary is `summary`, open when `open`; wide content scrolls
/// inside its box instead of widening the page.
pub(crate) fn folded(summary: &str, body: &str, open: bool) -> String {
    format!(
        "<details{}><summary>{}</summary><div class=\"scroll\">{body}</div></details>\n",
        if open { " open" } else { "" },
        escape(summary)
    )
}

/// One line of a run's description, read from its record.
type RecordField = fn(&RunRecord) -> String;

/// Runs side by side: what each side is, the comparison of every side with the first (verdicts
/// from repetitions, as `oslab compare` gives them), then per probe family the sides overlaid on
/// the same charts. `sides` are (label, the side's first run, its measurements pooled).
pub fn comparison_report(
    sides: &[(String, &RunRecord, Vec<Measurement>)],
    comparisons: &[crate::comparison::Comparison],
) -> String {
    let labels: Vec<&str> = sides.iter().map(|s| s.0.as_str()).collect();
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>oslab: {0}</title><style>{STYLE}</style></head><body>\n<h1>oslab: {0}</h1>\n",
        escape(&labels.join(" vs "))
    );
    h.push_str("<table class=\"meta\"><tr><th></th>");
    for l in &labels {
        let _ = write!(h, "<th>{}</th>", escape(l));
    }
    h.push_str("</tr>\n");
    let fields: [(&str, RecordField); 5] = [
        ("started", |r| r.started.clone()),
        ("host", |r| r.hostname.clone()),
        ("cpu", |r| {
            r.fingerprint["cpu_model"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        }),
        ("kernel", |r| {
            r.fingerprint["kernel"].as_str().unwrap_or("?").to_string()
        }),
        ("command", |r| r.command.clone()),
    ];
    for (name, f) in fields {
        let _ = write!(h, "<tr><td>{name}</td>");
        for (_, r, _) in sides {
            let _ = write!(h, "<td>{}</td>", escape(&f(r)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n<h2 id=\"comparison\">comparison</h2>\n");
    for c in comparisons {
        h.push_str(&comparison_table(c));
    }
    let pooled: Vec<Vec<&Measurement>> = sides.iter().map(|s| s.2.iter().collect()).collect();
    for family in catalog::families(pooled.iter().flatten().map(|m| m.probe.as_str())) {
        let drawn: Vec<Drawn> = sides
            .iter()
            .zip(&pooled)
            .map(|((label, _, _), ms)| Drawn {
                label: label.clone(),
                ms: ms
                    .iter()
                    .copied()
                    .filter(|m| catalog::prefix(&m.probe) == family)
                    .collect(),
            })
            .collect();
        let figures = charts(family, &drawn, sides[0].1);
        if figures.is_empty() {
            continue;
        }
        let _ = writeln!(h, "<h2 id=\"{0}\">{0}</h2>", escape(family));
        for f in &figures {
            h.push_str(&figure_html(f));
        }
    }
    h.push_str("</body></html>\n");
    h
}

/// Links to the page's sections.
fn contents(sections: &[&str]) -> String {
    let links: Vec<String> = sections
        .iter()
        .map(|s| {
            format!(
                "<a href=\"#{}\">{}</a>",
                escape(&s.replace(' ', "-")),
                escape(s)
            )
        })
        .collect();
    format!(
        "<nav class=\"contents\">contents: {}</nav>\n",
        links.join(" · ")
    )
}

/// A [`oslab_core::text::Table`] as an HTML table.
fn text_table(t: &oslab_core::text::Table) -> String {
    let mut h = String::from("<table><tr>");
    for c in &t.header {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if t.numeric.contains(&i) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// One comparison as an HTML table: the rows `oslab compare` shows by default.
fn comparison_table(c: &crate::comparison::Comparison) -> String {
    let mut h = format!(
        "<p>{} against {}: {}</p>\n",
        escape(&c.b.set),
        escape(&c.a.set),
        escape(&c.tally())
    );
    let shown = c.shown(false);
    if shown.is_empty() {
        h.push_str("<p>No row changed, and none unjudged moved beyond the threshold.</p>\n");
    } else {
        h.push_str(&rows_table(&shown));
    }
    for note in c.notes() {
        let _ = writeln!(h, "<p class=\"warn\">{}</p>", escape(&note));
    }
    h
}

/// Comparison rows as an HTML table.
fn rows_table(shown: &[&oslab_core::stats::compare::Row]) -> String {
    use crate::comparison::{cells, COLUMNS};
    let mut h = String::from("<table><tr>");
    for name in COLUMNS {
        let _ = write!(h, "<th>{name}</th>");
    }
    h.push_str("</tr>\n");
    for r in shown {
        h.push_str("<tr>");
        for (i, cell) in cells(r).iter().enumerate() {
            // Names and the verdict (a class that colours it) on the left, numbers on the right.
            let class = match i {
                0..=2 => String::new(),
                10 => format!(" class=\"{}\"", cell.to_lowercase().replace(' ', "-")),
                _ => " class=\"n\"".into(),
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

fn metadata(r: &RunRecord) -> String {
    let mut h = String::from("<table class=\"meta\">\n");
    for (k, v) in metadata_rows(r) {
        let _ = writeln!(h, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(&v));
    }
    h.push_str("</table>\n");
    h
}

/// The run and its machine, a row each: when, what, which oslab, the cpu, caches, nodes, kernel,
/// clock (the HTML and Markdown reports' machine summary).
fn metadata_rows(r: &RunRecord) -> Vec<(&'static str, String)> {
    let fp = &r.fingerprint;
    let field = |k: &str| match fp.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => "not exposed".into(),
        Some(v) => v.to_string(),
    };
    let caches = fp["topology"]["caches"]
        .as_array()
        .map(|cs| {
            let mut seen: Vec<String> = cs
                .iter()
                .filter_map(|c| {
                    Some(format!(
                        "L{} {} {}",
                        c.get("level")?,
                        c.get("kind")?.as_str()?,
                        oslab_core::units::bytes(c.get("size")?.as_u64()?)
                    ))
                })
                .collect();
            seen.sort();
            seen.dedup();
            seen.join(", ")
        })
        .unwrap_or_default();
    let nodes = fp["topology"]["nodes"].as_array().map_or(0, Vec::len);
    let rows = [
        ("started", r.started.clone()),
        ("status", format!("{:?}", r.status).to_lowercase()),
        ("command", r.command.clone()),
        (
            "oslab",
            format!(
                "{} {}",
                r.oslab_version,
                r.git_rev.clone().unwrap_or_default()
            ),
        ),
        ("wall time", format!("{:.1} s", r.wall_s)),
        ("cpu", field("cpu_model")),
        (
            "packages / cores / threads",
            format!(
                "{} / {} / {}",
                field("packages"),
                field("cores"),
                field("threads")
            ),
        ),
        ("caches", caches),
        ("NUMA nodes", nodes.to_string()),
        ("kernel", field("kernel")),
        (
            "clock",
            fp["clock"]["ticks_per_ns"]
                .as_f64()
                .map_or("?".into(), |t| {
                    format!(
                        "{:.6} GHz ({})",
                        t,
                        fp["clock"]["source"].as_str().unwrap_or("?")
                    )
                }),
        ),
    ];
    rows.to_vec()
}

fn warnings(r: &RunRecord) -> String {
    let Ok(env) = serde_json::from_value::<Environment>(r.environment.clone()) else {
        return String::new();
    };
    let mut h = String::new();
    if !env.warnings.is_empty() {
        h.push_str("<h2 id=\"warnings\">environment warnings</h2>\n");
    }
    for w in &env.warnings {
        let _ = writeln!(
            h,
            "<div class=\"warn\"><b>{}</b>: {}<br><small>fix: {}</small></div>",
            escape(&w.kind),
            escape(&w.message),
            escape(&w.remedy)
        );
    }
    h
}

fn status_cell(m: &Measurement) -> String {
    let n = m
        .summary
        .as_ref()
        .map(|s| format!(" (n={})", s.n))
        .unwrap_or_default();
    match &m.status {
        Status::Ok => format!("ok{n}"),
        Status::Noisy(_) => format!("<span class=\"noisy\">{}{n}</span>", m.status.short()),
        Status::Skipped(why) => format!("<span class=\"skipped\">skipped: {}</span>", escape(why)),
        Status::Failed(why) => format!("<span class=\"failed\">failed: {}</span>", escape(why)),
    }
}

fn table(ms: &[&Measurement]) -> String {
    let mut h = String::from(
        "<table><tr><th>probe</th><th>params</th><th>metric</th><th>median</th><th>CI95</th><th>best</th><th>p90 / p99 / p99.9</th><th>unit</th><th>TSC ticks</th><th>predicted</th><th>measured / predicted</th><th>status</th></tr>\n",
    );
    for m in ms {
        let (median, ci, best, tail, unit, pred, eff) = match &m.summary {
            Some(s) => {
                let (div, sym) = scale_for(m.unit, s.median);
                let best = m.best();
                let (pred, eff) = match &m.prediction {
                    Some(p) => (num(p.value / div), crate::table::versus(m)),
                    None => ("no model".into(), String::new()),
                };
                let tail = [s.p90, s.p99, s.p999]
                    .iter()
                    .map(|t| t.map_or_else(|| "-".into(), |t| num(t / div)))
                    .collect::<Vec<_>>()
                    .join(" / ");
                (
                    num(s.median / div),
                    s.interval_text(div, num),
                    best.map_or_else(|| "-".into(), |b| num(b / div)),
                    tail,
                    sym.to_string(),
                    pred,
                    eff,
                )
            }
            None => Default::default(),
        };
        let title = m
            .note
            .as_deref()
            .map(|n| format!(" title=\"{}\"", escape(n)))
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr{title}><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{median}</td><td class=\"n\">{ci}</td><td class=\"n\">{best}</td><td class=\"n\">{tail}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{eff}</td><td>{}</td></tr>",
            escape(&m.probe),
            escape(&m.params_text()),
            escape(&m.metric),
            escape(&unit),
            m.cycles.map(|c| format!("{c:.0}")).unwrap_or_default(),
            escape(&pred),
            status_cell(m)
        );
    }
    h.push_str("</table>\n");
    h
}

/// A chart and its caption.
pub type Figure = (String, String);

fn figure(svg: Result<String, String>, caption: &str) -> Option<Figure> {
    svg.ok().map(|s| (s, caption.to_string()))
}

fn figure_html((svg, caption): &Figure) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
        escape(caption)
    )
}

fn median(m: &Measurement) -> Option<f64> {
    m.status.has_value().then_some(())?;
    m.summary.as_ref().map(|s| s.median)
}

fn param<'a>(m: &'a Measurement, k: &str) -> Option<&'a serde_json::Value> {
    m.params.get(k)
}

/// Series of `metric` over the numeric parameter `x`, one series per combination of the values
/// of the parameters `by` names (space-separated; none: one series per probe).
fn series_by(
    ms: &[&Measurement],
    probe_prefix: &str,
    metric: &str,
    x: &str,
    by: &str,
) -> Vec<Series> {
    let mut groups: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.probe.starts_with(probe_prefix) && m.metric == metric)
    {
        if let (Some(xv), Some(y)) = (param(m, x).and_then(|v| v.as_f64()), median(m)) {
            let name = if by.is_empty() {
                m.probe.clone()
            } else {
                by.split(' ')
                    .map(|k| m.param_text(k))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            groups.entry(name).or_default().push((xv, y));
        }
    }
    groups
        .into_iter()
        .map(|(name, points)| Series { name, points })
        .collect()
}

/// Loaded latency: per kind of traffic, (the loaders' bandwidth, the chase's latency) at each
/// pause; the idle point at zero bandwidth.
fn loaded_curves(ms: &[&Measurement]) -> Vec<Series> {
    let mut curves: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.probe == id::MEMORY_LATENCY_LOADED && m.metric == "per_load")
    {
        let Some(latency) = median(m) else { continue };
        let bandwidth = ms
            .iter()
            .find(|b| b.probe == m.probe && b.metric == "load_bandwidth" && b.params == m.params)
            .and_then(|b| median(b))
            .unwrap_or(0.0);
        curves
            .entry(m.param_text("traffic"))
            .or_default()
            .push((bandwidth, latency));
    }
    curves
        .into_iter()
        .map(|(name, points)| Series { name, points })
        .collect()
}

/// The predictions of the measurements `series_by` would draw, one dashed line per series.
fn model_series(ms: &[&Measurement], probe: &str, metric: &str, x: &str, by: &str) -> Vec<Series> {
    let predicted: Vec<Measurement> = ms
        .iter()
        .filter(|m| m.probe == probe && m.metric == metric)
        .filter_map(|m| {
            let mut p = (*m).clone();
            p.summary = oslab_core::Summary::new(&[m.prediction.as_ref()?.value]);
            Some(p)
        })
        .collect();
    let refs: Vec<&Measurement> = predicted.iter().collect();
    series_by(&refs, probe, metric, x, by)
        .into_iter()
        .map(|s| Series {
            name: format!("{}{}", plots::MODEL, s.name),
            ..s
        })
        .collect()
}

/// Cache sizes to mark: what sysfs claims (fingerprint) and what the curve showed.
fn cache_marks(ms: &[&Measurement], record: &RunRecord) -> Vec<Mark> {
    let mut marks: Vec<Mark> = record.fingerprint["topology"]["caches"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["kind"] != "instruction")
        .filter_map(|c| {
            let size = c["size"].as_u64()?;
            Some(Mark {
                x: size as f64,
                label: format!("L{} {} (sysfs)", c["level"], oslab_core::units::bytes(size)),
            })
        })
        .collect();
    marks.sort_by(|a, b| a.x.total_cmp(&b.x));
    marks.dedup_by(|a, b| a.x == b.x);
    for m in ms.iter().filter(|m| m.metric == "level_size") {
        if let Some(size) = median(m) {
            marks.push(Mark {
                x: size,
                label: format!("{} seen", m.param_text("level")),
            });
        }
    }
    marks
}

/// What one chart overlay draws: a run, or runs taken together, pooled.
pub struct Drawn<'a> {
    /// How the legend names it ("run 3", "tag kernel=6.18").
    pub label: String,
    /// Its measurements.
    pub ms: Vec<&'a Measurement>,
}

/// One run drawn alone.
fn alone<'a>(ms: &[&'a Measurement]) -> [Drawn<'a>; 1] {
    [Drawn {
        label: String::new(),
        ms: ms.to_vec(),
    }]
}

/// The series `f` finds in each side, named after their side when there are several.
fn overlaid_series(sides: &[Drawn], f: impl Fn(&[&Measurement]) -> Vec<Series>) -> Vec<Series> {
    sides
        .iter()
        .flat_map(|side| {
            f(&side.ms).into_iter().map(|mut s| {
                if sides.len() > 1 {
                    s.name = format!("{}: {}", side.label, s.name);
                }
                s
            })
        })
        .collect()
}

/// The bars `f` finds in each side, the sides' bars of one label next to each other.
fn overlaid_bars(sides: &[Drawn], f: impl Fn(&[&Measurement]) -> Vec<Bar>) -> Vec<Bar> {
    let mut per: Vec<std::vec::IntoIter<Bar>> = sides
        .iter()
        .enumerate()
        .map(|(k, side)| {
            let mut v = f(&side.ms);
            if sides.len() > 1 {
                v.iter_mut().for_each(|b| {
                    b.label = format!("{} ({})", b.label, side.label);
                    b.side = k;
                });
            }
            v.into_iter()
        })
        .collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(per.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return out;
        }
    }
}

/// The charts of one probe family, each side overlaid (the record's machine marks the caches):
/// the catalog says which chart a family has.
pub fn charts(family: &str, sides: &[Drawn], record: &RunRecord) -> Vec<Figure> {
    let draw = match Family::of(family).and_then(Family::chart) {
        None => return Vec::new(),
        Some(Chart::Latency) => memory,
        Some(Chart::Bandwidth) => bandwidth,
        Some(Chart::Calls) => call,
        Some(Chart::Costs) => costs,
        Some(Chart::Numa) => numa,
        Some(Chart::Migrate) => migrate,
        Some(Chart::C2c) => c2c,
        Some(Chart::ShuffleSim) => shuffle_sim,
    };
    draw(family, sides, record)
}

fn memory(_family: &str, sides: &[Drawn], record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    // The three curves' own probes only: the parallel and page-size chases also have an order
    // and a size, and joined into these curves they drew spikes at the sizes they measure.
    let mut curves = overlaid_series(sides, |ms| {
        [
            id::MEMORY_LATENCY_CHUNK,
            id::MEMORY_LATENCY_RANDOM,
            id::MEMORY_LATENCY_SEQUENTIAL,
        ]
        .iter()
        .flat_map(|probe| series_by(ms, probe, metric::PER_LOAD, "size", "order"))
        .collect()
    });
    if let [one] = sides {
        curves.extend(model_series(
            &one.ms,
            id::MEMORY_LATENCY_CHUNK,
            metric::PER_LOAD,
            "size",
            "order",
        ));
    }
    out.extend(figure(
        plots::lines("load-to-use latency vs working set", XAxis::Bytes, ("working set", "ns per load"), &curves, &cache_marks(&sides[0].ms, record), true),
        "Dependent loads, one per cache line; vertical lines: cache sizes sysfs claims and the levels the chunk curve shows; dashed: the machine model's prediction.",
    ));
    let mlp = overlaid_bars(sides, |ms| {
        series_by(
            ms,
            id::MEMORY_LATENCY_PARALLEL,
            metric::PER_LOAD,
            "chases",
            "",
        )
        .iter()
        .flat_map(|s| s.points.iter())
        .map(|&(k, y)| Bar {
            label: format!("{k:.0}"),
            value: y,
            interval: None,
            side: 0,
        })
        .collect()
    });
    let loaded = overlaid_series(sides, loaded_curves);
    out.extend(figure(
        plots::lines("loaded latency: latency vs the other cpus' memory traffic", XAxis::Count, ("GB/s the loaders moved", "ns per load"), &loaded, &[], false),
        "MLC's loaded-latency curve: the idle-latency chase while the other cpus stream memory, pausing less and less between blocks (the idle point, with no loaders, is the table's pause=idle row).",
    ));
    out.extend(figure(
        plots::bars("time per load vs independent chases", "ns per load", &mlp),
        "Memory-level parallelism: more chases in flight, less time per load.",
    ));
    out
}

fn bandwidth(_family: &str, sides: &[Drawn], record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut sweep = overlaid_series(sides, |ms| {
        series_by(ms, id::BANDWIDTH_SWEEP, metric::BANDWIDTH, "size", "kernel")
    });
    if let [one] = sides {
        sweep.extend(model_series(
            &one.ms,
            id::BANDWIDTH_SWEEP,
            metric::BANDWIDTH,
            "size",
            "kernel",
        ));
    }
    out.extend(figure(
        plots::lines(
            "bandwidth vs working set",
            XAxis::Bytes,
            ("working set", "GB/s"),
            &sweep,
            &cache_marks(&sides[0].ms, record),
            false,
        ),
        "One thread; each cache level shows as a plateau; dashed: the machine model's prediction.",
    ));
    let stream = overlaid_bars(sides, |ms| {
        bar_list(
            ms,
            id::BANDWIDTH_STREAM,
            metric::BANDWIDTH,
            &["kernel", "stores"],
        )
    });
    out.extend(figure(
        plots::bars(
            "RAM bandwidth, one thread (STREAM counting)",
            "GB/s",
            &stream,
        ),
        "Median with CI95; plain vs non-temporal stores.",
    ));
    let mixes = overlaid_bars(sides, |ms| {
        bar_list(
            ms,
            id::BANDWIDTH_MIX,
            metric::BANDWIDTH,
            &["read_write", "stores", "threads"],
        )
        .into_iter()
        .map(|b| Bar {
            label: format!(
                "{} thr",
                b.label
                    .replace(" plain ", " plain, ")
                    .replace(" nontemporal ", " nt, ")
            ),
            ..b
        })
        .collect()
    });
    out.extend(figure(
        plots::bars("RAM bandwidth by read:write mix (STREAM counting)", "GB/s", &mixes),
        "Reads and writes mixed block by block (4 KiB) in the ratio shown; one thread and all threads; median with CI95.",
    ));
    // Plain and non-temporal stores are separate lines.
    let threads = overlaid_series(sides, |ms| {
        series_by(
            ms,
            id::BANDWIDTH_THREADS,
            metric::BANDWIDTH,
            "threads",
            "kernel stores",
        )
    });
    out.extend(figure(
        plots::lines(
            "bandwidth vs threads",
            XAxis::Count,
            ("threads", "GB/s"),
            &threads,
            &[],
            false,
        ),
        "Threads pinned one per core first, then SMT siblings.",
    ));
    out
}

fn call(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let calls = overlaid_bars(sides, |ms| {
        bar_list(ms, id::CALL_ARGS, metric::PER_CALL, &["args"])
    });
    out.extend(figure(
        plots::bars("procedure call cost by argument count", "ns", &calls),
        "Median with CI95.",
    ));
    out
}

fn costs(family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut list = overlaid_bars(sides, |ms| {
        let labelled: Vec<(String, &Measurement)> = ms
            .iter()
            // One metric per kind of cost: a fault's time, not also per page and per byte.
            .filter(|m| {
                m.unit == Unit::Ns && !["per_page", "per_byte"].contains(&m.metric.as_str())
            })
            .map(|m| {
                let cache = m.param_text("cache");
                let label = format!(
                    "{} {}{}",
                    m.probe.split('.').skip(1).collect::<Vec<_>>().join("."),
                    m.metric,
                    if cache.is_empty() {
                        String::new()
                    } else {
                        format!(" {cache}")
                    }
                );
                (label, *m)
            })
            .collect();
        distinct(labelled)
            .into_iter()
            .filter_map(|(label, m)| measured_bar(label, m))
            .collect()
    });
    list.truncate(16 * sides.len());
    out.extend(figure(
        plots::bars(&format!("{family} costs"), "ns", &list),
        "Median with CI95 per measurement (page faults: per fault; per page and per byte are in the table).",
    ));
    out
}

fn numa(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    sides
        .iter()
        .filter_map(|side| {
            let (svg, caption) = numa_chart(&side.ms)?;
            Some(match sides.len() {
                1 => (svg, caption),
                _ => (svg, format!("{}: {caption}", side.label)),
            })
        })
        .collect()
}

fn migrate(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    let times = overlaid_bars(sides, |ms| {
        bar_list(ms, id::MIGRATE, metric::TIME, &["kernel", "variant"])
    });
    out.extend(figure(
        plots::bars("execution time, pinned vs migrated", "ns", &times),
        "Median of the runs, CI95.",
    ));
    for phase in ["phase1", "phase2"] {
        let metric = format!("L2 miss rate {phase}");
        let rates = overlaid_bars(sides, |ms| {
            bar_list(ms, id::MIGRATE, &metric, &["kernel", "variant"])
        });
        if !rates.is_empty() {
            out.extend(figure(
                plots::bars(
                    &format!("L2 miss rate, {phase}"),
                    "misses / accesses",
                    &rates,
                ),
                "From the L2_TCM / L2_TCA presets.",
            ));
        }
    }
    out
}

/// The simulated shuffling study: execution time with shuffling over without (the same random
/// stream) per workload, then per monitoring interval; whiskers span the random streams.
fn shuffle_sim(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    let mut out = Vec::new();
    for (part, title) in [
        (
            "workload",
            "time with shuffling / without, by lock contention",
        ),
        (
            "interval sweep",
            "time with shuffling / without, by monitoring interval",
        ),
    ] {
        let bars = overlaid_bars(sides, |ms| {
            ms.iter()
                .filter(|m| m.metric == "change" && m.param_text("part") == part)
                .filter_map(|m| {
                    let s = m.summary.as_ref()?;
                    let label = match part {
                        "workload" => m.param_text("workload"),
                        _ => format!("{} ms", param(m, "interval_ms")?.as_f64()?),
                    };
                    Some(Bar {
                        label,
                        value: 1.0 + s.median,
                        interval: Some((1.0 + s.min, 1.0 + s.max)),
                        side: 0,
                    })
                })
                .collect()
        });
        if !bars.is_empty() {
            out.extend(figure(
                plots::bars(title, "time with / without", &bars),
                "Simulated: median over the randomised runs (each pair with and without shares its random draws), whiskers from the best to the worst run; below 1, shuffling made the program faster.",
            ));
        }
    }
    out
}

/// Labels that say which is which: where several measurements share a label, each gets the
/// parameters that differ among them (`fork round_trip` four times becomes `... touched=64 MiB`).
fn distinct(labelled: Vec<(String, &Measurement)>) -> Vec<(String, &Measurement)> {
    let same: Vec<Vec<usize>> = labelled
        .iter()
        .map(|(l, _)| {
            labelled
                .iter()
                .enumerate()
                .filter(|(_, (o, _))| o == l)
                .map(|(i, _)| i)
                .collect()
        })
        .collect();
    labelled
        .iter()
        .zip(&same)
        .map(|((label, m), group)| {
            if group.len() < 2 {
                return (label.clone(), *m);
            }
            let differs: Vec<String> = m
                .params
                .iter()
                .filter(|(k, v)| {
                    k.as_str() != "cpu"
                        && group
                            .iter()
                            .any(|&j| labelled[j].1.params.get(k.as_str()) != Some(v))
                })
                .map(|(k, _)| format!("{k}={}", m.param_text(k)))
                .collect();
            (
                format!("{label} {}", differs.join(" "))
                    .trim_end()
                    .to_string(),
                *m,
            )
        })
        .collect()
}

fn bar_list(ms: &[&Measurement], prefix: &str, metric: &str, keys: &[&str]) -> Vec<Bar> {
    ms.iter()
        .filter(|m| m.probe.starts_with(prefix) && m.metric == metric)
        .filter_map(|m| {
            let label = keys
                .iter()
                .map(|k| m.param_text(k))
                .collect::<Vec<_>>()
                .join(" ");
            measured_bar(label, m)
        })
        .collect()
}

/// A bar of a measurement's median with its CI95, when it has a value.
fn measured_bar(label: String, m: &Measurement) -> Option<Bar> {
    let s = m.summary.as_ref()?;
    Some(Bar {
        label,
        value: median(m)?,
        interval: s.interval(),
        side: 0,
    })
}

fn numa_chart(ms: &[&Measurement]) -> Option<Figure> {
    let cells: Vec<(u64, u64, f64)> = ms
        .iter()
        .filter(|m| m.metric == "bandwidth" && m.param_text("kernel") == "average")
        .filter_map(|m| {
            Some((
                param(m, "cpu_node")?.as_u64()?,
                param(m, "mem_node")?.as_u64()?,
                median(m)?,
            ))
        })
        .collect();
    if cells.len() < 2 {
        return None; // one node: a 1x1 matrix compares nothing; the table has its figure
    }
    let mut rows: Vec<u64> = cells.iter().map(|c| c.0).collect();
    let mut cols: Vec<u64> = cells.iter().map(|c| c.1).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    let local = |r: u64| cells.iter().find(|c| c.0 == r && c.1 == r).map(|c| c.2);
    let values: Vec<Vec<Option<f64>>> = rows
        .iter()
        .map(|&r| {
            cols.iter()
                .map(|&c| cells.iter().find(|x| x.0 == r && x.1 == c).map(|x| x.2))
                .collect()
        })
        .collect();
    let svg = plots::heatmap(
        "NUMA bandwidth, GB/s (ratio to local)",
        &rows.iter().map(|r| format!("cpu {r}")).collect::<Vec<_>>(),
        &cols.iter().map(|c| format!("mem {c}")).collect::<Vec<_>>(),
        &values,
        // (The colour scale asks for its ends' text with no cell: no ratio then.)
        &|r, _, v| match rows.get(r).and_then(|&r| local(r)).filter(|l| *l > 0.0) {
            Some(l) => format!("{} ({:.2})", num(v), v / l),
            None => num(v),
        },
    );
    figure(
        svg,
        "Average of STREAM copy/scale/add/triad per cell; rows: cpu node, columns: memory node.",
    )
}

/// Core-to-core latency: one heatmap per side, from row to column (both directions show the
/// pair's one measurement).
fn c2c(_family: &str, sides: &[Drawn], _record: &RunRecord) -> Vec<Figure> {
    sides
        .iter()
        .filter_map(|side| {
            let cells: Vec<(u64, u64, f64)> = side
                .ms
                .iter()
                .filter(|m| m.probe == id::C2C_LATENCY)
                .filter_map(|m| {
                    let (a, b) = (param(m, "from")?.as_u64()?, param(m, "to")?.as_u64()?);
                    Some((a, b, median(m)?))
                })
                .collect();
            let mut cpus: Vec<u64> = cells.iter().flat_map(|c| [c.0, c.1]).collect();
            cpus.sort_unstable();
            cpus.dedup();
            let values: Vec<Vec<Option<f64>>> = cpus
                .iter()
                .map(|&r| {
                    cpus.iter()
                        .map(|&c| {
                            cells
                                .iter()
                                .find(|x| (x.0, x.1) == (r, c) || (x.0, x.1) == (c, r))
                                .map(|x| x.2)
                        })
                        .collect()
                })
                .collect();
            let labels: Vec<String> = cpus.iter().map(|c| format!("cpu {c}")).collect();
            let title = match sides.len() {
                1 => "core-to-core latency, one way, ns".to_string(),
                _ => format!("core-to-core latency, one way, ns ({})", side.label),
            };
            figure(
                plots::heatmap(&title, &labels, &labels, &values, &|_, _, v| num(v)),
                "Half a compare-and-swap round trip of one cache line between the two cpus; blank: the cpu itself, or a pair not sampled.",
            )
        })
        .collect()
}

/// The timeline chart (its first 100 ms).
pub fn timeline_chart(events: &[TimelineEvent]) -> Option<Figure> {
    // A CPU-manager run (it has allocation events) is shown whole, its CPUs coloured by job.
    let cpuman = events.iter().any(|e| e.kind == EventKind::Alloc);
    let label = |e: &TimelineEvent| match (cpuman, e.args.get("job")) {
        (true, Some(job)) if e.kind == EventKind::Run => format!("job {job}"),
        _ => e.kind.to_string(),
    };
    let mut tracks: Vec<Track> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for e in events {
        let name = label(e);
        let kind = kinds.iter().position(|k| *k == name).unwrap_or_else(|| {
            kinds.push(name);
            kinds.len() - 1
        });
        let i = match tracks.iter().position(|t| t.name == e.track) {
            Some(i) => i,
            None => {
                tracks.push(Track {
                    name: e.track.clone(),
                    spans: Vec::new(),
                });
                tracks.len() - 1
            }
        };
        tracks[i].spans.push((e.start_ns, e.dur_ns, kind));
    }
    // The first 100 ms: enough to see ticks and slices without blurring them together.
    let whole = events
        .iter()
        .map(|e| e.start_ns + e.dur_ns)
        .fold(0.0, f64::max);
    let (end, title) = if cpuman {
        (whole, "threads on cpus and jobs over the run")
    } else {
        (whole.min(100e6), "timeline (first 100 ms)")
    };
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    figure(
        plots::timeline(title, &tracks, end, &kinds),
        &format!(
            "{} events; the first {} shown. Export the whole timeline with `oslab export RUN --format perfetto`.",
            events.len(),
            value(end, Unit::Ns)
        ),
    )
}

/// The report as Markdown, with its charts as SVG files to write beside it (name, content).
pub fn markdown(
    record: &RunRecord,
    ms: &[Measurement],
    timeline: &[TimelineEvent],
) -> (String, Vec<(String, String)>) {
    let ms = &oslab_core::stats::repetitions::pooled(ms);
    let id = record.id.map_or("-".into(), |i| i.to_string());
    let mut md = format!(
        "# oslab run {id} on {}\n\n{} — {} — {:.1} s\n\n",
        md_text(&record.hostname),
        md_code(&record.command),
        record.started,
        record.wall_s
    );
    // The order of the HTML report: headline, machine, families, the model last.
    if let Some(t) = crate::headline::table(ms) {
        md.push_str("## headline\n\n");
        md.push_str(&md_table(&t));
        let notes = crate::headline::notes(ms);
        if !notes.is_empty() {
            let _ = writeln!(md, "\n{}", md_text(notes.trim_end()));
        }
        md.push('\n');
    }
    md.push_str("## machine\n\n| | |\n|---|---|\n");
    for (k, v) in metadata_rows(record) {
        let _ = writeln!(md, "| {} | {} |", md_text(k), md_text(&v));
    }
    md.push('\n');
    if let Ok(env) = serde_json::from_value::<Environment>(record.environment.clone()) {
        for w in &env.warnings {
            let _ = writeln!(
                md,
                "> **{}**: {} (fix: {})",
                md_text(&w.kind),
                md_text(&w.message),
                md_text(&w.remedy)
            );
        }
        md.push('\n');
    }
    let mut files = Vec::new();
    let mut families: Vec<(&str, Vec<&Measurement>)> = Vec::new();
    for m in ms {
        let family = m.probe.split('.').next().unwrap_or(&m.probe);
        match families.iter_mut().find(|f| f.0 == family) {
            Some(f) => f.1.push(m),
            None => families.push((family, vec![m])),
        }
    }
    let mut add = |md: &mut String, (svg, caption): Figure| {
        let name = format!("oslab-run-{id}-fig{}.svg", files.len() + 1);
        let _ = writeln!(md, "![{}]({name})\n", md_text(&caption));
        files.push((name, svg));
    };
    for (family, list) in &families {
        let _ = writeln!(md, "## {}\n", md_text(family));
        for f in charts(family, &alone(list), record) {
            add(&mut md, f);
        }
        md.push_str("| probe | params | metric | median | CI95 | unit | predicted | status |\n|---|---|---|--:|--:|---|--:|---|\n");
        for m in list {
            let (median, ci, unit) = match &m.summary {
                Some(s) => {
                    let (div, sym) = scale_for(m.unit, s.median);
                    (
                        num(s.median / div),
                        s.interval_text(div, num),
                        sym.to_string(),
                    )
                }
                None => Default::default(),
            };
            let pred = m.prediction.as_ref().map_or("no model".to_string(), |p| {
                num(p.value / scale_for(m.unit, m.summary.as_ref().map_or(p.value, |s| s.median)).0)
            });
            let _ = writeln!(
                md,
                "| {} | {} | {} | {median} | {ci} | {unit} | {pred} | {} |",
                md_text(&m.probe),
                md_text(&m.params_text()),
                md_text(&m.metric),
                md_text(&m.status.to_string())
            );
        }
        md.push('\n');
    }
    if let Some(f) = timeline_chart(timeline) {
        md.push_str("## timeline\n\n");
        add(&mut md, f);
    }
    if let Some(model) = crate::model_view::markdown(ms) {
        md.push_str("## model vs measured\n\n");
        md.push_str(&model);
    }
    (md, files)
}

/// A table of [`oslab_core::text`] as a Markdown table (numbers aligned right).
fn md_table(t: &oslab_core::text::Table) -> String {
    let line = |cells: &[String]| {
        let shown: Vec<String> = cells.iter().map(|c| md_text(c)).collect();
        format!("| {} |\n", shown.join(" | "))
    };
    let mut md = line(&t.header);
    let rule: Vec<&str> = (0..t.header.len())
        .map(|c| if t.numeric.contains(&c) { "--:" } else { "---" })
        .collect();
    let _ = writeln!(md, "|{}|", rule.join("|"));
    for r in &t.rows {
        md.push_str(&line(r));
    }
    md
}

/// Text safe inside a Markdown table cell or paragraph.
/// Text that Markdown shows as text: one line, every character with a meaning in CommonMark
/// (emphasis, links, code, tables, raw HTML, entities) escaped.
pub(crate) fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '|' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A code span that stays one span: on one line (a blank line would end it and let what follows
/// be read as HTML), without backticks.
fn md_code(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("`{}`", one_line.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_of_hostile_strings_renders_no_markup() {
        let hostile = "x\n\n<script>alert(1)</script>\n\n**bold** [l](javascript:x) `c` | t";
        let record: RunRecord = serde_json::from_value(serde_json::json!({
            "id": 1, "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z",
            "status": "complete", "oslab_version": "0", "git_rev": null, "command": hostile,
            "hostname": hostile, "quick": true, "wall_s": 1.0, "fingerprint": {},
            "environment": {"warnings": [{"kind": hostile, "message": hostile, "remedy": hostile}]},
        }))
        .unwrap();
        let (md, _) = markdown(&record, &[], &[]);
        // Rendered with CommonMark's rules, as GitHub and every viewer do.
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new(&md));
        for markup in ["<script", "<strong>", "<a ", "<em>", "<table"] {
            assert!(!html.contains(markup), "{markup} in {html}");
        }
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
