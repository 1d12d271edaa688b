//! One self-contained HTML report of a run: inline CSS, inline SVG charts, no scripts, nothing
//! fetched. The headline first, then run metadata and warnings; then per probe family its charts
//! and its table (folded when long: the charts and the headline are what a reader scans); the
//! model-vs-measured analysis last, folded per family. Everything that comes from the user or the
//! machine is escaped.

use crate::charts::*;
use crate::markup::*;
use oslab_core::catalog::{self};
use oslab_core::machine::Environment;
use oslab_core::model::{Measurement, Status, TimelineEvent};
use oslab_core::units::{num, scale_for};
use oslab_store::RunRecord;
use std::collections::BTreeMap;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%}figure svg{max-width:100%;height:auto}details{margin:.4em 0}summary{cursor:pointer;color:#333}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.warn{background:#fff4e0;border-left:4px solid #e69500;padding:.4em .8em;margin:.3em 0}
.noisy,.changed{color:#a15c00;font-weight:600}.regression{color:#b00020;font-weight:700}.better{color:#1b7a2a;font-weight:700}.skipped{color:#666;font-style:italic}.failed{color:#b00020;font-weight:600}
nav.contents{margin:1em 0;font-size:.9em}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}p.note{margin:.15em 0;font-size:.9em}.meta td:first-child{color:#666}
.families{columns:2 520px;column-gap:2em}.family{break-inside:avoid;min-width:0;overflow:hidden}.family h2{margin-top:.6em}
.models{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:0 1em}.models details{min-width:0}.models details[open]{grid-column:1/-1}
@media print{body{max-width:none}figure{break-inside:avoid}}";

/// The report of one run.
pub fn report(record: &RunRecord, ms: &[Measurement], timeline: &[TimelineEvent]) -> String {
    let ms: &[Measurement] = &oslab_core::stats::repetitions::pooled(ms);
    let id = record.id.map_or("-".into(), |i| i.to_string());
    let mut h = html!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>oslab run {}</title><style>{}</style></head><body>\n<h1>oslab run {} on {}</h1>\n",
        id,
        style(),
        id,
        record.hostname
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
    h.push(contents(&sections));
    if let Some(t) = headline {
        h.push(html!("<h2 id=\"headline\">headline</h2>\n"));
        h.push(text_table(&t));
        // A footnote a line, as the terminal prints them (in one paragraph they ran together).
        for note in crate::headline::notes(ms)
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            h.push(html!("<p class=\"note\">{}</p>\n", note.trim()));
        }
    }
    h.push(metadata(record));
    h.push(warnings(record));
    let topology: Option<oslab_core::topology::Topology> =
        serde_json::from_value(record.fingerprint["topology"].clone()).ok();
    if let Some((t, figure)) = topology
        .as_ref()
        .and_then(|t| Some((t, crate::machine_map::figure(t, ms)?)))
    {
        // Drawn open where there is more than one package or node to tell apart.
        let several = t.packages() > 1 || t.nodes.len() > 1;
        let drawn = figure_html(&figure);
        h.push(folded(
            "the machine drawn, with its measured costs",
            &drawn,
            several,
        ));
    }
    // The families in two columns where the page is wide enough, flowing down the first, then
    // the second (a default run's report was 11,050 px, 12 screens, one family under another;
    // in a grid, each pair took its taller one's height).
    h.push(html!("<div class=\"families\">\n"));
    for family in order {
        let list = &families[family];
        h.push(html!(
            "<section class=\"family\"><h2 id=\"{0}\">{0}</h2>\n",
            family
        ));
        let drawn = charts(family, &alone(list), record);
        for chart in &drawn {
            h.push(figure_html(chart));
        }
        // A chart already shows the family's figures: its table waits under a click.
        h.push(folded(
            &oslab_core::units::counted(list.len(), "measurement"),
            &table(list),
            drawn.is_empty() && list.len() <= OPEN_IN_FAMILY,
        ));
        h.push(html!("</section>\n"));
    }
    h.push(html!("</div>\n"));
    if !timeline.is_empty() {
        h.push(html!("<h2 id=\"timeline\">timeline</h2>\n"));
        if let Some(f) = timeline_chart(timeline) {
            h.push(figure_html(&f));
        }
    }
    if let Some(model) = model {
        h.push(html!(
            "<h2 id=\"model-vs-measured\">model vs measured</h2>\n"
        ));
        h.push(model);
    }
    h.push(html!("</body></html>\n"));
    h.into_string()
}

/// The page's style sheet, ours.
fn style() -> Html {
    Html::formatted(STYLE.to_string())
}

/// A family without a chart shows its table open when it has at most this many rows; longer
/// tables are folded under their summary (a default run's memory and bandwidth tables run to
/// hundreds of rows).
const OPEN_ROWS: usize = 12;

/// A family's table is open under its heading only when it is this short: the report's first
/// screens are the headline and the charts (a default run's open activity, migration and NUMA
/// tables took 1,100 px of a 6,700 px page).
const OPEN_IN_FAMILY: usize = 3;

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
    let mut h = html!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>oslab: {0}</title><style>{1}</style></head><body>\n<h1>oslab: {0}</h1>\n",
        labels.join(" vs "),
        style()
    );
    h.push(html!("<table class=\"meta\"><tr><th></th>"));
    for l in &labels {
        h.push(html!("<th>{}</th>", l));
    }
    h.push(html!("</tr>\n"));
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
        h.push(html!("<tr><td>{}</td>", name));
        for (_, r, _) in sides {
            h.push(html!("<td>{}</td>", f(r)));
        }
        h.push(html!("</tr>\n"));
    }
    h.push(html!("</table>\n<h2 id=\"comparison\">comparison</h2>\n"));
    for c in comparisons {
        h.push(comparison_table(c));
    }
    let changed: std::collections::BTreeSet<&str> = comparisons
        .iter()
        .flat_map(|c| c.rows.iter())
        .filter(|r| r.judgement.verdict.is_change())
        .map(|r| catalog::prefix(&r.probe))
        .collect();
    // Every changed row marked in its family's chart with its change.
    let marked: crate::charts::Changed = comparisons
        .iter()
        .flat_map(|c| c.rows.iter())
        .filter(|r| r.judgement.verdict.is_change())
        .map(|r| {
            let sign = crate::plots::Direction::of(r.judgement.verdict).sign();
            (
                (r.probe.clone(), r.params.clone(), r.metric.clone()),
                format!("{sign} {}", crate::comparison::parts(r, true).change),
            )
        })
        .collect();
    let pooled: Vec<Vec<&Measurement>> = sides.iter().map(|s| s.2.iter().collect()).collect();
    // The families in two columns where the page is wide enough, as in a run's report (one
    // 640 px column left the page's right half empty).
    h.push(html!("<div class=\"families\">\n"));
    for family in catalog::families(pooled.iter().flatten().map(|m| m.probe.as_str())) {
        let drawn: Vec<Drawn> = sides
            .iter()
            .zip(&pooled)
            .map(|((label, _, _), ms)| Drawn {
                changed: marked.clone(),
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
        // Charts fold under their family, open only where a row changed: the answer stays on
        // the first screens (13 screens at 1,280 px when every chart was open).
        let figs: Html = figures.iter().map(figure_html).collect();
        h.push(html!(
            "<section class=\"family\"><h2 id=\"{0}\">{0}</h2>\n",
            family
        ));
        let what = format!(
            "{}, the sides overlaid",
            oslab_core::units::counted(figures.len(), "chart")
        );
        h.push(folded(&what, &figs, changed.contains(family)));
        h.push(html!("</section>\n"));
    }
    h.push(html!("</div>\n</body></html>\n"));
    h.into_string()
}

/// Links to the page's sections.
fn contents(sections: &[&str]) -> Html {
    let mut links = Html::default();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            links.push(html!(" · "));
        }
        links.push(html!("<a href=\"#{}\">{}</a>", s.replace(' ', "-"), s));
    }
    html!("<nav class=\"contents\">contents: {}</nav>\n", links)
}

