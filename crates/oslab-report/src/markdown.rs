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
