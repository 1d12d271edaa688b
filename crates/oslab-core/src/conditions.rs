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
        ("kernel command line", "cmdline"),
        ("clocksource", "clocksource"),
        ("timer tick (Hz)", "tick_hz"),
        ("governor", "governor"),
        ("turbo", "turbo"),
        ("SMT", "smt"),
        ("hypervisor", "hypervisor"),
        ("THP", "thp"),
        ("THP defrag", "thp_defrag"),
        ("seccomp mode", "seccomp"),
    ] {
        from(name, &fingerprint[key]);
    }
    for (name, v) in [
        ("NUMA balancing", &environment["numa_balancing"]),
        ("isolated cpus", &environment["isolation"]),
        ("cpuset", &environment["limits"]["cpuset"]),
        ("cpu quota", &environment["limits"]["cpu_quota"]),
    ] {
        from(name, v);
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
    fn a_setting_an_older_run_did_not_record_is_no_difference_and_a_mixed_side_says_so() {
        let old = [configuration(&json!({"kernel": "6.18"}), &json!({}))];
        let new = [run("never", "x")];
        assert!(diff(&old, &new).iter().all(|m| m.name != "THP"));
        let mixed = [run("always", "x"), run("never", "x")];
        let moved = diff(&mixed, &new);
        assert_eq!(moved[0].to_string(), "THP always or never -> never");
    }
}
