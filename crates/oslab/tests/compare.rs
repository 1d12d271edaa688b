//! `oslab compare` on real runs: repetitions as replicates, identical runs judged the same, a
//! real slowdown (the test-only `OSLAB_TEST_EXTRA_WORK`, which runs every timed body twice)
//! caught, groups of runs and tags as sides, and the CI gate's exit codes.

mod common;

use common::{fails, oslab, stdout, temp_db};
use serde_json::Value;

/// Probes that are quick and mostly batched (the extra work applies to batched bodies).
const PROBES: [&str; 3] = ["timer.rdtsc", "call.args", "syscall.getppid"];

/// The tests here measure: one at a time, so that neither's runs compete with the other's.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

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

/// Whether a row's replicates are the 3 repetitions a side (fewer where some were measured on a
/// slowed core, which are not replicates), never the samples of one burst.
fn repetitions_as_replicates(r: &Value) -> bool {
    r["n"]
        .as_array()
        .is_some_and(|n| n.iter().all(|k| (1..=3).contains(&k.as_u64().unwrap_or(0))))
}

/// Why the runs of `db` do not show a quiet machine, if one was marked `noisy (contention)`.
fn contended(db: &str) -> Option<String> {
    for id in ["1", "2"] {
        let doc = json(&stdout(&["show", id, "--json", "--db", db]));
        let busy = doc["measurements"]
            .as_array()?
            .iter()
            .filter(|m| m["status"] == "noisy" && m["reason"] == "contention")
            .count();
        if busy > 0 {
            return Some(format!(
                "run {id} was measured while the machine was busy ({busy} rows contended)"
            ));
        }
    }
    None
}

fn called<'a>(rows: &'a [Value], verdict: &str) -> Vec<&'a Value> {
    rows.iter().filter(|r| r["verdict"] == verdict).collect()
}

#[test]
fn identical_runs_are_the_same_and_a_slowdown_is_a_regression() {
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // Runs 1-5: the machine's history (how far its runs drift apart, known the better the more
    // runs); 6 and 7 identical; 8 does every timed body twice.
    for _ in 0..5 {
        measure(db, &["--repeat", "3", "--tag", "role=history"], false);
    }
    measure(db, &["--repeat", "3"], false);
    measure(db, &["--repeat", "3", "--tag", "build=new"], false);
    measure(db, &["--repeat", "3"], true);

    let same = rows(db, &["6", "7"]);
    assert!(same.len() >= 10, "{same:?}");
    assert!(
        same.iter()
            .all(|r| repetitions_as_replicates(r) || r["verdict"] == "unknown"),
        "{same:?}"
    );
    // Placement and what was found while measuring never split a match.
    assert!(same
        .iter()
        .all(|r| r["present"] == serde_json::json!([true, true])));
    // Identical runs are the same: this shared host shifts between runs (another guest, another
    // clock) by more than their repetitions show, and the drift the history shows covers it.
    // Not a call's cost per argument: it can take one of two values for a whole process (1.0 or
    // 1.5 ns for three arguments, seen here), which all its repetitions share and five runs of
    // history may not show; compare then rightly calls it different.
    let alarms: Vec<&Value> = same
        .iter()
        .filter(|r| r["probe"] != "call.args")
        .filter(|r| r["verdict"] == "regression" || r["verdict"] == "better")
        .collect();
    assert!(
        alarms.is_empty(),
        "identical runs called different in {} of {} rows: {alarms:?}",
        alarms.len(),
        same.len()
    );
    assert!(!called(&same, "same").is_empty(), "{same:?}");
    // The gate passes, and the verdicts come with the false-alarm rate measured for them: in a
    // line beside the answer, which comes first, and in full with --details.
    let text = String::from_utf8(stdout(&[
        "compare",
        "6",
        "7",
        "--fail-on-regression",
        "--db",
        db,
    ]))
    .unwrap();
    let first: Vec<&str> = text.lines().take(4).collect();
    assert!(
        first[0].contains(" compared: ")
            && first
                .iter()
                .any(|l| l.starts_with("false alarms on identical runs")),
        "{text}"
    );
    assert!(
        !text.contains("False alarms (scripts/false-alarms"),
        "{text}"
    );
    let text = String::from_utf8(stdout(&["compare", "6", "7", "--details", "--db", db])).unwrap();
    assert!(
        text.contains("False alarms (scripts/false-alarms") && text.contains("identical runs"),
        "{text}"
    );
    // No row is 'changed' within its band: a change is called beyond it, or not at all.
    for r in called(&same, "changed")
        .iter()
        .filter(|r| r["interval"].is_array())
    {
        let [lo, hi] = [0, 1].map(|i| r["interval"][i].as_f64().unwrap());
        let band = r["band"].as_f64().unwrap();
        assert!(lo > 1.0 + band || hi < 1.0 - band, "{r}");
    }

    // Twice the work is called where it is larger than how far runs here drift apart (on
    // this host some rows drift 50-70% between single runs, and are not called).
    let slow = rows(db, &["7", "8"]);
    let regressions = called(&slow, "regression");
    // Other work that came or went between the sides (a build beside the tests) makes the rows
    // the load's, honestly: nothing to judge the slowdown by then.
    let load_moved = called(&slow, "load_moved");
    if regressions.is_empty() && !load_moved.is_empty() {
        oslab_testkit::skip(&format!(
            "the slowdown's half: other work moved between the sides ({} rows read `more other work`, e.g. {} cpus against {}), so the slowdown cannot be told from the load",
            load_moved.len(),
            load_moved[0]["other_work"][0],
            load_moved[0]["other_work"][1]
        ));
        return;
    }
    assert!(
        !regressions.is_empty(),
        "twice the work, not called: {slow:?}"
    );
    assert!(regressions
        .iter()
        .all(|r| r["ratio"].as_f64().unwrap() > 1.3));
    let e = fails(
        &["compare", "7", "8", "--fail-on-regression", "--db", db],
        1,
    );
    assert!(e.contains("regressed beyond 5.0%"), "{e}");
    // As benchstat prints it: a table per family, each side with its spread (3 repetitions
    // give one), the change, its p and replicates, the largest changes first, a geomean last.
    let text = String::from_utf8(stdout(&["compare", "7", "8", "--all", "--db", db])).unwrap();
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("syscall ")),
        "{text}"
    );
    // Repetitions measured on a slowed core (another guest on the same physical core) are no
    // replicates: with most of them slowed, the families hold too few ratios to check the form.
    let slowed = text.matches("slowed").count();
    match slowed > 2 {
        true => {
            eprintln!("skipped the table's form: {slowed} rows had repetitions on a slowed core")
        }
        false => table_form(&text),
    }
    // The same with sides given as a tag and a list, and the baseline apart.
    let grouped = rows(db, &["--baseline", "tag:role=history", "8"]);
    assert!(!called(&grouped, "regression").is_empty(), "{grouped:?}");
    let runs = String::from_utf8(stdout(&["runs", "--db", db])).unwrap();
    assert!(
        runs.contains("role=history") && runs.contains("build=new"),
        "{runs}"
    );
    let text =
        String::from_utf8(stdout(&["compare", "tag:role=history", "6,7", "--db", db])).unwrap();
    assert!(
        text.contains("A: tag role=history: runs 1, 2, 3, 4, 5") && text.contains("B: runs 6, 7"),
        "{text}"
    );
}

