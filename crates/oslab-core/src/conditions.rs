//! Conditions: what a difference between runs is attributed to (DESIGN.md, Conditions). The
//! machine's configuration that changes what things cost, read from a run's stored fingerprint
//! and environment (so a run stored before a setting was recorded reads it as unknown, never as
//! a change), and what moved between two sets of runs. compare says it before its verdicts: a
//! user who switched THP off reads `THP always -> never` first, not seven unrelated rows.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// One setting of a run's configuration: its name as a person reads it, and its value.
pub type Setting = (String, String);

/// A setting whose values differ between two sets of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    /// The setting (`THP`, `clocksource`, `mitigation spectre_v2`).
    pub name: String,
    /// Its values on side A (more than one when A's runs differ).
    pub a: Vec<String>,
    /// Its values on side B.
    pub b: Vec<String>,
}

impl std::fmt::Display for Moved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |v: &[String]| match v {
            [] => "unknown".to_string(),
            v => v.join(" or "),
        };
        write!(f, "{} {} -> {}", self.name, side(&self.a), side(&self.b))
    }
}

/// The settings of one run that change costs, from its stored fingerprint and environment:
/// only those the run recorded (an older run lacks some).
pub fn configuration(fingerprint: &Value, environment: &Value) -> Vec<Setting> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "on" } else { "off" }.to_string()),
        Value::Array(a) if a.iter().all(Value::is_string) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    };
    let mut out = Vec::new();
    let mut from = |name: &str, v: &Value| {
        if let Some(t) = text(v) {
            out.push((name.to_string(), t));
        }
    };
    for (name, key) in [
        ("host", "hostname"),
        ("cpu", "cpu_model"),
        ("microcode", "microcode"),
        ("cpus", "threads"),
        ("kernel", "kernel"),
        (COMMAND_LINE, "cmdline"),
        ("clocksource", "clocksource"),
        ("timer tick (Hz)", "tick_hz"),
        ("governor", "governor"),
        ("turbo", "turbo"),
        ("SMT", "smt"),
        ("hypervisor", "hypervisor"),
        ("THP", "thp"),
        ("THP defrag", "thp_defrag"),
        ("seccomp mode", "seccomp"),
        ("syscall audit", "audit"),
    ] {
        from(name, &fingerprint[key]);
    }
    from("NUMA balancing", &environment["numa_balancing"]);
    // A limit's absence is a value: a run that recorded the field without one (null, or no
    // isolated cpus) had none, so none -> some is a move; a run without the field (an older
    // oslab) is unknown, never a change.
    for (name, parent, key, none) in [
        ("isolated cpus", environment, "isolation", "none"),
        (
            "cpuset",
            &environment["limits"],
            "cpuset",
            "all cpus and nodes",
        ),
        ("cpu quota", &environment["limits"], "cpu_quota", "none"),
    ] {
        match parent.get(key) {
            None => {}
            Some(Value::Null) => from(name, &Value::String(none.into())),
            Some(Value::Array(a)) if a.is_empty() => from(name, &Value::String(none.into())),
            Some(v) => from(name, v),
        }
    }
    // Memory to the GiB (the quarter GiB under 4): what the kernel keeps for itself moves
    // MemTotal by megabytes between boots of one machine; a node with four times the others'
    // is a different machine.
    if let Some(bytes) = fingerprint["memory"].as_u64() {
        out.push(("memory".to_string(), memory(bytes)));
    }
    // The command line without what names this machine's disk and image: nodes of one fleet
    // boot from their own, and a root= is no configuration that changes a cost.
    if let Some(line) = out.iter_mut().find(|(n, _)| n == COMMAND_LINE) {
        line.1 = line
            .1
            .split_whitespace()
            .filter(|t| !PER_MACHINE_BOOT.iter().any(|p| t.starts_with(p)))
            .collect::<Vec<_>>()
            .join(" ");
    }
    // How the run was scheduled: autogroup, timer migration, its nice and class.
    if let Some(ss) = fingerprint["scheduler"].as_array() {
        for pair in ss {
            if let (Some(k), Some(v)) = (pair[0].as_str(), pair[1].as_str()) {
                out.push((format!("scheduler {k}"), v.to_string()));
            }
        }
    }
    // Each mitigation on its own: one switched off is named, not a list that differs.
    if let Some(ms) = fingerprint["mitigations"].as_array() {
        for m in ms {
            if let (Some(k), Some(v)) = (m[0].as_str(), m[1].as_str()) {
                out.push((format!("mitigation {k}"), v.to_string()));
            }
        }
    }
    out
}

