//! The registry: every probe in suite order, and selection by glob. This one table drives `list`,
//! `run` and the help text.

use crate::probe::{Context, Need, Probe};
use oslab_core::machine::Environment;

/// A probe as `oslab list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listed {
    /// Its id.
    pub id: &'static str,
    /// What it measures.
    pub about: &'static str,
    /// Its unit's symbol.
    pub unit: &'static str,
    /// What it needs, in words.
    pub needs: Vec<String>,
    /// Whether it can run here: `yes`, `partly: ...` or `skipped: why`.
    pub here: String,
}

/// Every probe, and whether it can run in `environment` with `peer` as the second cpu.
pub fn listing(environment: &Environment, peer: Option<usize>) -> Vec<Listed> {
    all()
        .into_iter()
        .map(|p| Listed {
            id: p.id(),
            about: p.entry.about,
            unit: p.entry.unit.symbol(),
            needs: p.needs.iter().map(Need::label).collect(),
            here: match crate::runner::gate(p, environment, peer) {
                Some(why) => format!("skipped: {why}"),
                None if p.needs.contains(&Need::PeerCpu) && peer.is_none() => {
                    "partly: no second cpu".to_string()
                }
                None => "yes".to_string(),
            },
        })
        .collect()
}

/// A probe as `oslab run --plan` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Planned {
    /// Its id.
    pub id: &'static str,
    /// Its expected seconds: its cost, scaled to this machine by its plan, in the suite's time.
    pub seconds: f64,
    /// What it will measure on this machine, for a probe whose work grows with the machine.
    pub plan: Option<String>,
    /// Why it will not run here, if it will not.
    pub skipped: Option<String>,
}

/// What each of `probes` will do with the machine and budgets of `cx`: its cost in the budgets'
/// seconds, scaled to this machine by its plan.
pub fn plan(probes: &[&'static Probe], cx: &Context) -> Vec<Planned> {
    let per_cost = cx.harness.config.seconds_per_cost;
    probes
        .iter()
        .map(|p| {
            let skipped = crate::runner::gate(p, cx.environment, cx.peer_cpu);
            let plan = match &skipped {
                None => p.plan.map(|f| f(cx)),
                Some(_) => None,
            };
            let work = plan.as_ref().map_or(1.0, |p| p.work);
            Planned {
                id: p.id(),
                seconds: match skipped {
                    None => p.cost * per_cost * work,
                    Some(_) => 0.0,
                },
                plan: plan.map(|p| p.what),
                skipped,
            }
        })
        .collect()
}

/// Every probe, in the order the default suite runs them.
pub fn all() -> Vec<&'static Probe> {
    [
        crate::timer::PROBES,
        crate::loops::PROBES,
        crate::call::PROBES,
        crate::syscall::PROBES,
        crate::task::PROBES,
        crate::switch::PROBES,
        crate::memory::PROBES,
        crate::chase::PROBES,
        crate::loaded::PROBES,
        crate::bandwidth::PROBES,
        crate::faults::PROBES,
        crate::numa::PROBES,
        crate::activity::PROBES,
        crate::migration::PROBES,
        crate::c2c::PROBES,
    ]
    .iter()
    .flat_map(|family| family.iter())
    .collect()
}

/// The probe with exactly this id.
pub fn find(id: &str) -> Option<&'static Probe> {
    all().into_iter().find(|p| p.id() == id)
}

/// Probes matching any of `patterns`, in suite order. A pattern is a glob (`*`, `?`) over ids; a
/// pattern without wildcards also matches a whole family (`syscall` = `syscall.*`). Every pattern
/// must match something.
pub fn select(patterns: &[String]) -> Result<Vec<&'static Probe>, String> {
    let probes = all();
    if patterns.is_empty() {
        return Ok(probes);
    }
    for pat in patterns {
        if !probes.iter().any(|p| matches(pat, p.id())) {
            let hint = suggestion(pat, &probes)
                .map(|s| format!(" (did you mean {s:?}?)"))
                .unwrap_or_default();
            return Err(format!(
                "no probe matches {pat:?}{hint}; `oslab list` shows the probe ids (globs like 'syscall.*' work)"
            ));
        }
    }
    Ok(probes
        .into_iter()
        .filter(|p| patterns.iter().any(|pat| matches(pat, p.id())))
        .collect())
}