/// One comparison as a reader needs it first: what moved between the sides, then the rows
/// that changed, open; the other notable rows, and how the verdicts were reached, folded.
fn comparison_table(c: &crate::comparison::Comparison) -> Html {
    let mut h = html!(
        "<p><b>{} against {}</b>: {}</p>\n",
        c.b.set,
        c.a.set,
        c.tally()
    );
    let moved = c.moved();
    if moved.is_empty() {
        h.push(html!(
            "<p>No recorded condition moved between the sides.</p>\n"
        ));
    } else {
        h.push(html!("<p class=\"warn\">What moved between A and B (a difference below may be theirs, not your change's):</p>\n<ul>\n"));
        for m in &moved {
            h.push(html!("<li>{}</li>\n", m.to_string()));
        }
        h.push(html!("</ul>\n"));
    }
    let shown = c.shown(false);
    if let Some(f) = forest(&shown) {
        h.push(figure_html(&f));
    }
    let (open, rest): (Vec<_>, Vec<_>) = shown
        .into_iter()
        .partition(|r| r.judgement.verdict.is_change());
    match open.len() {
        0 => h.push(html!("<p>No row judged changed.</p>\n")),
        n if n <= OPEN_ROWS => h.push(rows_table(&open)),
        n => h.push(folded(
            &format!("{n} rows judged changed"),
            &rows_table(&open),
            false,
        )),
    }
    if !rest.is_empty() {
        // Moved cache, load or placement, ratios beyond the band that could not be judged, and
        // rows whose pages or placement moved: worth a look, not the answer. The summary says
        // which, counted.
        h.push(folded(&rest_summary(&rest), &rows_table(&rest), false));
    }
    for note in c.notes() {
        h.push(html!("<p class=\"warn\">{}</p>\n", note));
    }
    let method: Html = c
        .method()
        .lines()
        .map(|l| html!("<p>{}</p>\n", l))
        .collect();
    h.push(folded(
        "how these verdicts were reached, and how often they cry wolf",
        &method,
        false,
    ));
    h
}

