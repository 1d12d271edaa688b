//! The services programs call (issue 87): IPC over pipes and loopback sockets, signals, and
//! waiting on many descriptors, run for real; and the environments they cannot run in (no
//! loopback, too few descriptors) said as skips with the reason, never as numbers.

mod common;

use common::temp_db;
use serde_json::Value;

/// `oslab run --quick PROBES --json` under `wrapper` (a command that runs oslab), its rows.
fn rows_under(wrapper: &[&str], probes: &[&str]) -> Option<Vec<Value>> {
    let (_dir, db) = temp_db();
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = std::process::Command::new(first);
            c.args(rest).arg(assert_cmd::cargo::cargo_bin("oslab"));
            c
        }
        None => std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab")),
    };
    let out = cmd
        .args(["run", "--quick", "--json", "--db"])
        .arg(&db)
        .args(probes)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    Some(doc["measurements"].as_array().unwrap().clone())
}

fn median(m: &Value) -> f64 {
    m["summary"]["median"].as_f64().unwrap_or(f64::NAN)
}

#[test]
fn every_service_is_measured_or_says_why() {
    let rows = rows_under(&[], &["ipc", "signal", "poll", "fs"]).expect("oslab run failed");
    for probe in [
        "ipc.pipe",
        "ipc.unix",
        "ipc.tcp",
        "ipc.udp",
        "ipc.tcp-connect",
        "signal.install",
        "signal.catch",
        "signal.protection-fault",
        "poll.select",
        "poll.poll",
        "poll.epoll",
        "fs.create",
        "fs.cached-read",
    ] {
        let mine: Vec<&Value> = rows.iter().filter(|m| m["probe"] == probe).collect();
        assert!(!mine.is_empty(), "{probe}: no rows");
        for m in mine {
            match m["status"].as_str().unwrap() {
                "ok" | "noisy" => assert!(median(m) > 0.0, "{m}"),
                "skipped" => assert!(!m["reason"].as_str().unwrap_or("").is_empty(), "{m}"),
                _ => panic!("{probe} failed: {m}"),
            }
        }
    }
    // Plausibility, not speed: a round trip is two writes and two reads at least, so longer
    // than a caught signal's one kernel entry is not guaranteed, but it is above 100 ns; a
    // poll over 1,000 descriptors costs more than over 10; a bandwidth is below 1 TB/s.
    let find = |probe: &str, metric: &str, key: &str, value: Value| {
        rows.iter()
            .find(|m| m["probe"] == probe && m["metric"] == metric && m["params"][key] == value)
            .map(median)
    };
    for transport in ["ipc.pipe", "ipc.unix", "ipc.tcp", "ipc.udp"] {
        let rtt = find(transport, "round_trip", "placement", "same-cpu".into()).unwrap();
        assert!(rtt > 100.0, "{transport}: {rtt} ns");
    }
    for call in ["poll.select", "poll.poll", "poll.epoll"] {
        let (few, many) = (
            find(call, "per_call", "fds", 10.into()).unwrap(),
            find(call, "per_call", "fds", 1000.into()).unwrap(),
        );
        assert!(many > few, "{call}: 1,000 fds {many} ns, 10 fds {few} ns");
    }
    for m in rows.iter().filter(|m| m["metric"] == "bandwidth") {
        assert!(median(m) < 1000.0 && m["unit"] == "gbps", "{m}");
    }
    // Every file row names where it was measured.
    for m in rows
        .iter()
        .filter(|m| m["probe"].as_str().unwrap().starts_with("fs."))
    {
        assert!(
            m["params"]["fs"].is_string() && m["params"]["temp_dir"].is_string(),
            "{m}"
        );
    }
}

/// A temp dir too small for the cached file (a 2 MiB tmpfs, in a mount namespace of the test's
/// own): the read says why, and the create and delete still measure there.
#[test]
#[ignore = "needs root to mount a tmpfs (CI runs it as root)"]
fn a_full_temp_dir_is_said_not_measured() {
    if !oslab_testkit::require_root("mounting a small tmpfs")
        || !oslab_testkit::require(&["unshare"])
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_d, db) = temp_db();
    let script = format!(
        "mount -t tmpfs -o size=2m none {0} && exec {1} run --quick fs --temp-dir {0} --json --db {2}",
        dir.path().display(),
        assert_cmd::cargo::cargo_bin("oslab").display(),
        db.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for m in doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["probe"] != "host")
    {
        match m["probe"].as_str().unwrap() {
            "fs.cached-read" => assert!(
                m["status"] == "failed" && m["reason"].as_str().unwrap().contains("would not fit"),
                "{m}"
            ),
            _ => {
                assert!(m["status"] == "ok" || m["status"] == "noisy", "{m}");
                assert_eq!(m["params"]["fs"], "tmpfs", "{m}");
            }
        }
    }
    // Nothing left in the directory (the mount is gone with its namespace; so is what was in it,
    // but the private directory was removed before).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A network namespace of its own has `lo` down: the loopback probes skip, saying so, and the
/// pipe still measures.
#[test]
fn without_loopback_the_network_probes_say_so() {
    if !oslab_testkit::require(&["unshare"]) {
        return;
    }
    let Some(rows) = rows_under(&["unshare", "-rn"], &["ipc.tcp", "ipc.udp", "ipc.pipe"]) else {
        return oslab_testkit::skip("needs unshare -rn (user and network namespaces allowed)");
    };
    for m in rows.iter().filter(|m| m["probe"] != "host") {
        let why = m["reason"].as_str().unwrap_or("");
        match m["probe"].as_str().unwrap() {
            "ipc.pipe" => assert!(m["status"] != "skipped" && m["status"] != "failed", "{m}"),
            _ => assert!(m["status"] == "skipped" && why.contains("loopback"), "{m}"),
        }
    }
}

/// Too few descriptors allowed (`ulimit -Hn 64`): the 1,000-descriptor calls skip with the
/// limit named, the 10-descriptor ones still measure.
#[test]
fn too_few_descriptors_are_said_not_measured() {
    if !oslab_testkit::require(&["prlimit"]) {
        return;
    }
    let rows = rows_under(&["prlimit", "--nofile=64:64"], &["poll"]).expect("oslab run failed");
    for m in rows.iter().filter(|m| m["probe"] != "host") {
        let fds = m["params"]["fds"].as_u64().unwrap();
        match fds {
            1000 => assert!(
                m["status"] == "skipped" && m["reason"].as_str().unwrap().contains("ulimit -Hn"),
                "{m}"
            ),
            _ => assert!(m["status"] == "ok" || m["status"] == "noisy", "{m}"),
        }
    }
}
