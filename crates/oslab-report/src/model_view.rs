//! "Model vs measured": per probe family, in the order the primitive costs are usually taught
//! (timer, loop, call, system call, creation, switch, memory, bandwidth, faults, NUMA, noise,
//! migration), each measurement's prediction, the measured value, their ratio and the analysis of
//! the gap, with the model's formula and the source of every input. Sweeps (many sizes of one
//! probe and metric) are summarised in one row: their curves are drawn with the model beside them.

use crate::markup::{html, Html};
use oslab_core::catalog;
use oslab_core::model::Measurement;
use oslab_core::units::{scale_for, value};
use std::fmt::Write;

/// Rows of one probe and metric beyond which they are a sweep, summarised.
const SWEEP: usize = 6;

/// The HTML of the view, or None when no measurement has a value.
pub fn html(ms: &[Measurement]) -> Option<Html> {
    let measured: Vec<&Measurement> = ms.iter().filter(|m| m.status.has_value()).collect();
    if measured.is_empty() {
        return None;
    }
    let predicted = measured.iter().filter(|m| m.prediction.is_some()).count();
    let far = measured
        .iter()
        .filter(|m| m.prediction.as_ref().is_some_and(|p| p.gap.is_some()))
        .count();
    let mut h = html!(
        "<p>{} of {} measured values carry a prediction; {} are more than 2x from it. \
         <b>spec</b>: predicted from the machine's specifications (published cycle counts at the measured core clock, the memory's rate, the kernel's configuration); \
         <b>composed</b>: from simpler measurements of this run, a consistency check. Hover a model for its inputs and their sources.</p>\n",
        predicted,
        measured.len(),
        far
    );
    // The families' summaries side by side; an opened one takes the whole width.
    h.push(html!("<div class=\"models\">\n"));
    for fam in catalog::families(measured.iter().map(|m| m.probe.as_str())) {
        let rows: Vec<&&Measurement> = measured.iter().filter(|m| family(m) == fam).collect();
        if rows.is_empty() {
            continue;
        }
        let mut t = html!("<table><tr><th>measurement</th><th>predicted</th><th>model</th><th>measured</th><th>measured / predicted</th><th>analysis</th></tr>\n");
        let mut done: Vec<(&str, &str)> = Vec::new();
        for m in &rows {
            let key = (m.probe.as_str(), m.metric.as_str());
            if done.contains(&key) {
                continue;
            }
            let group: Vec<&Measurement> = rows
                .iter()
                .filter(|r| (r.probe.as_str(), r.metric.as_str()) == key)
                .map(|r| **r)
                .collect();
            if group.len() > SWEEP && group.iter().all(|g| g.params.contains_key("size")) {
                done.push(key);
                t.push(sweep_row(&group));
            } else {
                t.push(row(m));
            }
        }
        t.push(html!("</table>\n"));
        let summary = family_summary(fam, rows.iter().copied().copied());
        h.push(crate::markup::folded(&summary, &t, false));
    }
    h.push(html!("</div>\n"));
    Some(h)
}

/// The view as Markdown: a table per family (measurement, predicted, measured, their ratio,
/// the analysis), a sweep in one row; None when no measurement has a value.
pub fn markdown(ms: &[Measurement]) -> Option<String> {
    use crate::markup::md_text;
    let measured: Vec<&Measurement> = ms.iter().filter(|m| m.status.has_value()).collect();
    if measured.is_empty() {
        return None;
    }
    let mut md = String::new();
    for fam in catalog::families(measured.iter().map(|m| m.probe.as_str())) {
        let rows: Vec<&Measurement> = measured
            .iter()
            .copied()
            .filter(|m| family(m) == fam)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut t = String::from(
            "| measurement | predicted | measured | measured / predicted | analysis |\n|---|--:|--:|--:|---|\n",
        );
        let mut done: Vec<(&str, &str)> = Vec::new();
        for m in &rows {
            let key = (m.probe.as_str(), m.metric.as_str());
            let group: Vec<&Measurement> = rows
                .iter()
                .copied()
                .filter(|r| (r.probe.as_str(), r.metric.as_str()) == key)
                .collect();
            if group.len() > SWEEP {
                if done.contains(&key) {
                    continue;
                }
                done.push(key);
                let mut ratios: Vec<f64> = group.iter().filter_map(|m| m.efficiency()).collect();
                ratios.sort_by(f64::total_cmp);
                let spread = match (ratios.first(), ratios.last()) {
                    (Some(lo), Some(hi)) => format!("{lo:.2}x to {hi:.2}x"),
                    _ => String::new(),
                };
                let _ = writeln!(
                    t,
                    "| {} {} ({} points: drawn with its model) | {} predicted | {} | {spread} | |",
                    md_text(&m.probe),
                    md_text(&m.metric),
                    group.len(),
                    ratios.len(),
                    group.len()
                );
                continue;
            }
            let Some(s) = &m.summary else { continue };
            let (pred, analysis) = match &m.prediction {
                Some(p) => (
                    value(p.value, m.unit),
                    p.gap.clone().unwrap_or_else(|| "within 2x".into()),
                ),
                None => ("no model".into(), m.no_model.clone().unwrap_or_default()),
            };
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {} |",
                md_text(&format!("{} {} {}", m.probe, m.params_text(), m.metric)),
                md_text(&pred),
                measured_text(s, m.unit),
                md_text(&crate::table::versus(m)),
                md_text(&analysis)
            );
        }
        md.push_str(&crate::markup::md_folded(
            &family_summary(fam, rows.iter().copied()),
            &t,
            false,
        ));
    }
    Some(md)
}

