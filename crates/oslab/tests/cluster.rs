//! `oslab fleet` on a real Slurm cluster of QEMU guests (`scripts/cluster`): slurmctld on this
//! host, slurmd in each guest, a network that exists only in a namespace the rig made. Three
//! healthy nodes have no outlier node; a fourth 20% slower is the one outlier among four; a node
//! killed mid-run is reported crashed, `--wait` fails, and the other nodes'
//! results stand alone, never mixed with another submission's.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A cluster brought up by `scripts/cluster`, brought down on drop.
struct Cluster {
    dir: PathBuf,
    ns: String,
}

impl Cluster {
    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(Self::script());
        c.args(args)
            .env("OSLAB_CLUSTER_DIR", &self.dir)
            .env("OSLAB_CLUSTER_NS", &self.ns);
        c
    }

    /// `nodes` guests, those of `slower` slower by a factor as they measure themselves.
    fn up(nodes: usize, slower: &[(usize, f64)]) -> Cluster {
        let id = std::process::id();
        let c = Cluster {
            dir: PathBuf::from(format!("/tmp/oslab-cluster-test-{id}")),
            ns: format!("oslt{id}"),
        };
        let mut up = c.command(&["up", &nodes.to_string()]);
        for (i, factor) in slower {
            up.env(format!("OSLAB_CLUSTER_SLOWER_n{i}"), factor.to_string());
        }
        let out = up.stdin(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "scripts/cluster up: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        c
    }

    fn shared(&self) -> PathBuf {
        self.dir.join("shared")
    }

    /// `oslab ARGS` inside the cluster's namespace, run from the shared directory as a user of
    /// a real cluster would: the binary installed where every node sees it.
    fn oslab(&self, args: &[&str]) -> Command {
        let bin = self.shared().join("bin/oslab");
        let mut full = vec!["exec", bin.to_str().unwrap()];
        full.extend_from_slice(args);
        let mut c = self.command(&full);
        c.current_dir(self.shared());
        c
    }

    fn submit(&self, nodes: &str) -> Command {
        let results = self.shared().join("results");
        self.oslab(&[
            "fleet",
            "submit",
            "--nodes",
            nodes,
            "--wait",
            "--time",
            "15:00",
            "--results",
            results.to_str().unwrap(),
            "--",
            "--quick",
            "syscall.*",
            "loop.*",
            "call.*",
            "task.*",
        ])
    }
}

impl Cluster {
    /// `oslab fleet collect DIR` into `db`, which must succeed; what it said.
    fn collect(&self, dir: &std::path::Path, db: &str) -> String {
        let out = self
            .oslab(&["fleet", "collect", dir.to_str().unwrap(), "--db", db])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        text(&out)
    }

    /// `oslab fleet summary JOB --json` of `db`.
    fn summary(&self, job: &str, db: &str) -> Value {
        let out = self
            .oslab(&["fleet", "summary", job, "--json", "--db", db])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.command(&["down"]).output();
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The state `--wait` or collect gave `node`.
fn state<'a>(said: &'a str, node: &str) -> &'a str {
    said.lines()
        .find(|l| l.split_whitespace().next() == Some(node))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("no state for {node}:\n{said}"))
}

