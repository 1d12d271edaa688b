//! The CPU manager end to end: workloads as SWF, short live runs under every policy and page
//! migration mode, compare, Paraver, external jobs, bad input and Ctrl-C.

mod common;

use common::{fails, oslab, printed, stdout, temp_db};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Live runs take the cpus: one at a time.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Processes (other than us) whose environment holds `marker`: jobs left behind.
fn processes_with_env(marker: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.to_string();
            if pid == me || !pid.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            String::from_utf8_lossy(&env)
                .contains(marker)
                .then_some(pid)
        })
        .collect()
}

/// A short W3 run (4 jobs, about 3 s of sequential work on 2 cpus) as JSON.
fn live(db: &Path, policy: &str, migration: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "cpuman",
        "run",
        "--workload",
        "W3",
        "--jobs",
        "4",
        "--time-scale",
        "0.002",
        "--policy",
        policy,
        "--migration",
        migration,
        "--json",
        "--db",
    ];
    let db = db.to_str().unwrap();
    args.push(db);
    args.extend_from_slice(extra);
    serde_json::from_slice(&stdout(&args)).unwrap()
}

fn metric<'a>(run: &'a Value, probe: &str, metric: &str, kind: Option<&str>) -> &'a Value {
    run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["probe"] == probe
                && m["metric"] == metric
                && kind.is_none_or(|k| m["params"]["kind"] == k)
        })
        .unwrap_or_else(|| panic!("no {probe} {metric} {kind:?}"))
}

