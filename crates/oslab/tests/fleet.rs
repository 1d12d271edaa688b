//! `oslab fleet`: submit's checks and script, the per-node task under a Slurm-like environment,
//! collect and summary over many nodes (copies of one real run, one of them made slow: this
//! machine is one node), and, ignored unless Slurm is installed (scripts/test installs it), the whole
//! path on a one-host Slurm cluster started on loopback.

mod common;

use common::{fails, oslab, stdout, temp_db};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(out)))
}

#[test]
fn submit_checks_the_run_arguments_before_anything_is_queued() {
    let e = fails(&["fleet", "submit", "--dry-run", "--", "--no-such-flag"], 2);
    assert!(
        e.contains("run arguments") && e.contains("--no-such-flag"),
        "{e}"
    );
    let e = fails(&["fleet", "submit", "--dry-run", "--", "--db", "x.db"], 2);
    assert!(e.contains("chosen by fleet"), "{e}");
    let e = fails(
        &[
            "fleet",
            "submit",
            "--dry-run",
            "--results",
            "/tmp/a b",
            "--nodes",
            "n1",
        ],
        2,
    );
    assert!(e.contains("' '"), "{e}");
    // Nothing a shell or Slurm could read as more than a value reaches the script.
    for (flag, value, expect) in [
        ("--partition", "x\ntouch /tmp/pwned\n", "partition name"),
        ("--partition", "p --uid=0", "partition name"),
        ("--time", "30:00\ntouch /tmp/pwned", "Slurm takes"),
        ("--nodes", "n1\ntouch /tmp/pwned", "hostlist"),
        ("--nodes", "n1 --uid=0", "hostlist"),
        // Slurm's own patterns: %u would write the output elsewhere.
        ("--results", "/shared/%u/res", "'%'"),
        // sbatch cuts a directive at '#' and refuses an unclosed quote.
        ("--results", "/shared/r#1", "'#'"),
        ("--results", "/shared/it's", "'\\''"),
        ("--results", "/shared/\"r\"", "'\"'"),
        ("--time", "999999999", "longer than a year"),
        ("--time", "0", "no time at all"),
    ] {
        let mut args = vec!["fleet", "submit", "--dry-run", flag, value];
        if flag != "--nodes" {
            args.extend(["--nodes", "n1"]);
        }
        let out = common::oslab()
            .args(&args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(expect), "{flag} {value:?}: {e}");
        assert!(
            out.stdout.is_empty(),
            "a script was written for {flag} {value:?}"
        );
    }
    // Probe globs are checked as `oslab run` checks them.
    let e = fails(
        &[
            "fleet",
            "submit",
            "--dry-run",
            "--nodes",
            "n1",
            "--",
            "$(touch x)",
        ],
        2,
    );
    assert!(e.contains("no probe matches"), "{e}");
    // A dry run prints the script it would submit; bash parses it.
    let out = stdout(&[
        "fleet",
        "submit",
        "--dry-run",
        "--nodes",
        "n[1-2]",
        "--partition",
        "batch",
        "--stage",
        "shared",
        "--",
        "--quick",
        "syscall.*",
    ]);
    let script = String::from_utf8(out).unwrap();
    assert!(script.contains("#SBATCH --nodelist=n[1-2]\n"), "{script}");
    assert!(script.contains("#SBATCH --exclusive\n"));
    assert!(script.contains("fleet task --results") && script.contains("'syscall.*'"));
    assert!(!script.contains("sbcast"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.sh"), &script).unwrap();
    assert!(Command::new("bash")
        .arg("-n")
        .arg(dir.path().join("s.sh"))
        .status()
        .unwrap()
        .success());
}

#[test]
fn a_dry_run_of_every_node_needs_no_slurm_clients() {
    // No sinfo on the PATH: the script is printed with the node list left open, and says so.
    let empty = tempfile::tempdir().unwrap();
    let out = oslab()
        .env("PATH", empty.path())
        .args([
            "fleet",
            "submit",
            "--dry-run",
            "--partition",
            "batch",
            "--",
            "--quick",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("#SBATCH --nodelist=NODES-FROM-SINFO\n"),
        "{script}"
    );
    assert!(script.contains("#SBATCH --partition=batch\n"), "{script}");
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(
        note.contains("sinfo not found") && note.contains("left open"),
        "{note}"
    );
    // Without --dry-run the missing client is an error, as before.
    let e = oslab()
        .env("PATH", empty.path())
        .args(["fleet", "submit", "--partition", "batch", "--", "--quick"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&e.stderr).contains("sinfo not found"));
}

#[test]
fn the_task_outside_slurm_says_so() {
    let out = oslab()
        .args(["fleet", "task", "--results", "/tmp", "--", "--quick"])
        .env_remove("SLURM_JOB_ID")
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLURM_JOB_ID"));
}

/// A run as if nothing else ran: no other work as it began, no row marked contended.
fn quiet(doc: &mut Value) {
    doc["run"]["environment"]["other_work"] =
        serde_json::json!({"window_s": 0.2, "cpus": 0.0, "busiest": []});
    for m in doc["measurements"].as_array_mut().unwrap() {
        if m["status"] == "noisy" && m["reason"] == "contention" {
            m["status"] = "ok".into();
            m.as_object_mut().unwrap().remove("reason");
        }
    }
}

#[test]
fn nodes_are_collected_tagged_once_and_the_slow_one_is_flagged() {
    let results = tempfile::tempdir().unwrap();
    let (_db_dir, db) = temp_db();
    let db_s = db.to_str().unwrap();
    // The real task, as srun would start it on node "alpha" of job 777.
    oslab()
        .args(["fleet", "task", "--submission", "0a1b2c3d", "--results"])
        .arg(results.path())
        .args(["--", "--quick", "syscall.getp*"])
        .env("SLURM_JOB_ID", "777")
        .env("SLURMD_NODENAME", "alpha")
        .assert()
        .success();
    let job = results.path().join("777.0a1b2c3d");
    let mut alpha: Value =
        serde_json::from_slice(&std::fs::read(job.join("node-alpha.json")).unwrap()).unwrap();
    assert!(!alpha["measurements"].as_array().unwrap().is_empty());
    // The nodes stand for machines of their own: what ran on this host beside alpha (a compiler
    // beside the tests read `busy` on every node cloned from it) is not theirs. Each begins
    // quiet; only "hog" is given other work.
    quiet(&mut alpha);
    std::fs::write(job.join("node-alpha.json"), alpha.to_string()).unwrap();
    assert!(std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .all(|e| !e
            .file_name()
            .to_string_lossy()
            .starts_with("oslab-fleet-777")));
    // Seven more nodes: within 2% of alpha, except "slow" at +60% and "spike", whose cold
    // system calls (one mechanism) are 50x; "dead" failed; "eps" crashed after its
    // measurements; "lost" ended with no word, which the job noted; "hog" began beside a stray
    // busy loop.
    let nodes = ["beta", "gamma", "delta", "eps", "slow", "spike", "hog"];
    for (i, node) in nodes.iter().enumerate() {
        let k = if *node == "slow" {
            1.6
        } else {
            1.0 + 0.004 * (i as f64 + 1.0)
        };
        let mut doc =
            oslab_testkit::scaled_run(&alpha, node, |m| k * (1.0 + 0.001 * (m % 3) as f64));
        if *node == "eps" {
            doc["run"]["status"] = "crashed".into();
        }
        if *node == "spike" {
            for m in doc["measurements"].as_array_mut().unwrap() {
                if m["params"]["cache"] == "cold" {
                    let s = m["summary"].as_object_mut().unwrap();
                    for v in s.values_mut().filter(|v| v.is_f64()) {
                        *v = (v.as_f64().unwrap() * 50.0).into();
                    }
                }
            }
        }
        if *node == "hog" {
            doc["run"]["environment"]["other_work"] = serde_json::json!({"window_s": 0.2,
                "cpus": 0.98, "busiest": [{"pid": 149, "command": "runaway", "cpus": 0.97}]});
        }
        // gamma booted with another clocksource: drifted, whatever its figures.
        if *node == "gamma" {
            doc["run"]["fingerprint"]["clocksource"] = "hpet".into();
        }
        std::fs::write(job.join(format!("node-{node}.json")), doc.to_string()).unwrap();
    }
    std::fs::write(
        job.join("node-lost.crashed"),
        "its task ended with status 1 and handed in nothing; Slurm has the node State=DOWN+NOT_RESPONDING\n",
    )
    .unwrap();
    std::fs::write(
        job.join("node-dead.failed"),
        "oslab run ended with signal 9\n",
    )
    .unwrap();
    // "stage" never started: its binary could not be staged, twice (the job's word).
    std::fs::write(
        job.join("node-stage.notrun"),
        "its task never started (status 1, twice): the binary was not staged or its step not launched; the node was not measured\n",
    )
    .unwrap();
    std::fs::write(
        job.join("fleet.json"),
        r#"{"job": "777", "token": "0a1b2c3d", "nodes": ["alpha","beta","gamma","delta","eps","slow","spike","hog","dead","late","lost","stage"]}"#,
    )
    .unwrap();
    // What collecting every job under the results said.
    let collect_all = || {
        let out = oslab()
            .args(["fleet", "collect"])
            .arg(results.path())
            .args(["--db", db_s])
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = collect_all();
    assert!(err.contains("collected 8 runs"), "{err}");
    // Every node's state, one line each.
    let state = |node: &str| {
        err.lines()
            .find(|l| l.split_whitespace().next() == Some(node))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_else(|| panic!("no line for {node}: {err}"))
            .to_string()
    };
    for (node, want) in [
        ("alpha", "ok"),
        ("slow", "ok"),
        ("eps", "crashed"),
        ("dead", "failed"),
        ("late", "missing"),
        ("lost", "crashed"),
    ] {
        assert_eq!(state(node), want, "{node}: {err}");
    }
    assert!(err.contains("oslab run ended with signal 9"), "{err}");
    assert!(err.contains("DOWN+NOT_RESPONDING"), "{err}");
    // Collecting again stores nothing twice.
    let out = oslab()
        .args(["fleet", "collect", "--json"])
        .arg(&job)
        .args(["--db", db_s])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("collected 0 runs; 8 already in the store")
    );
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["jobs"][0]["already"], 8, "{said}");
    let late = said["jobs"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"] == "late")
        .unwrap()
        .clone();
    assert_eq!(late["state"], "missing", "{said}");
    assert_eq!(said["jobs"][0]["submission"], "0a1b2c3d", "{said}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let tagged: i64 = conn
        .query_row(
            "SELECT count(*) FROM run_tags WHERE key = 'fleet.job' AND value = '777'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tagged, 8);
    // The summary flags the slow node and the one with a collapsed mechanism, only them.
    let s = json(&stdout(&[
        "fleet", "summary", "777", "--json", "--db", db_s,
    ]));
    let flagged: Vec<&str> = s["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["outliers"].as_u64().unwrap() > 0)
        .map(|v| v["node"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, vec!["slow", "spike"]);
    let text = String::from_utf8(stdout(&["fleet", "summary", "777", "--db", db_s])).unwrap();
    assert!(text.contains("\n  slow outlier: "), "{text}");
    assert!(text.contains("note: eps's run is crashed"), "{text}");
    assert!(text.contains("%!") && text.contains("slow"), "{text}");
    let e = fails(&["fleet", "summary", "778", "--db", db_s], 2);
    assert!(e.contains("no runs of fleet job 778"), "{e}");
    // Every listed node has a verdict when the summary is of the job's directory, and the
    // health check's exit status and drain lines follow them.
    let dir = job.to_str().unwrap();
    let s = json(&stdout(&["fleet", "summary", dir, "--json", "--db", db_s]));
    let verdict = |node: &str| -> (String, String) {
        let v = s["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["node"] == node)
            .unwrap_or_else(|| panic!("no verdict for {node}: {s}"));
        let why: Vec<&str> = v["why"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w.as_str())
            .collect();
        (v["verdict"].as_str().unwrap().to_string(), why.join("; "))
    };
    for (node, want, why) in [
        ("alpha", "healthy", ""),
        ("beta", "healthy", ""),
        ("delta", "healthy", ""),
        ("slow", "outlier", "values apart"),
        ("spike", "outlier", "syscall per_call: 2 of 4 rows +4"),
        (
            "hog",
            "busy",
            "runaway (pid 149) 0.97 cpus; 0.98 cpus in all",
        ),
        ("gamma", "drifted", "clocksource hpet"),
        ("eps", "crashed", "run crashed"),
        ("dead", "failed", "signal 9"),
        ("late", "missing", "no result yet"),
        ("lost", "crashed", "DOWN+NOT_RESPONDING"),
        ("stage", "not_run", "never started"),
    ] {
        let (v, w) = verdict(node);
        assert_eq!(v, want, "{node}: {w}");
        assert!(w.contains(why), "{node}: {w}");
    }
    let text = String::from_utf8(stdout(&["fleet", "summary", dir, "--db", db_s])).unwrap();
    assert!(text.contains("9 of 12 nodes not healthy"), "{text}");
    assert!(
        text.contains("gamma drifted: clocksource hpet (7 others: tsc)"),
        "{text}"
    );
    fails(
        &["fleet", "summary", dir, "--fail-on-outlier", "--db", db_s],
        1,
    );
    let drain =
        String::from_utf8(stdout(&["fleet", "summary", dir, "--drain", "--db", db_s])).unwrap();
    // A node not run is not drained: nothing is known against it.
    assert_eq!(drain.lines().count(), 8, "{drain}");
    assert!(!drain.contains("NodeName=stage"), "{drain}");
    assert!(
        drain.contains("scontrol update NodeName=late State=DRAIN Reason='oslab fleet 777.0a1b2c3d: missing: no result yet'"),
        "{drain}"
    );
    // Slurm gives id 777 again (a controller that lost its state): the new submission is
    // collected beside the first, never into it, and the id alone no longer names one.
    let again = results.path().join("777.ffff0000");
    std::fs::create_dir_all(&again).unwrap();
    std::fs::copy(job.join("node-alpha.json"), again.join("node-alpha.json")).unwrap();
    std::fs::write(
        again.join("fleet.json"),
        r#"{"job": "777", "token": "ffff0000", "nodes": ["alpha"]}"#,
    )
    .unwrap();
    let err = collect_all();
    assert!(err.contains("job 777.ffff0000: collected 1 run"), "{err}");
    let e = fails(&["fleet", "summary", "777", "--db", db_s], 2);
    assert!(
        e.contains("777.0a1b2c3d") && e.contains("777.ffff0000"),
        "{e}"
    );
    let one = json(&stdout(&[
        "fleet",
        "summary",
        "777.ffff0000",
        "--json",
        "--db",
        db_s,
    ]));
    assert_eq!(one["nodes"], serde_json::json!(["alpha"]), "{one}");
    // Alone it is one node, too few to judge; against the first submission's healthy nodes as
    // references it is judged, and they get no verdict of their own.
    let text = String::from_utf8(stdout(&[
        "fleet",
        "summary",
        "777.ffff0000",
        "--baseline",
        "777.0a1b2c3d",
        "--db",
        db_s,
    ]))
    .unwrap();
    assert!(
        text.contains("1 node, 4 measurements")
            && text.contains("judged with 3 nodes of an earlier job as references")
            && ["alpha@777", "beta@777", "delta@777"]
                .iter()
                .all(|n| text.contains(n)),
        "{text}"
    );
    assert!(text.contains("every node healthy (1)"), "{text}");
    let e = fails(
        &[
            "fleet",
            "summary",
            "777.ffff0000",
            "--baseline",
            "778",
            "--db",
            db_s,
        ],
        2,
    );
    assert!(e.contains("no runs of baseline job 778"), "{e}");
    // One node across the jobs: alpha in both submissions, gamma drifted in the one it ran in.
    let h = json(&stdout(&[
        "fleet", "history", "alpha", "--json", "--db", db_s,
    ]));
    let jobs: Vec<&str> = h
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job"].as_str().unwrap())
        .collect();
    assert_eq!(jobs.len(), 2, "{h}");
    assert!(
        jobs.contains(&"777.0a1b2c3d") && jobs.contains(&"777.ffff0000"),
        "{h}"
    );
    // Its latest job left gamma drifted: the history says so and exits 1.
    let sick_history = |node: &str| {
        let out = oslab()
            .args(["fleet", "history", node, "--db", db_s])
            .assert()
            .code(1)
            .get_output()
            .clone();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = sick_history("gamma");
    assert!(
        text.contains("node gamma in 1 collected job") && text.contains("drifted"),
        "{text}"
    );
    // A node that handed in nothing is in its history too, as the job's collection found it,
    // and in the job's summary by id alone (no results directory).
    let text = sick_history("lost");
    assert!(
        text.contains("777.0a1b2c3d")
            && text.contains("crashed")
            && text.contains("DOWN+NOT_RESPONDING"),
        "{text}"
    );
    let by_id = json(&stdout(&[
        "fleet",
        "summary",
        "777.0a1b2c3d",
        "--json",
        "--db",
        db_s,
    ]));
    let verdict_of = |node: &str| {
        by_id["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["node"] == node)
            .map(|v| v["verdict"].as_str().unwrap().to_string())
    };
    for (node, want) in [("late", "missing"), ("lost", "crashed"), ("dead", "failed")] {
        assert_eq!(verdict_of(node).as_deref(), Some(want), "{node}: {by_id}");
    }
    let text = String::from_utf8(stdout(&["fleet", "history", "zeta", "--db", db_s])).unwrap();
    assert!(
        text.contains("no collected fleet job ran or listed node zeta"),
        "{text}"
    );
    // A manifest of another submission in a job's directory is refused, not mixed.
    std::fs::write(
        again.join("fleet.json"),
        r#"{"job": "777", "token": "0a1b2c3d", "nodes": ["alpha"]}"#,
    )
    .unwrap();
    let e = fails(
        &["fleet", "collect", again.to_str().unwrap(), "--db", db_s],
        1,
    );
    assert!(e.contains("never mixed"), "{e}");
}

/// Node `node`'s real task of job `job` (submission `token`): the check's probes, measured
/// here as srun would start it there; its run read back and made quiet.
fn task_run(results: &Path, job: &str, token: &str, node: &str) -> Value {
    let mut args = vec!["fleet", "task", "--submission", token, "--results"];
    let results_s = results.to_str().unwrap();
    args.push(results_s);
    args.extend(["--", "--quick"]);
    args.extend(oslab_fleet::reference::CHECK_PROBES);
    oslab()
        .args(&args)
        .env("SLURM_JOB_ID", job)
        .env("SLURMD_NODENAME", node)
        .assert()
        .success();
    let file = results.join(format!("{job}.{token}/node-{node}.json"));
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    quiet(&mut doc);
    std::fs::write(&file, doc.to_string()).unwrap();
    doc
}

/// Writes job `job`'s nodes (name, run document) and its manifest under `results`, and
/// collects it into `db`.
fn a_job(results: &Path, db: &str, job: &str, token: &str, nodes: &[(&str, Value)]) {
    let dir = results.join(format!("{job}.{token}"));
    std::fs::create_dir_all(&dir).unwrap();
    for (node, doc) in nodes {
        std::fs::write(dir.join(format!("node-{node}.json")), doc.to_string()).unwrap();
    }
    let names: Vec<&str> = nodes.iter().map(|(n, _)| *n).collect();
    std::fs::write(
        dir.join("fleet.json"),
        serde_json::json!({"job": job, "token": token, "nodes": names}).to_string(),
    )
    .unwrap();
    oslab()
        .args(["fleet", "collect", "--db", db])
        .arg(&dir)
        .assert()
        .success();
}

#[test]
fn a_saved_reference_finds_two_sick_of_three_and_checks_a_node_alone() {
    let results = tempfile::tempdir().unwrap();
    let (_db_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // Three healthy nodes, saved as the partition's reference: one measured for real, two
    // within 0.4% of it (three real runs in a row on a shared host once called one of them an
    // outlier, and a reference is made of healthy nodes only).
    let alpha = task_run(results.path(), "801", "aa01", "alpha");
    let healthy: Vec<(&str, Value)> = [("alpha", 1.0), ("beta", 1.004), ("gamma", 0.996)]
        .into_iter()
        .map(|(n, k)| {
            let doc = oslab_testkit::scaled_run(&alpha, n, |m| k * (1.0 + 0.001 * (m % 3) as f64));
            (n, doc)
        })
        .collect();
    a_job(results.path(), db, "801", "aa01", &healthy);
    let said = String::from_utf8(stdout(&[
        "fleet",
        "reference",
        "save",
        "801",
        "--name",
        "compute",
        "--db",
        db,
    ]))
    .unwrap();
    assert!(
        said.starts_with("reference compute: 3 healthy nodes of job 801"),
        "{said}"
    );
    // A later job: n2 and n3 25% slower, n1 as alpha was. Two of three outvote n1 in the
    // job's own majority; against the reference both are found, and n1 is healthy.
    let alpha = &healthy[0].1;
    let later: Vec<(&str, Value)> = [("n1", 1.0), ("n2", 1.25), ("n3", 1.25)]
        .into_iter()
        .map(|(n, k)| (n, oslab_testkit::scaled_run(alpha, n, |_| k)))
        .collect();
    a_job(results.path(), db, "802", "bb02", &later);
    let verdicts = |extra: &[&str]| -> Vec<(String, String)> {
        let mut args = vec!["fleet", "summary", "802", "--json", "--db", db];
        args.extend(extra);
        json(&stdout(&args))["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["node"].as_str().unwrap().into(),
                    v["verdict"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let against = verdicts(&["--reference", "compute"]);
    assert_eq!(
        against,
        [("n1", "healthy"), ("n2", "outlier"), ("n3", "outlier")]
            .map(|(n, v)| (n.to_string(), v.to_string())),
        "{:?}",
        verdicts(&[])
    );
    // A job with fewer than 3 healthy nodes is no reference.
    let refused = fails(
        &[
            "fleet",
            "reference",
            "save",
            "802",
            "--name",
            "x",
            "--db",
            db,
        ],
        2,
    );
    assert!(refused.contains("a reference needs 3"), "{refused}");
    // This node alone, against the reference: healthy; or, measured again on a shared host
    // against copies of one run, busy or with figures apart (exit 1 then); never drifted or
    // unusable: it is the machine the reference was measured on.
    let check = |reference: &str, extra: &[&str]| {
        let out = oslab()
            .args(["check", "--reference", reference, "--db", db])
            .args(extra)
            .env("SLURMD_NODENAME", "self")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let t = std::time::Instant::now();
    let (code, text) = check("compute", &[]);
    let took = t.elapsed();
    match code {
        Some(0) => assert!(
            text.starts_with("self: healthy against reference compute"),
            "{text}"
        ),
        Some(1) if text.contains(": busy against") || text.contains(": outlier against") => {}
        _ => panic!("{code:?}: {text}"),
    }
    assert!(took.as_secs() < 30, "the check took {took:?}: {text}");
    // The reference booted with another clocksource: this node is drifted, exit 1, and with
    // --drain says the one line that drains it.
    let hpet: Vec<(&str, Value)> = healthy
        .iter()
        .map(|(n, d)| {
            let mut d = d.clone();
            d["run"]["fingerprint"]["clocksource"] = "hpet".into();
            (*n, d)
        })
        .collect();
    a_job(results.path(), db, "803", "cc03", &hpet);
    stdout(&[
        "fleet",
        "reference",
        "save",
        "803",
        "--name",
        "hpet",
        "--db",
        db,
    ]);
    // (On a busy host the verdict's word is `busy`, other work being the first cause; the
    // clocksource is named either way.)
    let (code, text) = check("hpet", &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with("self: drifted against reference hpet: clocksource")
            || (text.starts_with("self: busy against reference hpet")
                && text.contains("clocksource")),
        "{text}"
    );
    let (code, text) = check("hpet", &["--drain"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with(
            "scontrol update NodeName=self State=DRAIN Reason='oslab check, reference hpet: "
        ) && text.contains("clocksource"),
        "{text}"
    );
    // No such reference: unusable, nothing measured.
    let (code, text) = check("nothing", &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("unusable: no reference \"nothing\""),
        "{text}"
    );
}

#[test]
fn a_malformed_result_is_named_and_the_other_nodes_collected() {
    let results = tempfile::tempdir().unwrap();
    let (_d, db) = temp_db();
    let db_s = db.to_str().unwrap();
    let job = results.path().join("5");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("node-a.json"), r#"{"schema": "oslab.run/1"}"#).unwrap();
    // Node b's run, as the real task hands it in.
    oslab()
        .args(["fleet", "task", "--results"])
        .arg(results.path())
        .args(["--", "--quick", "syscall.getppid"])
        .env("SLURM_JOB_ID", "5")
        .env("SLURMD_NODENAME", "b")
        .assert()
        .success();
    // And node c's, truncated half way.
    let whole = std::fs::read(job.join("node-b.json")).unwrap();
    std::fs::write(job.join("node-c.json"), &whole[..whole.len() / 2]).unwrap();
    let out = oslab()
        .args(["fleet", "collect"])
        .arg(results.path())
        .args(["--db", db_s])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("collected 1 run: b (run 1)"), "{e}");
    for node in ["a", "c"] {
        let line = e
            .lines()
            .find(|l| l.split_whitespace().next() == Some(node))
            .unwrap_or_else(|| panic!("{node} not named: {e}"));
        assert!(
            line.contains("failed")
                && line.contains("no valid run")
                && line.contains(&format!("node-{node}.json")),
            "{line}"
        );
    }
    assert!(e.contains("2 node result files not collected"), "{e}");
    let e = fails(
        &[
            "fleet",
            "collect",
            job.parent().unwrap().parent().unwrap().to_str().unwrap(),
            "--db",
            db_s,
        ],
        1,
    );
    assert!(e.contains("no fleet results"), "{e}");
}

#[test]
fn collect_follows_no_links_out_of_the_results() {
    let results = tempfile::tempdir().unwrap();
    let (_d, db) = temp_db();
    let job = results.path().join("6");
    std::fs::create_dir_all(&job).unwrap();
    // A secret outside the results, linked in as a node's failure reason and as a node's run.
    let secret = results.path().join("secret");
    std::fs::write(&secret, "TOPSECRET\n").unwrap();
    std::os::unix::fs::symlink(&secret, job.join("node-n2.failed")).unwrap();
    // A file no node writes (a crafted node name): named, one printable line, never read.
    std::fs::write(job.join("node-n9\nrm -rf x #.json"), "{}").unwrap();
    let out = oslab()
        .args(["fleet", "collect", results.path().to_str().unwrap(), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = common::printed(&out);
    assert!(!text.contains("TOPSECRET"), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert!(
        text.contains("skipped, no node's file name: \"node-n9\\nrm -rf x #.json\""),
        "{text}"
    );
    std::os::unix::fs::symlink(&secret, job.join("node-n3.json")).unwrap();
    let e = fails(
        &[
            "fleet",
            "collect",
            results.path().to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        1,
    );
    assert!(
        e.contains("symbolic link") && !e.contains("TOPSECRET"),
        "{e}"
    );
}

/// munged, slurmctld and slurmd for this host only, on loopback ports of their own; stopped and
/// reaped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
}

impl Cluster {
    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        let key: Vec<u8> = (0..1024u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        std::fs::write(d.join("munge.key"), key).unwrap();
        std::fs::set_permissions(d.join("munge.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        let mut c = Cluster {
            dir,
            daemons: Vec::new(),
        };
        let sock = d.join("munge.sock");
        c.spawn(
            Command::new("munged")
                .args(["--foreground", "--force"])
                .arg(format!("--key-file={}", d.join("munge.key").display()))
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--pid-file={}", d.join("munged.pid").display()))
                .arg(format!("--log-file={}", d.join("munged.log").display()))
                .arg(format!("--seed-file={}", d.join("munge.seed").display())),
        );
        wait_for(|| sock.exists(), "munged's socket", &d);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
            .to_string();
        let cpus = std::thread::available_parallelism().unwrap().get();
        let port = 20000 + (std::process::id() % 10000) * 2;
        let conf = format!(
            "ClusterName=oslabtest\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={port}\nSlurmdPort={}\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={}\n\
             StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\n\
             SlurmctldLogFile={}\nSlurmdLogFile={}\nProctrackType=proctrack/pgid\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n\
             JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\nInactiveLimit=0\nMinJobAge=300\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=oslab Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            port + 1,
            sock.display(),
            d.join("state").display(),
            d.join("spool").display(),
            d.join("slurmctld.pid").display(),
            d.join("slurmd.pid").display(),
            d.join("slurmctld.log").display(),
            d.join("slurmd.log").display(),
        );
        std::fs::write(c.conf(), conf).unwrap();
        let cf = c.conf();
        c.spawn(Command::new("slurmctld").args(["-D", "-i", "-f"]).arg(&cf));
        c.spawn(
            Command::new("slurmd")
                .args(["-D", "-N", &host, "-f"])
                .arg(&cf),
        );
        wait_for(
            || {
                Command::new("sinfo")
                    .args(["-h", "-o", "%t"])
                    .env("SLURM_CONF", &cf)
                    .output()
                    .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
            },
            "the node to be idle",
            &d,
        );
        c
    }

    fn spawn(&mut self, cmd: &mut Command) {
        let child = cmd
            .env("SLURM_CONF", self.conf())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        self.daemons.push(child);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self.daemons.iter_mut().rev() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        for c in &mut self.daemons {
            let t = Instant::now();
            while matches!(c.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_for(mut ok: impl FnMut() -> bool, what: &str, logs: &Path) {
    let t = Instant::now();
    while !ok() {
        if t.elapsed() > Duration::from_secs(60) {
            let mut text = String::new();
            for f in ["munged.log", "slurmctld.log", "slurmd.log"] {
                text += &format!(
                    "--- {f}\n{}\n",
                    std::fs::read_to_string(logs.join(f)).unwrap_or_default()
                );
            }
            panic!("timed out waiting for {what}\n{text}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[ignore = "needs root, slurm-wlm and munge (scripts/test installs them)"]
fn a_fleet_run_on_a_one_host_slurm_cluster() {
    if !oslab_testkit::require_root("to start munged and slurmctld")
        || !oslab_testkit::require(&["slurmctld", "slurmd", "munged", "sbatch"])
    {
        return;
    }
    let cluster = Cluster::start();
    let results = tempfile::tempdir().unwrap();
    let (_d, db) = temp_db();
    let mut submit = Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["fleet", "submit", "--wait", "--time", "5:00", "--results"])
        .arg(results.path())
        .args(["--", "--quick", "syscall.getp*"])
        .env("SLURM_CONF", cluster.conf())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(
        || !matches!(submit.try_wait(), Ok(None)),
        "the fleet job",
        cluster.dir.path(),
    );
    let out = submit.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let job = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let slurm_out = std::fs::read_dir(results.path())
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("slurm-{job}."))
        })
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap_or_default();
    assert!(out.status.success(), "{err}\n{slurm_out}");
    assert!(job.parse::<u64>().is_ok(), "{job:?} {err}");
    assert!(err.contains("COMPLETED") && err.contains(" ok "), "{err}");
    // The staged copy of the binary is gone again.
    let left: Vec<String> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("oslab-fleet-{job}.")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    stdout(&[
        "fleet",
        "collect",
        results.path().to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let s = json(&stdout(&[
        "fleet",
        "summary",
        &job,
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(s["nodes"], serde_json::json!([host]), "{slurm_out}");
    assert!(s["verdicts"][0]["measured"].as_u64().unwrap() >= 2, "{s}");
}