/// Memory as a setting: whole GiB, or quarters under 4 GiB (a 512 MiB guest's 455 MiB reads
/// `0.5 GiB`, not `0 GiB`).
fn memory(bytes: u64) -> String {
    let gib = bytes as f64 / f64::from(1u32 << 30);
    match gib < 4.0 {
        true => format!("{} GiB", (gib * 4.0).round().max(1.0) / 4.0),
        false => format!("{:.0} GiB", gib),
    }
}

/// Other work as a run began, as a condition: `none` under a third of a cpu, else the whole
/// cpus it took and the commands that took a third or more (`2 cpus: stress-ng-cpu`), so that
/// two runs beside one load read alike. None when the run did not record it.
pub fn other_work(environment: &Value) -> Option<Setting> {
    let o: crate::machine::OtherWork =
        serde_json::from_value(environment.get("other_work")?.clone()).ok()?;
    let value = match o.cpus < crate::machine::OtherWork::COMPETES {
        true => "none".to_string(),
        false => {
            let mut names: Vec<&str> = o
                .busiest
                .iter()
                .filter(|p| p.cpus >= crate::machine::OtherWork::COMPETES)
                .map(|p| p.command.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            let cpus = crate::units::counted(o.cpus.round().max(1.0) as usize, "cpu");
            match names.is_empty() {
                true => cpus,
                false => format!("{cpus}: {}", names.join(", ")),
            }
        }
    };
    Some(("other work at the start".to_string(), value))
}

/// How far apart, in cpus, the other work beside two sides' repetitions lies before the load
/// counts as moved: half a cpu. Quiet repetitions read 0-0.3; one cpu hog beside a one-thread
/// probe on 2 cpus about 1, two hogs about 2.3 ([`crate::model::OTHER_WORK`]).
pub const LOAD_APART: f64 = 0.5;

/// The other work beside a run's measurements as it measured them, as a condition: the median
/// of what they recorded ([`crate::model::OTHER_WORK`]), `none` under [`LOAD_APART`],
/// else in whole cpus (`1 cpu` beside one hog, `2 cpus` beside two on a 2-cpu guest, where the
/// load at the start reads 2 cpus either way). None when the run recorded none.
pub fn other_work_measuring(measurements: &[crate::model::Measurement]) -> Option<Setting> {
    let seen: Vec<f64> = measurements
        .iter()
        .filter_map(crate::model::Measurement::other_work)
        .collect();
    let cpus = crate::stats::median(&seen)?;
    let value = match cpus < LOAD_APART {
        true => "none".to_string(),
        false => crate::units::counted(cpus.round().max(1.0) as usize, "cpu"),
    };
    Some(("other work while measuring".to_string(), value))
}

/// Boot parameters that name a machine's own disk and image (left out of its command line).
const PER_MACHINE_BOOT: [&str; 4] = ["BOOT_IMAGE=", "root=", "initrd=", "resume="];

/// What a measurement found it got that changes its cost, by the key it records it under: the
/// pages the kernel gave (`thp 100%`, `4k`), where its memory was placed, the disk behind a file.
pub const GOT: [&str; 3] = ["pages", "placed", "device_class"];

/// The conditions `m` records it got ([`GOT`]).
pub fn got(m: &crate::model::Measurement) -> Vec<Setting> {
    GOT.iter()
        .filter_map(|k| {
            let v = m.context.get(*k)?;
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            Some((k.to_string(), text))
        })
        .collect()
}

/// The settings whose values differ between the runs of side A and those of side B, each
/// side's runs given by their configurations. A setting a side's runs did not record is not a
/// difference (an older oslab did not read it); one whose runs differ within a side is said
/// with all its values.
pub fn diff(a: &[Vec<Setting>], b: &[Vec<Setting>]) -> Vec<Moved> {
    let values = |side: &[Vec<Setting>], name: &str| -> BTreeSet<String> {
        side.iter()
            .flat_map(|run| run.iter().filter(|(n, _)| n == name))
            .map(|(_, v)| v.clone())
            .collect()
    };
    let mut names: Vec<&str> = Vec::new();
    for (n, _) in a.iter().chain(b).flatten() {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let (va, vb) = (values(a, name), values(b, name));
            (!va.is_empty() && !vb.is_empty() && va != vb).then(|| Moved {
                name: name.to_string(),
                a: va.into_iter().collect(),
                b: vb.into_iter().collect(),
            })
        })
        .collect()
}

