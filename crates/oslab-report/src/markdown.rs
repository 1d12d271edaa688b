//! The Markdown report: headline, machine, the families' tables and charts (as SVG files beside
//! it), the model's analysis.

use crate::charts::*;
use crate::html::*;
use crate::markup::*;
use oslab_core::machine::Environment;
use oslab_core::model::{Measurement, TimelineEvent};
use oslab_core::units::{num, scale_for};
use oslab_store::RunRecord;
use std::fmt::Write;

/// The report as Markdown, with its charts as SVG files to write beside it (name, content).
pub fn markdown(
    record: &RunRecord,
    ms: &[Measurement],
    timeline: &[TimelineEvent],
) -> (String, Vec<(String, String)>) {
    let ms: &[Measurement] = &oslab_core::stats::repetitions::pooled(ms);
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
    // The machine under a click, as in the HTML report; each warning one line, the fixes folded.
    let rows = metadata_rows(record);
    let mut table = String::from("| | |\n|---|---|\n");
    for (k, v) in &rows {
        let _ = writeln!(table, "| {} | {} |", md_text(k), md_text(v));
    }
    md.push_str(&md_folded(&machine_summary(&rows), &table, false));
    if let Ok(env) = serde_json::from_value::<Environment>(record.environment.clone()) {
        let mut fixes = String::new();
        for w in &env.warnings {
            let _ = writeln!(md, "- **{}**: {}", md_text(&w.kind), md_text(&w.message));
            let _ = writeln!(fixes, "- **{}**: {}", md_text(&w.kind), md_text(&w.remedy));
        }
        if !env.warnings.is_empty() {
            md.push('\n');
            md.push_str(&md_folded("what to do about each", &fixes, false));
        }
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
    // Charts two to a line, as the HTML report's two columns draw them (one under another, a
    // default run's Markdown was 73 screens of 900 px in a browser).
    let mut add = |md: &mut String, figures: Vec<Figure>| {
        let images: Vec<String> = figures
            .into_iter()
            .map(|(svg, caption)| {
                let name = format!("oslab-run-{id}-fig{}.svg", files.len() + 1);
                files.push((name.clone(), svg));
                format!(
                    "<img src=\"{}\" alt=\"{}\" title=\"{1}\" width=\"49%\">",
                    escape(&name),
                    escape(&caption)
                )
            })
            .collect();
        if !images.is_empty() {
            let _ = writeln!(md, "{}\n", images.join("\n"));
        }
    };
    // The families a level below the report's sections: GitHub draws a second-level heading
    // larger and ruled, 16 of them a screen's height.
    md.push_str("## measurements\n\n");
    for (family, list) in &families {
        let _ = writeln!(md, "### {}\n", md_text(family));
        let drawn = charts(family, &alone(list), record);
        add(&mut md, drawn);
        let mut table = String::from("| probe | params | metric | median | CI95 | unit | predicted | status |\n|---|---|---|--:|--:|---|--:|---|\n");
        for m in list {
            let (median, ci, unit) = match &m.summary {
                Some(s) => {
                    let (div, sym) = scale_for(m.unit, s.median);
                    (
                        s.median_text(div, m.unit),
                        s.interval_text(div, m.unit),
                        sym.to_string(),
                    )
                }
                None => Default::default(),
            };
            let pred = m.prediction.as_ref().map_or("no model".to_string(), |p| {
                num(p.value / scale_for(m.unit, m.summary.as_ref().map_or(p.value, |s| s.median)).0)
            });
            let _ = writeln!(
                table,
                "| {} | {} | {} | {median} | {ci} | {unit} | {pred} | {} |",
                md_text(&m.probe),
                md_text(&m.params_text()),
                md_text(&m.metric),
                md_text(&m.status.to_string())
            );
        }
        let summary = oslab_core::units::counted(list.len(), "measurement");
        // Every table under a click: on a page that does not reflow into columns, the headline and
        // the charts fill the first screens.
        md.push_str(&md_folded(&summary, &table, false));
    }
    if let Some(f) = timeline_chart(timeline) {
        md.push_str("## timeline\n\n");
        add(&mut md, vec![f]);
    }
    if let Some(model) = crate::model_view::markdown(ms) {
        md.push_str("## model vs measured\n\n");
        md.push_str(&model);
    }
    (md, files)
}