#[test]
fn workloads_are_written_as_swf_and_bad_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w1.swf");
    let o = out.to_str().unwrap();
    oslab()
        .args([
            "cpuman", "workload", "--mix", "W1", "--load", "80", "--jobs", "10",
        ])
        .args(["--cpus", "64", "-o", o])
        .assert()
        .success();
    let text = std::fs::read_to_string(&out).unwrap();
    let jobs: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| !l.starts_with(';'))
        .map(|l| l.split_whitespace().map(|f| f.parse().unwrap()).collect())
        .collect();
    assert_eq!(jobs.len(), 10);
    assert!(jobs.iter().all(|j| j.len() == 18));
    // W1 is swim (1) and bt (2), each requesting 32 of 64.
    assert!(jobs
        .iter()
        .all(|j| (j[13] == 1.0 || j[13] == 2.0) && j[7] == 32.0));
    assert!(fails(&["cpuman", "workload", "--mix", "W7"], 2).contains("W1, W2, W3 or W4"));
    // A malformed trace: the line is named, nothing runs.
    let bad = dir.path().join("bad.swf");
    std::fs::write(
        &bad,
        "; ok\n1 0 -1 5 1 -1 -1 2 -1 -1 1 -1 -1 2 -1 -1 -1 -1\n2 1 -1 x 1\n",
    )
    .unwrap();
    let (_d, db) = temp_db();
    let err = fails(
        &[
            "cpuman",
            "run",
            "--trace",
            bad.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(err.contains("line 3"), "{err}");
    assert!(fails(&["cpuman", "run", "--db", db.to_str().unwrap()], 2).contains("--workload"));
}

#[test]
fn every_policy_and_migration_mode_runs_the_workload_to_the_end() {
    let _t = turn();
    let _sysctl = oslab_testkit::machine_lock("numa_balancing");
    let (_d, db) = temp_db();
    let balancing = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").ok();
    let mut ids = Vec::new();
    for (policy, migration) in [
        ("native", "off"),
        ("equip", "off"),
        ("pdpa", "off"),
        ("equip", "manual"),
        ("pdpa", "kernel"),
    ] {
        let run = live(&db, policy, migration, &[]);
        ids.push(run["run"]["id"].as_i64().unwrap().to_string());
        // Every job completed, used CPU and had at least one processor.
        let cpu = &metric(&run, "cpuman.job", "cpu_time", Some("all"))["summary"];
        assert_eq!(cpu["n"], 4, "{policy} {migration}");
        assert!(cpu["min"].as_f64().unwrap() > 1e6);
        let alloc = metric(&run, "cpuman.job", "allocation", Some("all"))["summary"]["min"]
            .as_f64()
            .unwrap();
        assert!(alloc > 0.5, "{alloc}");
        // Speedups are plausible: no job ran 10 times faster than sequential, or 100 times
        // slower (beside other work a job's cpus are shared: 0.1 was seen under stress-ng).
        let s = &metric(&run, "cpuman.job", "speedup", Some("all"))["summary"];
        let (lo, hi) = (s["min"].as_f64().unwrap(), s["max"].as_f64().unwrap());
        assert!(lo > 0.01 && hi < 10.0, "{lo} {hi}");
        assert!(
            metric(&run, "cpuman.run", "makespan", None)["summary"]["median"]
                .as_f64()
                .is_some()
        );
        // The SelfAnalyzer's speedups are stored per kind and thread count.
        let curve = metric(&run, "cpuman.speedup", "speedup", None);
        assert!(
            curve["params"]["processors"].as_u64().unwrap() >= 1,
            "{curve}"
        );
        let best = curve["summary"]["max"].as_f64().unwrap();
        assert!(best > 0.05 && best < 10.0, "{curve}");
    }
    // A simulation takes the curves a live run measured, and says so.
    let out = oslab()
        .args([
            "cpuman",
            "simulate",
            "--workload",
            "W3",
            "--jobs",
            "4",
            "--cpus",
            "2",
        ])
        .args([
            "--nodes",
            "1",
            "--speedups",
            &ids[1],
            "--db",
            db.to_str().unwrap(),
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("speedups measured in run {}", ids[1])),
        "{said}"
    );
    // A run without curves (a simulation) cannot give them.
    let sims: Value =
        serde_json::from_slice(&stdout(&["runs", "--json", "--db", db.to_str().unwrap()])).unwrap();
    let sim_id = sims
        .as_array()
        .and_then(|a| a.iter().map(|r| r["id"].as_i64().unwrap()).max())
        .unwrap();
    let e = fails(
        &[
            "cpuman",
            "simulate",
            "--workload",
            "W3",
            "--speedups",
            &sim_id.to_string(),
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(e.contains("holds no measured speedups"), "{e}");
    // The kernel mode switched balancing on only for its run.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/numa_balancing").ok(),
        balancing
    );
    // compare: pdpa kernel vs pdpa off, equip manual vs equip off.
    let mut args = vec!["cpuman", "compare", "--json", "--db", db.to_str().unwrap()];
    args.extend(ids.iter().map(String::as_str));
    let cmp: Value = serde_json::from_slice(&stdout(&args)).unwrap();
    let ratios = cmp["ratios"].as_array().unwrap();
    assert!(ratios
        .iter()
        .any(|r| r["policy"] == "pdpa" && r["mode"] == "kernel"));
    assert!(ratios
        .iter()
        .any(|r| r["policy"] == "equip" && r["mode"] == "manual" && r["kind"] == "all"));
    assert!(ratios.iter().all(|r| r["ratio"].as_f64().unwrap() > 0.0));
    assert_eq!(cmp["runs"].as_array().unwrap().len(), 5);
}

#[test]
fn the_timeline_goes_to_the_store_paraver_and_perfetto() {
    let _t = turn();
    let (dir, db) = temp_db();
    let base = dir.path().join("trace");
    let run = live(&db, "equip", "off", &["--paraver", base.to_str().unwrap()]);
    let id = run["run"]["id"].to_string();
    let prv = std::fs::read_to_string(base.with_extension("prv")).unwrap();
    let mut lines = prv.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("#Paraver ("), "{header}");
    // 4 applications (jobs), on one node of 2 cpus.
    let fields: Vec<&str> = header.split_once("):").unwrap().1.split(':').collect();
    assert!(fields[0].ends_with("_ns"));
    assert_eq!(fields[2], "4", "{header}");
    let mut states = 0;
    for l in lines {
        let f: Vec<u64> = l.split(':').map(|x| x.parse().unwrap()).collect();
        assert_eq!(f.len(), 8, "{l}");
        if f[0] == 1 {
            states += 1;
            assert!(f[1] >= 1 && f[6] >= f[5], "{l}");
        }
    }
    assert!(states >= 4, "every job ran somewhere: {states}");
    assert!(std::fs::read_to_string(base.with_extension("row"))
        .unwrap()
        .contains("LEVEL CPU"));
    let trace = dir.path().join("t.json");
    stdout(&[
        "export",
        &id,
        "--format",
        "perfetto",
        "-o",
        trace.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(doc["traceEvents"].as_array().unwrap().len() > 8);
    // And the report draws it.
    let html = dir.path().join("r.html");
    stdout(&[
        "report",
        &id,
        "-o",
        html.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("threads on cpus and jobs"));
}

#[test]
fn an_external_command_gets_its_threads_and_cpus() {
    let _t = turn();
    let (dir, db) = temp_db();
    let seen = dir.path().join("seen");
    let script = dir.path().join("job.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$OMP_NUM_THREADS $(grep Cpus_allowed_list /proc/self/status | cut -f2)\" > {}\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cpus = oslab_os::affinity::get_affinity(0).unwrap();
    let out = stdout(&[
        "cpuman",
        "run",
        "--policy",
        "equip",
        "--external",
        script.to_str().unwrap(),
        "--external-request",
        "1",
        "--db",
        db.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("external"), "{text}");
    let got = std::fs::read_to_string(&seen).unwrap();
    // One thread requested, one cpu given: the first in placement order.
    let mut parts = got.split_whitespace();
    assert_eq!(parts.next(), Some("1"), "{got}");
    let allowed = parts.next().unwrap();
    assert!(!allowed.contains(',') && !allowed.contains('-'), "{got}");
    assert!(cpus.contains(allowed.parse().unwrap()));
    // A command that fails says how, and how --external reads its argument.
    let out = stdout(&[
        "cpuman",
        "run",
        "--external",
        "sh -c 'exit 3'",
        "--db",
        db.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("did not complete")
            && text.contains("without shell quoting")
            && text.contains("exited with status"),
        "{text}"
    );
    // A command that does not exist: a clear error, nothing left.
    let err = fails(
        &[
            "cpuman",
            "run",
            "--external",
            "/nonexistent/prog",
            "--db",
            db.to_str().unwrap(),
        ],
        1,
    );
    assert!(
        err.contains("cannot start job") && err.contains("/nonexistent/prog"),
        "{err}"
    );
}

/// Starts `oslab cpuman run` of three W4 jobs whose processes (manager and jobs) carry `marker` in
/// their environment, and waits until the jobs run.
fn start_marked_manager(db: &Path, marker: &str) -> std::process::Child {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["cpuman", "run", "--workload", "W4", "--jobs", "3"])
        .args(["--time-scale", "0.01", "--policy", "native", "--db"])
        .arg(db)
        .env("OSLAB_CPUMAN_TEST_MARKER", marker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A busy host starts them late: wait for them (up to a minute), not a fixed time.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while processes_with_env(marker).len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        processes_with_env(marker).len() >= 2,
        "jobs should be running"
    );
    child
}

#[test]
fn ctrl_c_stops_and_reaps_every_job() {
    let _t = turn();
    let (dir, db) = temp_db();
    let marker = format!("{}", dir.path().join("marker").display());
    let child = start_marked_manager(&db, &marker);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(left_after_a_while(&marker), Vec::<String>::new());
    // What ran is stored, marked interrupted.
    let runs = stdout(&["runs", "--json", "--db", db.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&runs).contains("interrupted"));
}

#[test]
fn sigkill_of_the_manager_takes_its_jobs_with_it() {
    let _t = turn();
    let (dir, db) = temp_db();
    let marker = format!("{}", dir.path().join("killed-marker").display());
    let mut child = start_marked_manager(&db, &marker);
    child.kill().unwrap(); // SIGKILL: no handler runs, the kernel must end the jobs
    child.wait().unwrap();
    assert_eq!(left_after_a_while(&marker), Vec::<String>::new());
}

/// The processes carrying `marker` once they have had up to ten seconds to go (a busy host
/// delivers the kill and reaps late).
fn left_after_a_while(marker: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with_env(marker);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Puts kernel.numa_balancing back however the test ends.
struct BalancingBack(String);

impl Drop for BalancingBack {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/numa_balancing", &self.0);
    }
}

/// Starts `cpuman run --migration kernel` (which switches NUMA balancing on) with its record in
/// `state`, waits until balancing is on, sends `signal`, and returns its exit and stderr once
/// every process holding that stderr (its restoring guard too) has ended.
fn signal_the_balancing_manager(db: &Path, state: &Path, signal: i32) -> (Option<i32>, String) {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["cpuman", "run", "--workload", "W4", "--jobs", "3"])
        .args([
            "--time-scale",
            "0.01",
            "--policy",
            "pdpa",
            "--migration",
            "kernel",
        ])
        .arg("--db")
        .arg(db)
        .env("XDG_STATE_HOME", state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The manager switches balancing on once it has started its jobs: on a busy machine that
    // takes longer than on a quiet one.
    let on = Instant::now();
    while std::fs::read_to_string(BALANCING).unwrap().trim() != "1" {
        assert!(
            on.elapsed() < Duration::from_secs(60),
            "balancing never switched on"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const BALANCING: &str = "/proc/sys/kernel/numa_balancing";

#[test]
fn a_sysctl_is_put_back_however_the_manager_ends() {
    // SIGKILL once left it changed until the next oslab command; a hang-up skipped all cleanup.
    let _t = turn();
    let _sysctl = oslab_testkit::machine_lock("numa_balancing");
    let original = std::fs::read_to_string(BALANCING)
        .unwrap()
        .trim()
        .to_string();
    let _back = BalancingBack(original.clone());
    for signal in [libc::SIGKILL, libc::SIGHUP] {
        let (dir, db) = temp_db();
        let state = dir.path().join("state");
        let (code, err) = signal_the_balancing_manager(&db, &state, signal);
        // stderr reached its end: the guard that outlives a killed manager has done its work.
        assert_eq!(
            std::fs::read_to_string(BALANCING).unwrap().trim(),
            original,
            "signal {signal} left it changed: {err}"
        );
        let pending = state.join("oslab/pending.json");
        assert!(
            !pending.exists() || std::fs::read_to_string(&pending).unwrap().trim() == "[]",
            "{}",
            std::fs::read_to_string(&pending).unwrap()
        );
        if signal == libc::SIGKILL {
            assert_eq!(code, None);
            assert!(
                err.contains(&format!("restored {BALANCING} to {original}")),
                "{err}"
            );
        } else {
            assert_eq!(code, Some(128 + signal), "{err}");
            let runs = stdout(&["runs", "--json", "--db", db.to_str().unwrap()]);
            assert!(String::from_utf8_lossy(&runs).contains("interrupted"));
        }
    }
}

/// Every figure of a simulated run: none failed, and every one on the simulator's clock.
fn simulated_figures_hold(run: &Value) {
    let ms = run["measurements"].as_array().unwrap();
    assert!(!ms.is_empty());
    for m in ms {
        assert_ne!(m["status"], "failed", "{m}");
        assert_eq!(m["params"]["clock"], "simulated", "{m}");
    }
}

#[test]
fn a_simulations_figures_are_simulated_time_never_failed_against_the_wall_clock() {
    // W1's makespan is 1.5 simulated seconds, computed in well under a millisecond: it was
    // failed as longer than the run, and so were the response, execution and burst times.
    let (_dir, db) = temp_db();
    let d = db.to_str().unwrap();
    for policy in ["equip", "pdpa", "native"] {
        let run: Value = serde_json::from_slice(&stdout(&[
            "cpuman",
            "simulate",
            "--workload",
            "W1",
            "--policy",
            policy,
            "--json",
            "--db",
            d,
        ]))
        .unwrap();
        simulated_figures_hold(&run);
        let makespan = metric(&run, "cpuman.run", "makespan", None);
        assert!(
            makespan["summary"]["median"].as_f64().unwrap() > 1e8,
            "{makespan}"
        );
    }
    // `show` holds the stored run to the same contract.
    let shown: Value =
        serde_json::from_slice(&stdout(&["show", "latest", "--json", "--db", d])).unwrap();
    simulated_figures_hold(&shown);
    let text = String::from_utf8(stdout(&["show", "latest", "--db", d])).unwrap();
    assert!(!text.contains("failed"), "{text}");
}

#[test]
fn simulation_is_deterministic_and_compares_like_live_runs() {
    let (dir, db) = temp_db();
    let d = db.to_str().unwrap();
    let sim = |policy: &str, migration: &str, seed: &str| -> Value {
        serde_json::from_slice(&stdout(&[
            "cpuman",
            "simulate",
            "--cpus",
            "64",
            "--nodes",
            "32",
            "--workload",
            "W1",
            "--load",
            "80",
            "--jobs",
            "30",
            "--time-scale",
            "0.1",
            "--stream",
            seed,
            "--policy",
            policy,
            "--migration",
            migration,
            "--json",
            "--db",
            d,
        ]))
        .unwrap()
    };
    let cpu = |r: &Value| {
        metric(r, "cpuman.run", "cpu_time", None)["summary"]["median"]
            .as_f64()
            .unwrap()
    };
    let a = sim("pdpa", "off", "5");
    assert_eq!(cpu(&a), cpu(&sim("pdpa", "off", "5")));
    assert_ne!(cpu(&a), cpu(&sim("pdpa", "off", "6")));
    assert_eq!(
        metric(&a, "cpuman.job", "cpu_time", Some("all"))["summary"]["n"],
        30
    );
    // Native migrates far more than a pinning policy.
    let migrations = |r: &Value| {
        metric(r, "cpuman.run", "migrations", None)["summary"]["median"]
            .as_f64()
            .unwrap()
    };
    assert!(
        migrations(&sim("native", "off", "5"))
            > 10.0 * migrations(&sim("equip", "off", "5")).max(1.0)
    );
    let off = sim("equip", "off", "5");
    let manual = sim("equip", "manual", "5");
    let ids = [
        off["run"]["id"].to_string(),
        manual["run"]["id"].to_string(),
    ];
    // Runs chosen as everywhere: a range as well as a list.
    let range = format!("{}-{}", ids[0], ids[1]);
    let cmp: Value =
        serde_json::from_slice(&stdout(&["cpuman", "compare", &range, "--json", "--db", d]))
            .unwrap();
    assert_eq!(cmp["runs"].as_array().unwrap().len(), 2, "{cmp}");
    assert!(cmp["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["mode"] == "manual"));
    // A simulated run exports to Paraver (the paper's Figure 4): each thread on the cpu the
    // simulator gave it, every cpu one of the simulated 64.
    let base = dir.path().join("sim");
    let id = manual["run"]["id"].to_string();
    stdout(&[
        "export",
        &id,
        "--format",
        "paraver",
        "-o",
        base.to_str().unwrap(),
        "--db",
        d,
    ]);
    let prv = std::fs::read_to_string(base.with_extension("prv")).unwrap();
    assert!(
        prv.lines().next().unwrap().contains(":1(64):30:"),
        "{}",
        &prv[..200]
    );
    let states: Vec<Vec<u64>> = prv
        .lines()
        .skip(1)
        .map(|l| l.split(':').map(|x| x.parse().unwrap()).collect())
        .filter(|f: &Vec<u64>| f[0] == 1)
        .collect();
    assert!(states.len() >= 30, "{}", states.len());
    assert!(states
        .iter()
        .all(|f| (1..=64).contains(&f[1]) && f[7] == 1 && f[6] > f[5]));
    // A trace: streamed and validated; errors name the line.
    let bad = dir.path().join("bad.swf");
    std::fs::write(
        &bad,
        "1 0 -1 5 1 -1 -1 2 -1 -1 1 -1 -1 2 -1 -1 -1 -1\n2 0 -1 5 1 -1 -1\n",
    )
    .unwrap();
    let err = fails(
        &[
            "cpuman",
            "simulate",
            "--trace",
            bad.to_str().unwrap(),
            "--db",
            d,
        ],
        2,
    );
    assert!(err.contains("line 2") && err.contains("7 fields"), "{err}");
    assert!(fails(
        &[
            "cpuman",
            "simulate",
            "--workload",
            "W1",
            "--remote-ratio",
            "0.5",
            "--db",
            d
        ],
        2
    )
    .contains("--remote-ratio"));
}

#[test]
#[ignore = "needs root, to run as a user who may not switch NUMA balancing on"]
fn kernel_page_migration_without_permission_is_refused_before_any_job() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
    if !common::nobody_can_run_oslab() {
        return;
    }
    let (dir, db) = temp_db();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = "OSLAB_TEST_KERNEL_REFUSED";
    let t = std::time::Instant::now();
    let out = common::oslab_as_nobody()
        .args([
            "cpuman",
            "run",
            "--workload",
            "W4",
            "--jobs",
            "2",
            "--migration",
            "kernel",
        ])
        .args(["--db", db.to_str().unwrap()])
        .env("HOME", dir.path())
        .env(marker, "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("numa_balancing") && err.contains("root"),
        "{err}"
    );
    // Refused up front: no calibration, no job, no store.
    assert!(!err.contains("calibrating"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(processes_with_env(marker).is_empty());
    assert!(!db.exists());
}

#[test]
fn an_archive_trace_simulates_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, db) = temp_db();
    // The Parallel Workloads Archive's shape: header with the machine, a cancelled job (status 5,
    // run time and size unknown), a failed one (status 0), one job larger than the machine.
    let trace = dir.path().join("archive.swf");
    std::fs::write(
        &trace,
        "; Version: 2.2\n; Computer: a cluster\n;   MaxNodes: 8\n;   MaxProcs: 16\n; UnixStartTime: 1000000000\n\
         1 0 10 100 16 -1 -1 16 -1 -1 1 3 1 12 1 -1 -1 -1\n\
         2 5 -1 -1 -1 -1 -1 8 -1 -1 5 3 1 12 1 -1 -1 -1\n\
         3 9 4 30 2 -1 -1 2 -1 -1 0 4 1 7 1 -1 -1 -1\n\
         4 12 0 50 4 -1 -1 4 -1 -1 1 4 1 7 1 -1 -1 -1\n\
         5 30 0 60 64 -1 -1 64 -1 -1 1 5 1 12 1 -1 -1 -1\n",
    )
    .unwrap();
    let out = oslab()
        .args([
            "cpuman",
            "simulate",
            "--trace",
            trace.to_str().unwrap(),
            "--nodes",
            "8",
        ])
        .args(["--json", "--db", db.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    for said in [
        "16 cpus: the trace's MaxProcs",
        "2 of 5 trace jobs skipped: 1 cancelled, 1 failed",
        "given a kind by their requested size (no --app-map)",
        "1 jobs ask for more than the machine's 16 processors",
    ] {
        assert!(err.contains(said), "{said:?} missing: {err}");
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["probe"] == "cpuman.job"
                && m["metric"] == "execution_time"
                && m["params"]["kind"] != "all"
        })
        .count();
    assert!(jobs >= 1, "{v}");
    // --cpus overrides the header; an --app-map line that is not EXECUTABLE KIND is refused.
    let map = dir.path().join("apps");
    std::fs::write(&map, "12 swim\n7 mergesort\n").unwrap();
    let e = fails(
        &[
            "cpuman",
            "simulate",
            "--trace",
            trace.to_str().unwrap(),
            "--app-map",
            map.to_str().unwrap(),
            "--cpus",
            "64",
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(e.contains("line 2") && e.contains("mergesort"), "{e}");
}

#[test]
fn a_cpu_given_away_is_left_at_once() {
    // A cooperative job reads its cpus between iterations only: a shrunk job once ran on the cpu
    // it had given up for 5.6 s while the job it went to had none. The manager now confines
    // its threads at once and says any time its samples saw a job where it held no cpu.
    let _t = turn();
    let (_dir, db) = temp_db();
    let out = oslab()
        .args(["cpuman", "run", "--workload", "W3", "--jobs", "4"])
        .args(["--time-scale", "0.002", "--policy", "pdpa", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = printed(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("makespan"), "{text}");
    // A member that read its cpus just before a change can start on an old one: the manager's
    // next look (a tick, 20 ms) confines it again. Anything longer is a cpu not given up.
    let long: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("no longer held"))
        .filter(|l| !(l.contains(" µs on") || l.contains(" ns on")))
        .filter(|l| millis(l).is_none_or(|ms| ms > 20.0))
        .collect();
    assert!(long.is_empty(), "{long:?}");
}

/// The milliseconds a note's "ran X ms on ..." says, when it says milliseconds.
fn millis(note: &str) -> Option<f64> {
    note.split(" ran ")
        .nth(1)?
        .split_once(" ms on")?
        .0
        .parse()
        .ok()
}