/// A setting in which one machine differs from most of the others (fleet drift: a node booted
/// with another clocksource, a kernel left behind).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Odd {
    /// The machine (a node's name).
    pub machine: String,
    /// The setting.
    pub name: String,
    /// Its value there.
    pub value: String,
    /// The value most machines have.
    pub usual: String,
    /// How many machines have it.
    pub others: usize,
}

impl std::fmt::Display for Odd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({} other{}: {})",
            self.name,
            self.value,
            self.others,
            if self.others == 1 { "" } else { "s" },
            self.usual
        )
    }
}

/// Settings that name the machine rather than configure it: they differ on every node.
const OWN: [&str; 1] = ["host"];

/// The setting a kernel command line is compared under across machines.
const COMMAND_LINE: &str = "kernel command line";

/// Each machine's kernel command line as one setting per word (`boot nosmt on`, `boot
/// transparent_hugepage never`, `absent` where another machine has the word and this one not),
/// for machines that recorded it: a word every node sets its own way (`ip=`, `BOOTIF=`,
/// `hostname=`) has no majority and names no one, while `nosmt` on one node still does (as one
/// whole line, any per-node word made every line differ and the check said nothing).
fn boot_words(machines: &[(String, Vec<Setting>)]) -> Vec<(String, Vec<Setting>)> {
    let words = |line: &str| -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for w in line.split_whitespace() {
            let (k, v) = w.split_once('=').unwrap_or((w, "on"));
            match out.iter_mut().find(|(key, _)| key == k) {
                Some((_, value)) => *value = format!("{value} {v}"),
                None => out.push((k.to_string(), v.to_string())),
            }
        }
        out
    };
    let line = |s: &[Setting]| {
        s.iter()
            .find(|(n, _)| n == COMMAND_LINE)
            .map(|(_, v)| words(v))
    };
    let mut keys: Vec<String> = Vec::new();
    for (k, _) in machines.iter().filter_map(|(_, s)| line(s)).flatten() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    machines
        .iter()
        .map(|(m, settings)| {
            let mut out: Vec<Setting> = settings
                .iter()
                .filter(|(n, _)| n != COMMAND_LINE)
                .cloned()
                .collect();
            if let Some(mine) = line(settings) {
                out.extend(keys.iter().map(|k| {
                    let v = mine.iter().find(|(key, _)| key == k);
                    (
                        format!("boot {k}"),
                        v.map_or("absent".into(), |v| v.1.clone()),
                    )
                }));
            }
            (m.clone(), out)
        })
        .collect()
}

