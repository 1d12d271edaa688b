//! `oslab info` as text: the machine as the tool sees it.

use oslab_core::machine::{Environment, Fingerprint};
use oslab_core::topology::CacheKind;
use oslab_core::units::bytes;
use std::fmt::Write;

fn opt(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("not exposed")
}

/// Cache instances summarised, one line per kind of instance: `L2 unified 2 MiB x 2 ... 1 cpu
/// each` (the cpus are listed when there is one instance).
fn caches(caches: &[oslab_core::topology::Cache]) -> String {
    type Cache = oslab_core::topology::Cache;
    let mut groups: Vec<Vec<&Cache>> = Vec::new();
    for c in caches {
        let same = |g: &Cache| {
            (g.level, g.kind, g.size, g.line, g.ways) == (c.level, c.kind, c.size, c.line, c.ways)
        };
        match groups.iter_mut().find(|g| same(g[0])) {
            Some(all) => all.push(c),
            None => groups.push(vec![c]),
        }
    }
    let mut o = String::new();
    for all in groups {
        let c = all[0];
        let kind = match c.kind {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        };
        let sharing: std::collections::BTreeSet<usize> = all.iter().map(|c| c.cpus.len()).collect();
        let who = match (all.as_slice(), sharing.len()) {
            ([one], _) => format!("cpus {}", one.cpus),
            (_, 1) => {
                let n = sharing.into_iter().next().unwrap_or(0);
                format!("{n} cpu{} each", if n == 1 { "" } else { "s" })
            }
            _ => "shared unevenly".into(),
        };
        let _ = writeln!(
            o,
            "  L{} {:<11} {:>10} x {:<3} line {:>3} B  {:>2} ways  {who}",
            c.level,
            kind,
            bytes(c.size),
            all.len(),
            c.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
            c.ways.map(|w| w.to_string()).unwrap_or_else(|| "?".into()),
        );
    }
    o
}

/// The machine model's inputs (what the predictions of a run rest on), one per line.
pub fn model(inputs: &[(&str, String)]) -> String {
    let mut text = String::from("\nmachine model (what predictions rest on)\n");
    for (k, v) in inputs {
        let _ = writeln!(text, "  {k:<13}{v}");
    }
    text
}

/// "2 dies per package, " where a package has more than one die (else nothing).
fn dies(t: &oslab_core::topology::Topology) -> String {
    let mut seen: Vec<(usize, usize)> = t.cpus.iter().map(|c| (c.package, c.die)).collect();
    seen.sort_unstable();
    seen.dedup();
    let most = t
        .cpus
        .iter()
        .map(|c| seen.iter().filter(|(p, _)| *p == c.package).count())
        .max()
        .unwrap_or(1);
    match most {
        0 | 1 => String::new(),
        n => format!("{n} dies per package, "),
    }
}

/// One node's HMAT figures, as the firmware gives them.
fn hmat(h: &oslab_core::topology::Hmat) -> String {
    let pair = |lat: Option<u64>, bw: Option<u64>| match (lat, bw) {
        (None, None) => "not given".to_string(),
        (l, b) => format!(
            "{}, {}",
            l.map_or("latency ?".into(), |l| format!("{l} ns")),
            b.map_or("bandwidth ?".into(), |b| format!(
                "{} GB/s",
                oslab_core::units::num(b as f64 / 1e3)
            ))
        ),
    };
    let from: Vec<String> = h.initiators.iter().map(|i| i.to_string()).collect();
    format!(
        "HMAT from node {}: read {}; write {}",
        if from.is_empty() {
            "?".into()
        } else {
            from.join(",")
        },
        pair(h.read_latency_ns, h.read_bandwidth_mbs),
        pair(h.write_latency_ns, h.write_bandwidth_mbs)
    )
}

