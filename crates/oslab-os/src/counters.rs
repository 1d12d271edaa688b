//! Hardware and software counters by name, as perf spells them: generic hardware events
//! (`cycles`, `cache-misses`, ...), generic cache events (`L1-dcache-load-misses`, `LLC-loads`,
//! `dTLB-load-misses`, ...), software events (`task-clock`, `page-faults`, ...), raw events
//! (`r01c4`, `cpu/event=0x24,umask=0x27/`), and the PAPI presets (`L2_TCM`,
//! `L2_TCA`), mapped per CPU from documented encodings, possibly as a sum of two events.
//!
//! Events are opened together as groups (read atomically) on a thread or a CPU, and a reading
//! carries time enabled/running so multiplexing shows and is scaled. An event that cannot be
//! opened is reported with the reason and never given a number.

use crate::perf;
use oslab_core::machine::Availability;
use oslab_core::reason::BadValue;
use std::io;
use std::path::Path;

/// One event perf_event_open understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What the user called it.
    pub name: String,
    /// perf_event_attr.type.
    pub kind: u32,
    /// perf_event_attr.config.
    pub config: u64,
}

/// A counter the user asked for: one event, or a sum of events (derived presets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The name asked for.
    pub name: String,
    /// The events whose counts are added.
    pub events: Vec<Event>,
    /// Where the definition comes from ("generic", "raw", "preset: ...").
    pub origin: String,
}

const HW: u32 = 0;
const SW: u32 = 1;
const HW_CACHE: u32 = 3;
const RAW: u32 = 4;

const GENERIC: &[(&str, u32, u64)] = &[
    ("cycles", HW, 0),
    ("instructions", HW, 1),
    ("cache-references", HW, 2),
    ("cache-misses", HW, 3),
    ("branches", HW, 4),
    ("branch-misses", HW, 5),
    ("task-clock", SW, 1),
    ("page-faults", SW, 2),
    ("context-switches", SW, 3),
    ("cpu-migrations", SW, 4),
    ("minor-faults", SW, 5),
    ("major-faults", SW, 6),
    // Generic cache events: cache id | op (read = 0) << 8 | result (access 0, miss 1) << 16.
    ("L1-dcache-loads", HW_CACHE, 0),
    ("L1-dcache-load-misses", HW_CACHE, 1 << 16),
    ("LLC-loads", HW_CACHE, 2),
    ("LLC-load-misses", HW_CACHE, 2 | 1 << 16),
    ("dTLB-loads", HW_CACHE, 3),
    ("dTLB-load-misses", HW_CACHE, 3 | 1 << 16),
];

/// The generic event names, in a stable order.
pub fn generic_names() -> impl Iterator<Item = &'static str> {
    GENERIC.iter().map(|g| g.0)
}

/// The CPU, as the preset table keys it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuId {
    /// "GenuineIntel", "AuthenticAMD", or "arm64".
    pub vendor: String,
    /// cpuid family.
    pub family: u32,
    /// cpuid model.
    pub model: u32,
}

impl CpuId {
    /// This machine's, from /proc/cpuinfo.
    pub fn read() -> CpuId {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |k: &str| {
            info.lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(k))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let num = |k: &str| field(k).and_then(|v| v.parse().ok()).unwrap_or(0);
        CpuId {
            vendor: field("vendor_id").unwrap_or_else(|| std::env::consts::ARCH.to_string()),
            family: num("cpu family"),
            model: num("model"),
        }
    }
}

/// A preset's definition for one CPU: events to add, in perf's raw syntax, and where it comes
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    /// "L2_TCM" or "L2_TCA".
    pub name: &'static str,
    /// Event names to add (parsed with [`parse`]).
    pub sum_of: Vec<&'static str>,
    /// The documentation it follows.
    pub source: &'static str,
}

/// Intel cores whose L2_RQSTS event (0x24) has the Skylake-generation umasks.
const INTEL_L2_RQSTS_MODELS: &[(u32, &str)] = &[
    (0x4E, "Skylake client"),
    (0x5E, "Skylake client"),
    (0x55, "Skylake-X / Cascade Lake / Cooper Lake"),
    (0x6A, "Ice Lake server"),
    (0x6C, "Ice Lake server"),
    (0x8E, "Kaby/Coffee/Whiskey Lake"),
    (0x9E, "Kaby/Coffee Lake"),
];

