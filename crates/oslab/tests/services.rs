//! The services programs call (issue 87): IPC over pipes and loopback sockets, signals, and
//! waiting on many descriptors, run for real; and the environments they cannot run in (no
//! loopback, too few descriptors) said as skips with the reason, never as numbers.

mod common;

use common::{processes_mentioning, temp_db};
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

/// `oslab run --quick PROBES --json` with `dir_as` (`--temp-dir`, or `TMPDIR`) a tmpfs mounted
/// with `options`, in a mount namespace of the test's own: its rows, and what it left in the
/// tmpfs (listed before the namespace, and the mount with it, are gone).
fn rows_in_tmpfs(options: &str, probes: &str, dir_as: &str) -> Option<(Vec<Value>, String)> {
    if !oslab_testkit::require_root("mounting a small tmpfs")
        || !oslab_testkit::require(&["unshare"])
    {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().display();
    let (_d, db) = temp_db();
    let (env, flag) = match dir_as {
        "TMPDIR" => (format!("TMPDIR={dir}"), String::new()),
        _ => (String::new(), format!("--temp-dir {dir}")),
    };
    let script = format!(
        "mount -t tmpfs -o {options} none {dir} && {env} {} run --quick {probes} {flag} --json --db {} || exit 1; ls -A {dir}",
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
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stream = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let doc = stream.next().unwrap().unwrap();
    let left = text[stream.byte_offset()..].trim().to_string();
    let rows = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["probe"] != "host")
        .cloned()
        .collect();
    Some((rows, left))
}

/// A temp dir too small for the cached file (a 2 MiB tmpfs): the read says why, and the create
/// and delete still measure there.
#[test]
#[ignore = "needs root to mount a tmpfs (CI runs it as root)"]
fn a_full_temp_dir_is_said_not_measured() {
    let Some((rows, left)) = rows_in_tmpfs("size=2m", "fs", "--temp-dir") else {
        return;
    };
    for m in &rows {
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
    assert!(left.is_empty(), "left in the temp dir: {left}");
}

/// A read-only temp dir: every file probe says so, and none gives a number.
#[test]
#[ignore = "needs root to mount a tmpfs (CI runs it as root)"]
fn a_read_only_temp_dir_is_said_not_measured() {
    let Some((rows, left)) = rows_in_tmpfs("size=64m,ro", "fs", "--temp-dir") else {
        return;
    };
    assert_eq!(rows.len(), 2, "{rows:?}");
    for m in &rows {
        let why = m["reason"].as_str().unwrap_or("");
        assert!(
            m["status"] == "failed" && (why.contains("Read-only") || why.contains("not writable")),
            "{m}"
        );
    }
    assert!(left.is_empty(), "left in the temp dir: {left}");
}

/// A temp dir mounted noexec as TMPDIR: the exec probes say so (their do-nothing program cannot
/// run from there), and leave nothing behind.
#[test]
#[ignore = "needs root to mount a tmpfs (CI runs it as root)"]
fn a_noexec_temp_dir_is_named_as_the_cause() {
    let Some((rows, left)) = rows_in_tmpfs("size=16m,noexec", "task.fork-exec", "TMPDIR") else {
        return;
    };
    assert!(left.is_empty(), "left in the noexec dir: {left}");
    for m in &rows {
        assert!(
            m["status"] == "failed" && m["reason"].as_str().unwrap().contains("noexec"),
            "{m}"
        );
    }
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

/// The reads that go to the device (named only: they evict the page cache) measure it: a 4 KiB
/// read that misses the cache takes at least a microsecond, and one reader among eight sharing
/// the device waits no less than alone (within noise).
#[test]
fn uncached_reads_and_readers_measure_the_device() {
    let (dir, from) = match std::env::var_os("TMPDIR") {
        Some(d) => (std::path::PathBuf::from(d), "TMPDIR"),
        None => ("/var/tmp".into(), "/var/tmp"),
    };
    let rows = rows_under(&[], &["fs.uncached-read", "fs.readers"]).expect("oslab run failed");
    let mine: Vec<&Value> = rows.iter().filter(|m| m["probe"] != "host").collect();
    if mine.iter().any(|m| m["status"] == "skipped") {
        return oslab_testkit::skip(&format!("{from} {} is tmpfs: {mine:?}", dir.display()));
    }
    assert_eq!(mine.len(), 2 + 4, "{mine:?}");
    for m in &mine {
        assert!(m["status"] == "ok" || m["status"] == "noisy", "{m}");
        let ns = median(m);
        assert!((1e3..1e9).contains(&ns), "{m}");
        assert!(m["params"]["method"].is_string(), "{m}");
    }
    let readers = |n: u64| {
        median(
            mine.iter()
                .find(|m| m["params"]["readers"] == n)
                .unwrap_or_else(|| panic!("no {n}-reader row")),
        )
    };
    assert!(
        readers(8) > 0.8 * readers(1),
        "{} vs {}",
        readers(8),
        readers(1)
    );
}

/// A tmpfs has no device beneath its files: the device probes say so instead of measuring the
/// page cache under another name; and a family pattern leaves them out (they run by id alone).
#[test]
fn the_device_probes_refuse_tmpfs_and_run_only_when_named() {
    let (_d, db) = temp_db();
    let json = |args: &[&str]| -> Value {
        let db = db.to_str().unwrap();
        serde_json::from_slice(&common::stdout(&[args, &["--db", db]].concat())).unwrap()
    };
    let planned = json(&["run", "--plan", "--json", "fs"]);
    let ids: Vec<&str> = planned
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["fs.create", "fs.cached-read"]);
    let listed = json(&["list", "--json"]);
    let needs = |id: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["needs"].to_string())
            .unwrap()
    };
    assert!(needs("fs.readers").contains("to be named"), "{listed}");
    let shm = "/dev/shm";
    if !is_tmpfs(shm) {
        return oslab_testkit::skip("no tmpfs at /dev/shm");
    }
    let probes = ["fs.cache-size", "fs.uncached-read", "fs.readers"];
    let rows =
        rows_under(&[], &[&probes[..], &["--temp-dir", shm]].concat()).expect("oslab run failed");
    let rows: Vec<&Value> = rows.iter().filter(|m| m["probe"] != "host").collect();
    for m in &rows {
        assert!(
            m["status"] == "skipped" && m["reason"].as_str().unwrap().contains("is tmpfs"),
            "{m}"
        );
    }
    assert_eq!(rows.len(), probes.len());
}

