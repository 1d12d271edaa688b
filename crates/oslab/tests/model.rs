//! The machine model on a real run: the whole quick suite measured here, then what it predicted
//! checked for coverage (most measured values carry a prediction, every family has a model),
//! for plausibility, and for surviving the store, the JSON schema and the report.

mod common;

use common::{fails, oslab, stdout, temp_db};
use serde_json::Value;

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

#[test]
fn a_quick_run_predicts_most_of_what_it_measures() {
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let out = oslab()
        .args([
            "run",
            "--quick",
            "--json",
            "--memory",
            "DDR4-3200x2",
            "--db",
            db,
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let run = json(&out);
    let ms = run["measurements"].as_array().unwrap();
    // What the catalog says the model predicts (the services' rows it does not, by design,
    // say why in the catalog instead, and are held to that below).
    let modelled = |m: &Value| {
        oslab_core::catalog::prediction_of(
            m["probe"].as_str().unwrap(),
            m["metric"].as_str().unwrap(),
        ) == Some(oslab_core::catalog::Predicted::Yes)
    };
    for m in ms
        .iter()
        .filter(|m| !modelled(m) && m["prediction"].is_null())
    {
        if let Some(oslab_core::catalog::Predicted::No(why)) = oslab_core::catalog::prediction_of(
            m["probe"].as_str().unwrap(),
            m["metric"].as_str().unwrap(),
        ) {
            assert!(
                !why.is_empty() && m["no_model"].as_str().is_some_and(|w| !w.is_empty()),
                "{m}"
            );
        }
    }
    let measured: Vec<&Value> = ms
        .iter()
        .filter(|m| m["status"] == "ok" || m["status"] == "noisy")
        .filter(|m| modelled(m))
        .collect();
    let predicted: Vec<&Value> = measured
        .iter()
        .copied()
        .filter(|m| m["prediction"].is_object())
        .collect();
    // The bar: 80% of what was measured, of what the model claims, carries a prediction.
    assert!(
        predicted.len() * 5 >= measured.len() * 4,
        "{} of {} predicted",
        predicted.len(),
        measured.len()
    );
    // Every family that measured something has at least one model.
    let family = |m: &Value| {
        m["probe"]
            .as_str()
            .unwrap()
            .split('.')
            .next()
            .unwrap()
            .to_string()
    };
    // The host rows describe the host's other tenants: no model by nature, and said so.
    for f in measured.iter().map(|m| family(m)).filter(|f| f != "host") {
        assert!(
            predicted.iter().any(|m| family(m) == f),
            "no model in family {f}"
        );
    }
    for m in &predicted {
        let p = &m["prediction"];
        assert!(p["value"].as_f64().unwrap() > 0.0, "{m}");
        assert!(
            ["spec", "composed", "reference"].contains(&p["kind"].as_str().unwrap()),
            "{m}"
        );
        // Every input says where it came from.
        let inputs = p["inputs"].as_object().unwrap();
        let sources = p["sources"].as_object().map(|s| s.len()).unwrap_or(0);
        assert_eq!(inputs.len(), sources, "{m}");
        // A prediction far from the measurement says why.
        let (pv, mv) = (
            p["value"].as_f64().unwrap(),
            m["summary"]["median"].as_f64().unwrap(),
        );
        if mv > 0.0 && (mv / pv > 2.0 || mv / pv < 0.5) && m["difference"] != true {
            assert!(
                p["gap"].as_str().is_some_and(|g| g.starts_with("measured")),
                "{m}"
            );
        }
    }
    // Rows without one say which input is missing.
    for m in measured.iter().filter(|m| !m["prediction"].is_object()) {
        assert!(m["no_model"].as_str().is_some_and(|w| w.len() > 10), "{m}");
    }
    // Plausible, not timed: the L1 hit predicted from the table at the measured clock is within
    // 3x of the plateau measured.
    let l1 = measured.iter().find(|m| {
        m["metric"] == "level_latency"
            && m["params"]["level"] == "L1"
            && m["prediction"].is_object()
    });
    if let Some(l1) = l1 {
        let ratio =
            l1["summary"]["median"].as_f64().unwrap() / l1["prediction"]["value"].as_f64().unwrap();
        assert!((1.0 / 3.0..3.0).contains(&ratio), "{l1}");
    }
    // The memory the user described is the bandwidth models' peak: DDR4-3200 x 2 x 8 B.
    let peak = measured
        .iter()
        .filter_map(|m| m["prediction"]["inputs"]["peak_gbps"].as_f64())
        .next();
    assert_eq!(peak, Some(51.2));

    // The store keeps every part of a prediction; export and import validate against the schema.
    let shown = json(&stdout(&["show", "latest", "--json", "--db", db]));
    assert_eq!(shown["measurements"], run["measurements"]);
    let file = dir.path().join("run.json");
    let file = file.to_str().unwrap();
    stdout(&[
        "export", "latest", "--format", "json", "-o", file, "--db", db,
    ]);
    stdout(&["import", file, "--db", db]);

    // The terminal says what the model says; the report has its view.
    let text = String::from_utf8(stdout(&["show", "latest", "--details", "--db", db])).unwrap();
    assert!(
        text.contains("predicted") && text.contains("vs model"),
        "{text}"
    );
    let html = dir.path().join("r.html");
    let html = html.to_str().unwrap();
    stdout(&["report", "latest", "-o", html, "--db", db]);
    let page = std::fs::read_to_string(html).unwrap();
    assert!(
        page.contains("id=\"model-vs-measured\"") && page.contains("href=\"#model-vs-measured\"")
    );
    assert!(
        page.contains("model: chunk"),
        "the latency chart draws the model"
    );
}

#[test]
fn a_memory_description_that_is_not_one_is_refused_before_measuring() {
    let (_dir, db) = temp_db();
    let e = fails(
        &[
            "run",
            "timer.rdtsc",
            "--memory",
            "DDR9-fast",
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(e.contains("TYPE-RATExCHANNELS"), "{e}");
    assert!(!db.exists(), "nothing stored");
}

#[test]
fn info_shows_what_the_predictions_rest_on() {
    let text = String::from_utf8(stdout(&["info"])).unwrap();
    assert!(
        text.contains("machine model") && text.contains("core clock"),
        "{text}"
    );
    let v = json(&stdout(&["info", "--json"]));
    assert!(
        v["model"]["core clock"].as_str().unwrap().contains("GHz")
            || v["model"]["core clock"]
                .as_str()
                .unwrap()
                .starts_with("unknown")
    );
}

#[test]
#[ignore = "needs 2 cpus in our affinity mask (CI runs it)"]
fn c2c_measures_every_pair_and_groups_them_by_class() {
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let text = String::from_utf8(stdout(&["c2c", "--quick", "--cpus", "0-1", "--db", db])).unwrap();
    assert!(text.contains("1 of 1 pair measured"), "{text}");
    assert!(
        text.contains("from \\ to") && text.contains("by topology class"),
        "{text}"
    );
    let run = json(&stdout(&["show", "latest", "--json", "--db", db]));
    let ms = run["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0]["probe"], "c2c.latency");
    assert!(ms[0]["summary"]["median"].as_f64().unwrap() > 0.0);
    // --sample keeps at most N pairs; one cpu is no pair at all.
    let text = String::from_utf8(stdout(&["c2c", "--quick", "--sample", "1", "--db", db])).unwrap();
    assert!(text.contains("1 of 1 pair measured"), "{text}");
    let e = fails(&["c2c", "--cpus", "0", "--db", db], 2);
    assert!(e.contains("needs two cpus"), "{e}");
    // The report gives one pair as a number under the machine drawn, not as a 2x2 heatmap.
    let html = dir.path().join("c.html");
    let html = html.to_str().unwrap();
    stdout(&["report", "latest", "-o", html, "--db", db]);
    let page = std::fs::read_to_string(html).unwrap();
    assert!(
        page.contains("core to core, one way (median of the measured pairs): ")
            && !page.contains("core-to-core latency, one way"),
        "{page}"
    );
}