/// Which cpus share a package, a last-level cache and a core (what binding needs, as lstopo
/// shows it), and whether nodes divide a package (sub-NUMA clustering, NPS): lines only where
/// there is something to tell apart.
fn cpu_sets(t: &oslab_core::topology::Topology) -> String {
    use oslab_core::cpuset::CpuSet;
    let mut o = String::new();
    let mut packages: std::collections::BTreeMap<usize, CpuSet> = Default::default();
    for c in &t.cpus {
        packages.entry(c.package).or_default().insert(c.id);
    }
    let list = |sets: Vec<String>, most: usize| {
        let more = sets.len().saturating_sub(most);
        let mut shown: Vec<String> = sets.into_iter().take(most).collect();
        if more > 0 {
            shown.push(format!("... ({more} more)"));
        }
        shown.join(" | ")
    };
    if packages.len() > 1 {
        let sets = packages.iter().map(|(p, c)| format!("{p}: {c}")).collect();
        let _ = writeln!(o, "packages    {}", list(sets, 8));
    }
    if let Some(level) = t.last_level_cache().map(|c| c.level) {
        let llcs: Vec<String> = t
            .caches
            .iter()
            .filter(|c| c.level == level && c.kind != CacheKind::Instruction)
            .map(|c| c.cpus.to_string())
            .collect();
        if llcs.len() > 1 {
            let _ = writeln!(o, "L{level} domains  {}", list(llcs, 8));
        }
    }
    let mut cores: Vec<String> = t
        .cpus
        .iter()
        .filter(|c| c.smt_siblings.len() > 1 && c.smt_siblings.first() == Some(c.id))
        .map(|c| c.smt_siblings.to_string())
        .collect();
    cores.dedup();
    if !cores.is_empty() {
        let _ = writeln!(o, "smt cores   {}", list(cores, 8));
    }
    let nodes_per: std::collections::BTreeSet<usize> = packages
        .values()
        .map(|cpus| {
            t.nodes
                .iter()
                .filter(|n| n.cpus.iter().any(|c| cpus.contains(c)))
                .count()
        })
        .collect();
    if let Some(&n) = nodes_per.iter().max().filter(|&&n| n > 1) {
        let _ = writeln!(
            o,
            "numa mode   {n} nodes in a package: sub-NUMA clustering (Intel SNC-{n}) or NPS{n} (AMD)"
        );
    }
    o
}

