//! Reports rendered from real stored runs and read back: the HTML parses, every chart is there,
//! nothing from the machine or the user reaches the page unescaped, skipped and noisy results are
//! visible; Markdown writes its charts beside it; a headless browser renders the page.

mod common;

use common::{fails, stdout as oslab};
use scraper::{Html, Selector};
use std::path::Path;

fn select<'a>(doc: &'a Html, css: &str) -> Vec<scraper::ElementRef<'a>> {
    doc.select(&Selector::parse(css).unwrap()).collect()
}

/// A run with hostile text everywhere the machine or user can put it, imported as if measured
/// elsewhere (the import path validates it like any other file).
fn hostile_run(dir: &Path, db: &str) {
    let evil = "<script>alert('x')</script>&\"";
    let mut run = serde_json::json!({
        "schema": "oslab.run/1",
        "run": {
            "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z",
            "status": "complete", "oslab_version": "0.1.0", "command": format!("oslab run {evil}"),
            "hostname": evil, "quick": true, "wall_s": 1.0,
            "fingerprint": {"cpu_model": evil, "topology": {"caches": [], "nodes": []}},
            "environment": {"privileges": {"root": false, "cap_perfmon": false, "cap_sys_nice": false,
                "sched_fifo": false, "perf_event_paranoid": 2, "memlock_limit": null},
                "pmu": {"available": false, "reason": evil}, "loadavg": 0.1, "runnable": 1,
                "numa_balancing": null, "isolation": [],
                "warnings": [{"kind": "pmu", "message": evil, "remedy": evil}]}
        },
        "measurements": [
            {"probe": "syscall.getppid", "params": {"label": evil}, "metric": "per_call", "unit": "ns",
             "status": "noisy", "note": evil,
             "summary": {"n": 3, "min": 1.0, "p25": 1.0, "median": 2.0, "p75": 3.0, "max": 3.0,
                         "mean": 2.0, "stddev": 1.0, "ci_low": 1.0, "ci_high": 3.0, "outliers": 0}},
            {"probe": "switch.thread.pipe", "params": {}, "metric": "wakeup", "unit": "ns",
             "status": "skipped", "reason": format!("needs 2 cpus {evil}")}
        ],
        "timeline": [{"track": evil, "kind": "active", "start_ns": 0.0, "dur_ns": 4e6}]
    });
    let file = dir.join("hostile.json");
    std::fs::write(&file, serde_json::to_vec(&run.take()).unwrap()).unwrap();
    oslab(&["import", file.to_str().unwrap(), "--db", db]);
}