/// Whether `dir` is a tmpfs mount, from /proc/mounts.
fn is_tmpfs(dir: &str) -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            l.split_whitespace().nth(1) == Some(dir) && l.split_whitespace().nth(2) == Some("tmpfs")
        })
    })
}

/// The file cache's capacity, found where it is small enough to reach in seconds: in a memory
/// cgroup of 256 MiB (v2 or v1), the file's resident bytes beyond the knee agree with what the
/// cgroup's limit leaves beside its anonymous memory, and the re-read falls below the cached one.
#[test]
#[ignore = "needs root to make a memory cgroup (CI runs it as root)"]
fn the_file_cache_capacity_is_found_under_a_memory_cgroup() {
    if !oslab_testkit::require_root("making a memory cgroup") {
        return;
    }
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers");
    let (parent, limit_file) = match std::fs::read_to_string(v2) {
        Ok(c) if c.split_whitespace().any(|w| w == "memory") => ("/sys/fs/cgroup", "memory.max"),
        _ if std::path::Path::new("/sys/fs/cgroup/memory").is_dir() => {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        }
        _ => return oslab_testkit::skip("no memory cgroup controller"),
    };
    let group = std::path::Path::new(parent).join(format!("oslab-test-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap();
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _remove = Remove(group.clone());
    std::fs::write(group.join(limit_file), format!("{}", 256u64 << 20)).unwrap();
    let (_d, db) = temp_db();
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} run --quick --json fs.cache-size --db {}",
        group.display(),
        assert_cmd::cargo::cargo_bin("oslab").display(),
        db.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["measurements"].as_array().unwrap();
    let capacity = rows
        .iter()
        .find(|m| m["metric"] == "capacity")
        .expect("a capacity row");
    assert!(
        capacity["status"] == "ok" || capacity["status"] == "noisy",
        "{capacity}"
    );
    let predicted = capacity["prediction"]["value"].as_f64().unwrap();
    let ratio = median(capacity) / predicted;
    assert!((0.7..=1.1).contains(&ratio), "{ratio}: {capacity}");
    assert!(predicted <= (256u64 << 20) as f64, "{capacity}");
    // The largest file re-read slower than the smallest: part of it came from the device.
    let rates: Vec<f64> = rows
        .iter()
        .filter(|m| m["metric"] == "bandwidth")
        .map(median)
        .collect();
    assert!(rates.len() >= 3, "{rates:?}");
    assert!(rates[rates.len() - 1] < 0.8 * rates[0], "{rates:?}");
}

/// Ctrl-C at a random point among the services (sockets with their peers, signal handlers, the
/// forked readers of uncached files): the run stops as interrupted, no peer or reader process
/// lives on, and nothing is left in the temp dir.
#[test]
fn an_interrupted_service_run_leaves_no_process_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("services-interrupted.db");
    let scratch = tempfile::tempdir_in("/var/tmp").unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"))
        .args([
            "run",
            "--quick",
            "ipc.unix",
            "ipc.tcp",
            "signal",
            "fs.create",
            "fs.readers",
        ])
        .arg("--temp-dir")
        .arg(scratch.path())
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::sleep_until_a_random_moment(
        std::time::Duration::from_millis(300),
        std::time::Duration::from_millis(2500),
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Interrupted (130), or done just before the signal came (0).
    assert!(matches!(out.status.code(), Some(130) | Some(0)), "{err}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = processes_mentioning(&db);
    assert!(left.is_empty(), "left behind: {left:?}");
    let files: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
    assert!(files.is_empty(), "left in the temp dir: {files:?}");
}

/// A local port range used up (4 ports, in a network namespace of the test's own with `lo` up):
/// a TCP probe that cannot connect says the range is the cause, not a missing loopback.
#[test]
fn a_used_up_port_range_is_named_as_the_cause() {
    if !oslab_testkit::require(&["unshare", "ip"]) {
        return;
    }
    let (_d, db) = temp_db();
    let script = format!(
        "ip link set lo up && echo '40000 40003' > /proc/sys/net/ipv4/ip_local_port_range && exec {} run --quick --json ipc.tcp ipc.tcp-connect --db {}",
        assert_cmd::cargo::cargo_bin("oslab").display(),
        db.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-rn", "sh", "-c", &script])
        .output()
        .unwrap();
    if !out.status.success() {
        return oslab_testkit::skip(&format!(
            "needs a network namespace whose port range can be set: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<&Value> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["probe"] != "host")
        .collect();
    assert!(
        rows.iter().any(|m| m["status"] == "skipped"),
        "4 ports were enough for every connection: {rows:?}"
    );
    for m in rows.iter().filter(|m| m["status"] == "skipped") {
        let why = m["reason"].as_str().unwrap();
        assert!(
            why.contains("ip_local_port_range = 40000-40003") && !why.contains("`lo` up"),
            "{m}"
        );
    }
}