/// Renders the fingerprint and environment.
pub fn info(fp: &Fingerprint, env: &Environment) -> String {
    let mut o = String::new();
    let t = &fp.topology;
    let _ = writeln!(
        o,
        "host        {}",
        oslab_core::text::one_line(&fp.hostname)
    );
    let _ = writeln!(
        o,
        "cpu         {} ({}, family/model/stepping {}, microcode {})",
        opt(&fp.cpu_model),
        opt(&fp.cpu_vendor),
        opt(&fp.cpu_signature),
        opt(&fp.microcode)
    );
    let _ = writeln!(
        o,
        "layout      {}, {}{}, {}, SMT {}",
        oslab_core::units::counted(fp.packages, "package"),
        dies(t),
        oslab_core::units::counted(fp.cores, "core"),
        oslab_core::units::counted(fp.threads, "thread"),
        smt(fp.smt.as_deref())
    );
    o.push_str(&cpu_sets(t));
    let _ = writeln!(o, "caches");
    o.push_str(&caches(&t.caches));
    // A guest's sysfs gives the host's last level (480 MiB on one), shared with other guests.
    if let Some(h) = &fp.hypervisor {
        let _ = writeln!(
            o,
            "  (as sysfs claims them: under {} the last level is the host's, shared with\n   other guests; `oslab run memory.latency.chunk` shows what serves this cpu)",
            oslab_core::text::one_line(h)
        );
    }
    let _ = writeln!(
        o,
        "numa        {}",
        oslab_core::units::counted(t.nodes.len(), "node")
    );
    for n in &t.nodes {
        let _ = writeln!(
            o,
            "  node {}  cpus {:<12} memory {:>10}  distances {:?}{}",
            n.id,
            match n.cpus.is_empty() {
                true => "none".to_string(),
                false => n.cpus.to_string(),
            },
            n.memory.map(bytes).unwrap_or_else(|| "?".into()),
            n.distances,
            n.kind
                .as_ref()
                .map(|k| format!("  {} memory", oslab_core::text::printable(k)))
                .unwrap_or_default()
        );
        let table = if n.hmat_table.is_empty() {
            n.hmat.as_slice()
        } else {
            &n.hmat_table
        };
        for h in table {
            let _ = writeln!(o, "          {}", hmat(h));
        }
    }
    if t.nodes
        .iter()
        .any(|n| n.hmat.is_some() && n.hmat_table.is_empty())
    {
        let _ = writeln!(
            o,
            "          (HMAT from each memory's best initiators only, as the kernel gives it: \
             the firmware's whole table is read as root)"
        );
    }
    let _ = writeln!(
        o,
        "memory      {}",
        fp.memory.map(bytes).unwrap_or_else(|| "?".into())
    );
    let _ = writeln!(o, "kernel      {}", fp.kernel);
    let _ = writeln!(
        o,
        "tick        {}",
        fp.tick_hz
            .map(|h| format!("{h} Hz (CONFIG_HZ)"))
            .unwrap_or_else(|| "not exposed (no /boot/config, /proc/timer_list unreadable)".into())
    );
    let _ = writeln!(o, "clocksource {}", opt(&fp.clocksource));
    let _ = writeln!(
        o,
        "tsc         invariant: {}; {}",
        if fp.clock.invariant_tsc { "yes" } else { "no" },
        fp.clock.describe()
    );
    let _ = writeln!(
        o,
        "governor    {}",
        fp.governor
            .as_deref()
            .unwrap_or("not exposed (no cpufreq: virtualized or fixed clock?)")
    );
    let _ = writeln!(
        o,
        "turbo       {}",
        match fp.turbo {
            Some(true) => "on",
            Some(false) => "off",
            None => "not exposed",
        }
    );
    let _ = writeln!(o, "thp         {}", opt(&fp.thp));
    // Which cpus the kernel keeps quiet, as booted: oslab measures on an isolated cpu first.
    let _ = writeln!(
        o,
        "isolation   {}",
        match env.isolation.is_empty() {
            true => "none (no isolcpus, nohz_full, rcu_nocbs or irqaffinity at boot)".to_string(),
            false => format!(
                "{} (oslab measures on an isolated cpu first)",
                env.isolation.join(" ")
            ),
        }
    );
    let _ = writeln!(
        o,
        "hypervisor  {}",
        fp.hypervisor.as_deref().unwrap_or("none detected")
    );
    let affected: Vec<String> = fp
        .mitigations
        .iter()
        .filter(|(_, s)| !s.starts_with("Not affected"))
        .map(|(n, s)| format!("{n}: {s}"))
        .collect();
    let _ = writeln!(
        o,
        "mitigations {} of {} not 'Not affected'",
        affected.len(),
        fp.mitigations.len()
    );
    for a in affected {
        let _ = writeln!(o, "  {a}");
    }
    let _ = writeln!(
        o,
        "pmu         {}",
        if env.pmu.available {
            "available".to_string()
        } else {
            format!("unavailable: {}", env.pmu.reason.as_deref().unwrap_or("?"))
        }
    );
    let p = &env.privileges;
    let yn = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(
        o,
        "privileges  root: {}  CAP_PERFMON: {}  CAP_SYS_NICE: {}  SCHED_FIFO: {}  perf_event_paranoid: {}  memlock: {}",
        match (p.root, p.user_namespace) {
            (false, true) => "no (in a user namespace: its root is not the machine's)",
            (r, _) => yn(r),
        },
        yn(p.cap_perfmon),
        yn(p.cap_sys_nice),
        yn(p.sched_fifo),
        p.perf_event_paranoid.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
        p.memlock_limit.map(bytes).unwrap_or_else(|| "unlimited".into())
    );
    let l = &env.limits;
    if let Some(c) = &l.cpuset {
        let _ = writeln!(o, "cpuset      {c}");
    }
    if !l.hugepages.is_empty() {
        let pools: Vec<String> = l
            .hugepages
            .iter()
            .map(|(size, n, free)| {
                // The kernel names a pool by its page size in kB ("2048kB").
                let shown = size
                    .strip_suffix("kB")
                    .and_then(|k| k.parse::<u64>().ok())
                    .map_or(size.clone(), |k| bytes(k << 10));
                format!("{shown} pages: {n} ({free} free)")
            })
            .collect();
        let _ = writeln!(o, "hugepages   {}", pools.join(", "));
    }
    if let Some(q) = l.cpu_quota {
        let _ = writeln!(o, "cpu quota   {q:.2} cpus' worth of time (a cgroup's)");
    }
    if let Some(p) = l.pids_left {
        let _ = writeln!(
            o,
            "pids        {p} more processes and threads allowed (a cgroup's)"
        );
    }
    if !l.memory_tiers.is_empty() {
        let tiers: Vec<String> = l
            .memory_tiers
            .iter()
            .map(|(name, nodes)| format!("{name}: nodes {nodes}"))
            .collect();
        let _ = writeln!(o, "mem tiers   {}", tiers.join(", "));
    }
    let _ = writeln!(
        o,
        "load        {} (runnable {})",
        env.loadavg
            .map(|l| format!("{l:.2}"))
            .unwrap_or_else(|| "?".into()),
        env.runnable
            .map(|r| r.to_string())
            .unwrap_or_else(|| "?".into())
    );
    if !env.warnings.is_empty() {
        let _ = writeln!(o, "\nwarnings");
        o.push_str(&warnings(env));
    }
    o
}