/// What a family's folded table holds: `timer: 6 measured, 1 more than 2x from the model`.
fn family_summary<'a>(fam: &str, rows: impl Iterator<Item = &'a Measurement>) -> String {
    let (mut measured, mut off) = (0, 0);
    for m in rows {
        measured += 1;
        off += usize::from(m.prediction.as_ref().is_some_and(|p| p.gap.is_some()));
    }
    format!("{fam}: {measured} measured, {off} more than 2x from the model")
}

/// A measured median with its unit, each cell scaled by itself (a prediction of 3.80 µs beside a
/// measured 802 ns, not 3801 ns).
fn measured_text(s: &oslab_core::stats::Summary, unit: oslab_core::units::Unit) -> String {
    let (div, sym) = scale_for(unit, s.median);
    format!("{} {sym}", s.median_text(div, unit))
        .trim_end()
        .to_string()
}

fn family(m: &Measurement) -> &str {
    catalog::prefix(&m.probe)
}

/// The model's inputs and their sources, for a tooltip.
fn inputs(m: &Measurement) -> String {
    let Some(p) = &m.prediction else {
        return String::new();
    };
    p.inputs
        .iter()
        .map(|(k, v)| {
            let source = p.sources.get(k).and_then(|s| s.as_str()).unwrap_or("");
            format!("{k} = {v}: {source}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn row(m: &Measurement) -> Html {
    let Some(s) = &m.summary else {
        return Html::default();
    };
    let what = format!("{} {} {}", m.probe, m.params_text(), m.metric);
    let (pred, model, ratio, analysis) = match &m.prediction {
        Some(p) => (
            value(p.value, m.unit),
            html!(
                "<span title=\"{}\"><b>{}</b> {}: {}</span>",
                inputs(m),
                p.kind.name(),
                p.model,
                p.formula
            ),
            crate::table::versus(m),
            match &p.gap {
                Some(g) => html!("<span class=\"noisy\">{}</span>", g),
                None if m.efficiency().is_some() => html!("within 2x"),
                None => html!("no measurable value to compare"),
            },
        ),
        None => (
            "no model".into(),
            Html::text(m.no_model.as_deref().unwrap_or("")),
            String::new(),
            Html::default(),
        ),
    };
    html!(
        "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
        what,
        pred,
        model,
        measured_text(s, m.unit),
        ratio,
        analysis
    )
}

/// One row for a sweep: how many rows, the models used, the spread of measured/predicted and
/// the reasons given for those far off.
fn sweep_row(group: &[&Measurement]) -> Html {
    let first = group[0];
    let mut ratios: Vec<f64> = group.iter().filter_map(|m| m.efficiency()).collect();
    ratios.sort_by(f64::total_cmp);
    let mut models: Vec<String> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    for m in group {
        if let Some(p) = &m.prediction {
            let name = format!("{} {}", p.kind.name(), p.model);
            if !models.contains(&name) {
                models.push(name);
            }
            if let Some(g) = &p.gap {
                let why = g
                    .split_once(": ")
                    .map_or(g.as_str(), |(_, w)| w)
                    .to_string();
                if !reasons.contains(&why) {
                    reasons.push(why);
                }
            }
        } else if let Some(why) = &m.no_model {
            let why = format!("no model: {why}");
            if !reasons.contains(&why) {
                reasons.push(why);
            }
        }
    }
    let far = group
        .iter()
        .filter(|m| m.prediction.as_ref().is_some_and(|p| p.gap.is_some()))
        .count();
    let spread = match (ratios.first(), ratios.get(ratios.len() / 2), ratios.last()) {
        (Some(lo), Some(mid), Some(hi)) => format!("{mid:.2}x (from {lo:.2}x to {hi:.2}x)"),
        _ => String::new(),
    };
    html!(
        "<tr><td>{} {} ({} rows: a sweep, drawn with its model in its section)</td><td class=\"n\">{} predicted</td><td>{}</td><td class=\"n\">{} measured</td><td class=\"n\">{}</td><td>{}{}</td></tr>\n",
        first.probe,
        first.metric,
        group.len(),
        ratios.len(),
        models.join("; "),
        group.len(),
        spread,
        if far > 0 { format!("{far} more than 2x off: ") } else { "all within 2x".into() },
        reasons.join("; ")
    )
}
