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

impl Planned {
    /// What it will do here, in words: why it is skipped, what it measures, or nothing for a
    /// probe that measures the same points on any machine.
    pub fn what(&self) -> String {
        match (&self.skipped, &self.plan) {
            (Some(why), _) => format!("skipped: {why}"),
            (None, Some(plan)) => plan.clone(),
            (None, None) => String::new(),
        }
    }
}

/// How long a run has left: the plan's seconds still to come at this run's pace, less what the
/// probe under way has already taken. The pace is the plan's at first and this run's (completed
/// probes against their plan) as more completes: a few short first probes once swung the
/// estimate from 19 s to 1m27s and back to 42 s in a 28-second run.
#[derive(Debug, Clone)]
pub struct Remaining {
    /// Each probe's planned seconds.
    planned: std::collections::HashMap<&'static str, f64>,
    /// Planned seconds of the whole run, and of what has completed.
    total: f64,
    done: f64,
    /// Seconds since the start when the last probe completed.
    done_at: f64,
}

impl Remaining {
    /// A run of `planned` probes, each `repetitions` times.
    pub fn new(planned: &[Planned], repetitions: u32) -> Remaining {
        let planned: std::collections::HashMap<_, _> =
            planned.iter().map(|p| (p.id, p.seconds)).collect();
        let total = planned.values().sum::<f64>() * repetitions.max(1) as f64;
        Remaining {
            planned,
            total,
            done: 0.0,
            done_at: 0.0,
        }
    }

    /// The planned seconds of the whole run.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// Probe `id` completed `elapsed` seconds into the run; returns its planned seconds.
    pub fn finished(&mut self, id: &str, elapsed: f64) -> f64 {
        let planned = self.planned.get(id).copied().unwrap_or(0.0);
        self.done += planned;
        self.done_at = elapsed;
        planned
    }

    /// Seconds left, `elapsed` seconds into the run.
    pub fn left(&self, elapsed: f64) -> f64 {
        let observed = match self.done {
            d if d > 0.0 => (self.done_at / d).clamp(0.2, 20.0),
            _ => 1.0,
        };
        let trust = (self.done / self.total.max(f64::MIN_POSITIVE))
            .clamp(0.0, 1.0)
            .sqrt();
        let pace = 1.0 + (observed - 1.0) * trust;
        let under_way = elapsed - self.done_at;
        ((self.total - self.done).max(0.0) * pace - under_way).max(0.0)
    }
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
        crate::ipc::PROBES,
        crate::signal::PROBES,
        crate::poll::PROBES,
        crate::fs::PROBES,
        crate::disk::PROBES,
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
/// pattern without wildcards also matches a whole family (`syscall` = `syscall.*`). A probe that
/// evicts what others rely on ([`named_only`]) is selected by its id alone. Every pattern must
/// match something.
pub fn select(patterns: &[String]) -> Result<Vec<&'static Probe>, String> {
    let probes = all();
    if patterns.is_empty() {
        return Ok(probes.into_iter().filter(|p| !named_only(p)).collect());
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
        .filter(|p| {
            patterns
                .iter()
                .any(|pat| matches(pat, p.id()) && (!named_only(p) || pat == p.id()))
        })
        .collect())
}

/// Whether the default suite leaves `probe` out: it runs only when a pattern is its id (a family
/// or a glob does not reach it).
pub fn named_only(probe: &Probe) -> bool {
    probe.needs.iter().any(|n| matches!(n, Need::Named(_)))
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
    use super::{Planned, Remaining};

    fn planned(id: &'static str, seconds: f64) -> Planned {
        Planned {
            id,
            seconds,
            plan: None,
            skipped: None,
        }
    }

    #[test]
    fn time_left_follows_the_plan_first_and_this_runs_pace_as_probes_complete() {
        let mut r = Remaining::new(&[planned("a", 10.0), planned("b", 10.0)], 1);
        assert_eq!(r.left(0.0), 20.0);
        // Under way for 4 s: 4 s less.
        assert_eq!(r.left(4.0), 16.0);
        // The first half took twice its plan: the rest is expected slower, not at the plan's pace.
        assert_eq!(r.finished("a", 20.0), 10.0);
        let left = r.left(20.0);
        assert!(left > 10.0 && left < 20.0, "{left}");
        r.finished("b", 40.0);
        assert_eq!(r.left(40.0), 0.0);
        assert_eq!(Remaining::new(&[planned("a", 5.0)], 3).total(), 15.0);
    }

    use super::*;

    #[test]
    fn the_registry_runs_exactly_the_catalogs_suite_in_its_order() {
        let run: Vec<&str> = all().iter().map(|p| p.id()).collect();
        let listed: Vec<&str> = oslab_core::catalog::SUITE.iter().map(|e| e.id).collect();
        assert_eq!(run, listed);
    }

    #[test]
    fn probes_that_evict_the_page_cache_run_only_by_their_id() {
        let ids = |pats: &[&str]| -> Vec<&str> {
            let pats: Vec<String> = pats.iter().map(|p| p.to_string()).collect();
            select(&pats).unwrap().iter().map(|p| p.id()).collect()
        };
        for pats in [&[][..], &["fs"], &["fs.*"], &["*"]] {
            let got = ids(pats);
            assert!(
                got.contains(&"fs.cached-read") || pats.is_empty(),
                "{pats:?}"
            );
            assert!(!got.contains(&"fs.cache-size"), "{pats:?}: {got:?}");
        }
        assert_eq!(
            ids(&["fs.cache-size", "fs.readers"]),
            ["fs.cache-size", "fs.readers"]
        );
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