#[test]
fn html_report_of_real_runs_parses_back_with_every_chart_and_nothing_unescaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    oslab(&[
        "run",
        "--quick",
        "timer.rdtsc",
        "call",
        "memory.latency.chunk",
        "bandwidth.sweep",
        "--db",
        db,
    ]);
    let out = dir.path().join("run1.html");
    oslab(&["report", "1", "-o", out.to_str().unwrap(), "--db", db]);
    let doc = Html::parse_document(&std::fs::read_to_string(&out).unwrap());
    let families: Vec<String> = select(&doc, "h2")
        .iter()
        .map(|h| h.text().collect())
        .collect();
    for f in ["timer", "call", "memory", "bandwidth"] {
        assert!(families.contains(&f.to_string()), "{families:?}");
    }
    // Charts: latency curve, MLP bars (absent here), call bars, bandwidth sweep.
    let figures = select(&doc, "figure svg");
    assert!(figures.len() >= 3, "{} charts", figures.len());
    assert!(select(&doc, "figure figcaption")
        .iter()
        .any(|c| c.text().collect::<String>().contains("cache level")));
    assert!(
        select(&doc, "script, link, img").is_empty(),
        "a report loads nothing"
    );
    let rows = select(&doc, "table tr");
    assert!(rows.len() > 20);
    // The contents link every section, the headline first.
    let links: Vec<String> = select(&doc, "nav.contents a")
        .iter()
        .filter_map(|a| a.value().attr("href").map(str::to_string))
        .collect();
    assert_eq!(
        links.first().map(String::as_str),
        Some("#headline"),
        "{links:?}"
    );
    for link in &links {
        assert_eq!(select(&doc, link).len(), 1, "{link} leads nowhere");
    }
    let headline: String = select(&doc, "#headline + table")
        .iter()
        .flat_map(|t| t.text())
        .collect();
    assert!(headline.contains("L1 latency"), "{headline}");

    hostile_run(dir.path(), db);
    let out = dir.path().join("run2.html");
    oslab(&["report", "2", "-o", out.to_str().unwrap(), "--db", db]);
    let html = std::fs::read_to_string(&out).unwrap();
    let doc = Html::parse_document(&html);
    assert!(
        select(&doc, "script").is_empty(),
        "hostile text became markup"
    );
    assert!(!html.contains("<script>alert"));
    let title: String = select(&doc, "h1")[0].text().collect();
    assert!(title.contains("<script>alert('x')</script>"), "{title}");
    // Skipped and noisy results are said, not left blank.
    let skipped: String = select(&doc, "td")
        .iter()
        .filter(|td| {
            td.select(&Selector::parse(".skipped").unwrap())
                .next()
                .is_some()
        })
        .flat_map(|e| e.text())
        .collect();
    assert!(
        skipped.contains("skipped") && skipped.contains("needs 2 cpus"),
        "{skipped}"
    );
    assert!(!select(&doc, ".noisy").is_empty());
    assert!(!select(&doc, ".warn").is_empty());
}

#[test]
fn a_report_of_several_runs_overlays_them_and_compares_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    for _ in 0..2 {
        oslab(&[
            "run",
            "--quick",
            "--repeat",
            "3",
            "call",
            "memory.latency.chunk",
            "--db",
            db,
        ]);
    }
    // A directory that does not exist is refused, as --db refuses one.
    let missing = dir.path().join("new/dir/cmp.html");
    let e = fails(
        &[
            "report",
            "1",
            "2",
            "-o",
            missing.to_str().unwrap(),
            "--db",
            db,
        ],
        2,
    );
    assert!(e.contains("no such directory"), "{e}");
    assert!(!dir.path().join("new").exists());
    let out = dir.path().join("cmp.html");
    oslab(&["report", "1", "2", "-o", out.to_str().unwrap(), "--db", db]);
    let doc = Html::parse_document(&std::fs::read_to_string(&out).unwrap());
    let title: String = select(&doc, "h1")[0].text().collect();
    assert!(title.contains("run 1 vs run 2"), "{title}");
    // The comparison, with a verdict per row shown and the tally.
    let tally: String = select(&doc, "p").iter().flat_map(|p| p.text()).collect();
    assert!(
        tally.contains("run 2 against run 1") && tally.contains("compared:"),
        "{tally}"
    );
    // Two runs in a store with no others: the page says how single runs were judged (the
    // scatter of their rows, or, where a slowed core left too few rows judged, the drift
    // assumed) and how often that cries wolf.
    assert!(
        (tally.contains("rows scatter about their common ratio")
            || tally.contains("an assumed ±25%"))
            && tally.contains("False alarms"),
        "{tally}"
    );
    // Overlays: both runs in one latency chart's legend, both runs' bars in one call chart.
    let svgs: Vec<String> = select(&doc, "figure svg")
        .iter()
        .map(|s| s.html())
        .collect();
    assert!(
        svgs.iter()
            .any(|s| s.contains("run 1: chunk") && s.contains("run 2: chunk")),
        "no overlaid latency curves"
    );
    assert!(
        svgs.iter()
            .any(|s| s.contains("(run 1)") && s.contains("(run 2)")),
        "no bars side by side"
    );
    let e = fails(&["report", "1", "2", "--format", "md", "--db", db], 2);
    assert!(e.contains("--format html"), "{e}");
}