#[test]
fn one_repetition_a_side_gives_ratios_and_the_gate_refuses_to_guess() {
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
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
        text.contains("few repetitions to judge") && text.contains("--repeat 3"),
        "{text}"
    );
    let e = fails(
        &["compare", "1", "2", "--fail-on-regression", "--db", db],
        2,
    );
    assert!(
        e.contains("could be judged") && e.contains("--repeat 3"),
        "{e}"
    );
    // Repeated, but in a store with no earlier runs and too few rows to read the drift from
    // their scatter: the drift is assumed (25%), and said; nothing within it is called.
    let (_dir, fresh) = temp_db();
    let fresh = fresh.to_str().unwrap();
    measure(fresh, &["--repeat", "3"], false);
    measure(fresh, &["--repeat", "3"], false);
    let r = rows(fresh, &["1", "2"]);
    for row in r.iter().filter(|r| r["verdict"] != "unknown") {
        assert_eq!(row["drift_from"], "assumed", "{row}");
        assert!(repetitions_as_replicates(row), "{row}");
        // (A call's cost per argument takes one of two values for a whole process, 1.0 or
        // 1.5 ns: 50% apart, beyond any drift assumed.)
        let bimodal = row["probe"] == "call.args";
        assert!(
            bimodal || (row["verdict"] != "regression" && row["verdict"] != "better"),
            "{row}"
        );
    }
    let text = String::from_utf8(stdout(&["compare", "1", "2", "--details", "--db", fresh]))
        .unwrap()
        .replace("\n  ", " ");
    assert!(
        text.contains("an assumed ±25%") && text.contains("keep a few runs in the store"),
        "{text}"
    );
    // Judged by their repetitions alone, identical runs have rows that are the same; on a busy
    // host two runs seconds apart differ in every row by more than their repetitions show, so
    // the check needs runs measured without contention.
    let r = rows(fresh, &["1", "2", "--no-history"]);
    match contended(fresh) {
        Some(why) => eprintln!("skipped the --no-history check: {why}"),
        None => assert!(!called(&r, "same").is_empty(), "{r:?}"),
    }
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