/// The definition of `L2_TCM` / `L2_TCA` on `cpu`, or why there is none.
pub fn preset(name: &str, cpu: &CpuId) -> Result<Preset, BadValue> {
    let (name, miss): (&'static str, bool) = match name {
        "L2_TCM" => ("L2_TCM", true),
        "L2_TCA" => ("L2_TCA", false),
        other => {
            return Err(format!("{other} is not a preset oslab knows (L2_TCM, L2_TCA)").into())
        }
    };
    match cpu.vendor.as_str() {
        "GenuineIntel" if cpu.family == 6 => {
            match INTEL_L2_RQSTS_MODELS.iter().find(|m| m.0 == cpu.model) {
                Some(_) => Ok(Preset {
                    name,
                    // L2_RQSTS: ALL_DEMAND_MISS (umask 0x27) + CODE_RD_MISS (0x24), or
                    // ALL_DEMAND_REFERENCES (0xe7) + ALL_CODE_RD (0xe4), as PAPI derives them.
                    sum_of: if miss { vec!["r2724", "r2424"] } else { vec!["re724", "re424"] },
                    source: "Intel L2_RQSTS (event 0x24), PAPI's derived sum of demand and code requests",
                }),
                None => Err(format!(
                    "Intel family 6 model {:#x} is not in oslab's preset table; find its L2_RQSTS encodings (perf list, Intel perfmon) and pass them as raw events, e.g. r2724",
                    cpu.model
                ).into()),
            }
        }
        "AuthenticAMD" | "HygonGenuine" if cpu.family >= 0x17 => Ok(Preset {
            name,
            sum_of: vec![if miss { "cache-misses" } else { "cache-references" }],
            source: "AMD Zen: the generic cache-references / cache-misses count L2 requests / misses",
        }),
        "aarch64" | "arm64" => Ok(Preset {
            name,
            sum_of: vec![if miss { "r17" } else { "r16" }],
            source: "Arm architectural L2D_CACHE_REFILL (0x17) / L2D_CACHE (0x16)",
        }),
        v => Err(format!(
            "{v} family {:#x} model {:#x} is not in oslab's preset table; pass a raw event (rXXXX) for its L2 events",
            cpu.family, cpu.model
        ).into()),
    }
}

/// Parses one counter name: generic, software, generic cache, raw (`r<hex>`),
/// `pmu/term=value,.../`, or a preset (`L2_TCM`, `L2_TCA`).
pub fn parse(name: &str, cpu: &CpuId) -> Result<Spec, BadValue> {
    parse_with(name, cpu, Path::new("/sys/bus/event_source/devices"))
}

/// As [`parse`], reading PMU descriptions under `pmus` (tests pass a fake sysfs).
pub fn parse_with(name: &str, cpu: &CpuId, pmus: &Path) -> Result<Spec, BadValue> {
    let name = name.trim();
    if let Some(&(n, kind, config)) = GENERIC.iter().find(|g| g.0 == name) {
        return Ok(Spec {
            name: n.to_string(),
            events: vec![Event {
                name: n.to_string(),
                kind,
                config,
            }],
            origin: "generic".into(),
        });
    }
    if name == "L2_TCM" || name == "L2_TCA" {
        let p = preset(name, cpu)?;
        let mut events = Vec::new();
        for e in &p.sum_of {
            events.extend(parse_with(e, cpu, pmus)?.events);
        }
        return Ok(Spec {
            name: name.to_string(),
            events,
            origin: format!("preset: {} = {}", p.source, p.sum_of.join(" + ")),
        });
    }
    if let Some(hex) = name.strip_prefix('r').filter(|h| !h.is_empty()) {
        if let Ok(config) = u64::from_str_radix(hex, 16) {
            return Ok(Spec {
                name: name.to_string(),
                events: vec![Event {
                    name: name.to_string(),
                    kind: RAW,
                    config,
                }],
                origin: "raw".into(),
            });
        }
    }
    if let Some((pmu, terms)) = name.split_once('/') {
        let terms = terms.strip_suffix('/').ok_or_else(|| {
            format!("{name:?}: a PMU event ends with '/' (cpu/event=0x24,umask=0x27/)")
        })?;
        let (kind, config) = pmu_event(pmus, pmu, terms).map_err(|e| format!("{name:?}: {e}"))?;
        return Ok(Spec {
            name: name.to_string(),
            events: vec![Event {
                name: name.to_string(),
                kind,
                config,
            }],
            origin: format!("pmu {pmu}"),
        });
    }
    Err(format!(
        "unknown counter {name:?}: use a generic name (cycles, instructions, cache-misses, L1-dcache-load-misses, page-faults, ...), a raw event (r01c4), pmu/event=..,umask=../, or L2_TCM / L2_TCA"
    ).into())
}