/// The environment warnings, one per line with the remedy.
pub fn warnings(env: &Environment) -> String {
    env.warnings
        .iter()
        .map(|w| format!("  - {}: {}\n    fix: {}\n", w.kind, w.message, w.remedy))
        .collect()
}

/// The counter table of `oslab info --counters`.
pub fn counters(rows: &[oslab_core::machine::Availability]) -> String {
    let mut out = String::from("\ncounters (opened on this thread to check):\n");
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    for r in rows {
        let state = match &r.unavailable {
            None => "ok".to_string(),
            Some(why) => format!("unavailable: {why}"),
        };
        out.push_str(&format!(
            "  {:width$}  {state}\n  {:width$}    {}\n",
            r.name, "", r.definition
        ));
    }
    out
}

/// The kernel's SMT control in words (`notsupported` is sysfs's spelling).
fn smt(control: Option<&str>) -> &str {
    match control {
        Some("notsupported") => "not supported by this cpu",
        Some("notimplemented") => "not implemented by this kernel",
        Some("forceoff") => "off (forced at boot)",
        Some(other) => other,
        None => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::topology::Cache;
    use oslab_core::CpuSet;

    fn cache(level: u8, size: u64, cpus: &str) -> Cache {
        Cache {
            level,
            kind: CacheKind::Unified,
            size,
            line: Some(64),
            ways: Some(16),
            cpus: CpuSet::parse_list(cpus).unwrap(),
        }
    }

    #[test]
    fn cache_instances_are_summarised_one_line_per_kind() {
        let text = caches(&[
            cache(2, 1 << 20, "0-1"),
            cache(2, 1 << 20, "2-3"),
            cache(2, 1 << 20, "4-5"),
            cache(3, 32 << 20, "0-5"),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains("1 MiB x 3") && lines[0].ends_with("2 cpus each"),
            "{text}"
        );
        assert!(
            lines[1].contains("32 MiB x 1") && lines[1].ends_with("cpus 0-5"),
            "{text}"
        );
    }
}
