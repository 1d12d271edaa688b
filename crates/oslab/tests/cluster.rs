//! `oslab fleet` on a real Slurm cluster of QEMU guests (`scripts/cluster`): slurmctld on this
//! host, slurmd in each guest, a network that exists only in a namespace the rig made. The sick
//! nodes a site meets, each with the verdict and reason a health check must give: three healthy
//! nodes are each `healthy` and `--fail-on-outlier` passes; a node booted with another
//! clocksource is `drifted` and says so; a node with a busy loop left by an earlier job is
//! `busy` and names it; a node killed mid-run is `crashed` with Slurm's word on it, `--wait`
//! fails, and the other nodes' results stand alone, never mixed with another submission's.

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

    /// `nodes` guests, with the rig's settings `env` (`OSLAB_CLUSTER_CMDLINE_n3`: node 3's
    /// kernel command line).
    fn up(nodes: usize, env: &[(&str, &str)]) -> Cluster {
        let id = std::process::id();
        let c = Cluster {
            dir: PathBuf::from(format!("/tmp/oslab-cluster-test-{id}")),
            ns: format!("oslt{id}"),
        };
        let mut up = c.command(&["up", &nodes.to_string()]);
        up.envs(env.iter().copied());
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

    /// The results directory of `job` (RESULTS/JOB.TOKEN): its summary judges every node
    /// listed for the job, those with no run too.
    fn job_dir(&self, job: &str) -> String {
        std::fs::read_dir(self.shared().join("results"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.is_dir()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{job}.")))
            })
            .unwrap_or_else(|| panic!("no results directory of job {job}"))
            .to_string_lossy()
            .into_owned()
    }

    /// Each node's verdict and why from the summary of `job`'s directory, its text (printed,
    /// for the record), and the exit status of `--fail-on-outlier`.
    fn verdicts(&self, job: &str, db: &str) -> (Vec<(String, String, String)>, i32) {
        let dir = self.job_dir(job);
        let s = self.summary(&dir, db);
        let said = self
            .oslab(&["fleet", "summary", &dir, "--db", db])
            .output()
            .unwrap();
        eprintln!("fleet summary of job {job}:\n{}", text(&said));
        let check = self
            .oslab(&["fleet", "summary", &dir, "--fail-on-outlier", "--db", db])
            .output()
            .unwrap();
        let verdicts = s["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let why: Vec<&str> = v["why"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                (
                    v["node"].as_str().unwrap().to_string(),
                    v["verdict"].as_str().unwrap().to_string(),
                    why.join("; "),
                )
            })
            .collect();
        (verdicts, check.status.code().unwrap_or(-1))
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
    // n3 boots with another clocksource: the later clocksource= on its command line wins.
    let cluster = Cluster::up(4, &[("OSLAB_CLUSTER_CMDLINE_n3", "clocksource=hpet")]);
    std::fs::create_dir_all(cluster.shared().join("bin")).unwrap();
    std::fs::copy(
        assert_cmd::cargo::cargo_bin("oslab"),
        cluster.shared().join("bin/oslab"),
    )
    .unwrap();
    let db = cluster.shared().join("store.db");
    let db_s = db.to_str().unwrap();
    let results = cluster.shared().join("results");

    // A healthy fleet: the job completes, every node is ok and healthy, the check passes.
    let healthy = cluster.submit("n[1-2],n4").output().unwrap();
    let said = text(&healthy);
    assert!(healthy.status.success(), "{said}");
    for n in ["n1", "n2", "n4"] {
        assert_eq!(state(&said, n), "ok", "{said}");
    }
    let job1 = String::from_utf8_lossy(&healthy.stdout).trim().to_string();
    cluster.collect(&results, db_s);
    let (verdicts, check) = cluster.verdicts(&job1, db_s);
    for (node, verdict, why) in &verdicts {
        assert_eq!(verdict, "healthy", "{node}: {why}");
    }
    assert_eq!(verdicts.len(), 3, "{verdicts:?}");
    assert_eq!(check, 0, "--fail-on-outlier on a healthy fleet");
    // Its three healthy nodes kept as the partition's reference, for `oslab check` below.
    let saved = cluster
        .oslab(&[
            "fleet",
            "reference",
            "save",
            &job1,
            "--name",
            "batch",
            "--db",
            db_s,
        ])
        .output()
        .unwrap();
    assert!(
        text(&saved).contains("reference batch: 3 healthy nodes of job"),
        "{}",
        text(&saved)
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

    // A busy loop left on n4 by a job (it escaped the step's process group), and n3's other
    // clocksource among four nodes: each is named with its cause, the others are healthy, the
    // check fails and the drain lines name the two.
    let left = cluster.command(&["runaway", "4"]).output().unwrap();
    assert!(left.status.success(), "{}", text(&left));
    let sick = cluster.submit("n[1-4]").output().unwrap();
    assert!(sick.status.success(), "{}", text(&sick));
    let job4 = String::from_utf8_lossy(&sick.stdout).trim().to_string();
    cluster.collect(&results, db_s);
    let (verdicts, check) = cluster.verdicts(&job4, db_s);
    let of = |node: &str| {
        verdicts
            .iter()
            .find(|v| v.0 == node)
            .unwrap_or_else(|| panic!("no verdict for {node}: {verdicts:?}"))
            .clone()
    };
    let (_, v, why) = of("n3");
    assert_eq!(v, "drifted", "n3: {why}");
    assert!(
        why.starts_with("clocksource hpet (3 others: tsc)"),
        "n3: {why}"
    );
    let (_, v, why) = of("n4");
    assert_eq!(v, "busy", "n4: {why}");
    assert!(why.contains("runaway (pid "), "n4: {why}");
    for n in ["n1", "n2"] {
        let (_, v, why) = of(n);
        assert_eq!(v, "healthy", "{n}: {why}");
    }
    assert_eq!(check, 1, "--fail-on-outlier with a drifted and a busy node");
    let drain = cluster
        .oslab(&[
            "fleet",
            "summary",
            &cluster.job_dir(&job4),
            "--drain",
            "--db",
            db_s,
        ])
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&drain.stdout).into_owned();
    let drained: Vec<&str> = lines
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.strip_prefix("NodeName="))
        .collect();
    assert_eq!(drained, ["n3", "n4"], "{lines}");
    // Each node alone against the saved reference (three at once, as the reference's job ran
    // them: on this host the guests share two cpus): n3's clocksource and n4's runaway are
    // named, each in one line; n1, set up as the reference's nodes, is neither.
    let bin = cluster.shared().join("bin/oslab");
    let checked = cluster
        .command(&[
            "exec",
            "srun",
            "--exclusive",
            "-N3",
            "-w",
            "n1,n3,n4",
            "-l",
            bin.to_str().unwrap(),
            "check",
            "--reference",
            "batch",
            "--db",
            db_s,
        ])
        .current_dir(cluster.shared())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&checked.stdout).into_owned();
    eprintln!("oslab check on n1, n3, n4:\n{}", text(&checked));
    let line = |node: &str| {
        said.lines()
            .find_map(|l| {
                l.split_once(": ")
                    .map(|(_, rest)| rest)
                    .filter(|r| r.starts_with(&format!("{node}: ")))
            })
            .unwrap_or_else(|| panic!("no line for {node}: {}", text(&checked)))
            .to_string()
    };
    assert!(
        line("n3")
            .starts_with("n3: drifted against reference batch: clocksource hpet (3 others: tsc)"),
        "{said}"
    );
    assert!(
        line("n4").starts_with("n4: busy against reference batch"),
        "{said}"
    );
    let n1 = line("n1");
    assert!(
        n1.starts_with("n1: healthy") || n1.starts_with("n1: outlier"),
        "{said}"
    );
    assert_eq!(checked.status.code(), Some(1), "{said}");
    // Judged against the healthy job as well (its three nodes as references), the verdicts hold.
    let out = cluster
        .oslab(&[
            "fleet",
            "summary",
            &job4,
            "--baseline",
            &job1,
            "--json",
            "--db",
            db_s,
        ])
        .output()
        .unwrap();
    let s: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let n = |node: &str| {
        s["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["node"] == node)
            .map(|v| v["verdict"].clone())
    };
    assert_eq!(s["references"].as_array().map(Vec::len), Some(3), "{s}");
    assert_eq!(
        (n("n1"), n("n2")),
        (Some("healthy".into()), Some("healthy".into())),
        "{s}"
    );
    assert_eq!(
        (n("n3"), n("n4")),
        (Some("drifted".into()), Some("busy".into())),
        "{s}"
    );

    // A node lost mid-run: reported crashed, --wait fails, the others hand in.
    let lost = cluster
        .submit("n[1-3]")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Lost mid-run: killed once its task has started measuring (the task's first act is its
    // `node-n2.started` mark in the job's directory). Killed a fixed 5 s after the job began,
    // on a busy host n2 was lost before its task launched, which reads `not run`.
    let before: Vec<_> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let t = Instant::now();
    let started = || {
        std::fs::read_dir(&results)
            .unwrap()
            .flatten()
            .filter(|e| !before.contains(&e.file_name()) && e.path().is_dir())
            .any(|e| e.path().join("node-n2.started").exists())
    };
    while !started() {
        assert!(
            t.elapsed() < Duration::from_secs(180),
            "the third job's task on n2 did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
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
    let (verdicts, check) = cluster.verdicts(&job2, db_s);
    let n2 = verdicts.iter().find(|v| v.0 == "n2").unwrap();
    assert_eq!(n2.1, "crashed", "{verdicts:?}");
    assert!(n2.2.contains("Slurm"), "n2: {}", n2.2);
    assert_eq!(check, 1, "--fail-on-outlier with a crashed node");
    // Each job's runs are its own nodes' only.
    for (job, nodes) in [
        (&job1, serde_json::json!(["n1", "n2", "n4"])),
        (&job4, serde_json::json!(["n1", "n2", "n3", "n4"])),
        (&job2, serde_json::json!(["n1", "n3"])),
    ] {
        let s = cluster.summary(job, db_s);
        assert_eq!(s["nodes"], nodes, "job {job}: {s}");
    }
}