/// Builds the config of `term=value,...` for `pmu` from its sysfs format description.
fn pmu_event(pmus: &Path, pmu: &str, terms: &str) -> Result<(u32, u64), BadValue> {
    let dir = pmus.join(pmu);
    let kind: u32 = std::fs::read_to_string(dir.join("type"))
        .map_err(|_| {
            format!("no PMU named {pmu} on this machine (see /sys/bus/event_source/devices)")
        })?
        .trim()
        .parse()
        .map_err(|_| format!("PMU {pmu} has an unreadable type"))?;
    let mut config = 0u64;
    for term in terms.split(',').filter(|t| !t.is_empty()) {
        let (key, value) = term.split_once('=').unwrap_or((term, "1"));
        let value = match value.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => value.parse(),
        }
        .map_err(|_| format!("{term:?}: the value is not a number"))?;
        let format = std::fs::read_to_string(dir.join("format").join(key))
            .map_err(|_| format!("PMU {pmu} has no field {key:?}"))?;
        // "config:0-7" or "config:8-15,24-31"; only `config` is supported here.
        let bits = format
            .trim()
            .strip_prefix("config:")
            .ok_or_else(|| format!("field {key:?} is not in config ({})", format.trim()))?;
        let mut v = value;
        for range in bits.split(',') {
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
                None => (range.parse::<u32>(), range.parse::<u32>()),
            };
            let (lo, hi) = (lo.map_err(|_| "bad format")?, hi.map_err(|_| "bad format")?);
            let width = hi - lo + 1;
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            config |= (v & mask) << lo;
            v >>= width.min(63);
        }
    }
    Ok((kind, config))
}

/// Where counters count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The calling thread (on any CPU).
    ThisThread,
    /// Everything on one CPU.
    Cpu(usize),
}

/// A counter that could not be opened, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// Its name.
    pub name: String,
    /// Why, in words a user can act on.
    pub reason: String,
}

/// One counter's value over a region.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Its name.
    pub name: String,
    /// The count, scaled by enabled / running when the group was multiplexed.
    pub value: f64,
    /// Fraction of the time the group was on the PMU (1.0: not multiplexed).
    pub running: f64,
}

/// Counters opened together: every event in one perf group, read atomically.
pub struct Group {
    members: Vec<(usize, perf::Counter)>,
    specs: Vec<Spec>,
    unavailable: Vec<Unavailable>,
}

impl Group {
    /// Opens `specs` on `target`. What cannot be opened is listed in [`Group::unavailable`].
    pub fn open(specs: &[Spec], target: Target) -> Group {
        let mut members = Vec::new();
        let mut unavailable = Vec::new();
        let mut kept = Vec::new();
        for spec in specs {
            let mut opened = Vec::new();
            let mut failure = None;
            for e in &spec.events {
                let leader = members.first().map(|(_, c): &(usize, perf::Counter)| c);
                match perf::Counter::open_member(e.kind, e.config, target_pid_cpu(target), leader) {
                    Ok(c) => opened.push(c),
                    Err(err) => {
                        failure = Some(perf::explain(&err));
                        break;
                    }
                }
            }
            match failure {
                Some(reason) => unavailable.push(Unavailable {
                    name: spec.name.clone(),
                    reason,
                }),
                None => {
                    let index = kept.len();
                    kept.push(spec.clone());
                    members.extend(opened.into_iter().map(|c| (index, c)));
                }
            }
        }
        Group {
            members,
            specs: kept,
            unavailable,
        }
    }

    /// Counters that could not be opened.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// Whether any counter is open.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Resets and starts every counter.
    pub fn start(&self) -> io::Result<()> {
        match self.members.first() {
            Some((_, leader)) => leader.start_group(),
            None => Ok(()),
        }
    }

    /// Stops and reads every counter (derived presets summed).
    pub fn stop(&self) -> io::Result<Vec<Reading>> {
        let Some((_, leader)) = self.members.first() else {
            return Ok(Vec::new());
        };
        let (values, enabled, running) = leader.stop_group(self.members.len())?;
        let scale = if running > 0 {
            enabled as f64 / running as f64
        } else {
            0.0
        };
        let frac = if enabled > 0 {
            running as f64 / enabled as f64
        } else {
            0.0
        };
        let mut sums = vec![0.0; self.specs.len()];
        for ((index, _), v) in self.members.iter().zip(values) {
            sums[*index] += v as f64 * scale;
        }
        Ok(self
            .specs
            .iter()
            .zip(sums)
            .map(|(s, value)| Reading {
                name: s.name.clone(),
                value,
                running: frac,
            })
            .collect())
    }
}

