//! The registry: every probe in suite order, and selection by glob. This one table drives `list`,
//! `run` and the help text.

use crate::probe::Probe;

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
        crate::bandwidth::PROBES,
        crate::faults::PROBES,
        crate::numa::PROBES,
        crate::activity::PROBES,
        crate::migration::PROBES,
    ]
    .iter()
    .flat_map(|family| family.iter())
    .collect()
}

/// Roughly how long a probe takes relative to a one-measurement probe (timer.rdtsc = 1), for the
/// progress bar's estimate of the time left. Sweeps over working-set sizes dominate a run.
pub fn relative_cost(id: &str) -> f64 {
    match id {
        "memory.latency.chunk" | "memory.latency.random" | "memory.latency.sequential" => 18.0,
        "bandwidth.sweep" => 14.0,
        "memory.latency.pages" | "bandwidth.stream" => 8.0,
        "bandwidth.threads" | "call.args" | "task.fork" | "numa.matrix" | "faults.file" => 5.0,
        "memory.latency.stride" | "memory.latency.parallel" => 4.0,
        _ if id.starts_with("switch.") || id.starts_with("syscall.") => 2.5,
        _ => 1.0,
    }
}

/// The probe with exactly this id.
pub fn find(id: &str) -> Option<&'static Probe> {
    all().into_iter().find(|p| p.id == id)
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
        if !probes.iter().any(|p| matches(pat, p.id)) {
            return Err(format!(
                "no probe matches {pat:?}; `oslab list` shows the probe ids (globs like 'syscall.*' work)"
            ));
        }
    }
    Ok(probes
        .into_iter()
        .filter(|p| patterns.iter().any(|pat| matches(pat, p.id)))
        .collect())
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

fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
        (Some(b'?'), Some(_)) => glob(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let ids: Vec<&str> = all().iter().map(|p| p.id).collect();
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
        assert!(sel.iter().any(|p| p.id == "task.fork"));
        assert_eq!(sel.iter().filter(|p| p.id.starts_with("timer")).count(), 1);
        assert!(select(&["nosuch*".into()])
            .unwrap_err()
            .contains("oslab list"));
    }
}
