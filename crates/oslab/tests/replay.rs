//! A recorded run replayed through the real path without measuring anything (the fast tier a
//! plain `cargo test` runs): imported into a store, shown at 80 columns (against a golden copy)
//! and as JSON, compared three runs a side with a copy whose system calls were made 30% slower,
//! and drawn as HTML reports. The recording (tests/data/recorded-run.json) is a `--quick` run of
//! ten probes on a 2-vCPU KVM guest, its samples thinned to 60 a row (summaries as measured).

mod common;

use common::{oslab, temp_db};
use serde_json::Value;
use std::path::Path;

const RECORDED: &str = include_str!("data/recorded-run.json");

/// The recording with every value of its system-call rows times `syscalls` and of the others
/// times `others`: another run of the same machine, slower or faster where chosen.
fn variant(syscalls: f64, others: f64) -> Value {
    let doc: Value = serde_json::from_str(RECORDED).unwrap();
    let probes: Vec<bool> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["probe"].as_str().unwrap().starts_with("syscall."))
        .collect();
    oslab_testkit::scaled_run(&doc, "vm", |i| match probes[i] {
        true => syscalls,
        false => others,
    })
}

fn import(db: &Path, dir: &Path, doc: &Value, name: &str) {
    let file = dir.join(name);
    std::fs::write(&file, doc.to_string()).unwrap();
    oslab()
        .arg("import")
        .arg(&file)
        .arg("--db")
        .arg(db)
        .assert()
        .success();
}

fn text(db: &Path, columns: &str, args: &[&str]) -> String {
    let out = oslab()
        .env("COLUMNS", columns)
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `got` is the golden file `name` (tests/data/golden/), or with OSLAB_BLESS=1 becomes it.
fn golden(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(name);
    if std::env::var_os("OSLAB_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if want != got {
        let first = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{name} differs from its golden copy at line {} (OSLAB_BLESS=1 cargo test --test replay rewrites it once the change is meant):\nwant: {:?}\ngot:  {:?}\n\n{got}",
            first + 1,
            want.lines().nth(first),
            got.lines().nth(first)
        );
    }
}

#[test]
fn a_recorded_run_goes_through_store_show_compare_and_report() {
    let (dir, db) = temp_db();
    // A: the recording and two near copies; B: the same with system calls 30% slower.
    for (i, (syscalls, others)) in [(1.0, 1.0), (1.01, 0.99), (0.99, 1.01)].iter().enumerate() {
        import(
            &db,
            dir.path(),
            &variant(*syscalls, *others),
            &format!("a{i}.json"),
        );
    }
    for (i, (syscalls, others)) in [(1.3, 1.0), (1.31, 0.99), (1.29, 1.01)].iter().enumerate() {
        import(
            &db,
            dir.path(),
            &variant(*syscalls, *others),
            &format!("b{i}.json"),
        );
    }

    // The first view at 80 columns: fitted, no trailing space, the headline first; as recorded.
    let shown = text(&db, "80", &["show", "1"]);
    for line in shown.lines() {
        assert!(line.chars().count() <= 80, "{line:?}");
        assert!(!line.ends_with(' '), "a trailing space: {line:?}");
    }
    let headline = shown.lines().position(|l| l == "headline");
    assert!(headline.is_some_and(|h| h < 10), "{shown}");
    golden("show-1-80-columns.txt", &shown);

    // JSON: every recorded row, its status and median as stored.
    let doc: Value = serde_json::from_str(&text(&db, "80", &["show", "1", "--json"])).unwrap();
    let recorded: Value = serde_json::from_str(RECORDED).unwrap();
    let (got, want) = (
        doc["measurements"].as_array().unwrap(),
        recorded["measurements"].as_array().unwrap(),
    );
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            (&g["probe"], &g["metric"], &g["status"]),
            (&w["probe"], &w["metric"], &w["status"])
        );
        assert_eq!(g["summary"]["median"], w["summary"]["median"], "{g}");
    }

    // Three a side: the system calls are regressions, nothing else changed.
    let compared = text(&db, "120", &["compare", "1,2,3", "4,5,6", "--json"]);
    let c: Value = serde_json::from_str(&compared).unwrap();
    let rows = c["comparisons"][0]["rows"].as_array().expect("rows");
    let verdict = |r: &Value| r["verdict"].as_str().unwrap_or("").to_string();
    for r in rows {
        let syscall = r["probe"].as_str().unwrap().starts_with("syscall.");
        let v = verdict(r);
        match syscall {
            true => assert_eq!(v, "regression", "{r}"),
            false => assert!(
                !["regression", "better", "changed"].contains(&v.as_str()),
                "{r}"
            ),
        }
    }
    let changed: Vec<&Value> = rows.iter().filter(|r| verdict(r) == "regression").collect();
    assert!(changed.len() >= 4);

    // The same at 80 columns, as a person reads it: the verdict within the first 5 lines, then
    // every changed row on the first screen (an 80 x 45 terminal), each line within the width.
    let said = text(&db, "80", &["compare", "1,2,3", "4,5,6"]);
    let lines: Vec<&str> = said.lines().collect();
    let verdict_line = lines.iter().position(|l| l.contains(" regressions, "));
    assert!(verdict_line.is_some_and(|i| i < 5), "{said}");
    for line in &lines {
        assert!(
            line.chars().count() <= 80 && !line.ends_with(' '),
            "{line:?}"
        );
    }
    let screen = lines[..lines.len().min(45)].join("\n");
    let regressions = screen.matches("REGRESSION").count();
    assert_eq!(
        regressions,
        changed.len(),
        "not every changed row on the first screen:\n{said}"
    );

    // The reports: a run's and a comparison's, each a whole page with its charts.
    for (args, name) in [
        (vec!["report", "1"], "run.html"),
        (vec!["report", "1,2,3", "4,5,6"], "compare.html"),
    ] {
        let out = dir.path().join(name);
        oslab()
            .args(&args)
            .arg("-o")
            .arg(&out)
            .arg("--db")
            .arg(&db)
            .assert()
            .success();
        let html = std::fs::read_to_string(&out).unwrap();
        let page = scraper::Html::parse_document(&html);
        let count = |css: &str| page.select(&scraper::Selector::parse(css).unwrap()).count();
        assert!(
            count("head > title") == 1 && count("figure svg") >= 3,
            "{name}"
        );
        assert!(!html.contains("<script"), "{name}: a script in a report");
        // The comparison's forest plot holds every changed row, by its name.
        if name == "compare.html" {
            let forest = page
                .select(&scraper::Selector::parse("figure").unwrap())
                .find(|f| f.html().contains("What changed, B against A"))
                .expect("a forest plot")
                .html();
            for r in &changed {
                let label = format!(
                    "{} {} {}",
                    r["probe"].as_str().unwrap(),
                    oslab_core::catalog::metric::words(r["metric"].as_str().unwrap()),
                    r["params"].as_str().unwrap()
                );
                assert!(
                    forest.contains(label.trim()),
                    "{label} not in the forest plot"
                );
            }
        }
    }
}
