//! `oslab shuffle simulate`: the shuffling study on a simulated four-socket machine, end to end
//! (tables, the stored run, bad input).

mod common;

use common::{fails, oslab, restoring, temp_db};

#[test]
fn a_kernel_thread_is_called_one_and_left_alone() {
    if !oslab_testkit::require_root("moving another process's threads") {
        return;
    }
    // A per-cpu kernel thread: the kernel refuses any affinity change for it.
    let Some(pid) = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (comm.trim() == "ksoftirqd/0").then(|| e.file_name().to_string_lossy().into_owned())
    }) else {
        return oslab_testkit::skip("no ksoftirqd/0 here");
    };
    let e = fails(&["shuffle", "--pid", &pid], 1);
    assert!(
        e.contains("kernel thread") && !e.contains("another user"),
        "{e}"
    );
}

#[test]
fn a_simulated_four_socket_machine_shows_where_shuffling_pays() {
    let (_dir, db) = temp_db();
    let db_arg = db.to_str().unwrap();
    let out = oslab()
        .args([
            "shuffle",
            "simulate",
            "--runs",
            "2",
            "--iterations",
            "3000",
            "--sweep",
            "50ms,200ms",
            "--db",
            db_arg,
        ])
        .env("COLUMNS", "80")
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    for said in [
        "4 sockets x 8 cores, 32 threads on 4 locks",
        "waits",
        "lock hand-offs that crossed sockets",
        "the monitoring interval, workload high",
        "50 ms",
    ] {
        assert!(text.contains(said), "{said:?} missing:\n{text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // Simulated time is not the run's: no figure is failed against the wall clock.
    let shown: serde_json::Value = serde_json::from_slice(
        &oslab()
            .args(["show", "latest", "--json", "--db", db_arg])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for m in shown["measurements"].as_array().unwrap() {
        assert_ne!(m["status"], "failed", "{m}");
        assert_eq!(m["params"]["clock"], "simulated", "{m}");
    }
    // A simulation says nothing about this machine's noise.
    assert!(!text.contains("environment warnings"), "{text}");

    let conn = rusqlite::Connection::open(&db).unwrap();
    let value = |workload: &str, mode: &str, metric: &str| -> f64 {
        conn.query_row(
            "SELECT median FROM measurements WHERE probe = 'shuffle-sim' AND metric = ?3
             AND json_extract(params, '$.workload') = ?1 AND json_extract(params, '$.part') = 'workload'
             AND coalesce(json_extract(params, '$.mode'), '') = ?2",
            [workload, mode, metric],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("{workload} {mode} {metric}: {e}"))
    };
    // Without contention the daemon never acts; with it, hand-offs become local.
    assert_eq!(value("none", "shuffle", "shuffles"), 0.0);
    assert_eq!(value("none", "", "change"), 0.0);
    assert!(value("medium", "shuffle", "shuffles") >= 1.0);
    assert!(
        value("medium", "shuffle", "remote_share")
            < value("medium", "monitor-only", "remote_share")
    );
    let status: String = conn
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "complete");
    // The report charts the study: with / without by contention and by interval.
    let page = db.with_file_name("report.html");
    oslab()
        .args([
            "report",
            "latest",
            "-o",
            page.to_str().unwrap(),
            "--db",
            db_arg,
        ])
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    for title in [
        "time with shuffling / without, by lock contention",
        "time with shuffling / without, by monitoring interval",
    ] {
        assert!(html.contains(title), "{title:?} missing");
    }
}

#[test]
fn bad_simulation_settings_are_refused_before_anything_runs() {
    let (_dir, db) = temp_db();
    let db_arg = db.to_str().unwrap();
    let err = fails(
        &["shuffle", "simulate", "--sockets", "0", "--db", db_arg],
        2,
    );
    assert!(err.contains("--sockets"), "{err}");
    let err = fails(
        &[
            "shuffle",
            "simulate",
            "--line-remote",
            "fast",
            "--db",
            db_arg,
        ],
        2,
    );
    assert!(err.contains("--line-remote"), "{err}");
    // A live watch still needs a process or a command.
    let err = fails(&["shuffle", "--db", db_arg], 2);
    assert!(err.contains("--pid"), "{err}");
    assert!(!db.exists(), "nothing was stored");
}

#[test]
fn a_recorded_lock_profile_runs_on_a_simulated_machine() {
    let (_dir, db) = temp_db();
    let db_arg = db.to_str().unwrap();
    // Record a live lock-bound program: 8 threads on 2 mutexes (waits are real futex waits).
    let lockbench = assert_cmd::cargo::cargo_bin("oslab");
    let watch = oslab()
        .args(["shuffle", "--monitor-only", "--json", "--db", db_arg, "--"])
        .arg(&lockbench)
        .args([
            "lockbench",
            "--threads",
            "8",
            "--locks",
            "2",
            "--critical-us",
            "20",
        ])
        .args(["--noncritical-us", "40", "--iterations", "8000"])
        .assert()
        .success()
        .get_output()
        .clone();
    let run: serde_json::Value = serde_json::from_slice(&watch.stdout).unwrap();
    let id = run["run"]["id"].to_string();
    let simulate = |profile: &str| {
        oslab()
            .args([
                "shuffle",
                "simulate",
                "--profile",
                profile,
                "--sockets",
                "2",
                "--cores",
                "4",
            ])
            .args([
                "--runs",
                "1",
                "--sweep",
                "0",
                "--critical",
                "20us",
                "--iterations",
                "2000",
            ])
            .args(["--db", db_arg])
            .output()
            .unwrap()
    };
    let out = simulate(&id);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The profile's threads and locks, as recorded; one workload, "recorded".
    assert!(err.contains("contending threads on 2 locks"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("recorded"), "{text}");
    // A run that is not a watch is no profile: refused with the reason, nothing simulated.
    let out = simulate("latest");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no lock-wait intervals"), "{err}");
}

/// The thread ids of process `pid`.
fn threads(pid: u32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The processes whose parent is `pid` (an oslab's guards).
fn children(pid: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.to_string();
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

#[test]
fn threads_a_killed_shuffler_left_pinned_are_put_back_by_its_guard_or_the_next_oslab() {
    // Its guard puts them back as soon as it is gone; with the guard killed too, the next oslab
    // to start (any command) does, and says so.
    for guard_killed in [false, true] {
        killed_shuffler_restored(guard_killed);
    }
}

fn killed_shuffler_restored(guard_killed: bool) {
    let (dir, db) = temp_db();
    let state = dir.path().join("state");
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    // A lock-bound target with its own threads, started apart from the shuffler: one lock, so
    // that its workers sleep on it where the /proc sampling method sees them (its main thread,
    // blocked in pthread_join, does not count as contention).
    let target = std::process::Command::new(&bin)
        .args([
            "lockbench",
            "--threads",
            "4",
            "--locks",
            "1",
            "--iterations",
            "100000000",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = target.id();
    // Killed however the test ends: a failed assertion must not leave it spinning.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let target = Reaped(target);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before: Vec<(i32, oslab_core::CpuSet)> = threads(pid)
        .into_iter()
        .filter_map(|t| Some((t, oslab_os::affinity::get_affinity(t).ok()?)))
        .collect();
    let mut shuffler = std::process::Command::new(&bin)
        .args([
            "shuffle",
            "--pid",
            &pid.to_string(),
            "--interval",
            "100ms",
            "--threshold",
            "1%",
        ])
        .args(["--method", "proxy", "--db", db.to_str().unwrap()])
        .env("XDG_STATE_HOME", &state)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let record = state.join("oslab/pending.json");
    let t = std::time::Instant::now();
    while !record.exists() && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pinned = before
        .iter()
        .filter(|(t, set)| oslab_os::affinity::get_affinity(*t).ok().as_ref() != Some(set))
        .count();
    let guards = children(shuffler.id());
    if guard_killed {
        for g in &guards {
            // SAFETY: signalling the guard the shuffler forked.
            unsafe { libc::kill(*g, libc::SIGKILL) };
        }
    }
    shuffler.kill().unwrap(); // SIGKILL: no chance to restore
    shuffler.wait().unwrap();
    assert!(
        record.exists() || !guard_killed,
        "the shuffler never moved a thread"
    );
    // With more than one cpu allowed, pinning a thread to one cpu changed its affinity.
    if before.iter().any(|(_, set)| set.len() > 1) {
        assert!(pinned > 0, "no thread was pinned");
        assert!(
            !guards.is_empty(),
            "no guard was started with the first pin"
        );
    }
    let said = match guard_killed {
        // The next oslab to start (any command) puts them back and says so.
        true => restoring(&state, &["list"]),
        false => {
            let t = std::time::Instant::now();
            while record.exists() && t.elapsed() < std::time::Duration::from_secs(15) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            String::new()
        }
    };
    let after: Vec<(i32, oslab_core::CpuSet)> = before
        .iter()
        .filter_map(|(t, _)| Some((*t, oslab_os::affinity::get_affinity(*t).ok()?)))
        .collect();
    drop(target);
    if guard_killed && pinned > 0 {
        assert!(
            said.contains("restored the cpu affinity of thread"),
            "{said}"
        );
    }
    assert_eq!(after, before, "guard killed: {guard_killed}: {said}");
    assert!(!record.exists());
}

/// Whether `pid` runs (a zombie waiting for init is gone).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

fn gone_within(pid: i32, limit: std::time::Duration) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < limit {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn a_watched_command_s_children_end_with_oslab_even_when_it_is_killed_or_they_ignore_sigterm() {
    let (dir, db) = temp_db();
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    // A command that ignores SIGINT and SIGTERM and starts a child that ignores them too.
    let script = "trap '' TERM INT; sleep 300 & echo $! > \"$0\"; wait";
    for (case, signal) in [("ctrl-c", libc::SIGINT), ("sigkill", libc::SIGKILL)] {
        let pidfile = dir.path().join(format!("{case}.pid"));
        let mut oslab = std::process::Command::new(&bin)
            .args(["shuffle", "--monitor-only", "--method", "proxy"])
            .args(["--interval", "100ms", "--db", db.to_str().unwrap(), "--"])
            .args(["sh", "-c", script, pidfile.to_str().unwrap()])
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        let grandchild = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break p;
            }
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "{case}: never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(oslab.id() as i32, signal) };
        let t = std::time::Instant::now();
        oslab.wait().unwrap();
        assert!(
            t.elapsed() < std::time::Duration::from_secs(6),
            "{case}: oslab took {:?}",
            t.elapsed()
        );
        // Before: the child of the command lived on with PPID 1 for its whole 300 s.
        let left = !gone_within(grandchild, std::time::Duration::from_secs(6));
        if left {
            // SAFETY: not leaving it behind for the next test.
            unsafe { libc::kill(grandchild, libc::SIGKILL) };
        }
        assert!(!left, "{case}: the command's child outlived oslab");
    }
}

#[test]
fn ctrl_c_stops_a_long_interval_or_tick_at_once() {
    // `shuffle --interval 120s` held Ctrl-C for 116 s; `cpuman run --tick 86400s` for ever.
    let (dir, db) = temp_db();
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let d = db.to_str().unwrap();
    let cases: [&[&str]; 2] = [
        &[
            "shuffle",
            "--monitor-only",
            "--method",
            "proxy",
            "--interval",
            "120s",
            "--db",
            d,
            "--",
            "sleep",
            "60",
        ],
        &[
            "cpuman",
            "run",
            "--workload",
            "W3",
            "--jobs",
            "1",
            "--time-scale",
            "0.01",
            "--tick",
            "86400s",
            "--db",
            d,
        ],
    ];
    for args in cases {
        let mut oslab = std::process::Command::new(&bin)
            .args(args)
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(oslab.id() as i32, libc::SIGINT) };
        let t = std::time::Instant::now();
        let status = oslab.wait().unwrap();
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{args:?}: Ctrl-C took {:?}",
            t.elapsed()
        );
        assert_eq!(status.code(), Some(130), "{args:?}");
    }
}
