//! `oslab compare` on real runs: repetitions as replicates, identical runs judged the same, a
//! real slowdown (the test-only `OSLAB_TEST_EXTRA_WORK`, which runs every timed body twice)
//! caught, groups of runs and tags as sides, and the CI gate's exit codes.

mod common;

use common::{fails, oslab, stdout, temp_db};
use serde_json::Value;

/// Probes that are quick and mostly batched (the extra work applies to batched bodies).
const PROBES: [&str; 3] = ["timer.rdtsc", "call.args", "syscall.getppid"];

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

/// `oslab run --quick` of the probes, with extra arguments, in `db`.
fn measure(db: &str, extra: &[&str], slower: bool) {
    let mut args = vec!["run", "--quick", "--db", db];
    args.extend(PROBES);
    args.extend(extra);
    let mut cmd = oslab();
    if slower {
        cmd.env("OSLAB_TEST_EXTRA_WORK", "1");
    }
    cmd.args(&args).assert().success();
}

/// The rows of `oslab compare ARGS --json --all` (one comparison).
fn rows(db: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["compare", "--json", "--all", "--db", db];
    all.extend(args);
    let doc = json(&stdout(&all));
    assert_eq!(doc["schema"], "oslab.compare/2");
    doc["comparisons"][0]["rows"].as_array().unwrap().clone()
}

fn called<'a>(rows: &'a [Value], verdict: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["verdict"] == verdict).collect()
}

#[test]
fn identical_runs_are_the_same_and_a_slowdown_is_a_regression() {
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // Runs 1-3: the machine's history; 4 and 5 identical; 6 does every timed body twice.
    for _ in 0..3 {
        measure(db, &["--repeat", "3", "--tag", "role=history"], false);
    }
    measure(db, &["--repeat", "3"], false);
    measure(db, &["--repeat", "3", "--tag", "build=new"], false);
    measure(db, &["--repeat", "3"], true);

    let same = rows(db, &["4", "5"]);
    assert!(same.len() >= 10, "{same:?}");
    assert!(
        same.iter()
            .all(|r| r["n"] == serde_json::json!([3, 3]) || r["verdict"] == "unknown"),
        "{same:?}"
    );
    // Placement and what was found while measuring never split a match.
    assert!(same
        .iter()
        .all(|r| r["present"] == serde_json::json!([true, true])));
    // Identical runs are the same, or nearly: this shared host changes state between runs
    // (another guest starts), so a stray row may be called; more than one in ten is crying wolf.
    let alarms: Vec<&Value> = same
        .iter()
        .filter(|r| r["verdict"] == "regression" || r["verdict"] == "better")
        .collect();
    assert!(
        alarms.len() * 10 <= same.len().max(10),
        "identical runs called different in {} of {} rows: {alarms:?}",
        alarms.len(),
        same.len()
    );
    // The gate agrees with the verdicts: it passes unless a row was called a regression.
    let gate = oslab()
        .args(["compare", "4", "5", "--fail-on-regression", "--db", db])
        .output()
        .unwrap();
    let regressed = alarms.iter().any(|r| r["verdict"] == "regression");
    assert_eq!(
        gate.status.code(),
        Some(if regressed { 1 } else { 0 }),
        "{}",
        String::from_utf8_lossy(&gate.stderr)
    );

    let slow = rows(db, &["5", "6"]);
    let regressions = called(&slow, "regression");
    assert!(
        regressions
            .iter()
            .any(|r| r["probe"] == "call.args" && r["metric"] == "per_call"),
        "twice the work, not called: {slow:?}"
    );
    assert!(regressions
        .iter()
        .all(|r| r["ratio"].as_f64().unwrap() > 1.3));
    let e = fails(
        &["compare", "5", "6", "--fail-on-regression", "--db", db],
        1,
    );
    assert!(e.contains("regressed beyond 5.0%"), "{e}");
    // The same with sides given as a tag and a list, and the baseline apart.
    let grouped = rows(db, &["--baseline", "tag:role=history", "6"]);
    assert!(!called(&grouped, "regression").is_empty(), "{grouped:?}");
    let runs = String::from_utf8(stdout(&["runs", "--db", db])).unwrap();
    assert!(
        runs.contains("role=history") && runs.contains("build=new"),
        "{runs}"
    );
    let text =
        String::from_utf8(stdout(&["compare", "tag:role=history", "4,5", "--db", db])).unwrap();
    assert!(
        text.contains("A: tag role=history: runs 1, 2, 3") && text.contains("B: runs 4, 5"),
        "{text}"
    );
}

#[test]
fn one_repetition_a_side_gives_ratios_and_the_gate_refuses_to_guess() {
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    measure(db, &[], false);
    measure(db, &[], false);
    let r = rows(db, &["1", "2"]);
    assert!(!r.is_empty());
    assert!(
        r.iter()
            .all(|r| r["verdict"] == "ratio_only" || r["verdict"] == "unknown"),
        "{r:?}"
    );
    let text = String::from_utf8(stdout(&["compare", "1", "2", "--db", db])).unwrap();
    assert!(
        text.contains("too few repetitions to judge") && text.contains("--repeat 3"),
        "{text}"
    );
    let e = fails(
        &["compare", "1", "2", "--fail-on-regression", "--db", db],
        2,
    );
    assert!(e.contains("enough repetitions"), "{e}");
    // A run compared with itself has no difference to call.
    let itself = rows(db, &["1", "1"]);
    assert!(called(&itself, "regression").is_empty());
    // Bad sides are usage errors; missing runs say which.
    let e = fails(&["compare", "1", "7", "--db", db], 1);
    assert!(e.contains('7'), "{e}");
    for bad in ["x", "3-1", "tag:", "1,,2"] {
        fails(&["compare", "1", bad, "--db", db], 2);
    }
    let e = fails(&["compare", "1", "tag:kernel=none", "--db", db], 1);
    assert!(e.contains("kernel=none"), "{e}");
    let e = fails(&["compare", "1", "1", "--threshold", "lots", "--db", db], 2);
    assert!(e.contains("fraction"), "{e}");
    fails(&["compare", "1", "--db", db], 2);
    let e = fails(&["run", "--tag", "no-equals", "--db", db], 2);
    assert!(e.contains("KEY=VALUE"), "{e}");
}