#[test]
fn a_run_whose_core_speed_varied_is_named_by_the_comparison() {
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    measure(db, &[], false);
    // Run 2: run 1 again, as if the core had slowed during it.
    let mut doc = json(&stdout(&["export", "1", "--db", db]));
    doc["run"]["environment"]["warnings"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "kind": "core-speed",
            "message": "the measuring core's speed varied over the run",
            "remedy": "measure on a core of its own",
        }));
    let file = dir.path().join("slowed.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    stdout(&["import", file.to_str().unwrap(), "--db", db]);
    let text = String::from_utf8(stdout(&["compare", "1", "2", "--db", db])).unwrap();
    let note = text
        .lines()
        .find(|l| l.contains("core's speed varied within run"))
        .unwrap_or_else(|| panic!("no core-speed note: {text}"));
    assert!(note.contains(" 2 ") || note.contains(", 2 "), "{note}");
}

#[test]
fn runs_whose_cpus_sat_differently_on_the_host_are_said_to() {
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&["run", "--quick", "c2c.latency", "timer.rdtsc", "--db", db]);
    let mut doc = json(&stdout(&["export", "1", "--db", db]));
    let Some(c2c) = doc["measurements"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| {
            m["probe"] == "c2c.latency" && m["metric"] == "one_way" && m["summary"].is_object()
        })
    else {
        oslab_testkit::skip("c2c.latency needs a second cpu in our affinity mask");
        return;
    };
    // Run 2: run 1 again, as if the host had put the two vCPUs on different sockets.
    for k in [
        "min", "p25", "median", "p75", "max", "mean", "ci_low", "ci_high",
    ] {
        let v = c2c["summary"][k].as_f64().unwrap();
        c2c["summary"][k] = (v * 4.0).into();
    }
    let file = dir.path().join("moved.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    stdout(&["import", file.to_str().unwrap(), "--db", db]);
    let text = String::from_utf8(stdout(&["compare", "1", "2", "--db", db])).unwrap();
    assert!(text.contains("The cpus sat differently"), "{text}");
    assert!(text.contains("(4.0x)"), "{text}");
    let j = json(&stdout(&["compare", "1", "2", "--json", "--db", db]));
    let lat = &j["comparisons"][0]["cpu_pair_latency_ns"];
    assert!(
        lat[1].as_f64().unwrap() > 3.9 * lat[0].as_f64().unwrap(),
        "{j}"
    );
    // The same placement: nothing said.
    let same = String::from_utf8(stdout(&["compare", "1", "1", "--db", db])).unwrap();
    assert!(!same.contains("sat differently"), "{same}");
}