/// The settings no majority of machines shares a value of, where some do share one (two
/// kernels, two nodes each): there is no usual value to judge a machine's against. A setting
/// every machine sets its own way (a boot word naming the node) is no such split.
pub fn split_settings(machines: &[(String, Vec<Setting>)]) -> Vec<String> {
    let machines = &boot_words(machines);
    let mut counts: std::collections::BTreeMap<&str, std::collections::BTreeMap<&str, usize>> =
        Default::default();
    for (n, v) in machines.iter().flat_map(|(_, s)| s) {
        if !OWN.contains(&n.as_str()) {
            *counts.entry(n).or_default().entry(v).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(_, values)| {
            let seen: usize = values.values().sum();
            let most = values.values().copied().max().unwrap_or(0);
            2 * most <= seen && values.len() < seen
        })
        .map(|(n, _)| n.to_string())
        .collect()
}

/// Where machines differ from the majority of those that recorded a setting: each machine whose
/// value is not the value more than half of them share. A setting with no such majority (two
/// kernels, two nodes each) names no one: there is no usual value to drift from.
pub fn odd_ones(machines: &[(String, Vec<Setting>)]) -> Vec<Odd> {
    let machines = &boot_words(machines);
    let mut names: Vec<&str> = Vec::new();
    for (n, _) in machines.iter().flat_map(|(_, s)| s) {
        if !names.contains(&n.as_str()) && !OWN.contains(&n.as_str()) {
            names.push(n);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let values: Vec<(&str, &str)> = machines
            .iter()
            .filter_map(|(m, s)| {
                let v = s.iter().find(|(n, _)| n == name)?;
                Some((m.as_str(), v.1.as_str()))
            })
            .collect();
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for (_, v) in &values {
            *counts.entry(v).or_default() += 1;
        }
        let Some((usual, n)) = counts.into_iter().max_by_key(|(_, n)| *n) else {
            continue;
        };
        if 2 * n <= values.len() {
            continue;
        }
        out.extend(
            values
                .iter()
                .filter(|(_, v)| *v != usual)
                .map(|(m, v)| Odd {
                    machine: m.to_string(),
                    name: name.to_string(),
                    value: v.to_string(),
                    usual: usual.to_string(),
                    others: n,
                }),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(thp: &str, mitigation: &str) -> Vec<Setting> {
        configuration(
            &json!({"hostname": "n1", "kernel": "6.18", "thp": thp, "threads": 2,
                    "mitigations": [["spectre_v2", mitigation], ["mds", "Not affected"]]}),
            &json!({"numa_balancing": "0", "isolation": [], "limits": {"cpuset": null}}),
        )
    }

    #[test]
    fn what_moved_is_named_and_nothing_else() {
        let a = [run("always", "Mitigation: Retpolines")];
        let b = [run("never", "Mitigation: Retpolines")];
        let moved = diff(&a, &b);
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert_eq!(moved[0].to_string(), "THP always -> never");
        // A mitigation switched off is named alone.
        let c = [run("always", "Vulnerable")];
        let moved = diff(&a, &c);
        assert_eq!(
            moved[0].to_string(),
            "mitigation spectre_v2 Mitigation: Retpolines -> Vulnerable"
        );
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn other_work_reads_alike_for_one_load_and_none_below_a_third_of_a_cpu() {
        let env = |cpus: f64, top: f64| {
            json!({"other_work": {"window_s": 0.2, "cpus": cpus, "busiest": [
                {"pid": 7, "command": "stress-ng-cpu", "cpus": top},
                {"pid": 8, "command": "kworker", "cpus": 0.1}]}})
        };
        let of = |e: &Value| other_work(e).unwrap().1;
        assert_eq!(of(&env(1.96, 0.95)), "2 cpus: stress-ng-cpu");
        assert_eq!(of(&env(2.1, 1.0)), of(&env(1.96, 0.95)));
        assert_eq!(of(&env(0.2, 0.15)), "none");
        assert_eq!(other_work(&json!({})), None);
    }

    #[test]
    fn memory_reads_in_quarters_under_4_gib_and_whole_gib_above() {
        let gib = 1u64 << 30;
        assert_eq!(memory(455 << 20), "0.5 GiB");
        assert_eq!(memory(20 << 20), "0.25 GiB");
        assert_eq!(memory(gib - (60 << 20)), "1 GiB");
        assert_eq!(memory(24 * gib - (300 << 20)), "24 GiB");
    }

    #[test]
    fn a_machine_unlike_most_is_named_with_its_setting_and_the_usual_one() {
        let node = |name: &str, clock: &str| {
            let mut s = run("always", "x");
            s.push(("clocksource".into(), clock.into()));
            (name.to_string(), s)
        };
        let fleet = [
            node("n1", "tsc"),
            node("n2", "tsc"),
            node("n3", "hpet"),
            node("n4", "tsc"),
        ];
        let odd = odd_ones(&fleet);
        assert_eq!(odd.len(), 1, "{odd:?}");
        assert_eq!(odd[0].machine, "n3");
        assert_eq!(odd[0].to_string(), "clocksource hpet (3 others: tsc)");
        // Two against two: no usual value, no one drifted; host names never drift.
        assert!(odd_ones(&[node("a", "tsc"), node("b", "hpet")]).is_empty());
        // A command line is compared word by word: per-node words name no one, `nosmt` on one
        // node does.
        let booted = |name: &str, n: usize, extra: &str| {
            (
                name.to_string(),
                vec![(
                    COMMAND_LINE.to_string(),
                    format!("quiet ip=10.0.0.{n}::eth0 BOOTIF=01-52-54-00-00-0{n} {extra}"),
                )],
            )
        };
        let nodes = [
            booted("n1", 1, ""),
            booted("n2", 2, ""),
            booted("n3", 3, "nosmt transparent_hugepage=never"),
        ];
        let odd: Vec<String> = odd_ones(&nodes).iter().map(|o| o.to_string()).collect();
        assert_eq!(
            odd,
            [
                "boot nosmt on (2 others: absent)",
                "boot transparent_hugepage never (2 others: absent)"
            ]
        );
        let halves = [
            fleet[0].clone(),
            fleet[2].clone(),
            node("n5", "hpet"),
            fleet[1].clone(),
        ];
        assert!(odd_ones(&halves).is_empty());
    }

    #[test]
    fn how_a_run_was_scheduled_is_a_condition() {
        let run = |autogroup: &str, nice: &str| {
            configuration(
                &json!({"scheduler": [["autogroup", autogroup], ["nice", nice], ["class", "other"]]}),
                &json!({}),
            )
        };
        let moved = diff(&[run("on", "0")], &[run("off", "0")]);
        assert_eq!(moved[0].to_string(), "scheduler autogroup on -> off");
        let moved = diff(&[run("on", "0")], &[run("on", "10")]);
        assert_eq!(moved[0].to_string(), "scheduler nice 0 -> 10");
    }

    #[test]
    fn a_limit_from_none_to_some_is_a_move() {
        let with = |limits: Value, isolation: Value| {
            configuration(
                &json!({"kernel": "6.18"}),
                &json!({"isolation": isolation, "limits": limits}),
            )
        };
        let free = [with(json!({"cpuset": null, "cpu_quota": null}), json!([]))];
        let quota = [with(json!({"cpuset": null, "cpu_quota": 0.5}), json!([]))];
        let pinned = [with(
            json!({"cpuset": "cpus 0 of 0-1", "cpu_quota": null}),
            json!([]),
        )];
        let isolated = [with(
            json!({"cpuset": null, "cpu_quota": null}),
            json!(["1"]),
        )];
        let said = |a: &[Vec<Setting>], b: &[Vec<Setting>]| {
            diff(a, b).iter().map(|m| m.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(said(&free, &quota), ["cpu quota none -> 0.5"]);
        assert_eq!(
            said(&free, &pinned),
            ["cpuset all cpus and nodes -> cpus 0 of 0-1"]
        );
        assert_eq!(said(&free, &isolated), ["isolated cpus none -> 1"]);
        assert!(said(&free, &free).is_empty());
        // A run from before the limits were recorded: unknown, not a move.
        let old = [configuration(&json!({"kernel": "6.18"}), &json!({}))];
        assert!(said(&old, &quota).is_empty());
    }

    #[test]
    fn a_setting_an_older_run_did_not_record_is_no_difference_and_a_mixed_side_says_so() {
        let old = [configuration(&json!({"kernel": "6.18"}), &json!({}))];
        let new = [run("never", "x")];
        assert!(diff(&old, &new).iter().all(|m| m.name != "THP"));
        let mixed = [run("always", "x"), run("never", "x")];
        let moved = diff(&mixed, &new);
        assert_eq!(moved[0].to_string(), "THP always or never -> never");
    }
}