/// What the folded rows beside the changed ones are, counted by kind: "3 more rows: 2 where
/// the cache moved, 1 ratio only beyond the band".
fn rest_summary(rest: &[&oslab_core::stats::compare::Row]) -> String {
    use oslab_core::stats::compare::Verdict;
    let count =
        |f: &dyn Fn(&oslab_core::stats::compare::Row) -> bool| rest.iter().filter(|r| f(r)).count();
    let kinds: [(usize, &str); 6] = [
        (
            count(&|r| r.judgement.verdict == Verdict::CacheMoved),
            "where the cache moved",
        ),
        (
            count(&|r| r.judgement.verdict == Verdict::LoadMoved),
            "where other work differed",
        ),
        (
            count(&|r| r.judgement.verdict == Verdict::PlacementMoved),
            "crossing cpus that sat differently",
        ),
        (
            count(&|r| r.judgement.verdict == Verdict::RatioOnly),
            "ratio only, beyond the band",
        ),
        (
            count(&|r| r.judgement.verdict == Verdict::Unknown),
            "not comparable (on one side only, no value)",
        ),
        (
            count(&|r| !r.got_moved.is_empty()),
            "whose pages or placement moved",
        ),
    ];
    let parts: Vec<String> = kinds
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    format!(
        "{}: {}",
        oslab_core::units::counted(rest.len(), "more row"),
        parts.join(", ")
    )
}

/// Comparison rows as an HTML table of six columns that fit the page: what was measured with
/// its parameters under it, A and B, the change with its interval under it, the verdict with
/// what moved, and the evidence (eleven columns scrolled sideways in a 584 px column, the verdict
/// out of view).
fn rows_table(shown: &[&oslab_core::stats::compare::Row]) -> Html {
    let mut h = html!("<table><tr><th>measurement</th><th>A</th><th>B</th><th>change</th><th>verdict</th><th>evidence</th></tr>\n");
    for r in shown {
        let p = crate::comparison::parts(r, true);
        let mut verdict = html!(
            "<td class=\"{}\">{}",
            p.verdict.to_lowercase().replace(' ', "-"),
            p.verdict
        );
        // What the row got that moved between the sides comes with its verdict, as in the
        // terminal's table.
        for m in &p.got_moved {
            verdict.push(html!("<br><small>{}</small>", m));
        }
        verdict.push(html!("</td>"));
        h.push(html!(
            "<tr><td>{}<br><small>{}</small></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}<br><small>{}</small></td>{}<td><small>{}</small></td></tr>\n",
            p.what,
            p.params,
            p.a,
            p.b,
            p.change,
            p.interval,
            verdict,
            p.evidence
        ));
    }
    h.push(html!("</table>\n"));
    h
}

fn metadata(r: &RunRecord) -> Html {
    let rows = metadata_rows(r);
    let mut h = html!("<table class=\"meta\">\n");
    for (k, v) in &rows {
        h.push(html!("<tr><td>{}</td><td>{}</td></tr>\n", k, v));
    }
    h.push(html!("</table>\n"));
    folded(&machine_summary(&rows), &h, false)
}