#[test]
fn runs_of_different_commands_are_refused_in_one_line() {
    let (_d, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&["run", "--quick", "syscall.getppid", "--db", db]);
    stdout(&["cpuman", "simulate", "--workload", "W1", "--db", db]);
    for args in [
        vec!["compare", "1", "2", "--db", db],
        vec!["report", "1", "2", "-o", "-", "--db", db],
    ] {
        let e = fails(&args, 2);
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.contains("no measurement in common")
                && e.contains("oslab run --quick")
                && e.contains("oslab cpuman simulate"),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn what_moved_between_the_sides_is_said_first_and_with_the_rows_it_moved() {
    // THP switched off read as 7 unrelated rows changed, while the THP-backed row that moved
    // (its pages thp -> 4k) said `same`, and nothing named THP.
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&[
        "run",
        "--quick",
        "memory.latency.pages",
        "timer.rdtsc",
        "--db",
        db,
    ]);
    let mut doc = json(&stdout(&["export", "1", "--db", db]));
    let thp = doc["run"]["fingerprint"]["thp"].clone();
    doc["run"]["fingerprint"]["thp"] = Value::from("never");
    let mut moved_rows = 0;
    for m in doc["measurements"].as_array_mut().unwrap() {
        if m["context"]["pages"]
            .as_str()
            .is_some_and(|p| p.starts_with("thp"))
        {
            m["context"]["pages"] = Value::from("4k");
            moved_rows += 1;
        }
    }
    // And the timer probe skipped in B, as a probe the machine cannot run is stored.
    let ms = doc["measurements"].as_array_mut().unwrap();
    ms.retain(|m| m["probe"] != "timer.rdtsc");
    ms.push(serde_json::json!({
        "probe": "timer.rdtsc", "params": {}, "metric": "-", "unit": "ns",
        "status": "skipped", "reason": "no invariant TSC here",
    }));
    let file = dir.path().join("thp-off.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    stdout(&["import", file.to_str().unwrap(), "--db", db]);
    let text = String::from_utf8(stdout(&["compare", "1", "2", "--db", db])).unwrap();
    let first = text
        .lines()
        .position(|l| l.starts_with("what moved between A and B"))
        .unwrap_or_else(|| panic!("nothing said to have moved: {text}"));
    // A probe with no value on one side says why.
    assert!(
        text.contains("timer.rdtsc has no value in B: skipped there: no invariant TSC here"),
        "{text}"
    );
    let thp = thp.as_str().unwrap_or("unknown");
    assert_eq!(
        text.lines().nth(first + 1).map(str::trim),
        Some(format!("THP {thp} -> never").as_str()),
        "{text}"
    );
    let j = json(&stdout(&["compare", "1", "2", "--json", "--db", db]));
    assert_eq!(j["comparisons"][0]["moved"][0]["name"], "THP", "{j}");
    let rows = j["comparisons"][0]["rows"].as_array().unwrap();
    let with_pages = rows
        .iter()
        .filter(|r| r["got_moved"][0]["name"] == "pages")
        .count();
    if moved_rows == 0 {
        oslab_testkit::skip("no THP-backed latency row here (THP never, or no huge page given)");
        return;
    }
    assert_eq!(with_pages, moved_rows, "{j}");
    assert!(text.contains("-> 4k"), "{text}");
    // The same run against itself: nothing moved.
    let same = String::from_utf8(stdout(&["compare", "1", "1", "--db", db])).unwrap();
    assert!(!same.contains("what moved"), "{same}");
}

#[test]
fn one_cpu_hog_then_two_is_the_loads_doing_not_a_regression() {
    // Both sides busy: every repetition contended, so only how much other work each side
    // measured beside tells them apart (same-cpu switches read +15% to +81% REGRESSION).
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let probes = [
        "switch.thread.pipe",
        "switch.process.pipe",
        "syscall.getppid",
    ];
    let run = || {
        let mut args = vec!["run", "--quick", "--repeat", "3", "--db", db];
        args.extend(probes);
        stdout(&args);
    };
    let mut hogs = vec![oslab_testkit::BusyLoop::start()];
    run();
    hogs.push(oslab_testkit::BusyLoop::start());
    run();
    drop(hogs);
    let j = json(&stdout(&[
        "compare", "1", "2", "--json", "--all", "--db", db,
    ]));
    let c = &j["comparisons"][0];
    let moved = c["moved"].as_array().unwrap();
    let named = moved
        .iter()
        .find(|m| m["name"] == "other work while measuring");
    let rows = c["rows"].as_array().unwrap();
    let regressions: Vec<&Value> = rows
        .iter()
        .filter(|r| r["verdict"] == "regression" || r["verdict"] == "better")
        .collect();
    // Named as what moved, or no row called changed for it.
    assert!(
        named.is_some() || regressions.is_empty(),
        "the load is not named and rows read changed: {regressions:?} (moved: {moved:?})"
    );
    // Every row changed where the load moved is the load's.
    for r in &regressions {
        let [a, b] = [0, 1].map(|i| r["other_work"][i].as_f64().unwrap_or(0.0));
        assert!(
            (a - b).abs() < oslab_core::stats::compare::LOAD_APART,
            "called changed though the load moved: {r}"
        );
    }
    if let Some(m) = named {
        assert_ne!(m["a"], m["b"], "{m}");
    }
}

/// The form of `compare --all`'s text as benchstat prints it: a table per family, each side
/// with its spread, the change, its p and replicates, the largest changes first, a geomean last.
fn table_form(text: &str) {
    assert!(text.contains("geomean of"), "{text}");
    assert!(text.contains(" ±") && text.contains("n=3+3"), "{text}");
    // In each family's table, the largest changes first (by the size of the ratio's logarithm).
    let mut seen = 0;
    for table in text.split("\n\n") {
        let changes: Vec<f64> = table
            .lines()
            .filter(|l| !l.contains("geomean"))
            .filter_map(|l| {
                l.split_whitespace().find(|w| {
                    w.ends_with('%')
                        && (w.starts_with('+') || w.starts_with('-') || w.starts_with('~'))
                })
            })
            .filter_map(|w| {
                w.trim_start_matches('~')
                    .trim_end_matches('%')
                    .parse::<f64>()
                    .ok()
            })
            .collect();
        seen += changes.len();
        let sizes: Vec<f64> = changes
            .iter()
            .map(|c| (1.0 + c / 100.0).ln().abs())
            .collect();
        assert!(
            sizes.windows(2).all(|w| w[0] + 0.01 >= w[1]),
            "{changes:?}\n{table}"
        );
    }
    assert!(seen > 5, "{text}");
}