#[test]
#[ignore = "needs root, qemu-system-x86, a kernel in /boot, busybox-static, slurm-wlm and munge (scripts/test installs them)"]
fn a_fleet_on_a_cluster_of_guests() {
    if !oslab_testkit::require_root("to make a network namespace and start slurmctld")
        || !oslab_testkit::require(&[
            "qemu-system-x86_64",
            "busybox",
            "cpio",
            "slurmctld",
            "slurmd",
            "munged",
            "sbatch",
            "ip",
        ])
    {
        return;
    }
    let _turn = oslab_testkit::machine_lock("vm-guest");
    if let Some(why) = oslab_testkit::crowded(3.0) {
        oslab_testkit::skip(&why);
        return;
    }
    let cluster = Cluster::up(4, &[(4, 1.2)]);
    std::fs::create_dir_all(cluster.shared().join("bin")).unwrap();
    std::fs::copy(
        assert_cmd::cargo::cargo_bin("oslab"),
        cluster.shared().join("bin/oslab"),
    )
    .unwrap();
    let db = cluster.shared().join("store.db");
    let db_s = db.to_str().unwrap();

    // A healthy fleet: the job completes, every node is ok, no node is an outlier.
    let healthy = cluster.submit("n[1-3]").output().unwrap();
    let said = text(&healthy);
    assert!(healthy.status.success(), "{said}");
    for n in ["n1", "n2", "n3"] {
        assert_eq!(state(&said, n), "ok", "{said}");
    }
    let job1 = String::from_utf8_lossy(&healthy.stdout).trim().to_string();
    let results = cluster.shared().join("results");
    cluster.collect(&results, db_s);
    let s = cluster.summary(&job1, db_s);
    assert_eq!(s["nodes"], serde_json::json!(["n1", "n2", "n3"]), "{s}");
    let shifted: Vec<&Value> = s["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| {
            !v["shifts"].as_array().unwrap().is_empty()
                || v["outliers"].as_f64().unwrap() >= 0.25 * v["measured"].as_f64().unwrap()
        })
        .collect();
    assert!(
        shifted.is_empty(),
        "healthy nodes called outliers: {shifted:?}"
    );
    // A step bound as asked (srun --cpu-bind, the rig's slurmd with task/affinity): each node's
    // run records the cpuset it got.
    let bound = cluster
        .oslab(&[
            "fleet",
            "submit",
            "--nodes",
            "n[1-2]",
            "--cpu-bind",
            "map_cpu:1",
            "--wait",
            "--time",
            "5:00",
            "--results",
            cluster.shared().join("bound").to_str().unwrap(),
            "--json",
            "--",
            "--quick",
            "loop.*",
        ])
        .output()
        .unwrap();
    assert!(bound.status.success(), "{}", text(&bound));
    let dir = std::fs::read_dir(cluster.shared().join("bound"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    for n in ["n1", "n2"] {
        let doc: Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("node-{n}.json"))).unwrap())
                .unwrap();
        assert_eq!(
            doc["run"]["environment"]["limits"]["cpuset"], "cpus 1 of 0-1",
            "{n}: {}",
            doc["run"]["environment"]
        );
    }

    // n4 is 20% slower as it measures itself (its clock runs 1.2x fast): among the healthy
    // nodes it stands apart, and no healthy node is called; it is the one outlier node in most
    // jobs where the healthy nodes' own spread leaves a 20% shift visible (their typical cell
    // within 5% of the median). A shared host can move
    // a whole guest for a whole job (a healthy one read -10% across its probes in one job of
    // four, its process-creation rows swinging ±100%): then n4 must still stand apart.
    let four = cluster.submit("n[1-4]").output().unwrap();
    assert!(four.status.success(), "{}", text(&four));
    let job4 = String::from_utf8_lossy(&four.stdout).trim().to_string();
    cluster.collect(&results, db_s);
    let s = cluster.summary(&job4, db_s);
    let healthy = |i: usize| s["nodes"][i] != "n4";
    // A node's deviations from the fleet median, row by row, and the middle of some values.
    let deviations = |node: usize| -> Vec<f64> {
        s["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["cells"][node]["deviation"].as_f64())
            .collect()
    };
    let middle = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let typical = middle(
        (0..4)
            .filter(|i| healthy(*i))
            .flat_map(deviations)
            .map(f64::abs)
            .collect(),
    )
    .unwrap_or(1.0);
    // Whether n4 is also called an outlier node is the rule's power, not a certainty: on this
    // rig it was called in 3 jobs of 4 (an uncalled job had 9 of 41 values apart, under the
    // quarter the rule asks, and no family one way beyond the level). Apart it must be wherever
    // the healthy nodes' noise lets a 20% shift show: beside other work, with 3 healthy nodes
    // at ±2%, a +17% row read z 2.5-2.9 against the 3.6 the fleet's many values ask (beside
    // stress-ng --cpu 2). n4 must then still read the largest typical deviation by far, and
    // is recorded as not apart with its figures.
    let typical_of = |node: usize| middle(deviations(node)).unwrap_or(0.0);
    let mut uncalled = None;
    let mut hidden = None;
    for (i, v) in s["verdicts"].as_array().unwrap().iter().enumerate() {
        let apart =
            v["outliers"].as_u64().unwrap() > 0 || !v["shifts"].as_array().unwrap().is_empty();
        let called = !v["shifts"].as_array().unwrap().is_empty()
            || v["outliers"].as_f64().unwrap() >= 0.25 * v["measured"].as_f64().unwrap();
        match v["node"].as_str().unwrap() {
            "n4" if !apart => {
                let own = typical_of(i);
                let most = (0..4)
                    .filter(|j| healthy(*j))
                    .map(|j| typical_of(j).abs())
                    .fold(0.0, f64::max);
                // Where a healthy node itself reads 5% or more off the median typically (a
                // busy host once moved one by 9.2%, and n4 read +10.0%), a 20% shift can hide
                // in that noise: recorded with its figures below, never failed for the load.
                if most < 0.05 {
                    assert!(
                        own > 0.10 && own > 2.0 * most,
                        "n4 neither apart nor the slowest by far ({own:+.3} against {most:.3}): {s}"
                    );
                }
                hidden = Some(format!(
                    "n4 read {:+.0}% typically, the healthy nodes within {:.0}%",
                    own * 100.0,
                    most * 100.0
                ));
            }
            "n4" if !called => {
                uncalled = Some(format!("{} of {} values", v["outliers"], v["measured"]));
            }
            "n4" => {}
            healthy => assert!(!called, "{healthy} called an outlier: {s}"),
        }
    }
    if let Some(figures) = hidden {
        oslab_testkit::skip(&format!(
            "the 20% node stood apart by its values ({figures}) but not beyond the healthy nodes' noise in this job (load beside the guests); no healthy node was called"
        ));
    } else if typical > 0.05 {
        oslab_testkit::skip(&format!(
            "calling the 20% node: the healthy fleet's typical cell is {:.0}% from its median, too noisy to find 20% in (it was required apart only)",
            typical * 100.0
        ));
    } else if let Some(apart) = uncalled {
        oslab_testkit::skip(&format!(
            "calling the 20% node: it stood apart ({apart}) but was not called an outlier node in this job (the rule finds it in about 3 jobs of 4 here); no healthy node was called"
        ));
    }

    // A node lost mid-run: reported crashed, --wait fails, the others hand in.
    let lost = cluster
        .submit("n[1-3]")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The job has started once its directory exists (the job's first act); a few seconds
    // later every node is measuring.
    let before: Vec<_> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let t = Instant::now();
    while std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .all(|e| before.contains(&e.file_name()) || !e.path().is_dir())
    {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the second job did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(5));
    let killed = cluster.command(&["kill", "2"]).output().unwrap();
    assert!(killed.status.success(), "{}", text(&killed));
    let out = lost.wait_with_output().unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(state(&said, "n2"), "crashed", "{said}");
    assert_eq!(state(&said, "n1"), "ok", "{said}");
    assert_eq!(state(&said, "n3"), "ok", "{said}");
    let job2 = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let said = cluster.collect(&results, db_s);
    let of_job2 = &said[said
        .find(&format!("job {job2}."))
        .unwrap_or_else(|| panic!("{said}"))..];
    assert_eq!(state(of_job2, "n2"), "crashed", "{said}");
    // Each job's summary holds its own nodes only.
    for (job, nodes) in [
        (&job1, serde_json::json!(["n1", "n2", "n3"])),
        (&job2, serde_json::json!(["n1", "n3"])),
    ] {
        let s = cluster.summary(job, db_s);
        assert_eq!(s["nodes"], nodes, "job {job}: {s}");
    }
}