#[test]
fn markdown_report_writes_its_charts_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    oslab(&[
        "run",
        "--quick",
        "call",
        "timer",
        "syscall.getppid",
        "--db",
        db,
    ]);
    // A file named .md is Markdown without --format.
    let out = dir.path().join("report.md");
    oslab(&["report", "latest", "-o", out.to_str().unwrap(), "--db", db]);
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.starts_with("# oslab run"), "{}", &md[..100]);
    assert!(md.contains("### call") && md.contains("| probe | params |"));
    // The order of the HTML report: headline, machine, the families, the model last.
    let at = |heading: &str| {
        md.find(heading)
            .unwrap_or_else(|| panic!("{heading}: {md}"))
    };
    assert!(at("## headline") < at("the run and its machine"));
    assert!(at("the run and its machine") < at("### call"));
    assert!(at("### call") < at("## model vs measured"));
    assert!(md.contains("| system call \\(getppid\\) |"), "{md}");
    // A family drawn keeps its table under a click, the blank lines around it leaving it a
    // table for CommonMark.
    let call = &md[at("### call")..];
    let fold = call.find("<details><summary>").unwrap();
    assert!(fold < call.find("| probe | params |").unwrap(), "{call}");
    assert!(call[fold..].contains("</summary>\n\n| probe"), "{call}");
    // Charts two to a line, each a file beside the report.
    let name = md
        .split("<img src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let svg = std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
#[ignore = "needs chromium (scripts/test installs it)"]
fn a_headless_browser_renders_the_report() {
    if !["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|b| oslab_testkit::on_path(b))
    {
        return oslab_testkit::skip(
            "needs chromium (scripts/test installs it with root and apt-get)",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    oslab(&["run", "--quick", "timer.rdtsc", "call", "--db", db]);
    oslab(&["run", "--quick", "timer.rdtsc", "call", "--db", db]);
    let out = dir.path().join("r.html");
    oslab(&["report", "latest", "-o", out.to_str().unwrap(), "--db", db]);
    let both = dir.path().join("both.html");
    oslab(&["report", "1", "2", "-o", both.to_str().unwrap(), "--db", db]);
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is not installed");
    // The page as the browser built it.
    let dom = |page: &Path| {
        let out = std::process::Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--window-size=1280,800",
            ])
            .arg("--dump-dom")
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = dom(&out);
    assert!(
        text.contains("oslab run") && text.contains("<svg"),
        "{text}"
    );
    let text = dom(&both);
    assert!(
        text.contains("run 1 vs run 2") && text.contains("(run 2)"),
        "{text}"
    );
    // Two whole `--quick` runs compared: what moved and what changed lead, the rest folded, so
    // the page is at most 6 screens of a 1,280 x 800 window (13.3 with every chart open).
    oslab(&["run", "--quick", "--db", db]);
    oslab(&["run", "--quick", "--db", db]);
    oslab(&["report", "3", "4", "-o", both.to_str().unwrap(), "--db", db]);
    let page = std::fs::read_to_string(&both).unwrap().replace(
        "</body></html>",
        "<script>document.title = 'height ' + document.documentElement.scrollHeight</script></body></html>",
    );
    let measured = dir.path().join("measured.html");
    std::fs::write(&measured, page).unwrap();
    let text = dom(&measured);
    let height: f64 = text
        .split("<title>height ")
        .nth(1)
        .and_then(|t| t.split('<').next())
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("no height in {}", &text[..text.len().min(400)]));
    assert!(
        height <= 6.0 * 800.0,
        "the comparison report is {:.1} screens of 800 px",
        height / 800.0
    );
}

/// What every string of a hostile run carries: it closes an attribute of either quote and opens
/// an element whose handler would retitle the page (short: some fields hold 64 characters).
const PAYLOAD: &str = "\"'><svg onload=document.title=1>";

/// `doc` with the payload appended to every string the schema lets be free text (statuses,
/// units, kinds and dates are enumerations or formats it refuses otherwise); `keep` names keys
/// left as they are (so a probe stays known and draws its charts).
fn poisoned(doc: &serde_json::Value, keep: &[&str]) -> serde_json::Value {
    fn walk(v: &serde_json::Value, key: &str, keep: &[&str]) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), walk(x, k, keep)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, key, keep)).collect()),
            Value::String(s) if !keep.contains(&key) => Value::String(format!("{s}{PAYLOAD}")),
            other => other.clone(),
        }
    }
    const FORMS: [&str; 6] = ["status", "unit", "kind", "schema", "started", "finished"];
    let keep: Vec<&str> = FORMS.iter().chain(keep).copied().collect();
    let mut out = walk(doc, "", &keep);
    // A noisy row's reason, a skipped row's and a failed one's, each with the payload.
    let rows = out["measurements"].as_array_mut().unwrap();
    for (row, status) in rows.iter_mut().zip(["noisy", "skipped", "failed"]) {
        row["status"] = status.into();
        row["reason"] = format!("spread {PAYLOAD}").into();
    }
    out
}