/// Every generic counter and the presets, tried on the calling thread.
pub fn availability(cpu: &CpuId) -> Vec<Availability> {
    generic_names()
        .chain(["L2_TCM", "L2_TCA"])
        .map(|name| match parse(name, cpu) {
            Ok(spec) => {
                let group = Group::open(std::slice::from_ref(&spec), Target::ThisThread);
                let events: Vec<String> = spec
                    .events
                    .iter()
                    .map(|e| format!("type {} config {:#x}", e.kind, e.config))
                    .collect();
                Availability {
                    name: name.to_string(),
                    definition: format!("{} ({})", spec.origin, events.join(" + ")),
                    unavailable: group.unavailable().first().map(|u| u.reason.clone()),
                }
            }
            Err(why) => Availability {
                name: name.to_string(),
                definition: "no definition for this cpu".into(),
                unavailable: Some(why.0),
            },
        })
        .collect()
}

fn target_pid_cpu(t: Target) -> (libc::pid_t, libc::c_int) {
    match t {
        Target::ThisThread => (0, -1),
        Target::Cpu(c) => (-1, c as libc::c_int),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intel(model: u32) -> CpuId {
        CpuId {
            vendor: "GenuineIntel".into(),
            family: 6,
            model,
        }
    }

    #[test]
    fn names_parse_as_perf_spells_them() {
        let cpu = intel(0x55);
        assert_eq!(
            parse("cycles", &cpu).unwrap().events[0],
            Event {
                name: "cycles".into(),
                kind: 0,
                config: 0
            }
        );
        assert_eq!(
            parse("LLC-load-misses", &cpu).unwrap().events[0].config,
            2 | 1 << 16
        );
        assert_eq!(parse("r01c4", &cpu).unwrap().events[0].config, 0x01c4);
        assert!(parse("bogus", &cpu)
            .unwrap_err()
            .0
            .contains("unknown counter"));
    }

    #[test]
    fn presets_follow_the_table_and_say_when_a_cpu_is_missing() {
        let tcm = parse("L2_TCM", &intel(0x55)).unwrap();
        let configs: Vec<u64> = tcm.events.iter().map(|e| e.config).collect();
        assert_eq!(configs, [0x2724, 0x2424]);
        assert!(tcm.origin.contains("L2_RQSTS"));
        let tca = parse("L2_TCA", &intel(0x6A)).unwrap();
        assert_eq!(
            tca.events.iter().map(|e| e.config).collect::<Vec<_>>(),
            [0xe724, 0xe424]
        );
        let zen = CpuId {
            vendor: "AuthenticAMD".into(),
            family: 0x19,
            model: 1,
        };
        assert_eq!(
            parse("L2_TCA", &zen).unwrap().events[0].name,
            "cache-references"
        );
        let arm = CpuId {
            vendor: "arm64".into(),
            family: 0,
            model: 0,
        };
        assert_eq!(parse("L2_TCM", &arm).unwrap().events[0].config, 0x17);
        let e = parse("L2_TCM", &intel(0xA7)).unwrap_err();
        assert!(
            e.0.contains("not in oslab's preset table") && e.0.contains("raw"),
            "{e}"
        );
    }

    #[test]
    fn pmu_terms_are_placed_by_the_sysfs_format() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let cpu_pmu = dir.join("cpu");
        std::fs::create_dir_all(cpu_pmu.join("format")).unwrap();
        std::fs::write(cpu_pmu.join("type"), "4\n").unwrap();
        std::fs::write(cpu_pmu.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(cpu_pmu.join("format/umask"), "config:8-15\n").unwrap();
        let s = parse_with("cpu/event=0x24,umask=0x27/", &intel(0x55), &dir).unwrap();
        assert_eq!((s.events[0].kind, s.events[0].config), (4, 0x2724));
        assert!(parse_with("cpu/event=0x24,flavour=2/", &intel(0x55), &dir).is_err());
        assert!(parse_with("nopmu/event=1/", &intel(0x55), &dir)
            .unwrap_err()
            .0
            .contains("no PMU"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn software_counters_count_in_a_group_and_hardware_says_why_not() {
        let cpu = CpuId::read();
        let specs: Vec<Spec> = ["page-faults", "task-clock", "cycles"]
            .iter()
            .map(|n| parse(n, &cpu).unwrap())
            .collect();
        let g = Group::open(&specs, Target::ThisThread);
        g.start().unwrap();
        let v: Vec<u8> = vec![1; 64 << 20];
        std::hint::black_box(&v);
        let r = g.stop().unwrap();
        let faults = r.iter().find(|x| x.name == "page-faults").unwrap();
        assert!(faults.value >= 1000.0, "{faults:?}"); // 64 MiB touched: thousands of faults
        let clock = r.iter().find(|x| x.name == "task-clock").unwrap();
        assert!(clock.value > 0.0 && clock.running > 0.99);
        // Without a PMU the hardware counter is listed as unavailable, never given a number.
        if let Some(u) = g.unavailable().iter().find(|u| u.name == "cycles") {
            assert!(!u.reason.is_empty());
            assert!(r.iter().all(|x| x.name != "cycles"));
        }
    }
}
