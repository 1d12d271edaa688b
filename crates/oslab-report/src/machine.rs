//! `oslab info` as text: the machine as the tool sees it.

use oslab_core::machine::{Environment, Fingerprint};
use oslab_core::topology::CacheKind;
use oslab_core::units::bytes;
use std::fmt::Write;

fn opt(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("not exposed")
}

/// Renders the fingerprint and environment.
pub fn info(fp: &Fingerprint, env: &Environment) -> String {
    let mut o = String::new();
    let t = &fp.topology;
    let _ = writeln!(o, "host        {}", fp.hostname);
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
        "layout      {} package(s), {} core(s), {} thread(s), SMT {}",
        fp.packages,
        fp.cores,
        fp.threads,
        opt(&fp.smt)
    );
    let _ = writeln!(o, "caches");
    for c in &t.caches {
        let kind = match c.kind {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        };
        let _ = writeln!(
            o,
            "  L{} {:<11} {:>10}  line {:>3} B  {:>2} ways  cpus {}",
            c.level,
            kind,
            bytes(c.size),
            c.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
            c.ways.map(|w| w.to_string()).unwrap_or_else(|| "?".into()),
            c.cpus
        );
    }
    let _ = writeln!(o, "numa        {} node(s)", t.nodes.len());
    for n in &t.nodes {
        let _ = writeln!(
            o,
            "  node {}  cpus {:<12} memory {:>10}  distances {:?}",
            n.id,
            n.cpus.to_string(),
            n.memory.map(bytes).unwrap_or_else(|| "?".into()),
            n.distances
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
            .unwrap_or_else(|| "not exposed (no /boot/config)".into())
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
        yn(p.root),
        yn(p.cap_perfmon),
        yn(p.cap_sys_nice),
        yn(p.sched_fifo),
        p.perf_event_paranoid.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
        p.memlock_limit.map(bytes).unwrap_or_else(|| "unlimited".into())
    );
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
pub fn counters(rows: &[oslab_core::counters::Availability]) -> String {
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