/// Every string field of a real run, poisoned and imported (the import validates it as any
/// file), rendered as the single-run and the comparison report: the HTML holds no element or
/// handler from the data, and Chromium, running the pages, runs nothing of it.
#[test]
#[ignore = "needs chromium (scripts/test installs it)"]
fn no_stored_string_becomes_markup_in_a_browser() {
    if !oslab_testkit::require(&["chromium"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    oslab(&[
        "run",
        "--quick",
        "timer.rdtsc",
        "call",
        "syscall.getppid",
        "memory.latency.chunk",
        "--tag",
        "build=old",
        "--db",
        db,
    ]);
    let exported = dir.path().join("run.json");
    oslab(&["export", "1", "-o", exported.to_str().unwrap(), "--db", db]);
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&exported).unwrap()).unwrap();
    // Everything (the probes unknown then, drawn as rows), then the probes kept (their charts
    // drawn with poisoned labels, parameters and notes).
    for (i, keep) in [&[][..], &["probe", "metric"][..]].iter().enumerate() {
        let file = dir.path().join(format!("evil{i}.json"));
        std::fs::write(&file, serde_json::to_vec(&poisoned(&doc, keep)).unwrap()).unwrap();
        oslab(&["import", file.to_str().unwrap(), "--db", db]);
    }
    let pages = [
        ("one.html", vec!["2"]),
        ("charts.html", vec!["3"]),
        ("both.html", vec!["1", "3"]),
    ];
    for (name, runs) in &pages {
        let out = dir.path().join(name);
        let mut args = vec!["report"];
        args.extend(runs.iter().copied());
        args.extend(["-o", out.to_str().unwrap(), "--db", db]);
        oslab(&args);
        let page = std::fs::read_to_string(&out).unwrap();
        let parsed = Html::parse_document(&page);
        assert!(
            select(&parsed, "script, [onload], [onerror]").is_empty(),
            "{name}: stored text became markup"
        );
        assert!(
            page.contains("&lt;svg onload"),
            "{name}: the payload is not shown as text"
        );
        let dom = std::process::Command::new("chromium")
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
            .arg(format!("file://{}", out.display()))
            .output()
            .unwrap();
        assert!(
            dom.status.success(),
            "{}",
            String::from_utf8_lossy(&dom.stderr)
        );
        let dom = String::from_utf8_lossy(&dom.stdout);
        assert!(
            dom.contains("<title>oslab"),
            "{name}: {}",
            &dom[..dom.len().min(300)]
        );
        assert!(!dom.contains("<title>1</title>"), "{name}: the payload ran");
        assert!(
            !dom.contains("<svg onload"),
            "{name}: the payload is markup in the page"
        );
    }
    // The Markdown report, rendered as a viewer would, holds none either.
    let md = dir.path().join("r.md");
    oslab(&["report", "3", "-o", md.to_str().unwrap(), "--db", db]);
    let text = std::fs::read_to_string(&md).unwrap();
    // Outside code spans (which a viewer shows as text): a span is between backticks on a line.
    let outside: String = text.lines().flat_map(|l| l.split('`').step_by(2)).collect();
    assert!(!outside.contains("<svg onload"), "{text}");
}