/// The probe id or family nearest to a mistyped `pattern` (`sycall` -> `syscall`), if one is
/// within a third of its length in edits (at least one).
fn suggestion(pattern: &str, probes: &[&'static Probe]) -> Option<String> {
    let mut names: Vec<&str> = probes.iter().map(|p| p.id()).collect();
    // Families: every prefix of an id that ends before a dot.
    for p in probes {
        names.extend(p.id().match_indices('.').map(|(i, _)| &p.id()[..i]));
    }
    let limit = (pattern.chars().count() / 3).max(1);
    names
        .into_iter()
        .map(|n| (edits(pattern, n), n))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, n)| n.to_string())
}

/// Levenshtein distance (insertions, deletions, substitutions), by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Whether `id` matches `pattern` (see [`select`]).
pub fn matches(pattern: &str, id: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return id == pattern
            || id
                .strip_prefix(pattern)
                .is_some_and(|rest| rest.starts_with('.'));
    }
    glob(pattern.as_bytes(), id.as_bytes())
}

/// Wildcard match in O(len(p) x len(s)) at worst: on a mismatch only the most recent `*` is
/// widened by one character (a backtracking matcher is exponential in the number of stars).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None; // (pattern index after '*', text index it covers to)
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi + 1, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((after, covered)) => {
                    pi = after;
                    si = covered + 1;
                    star = Some((after, covered + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_runs_exactly_the_catalogs_suite_in_its_order() {
        let run: Vec<&str> = all().iter().map(|p| p.id()).collect();
        let listed: Vec<&str> = oslab_core::catalog::SUITE.iter().map(|e| e.id).collect();
        assert_eq!(run, listed);
    }

    #[test]
    fn a_mistyped_id_or_family_gets_the_nearest_as_a_suggestion() {
        let e = select(&["sycall".into()]).unwrap_err();
        assert!(e.contains("did you mean \"syscall\"?"), "{e}");
        let e = select(&["memory.latency.chnk".into()]).unwrap_err();
        assert!(e.contains("did you mean \"memory.latency.chunk\"?"), "{e}");
        let e = select(&["zzzzzz".into()]).unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "ab"), 2);
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let ids: Vec<&str> = all().iter().map(|p| p.id()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "duplicate probe id");
        for id in ids {
            assert!(id.contains('.') && !id.contains(' '), "{id}");
        }
    }

    #[test]
    fn globs_and_families_select() {
        assert!(matches("syscall", "syscall.getpid"));
        assert!(!matches("sys", "syscall.getpid"));
        assert!(matches("switch.*.pipe", "switch.thread.pipe"));
        assert!(matches("timer.rdts?", "timer.rdtsc"));
        assert!(!matches("timer.rdts?", "timer.rdtscp"));
        let sel = select(&["task".into(), "timer.rdtsc".into()]).unwrap();
        assert!(sel.iter().any(|p| p.id() == "task.fork"));
        assert_eq!(
            sel.iter().filter(|p| p.id().starts_with("timer")).count(),
            1
        );
        assert!(select(&["nosuch*".into()])
            .unwrap_err()
            .contains("oslab list"));
    }

    #[test]
    fn many_stars_match_in_reasonable_time() {
        // A backtracking matcher takes minutes on this; ours a few thousand steps per id.
        let evil = format!("{}zz9", "*".repeat(40));
        assert!(select(&[evil]).is_err());
        assert!(matches("*a*b*c*", "xaybzc"));
        assert!(!matches("*a*b*c*", "xaybz"));
        assert!(matches("s*l.*", "syscall.getpid"));
        assert!(matches("*", ""));
        assert!(!matches("?", ""));
    }
}