/// The summary a folded machine table sits under: the cpu and the kernel.
pub(crate) fn machine_summary(rows: &[(&'static str, String)]) -> String {
    let said = |key: &str| {
        rows.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    };
    format!(
        "the run and its machine: {}",
        [said("cpu"), said("kernel")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// The run and its machine, a row each: when, what, which oslab, the cpu, caches, nodes, kernel,
/// clock (the HTML and Markdown reports' machine summary).
pub(crate) fn metadata_rows(r: &RunRecord) -> Vec<(&'static str, String)> {
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

fn warnings(r: &RunRecord) -> Html {
    let Ok(env) = serde_json::from_value::<Environment>(r.environment.clone()) else {
        return Html::default();
    };
    if env.warnings.is_empty() {
        return Html::default();
    }
    let mut h = html!("<h2 id=\"warnings\">environment warnings</h2>\n");
    let mut fixes = html!("<ul>\n");
    for w in &env.warnings {
        h.push(html!(
            "<div class=\"warn\"><b>{}</b>: {}</div>\n",
            w.kind,
            w.message
        ));
        fixes.push(html!("<li><b>{}</b>: {}</li>\n", w.kind, w.remedy));
    }
    fixes.push(html!("</ul>\n"));
    h.push(folded("what to do about each", &fixes, false));
    h
}

/// A row's status as one word (coloured), and under it what it rests on: the sample count, or
/// why there is no value.
fn status_cell(m: &Measurement) -> Html {
    let n = m
        .summary
        .as_ref()
        .map(|s| format!("n={}", s.n))
        .unwrap_or_default();
    match &m.status {
        Status::Ok => html!("ok<br><small>{}</small>", n),
        Status::Noisy(_) => html!(
            "<span class=\"noisy\">{}</span><br><small>{}</small>",
            crate::summary::status_text(m),
            n
        ),
        Status::Skipped(why) => html!(
            "<span class=\"skipped\">skipped</span><br><small>{}</small>",
            why
        ),
        Status::Failed(why) => html!(
            "<span class=\"failed\">failed</span><br><small>{}</small>",
            why
        ),
    }
}

/// A family's measurements in five columns that fit the report's column (twelve scrolled
/// sideways in 584 px, the status out of view, the parameters wrapped to eight lines): what was
/// measured with its parameters under it; the median with its interval under it; the status
/// beside it; the prediction with measured/predicted; the tail, best and TSC ticks.
fn table(ms: &[&Measurement]) -> Html {
    let mut h = html!(
        "<table><tr><th>measurement</th><th>median</th><th>status</th><th>predicted</th><th>best, tail</th></tr>\n"
    );
    for m in ms {
        let (median, ci, pred, eff, tail) = match &m.summary {
            Some(s) => {
                let (div, sym) = scale_for(m.unit, s.median);
                let (pred, eff) = match &m.prediction {
                    Some(p) => (
                        format!("{} {sym}", num(p.value / div)),
                        crate::table::versus(m),
                    ),
                    None => ("no model".into(), String::new()),
                };
                let at = |t: Option<f64>| t.map_or_else(|| "-".into(), |t| num(t / div));
                let mut tail = format!(
                    "best {} · p90 {} · p99 {} · p99.9 {}",
                    at(m.best()),
                    at(s.p90),
                    at(s.p99),
                    at(s.p999)
                );
                if let Some(c) = m.cycles {
                    tail.push_str(&format!(" · {c:.0} TSC ticks"));
                }
                (
                    format!("{} {sym}", s.median_text(div, m.unit)),
                    s.interval_text(div, m.unit),
                    pred,
                    eff,
                    tail,
                )
            }
            None => Default::default(),
        };
        h.push(match m.note.as_deref() {
            Some(note) => html!("<tr title=\"{}\">", note),
            None => html!("<tr>"),
        });
        h.push(html!(
            "<td>{} {}<br><small>{}</small></td><td class=\"n\">{}<br><small>{}</small></td><td>{}</td><td class=\"n\">{}<br><small>{}</small></td><td><small>{}</small></td></tr>\n",
            m.probe,
            m.metric,
            m.params_text(),
            median,
            ci,
            status_cell(m),
            pred,
            eff,
            tail
        ));
    }
    h.push(html!("</table>\n"));
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::markdown;

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
