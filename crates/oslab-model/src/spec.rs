//! The machine as the models see it: every figure with where it came from (a published table, a
//! measurement, the kernel, the firmware, the user), or why it is missing and how to supply it.

use crate::answer::{Figure, Model, NoModel, Outcome};
use crate::memory::MemorySpec;
use crate::uarch::{self, Uarch};
use oslab_core::machine::Fingerprint;
use oslab_core::topology::CacheKind;

/// One cache level of the measuring cpu, as sysfs describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheLevel {
    /// 1, 2, 3, ...
    pub level: u8,
    /// Size sysfs claims, bytes.
    pub size: u64,
    /// The size this run's chase found it serving, where a hypervisor's sysfs gives the host's
    /// cache and its plateau ends sooner ([`crate::hierarchy::served`]); None: the claim stands.
    pub served: Option<Figure>,
}

impl CacheLevel {
    /// The bytes it holds for this cpu: what the run found it serving, else what sysfs claims.
    pub fn holds(&self) -> f64 {
        self.served.as_ref().map_or(self.size as f64, |f| f.value)
    }
}

/// What a kernel entry costs on top of the instructions, for each mitigation the kernel runs at
/// entry or exit: (the vulnerability file, text of its state that means the costly variant,
/// cycles, what it does). Approximate figures from published measurements of each mitigation.
const ENTRY_MITIGATIONS: &[(&str, &str, f64, &str)] = &[
    (
        "meltdown",
        "PTI",
        200.0,
        "page-table isolation: two CR3 writes per entry (with PCID)",
    ),
    (
        "mds",
        "Clear CPU buffers",
        100.0,
        "VERW clears the cpu buffers on every return to user",
    ),
    (
        "tsa",
        "Clear CPU buffers",
        100.0,
        "VERW clears the cpu buffers on every return to user",
    ),
    (
        "spectre_v2",
        "; IBRS",
        300.0,
        "legacy IBRS: an MSR write on entry and exit",
    ),
    (
        "spectre_v2",
        "BHI: SW loop",
        60.0,
        "the branch-history clearing loop on entry",
    ),
    (
        "retbleed",
        "untrained return thunk",
        40.0,
        "return thunks on the kernel's returns",
    ),
    (
        // Indirect target selection: the kernel's returns go through a thunk in the upper half
        // of a cache line, the same cost as retbleed's (one thunk serves both).
        "indirect_target_selection",
        "return thunks",
        40.0,
        "return thunks on the kernel's returns",
    ),
];

/// What a mitigation costs at every return the kernel executes, not once per entry: (the
/// vulnerability file, text of its state that means it, cycles per return, what it does).
/// SRSO's Safe RET sends each kernel `ret` through a thunk that calls a second one and drops the
/// address that call pushed: the return-address stack then predicts the thunk, never the
/// caller, so every return is a misprediction (Linux's arch/x86/lib/retpoline.S,
/// srso_safe_ret; Documentation/admin-guide/hw-vuln/srso.rst). A misprediction costs about 13
/// cycles on Zen 3 and 4 (AMD's Software Optimization Guide for family 19h; Agner Fog's
/// microarchitecture guide).
const RETURN_MITIGATIONS: &[(&str, &str, f64, &str)] = &[
    (
        "spec_rstack_overflow",
        "Safe RET",
        13.0,
        "SRSO's safe return: every kernel return mispredicted",
    ),
    (
        // The kernel applied Safe RET but lacks the microcode that completes it (user space stays
        // exposed): the kernel's returns pay all the same.
        "spec_rstack_overflow",
        "Vulnerable: Safe RET, no microcode",
        13.0,
        "SRSO's safe return, applied without the microcode that completes it: every kernel return mispredicted",
    ),
];

/// Cycles of `syscall`/`sysret` and the kernel's entry and exit code, without mitigations: the
/// system calls' base ([`crate::cpu`]) and what the returns per cycle of kernel work derive from.
pub(crate) const NULL_SYSCALL_CYCLES: f64 = 150.0;
pub(crate) const NULL_SYSCALL_SOURCE: &str = "estimate: syscall + sysret and the kernel's entry/exit path, about 150 cycles on x86 without entry mitigations (lmbench lat_syscall null, FlexSC OSDI 2010)";

/// Returns the null system call's path executes in Linux 6.x: do_syscall_64, the entry and
/// exit work, the dispatch, the call itself and its helpers (counted in the source, inlined ones
/// left out).
const NULL_SYSCALL_RETURNS: f64 = 10.0;

/// Cycles of kernel work per return it executes, for a mitigation paid at every return: the
/// null system call's, whose path is of the same small functions as the scheduler's and fork's.
const KERNEL_CYCLES_PER_RETURN: f64 = NULL_SYSCALL_CYCLES / NULL_SYSCALL_RETURNS;

/// Everything the models know about the machine.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The core's published figures, or why there are none.
    pub cpu: Result<&'static Uarch, NoModel>,
    /// Why `cpu` is not the core cpuid's model number names: a hypervisor presents a client
    /// core's number under a server's name.
    pub presented: Option<String>,
    /// The core clock measured on the measuring cpu, or why not.
    pub core_ghz: Result<Figure, NoModel>,
    /// Data and unified caches of the measuring cpu, smallest first.
    pub caches: Vec<CacheLevel>,
    /// The memory's rate and channels, or why unknown and how to supply it.
    pub memory: Result<MemorySpec, NoModel>,
    /// The hypervisor, when virtualized.
    pub hypervisor: Option<String>,
    /// The cpu's name as cpuid gives it ("AMD EPYC 9654", or a hypervisor's generic "Intel(R)
    /// Xeon(R) Processor").
    pub cpu_model: Option<String>,
    /// Active mitigations that cost at every kernel entry: (name, cycles, what it does).
    pub entry_mitigations: Vec<(String, f64, &'static str)>,
    /// An active mitigation that costs at every return the kernel executes: (name, cycles per
    /// return, what it does).
    pub return_mitigation: Option<(String, f64, &'static str)>,
    /// What else the configuration adds to every system call and no input counts, in words: a
    /// syscall audit rule, a seccomp filter.
    pub syscall_tax: Vec<String>,
    /// CONFIG_HZ, when the kernel's configuration is readable.
    pub tick_hz: Option<u32>,
    /// The kernel's clocksource.
    pub clocksource: Option<String>,
    /// Exit latency of the deepest idle state enabled, µs (cpuidle), or why unknown.
    pub idle_exit_us: Result<Figure, NoModel>,
    /// SLIT distances, node x node.
    pub distances: Vec<Vec<u32>>,
}

/// The configuration's tax on every system call, in words ([`Spec::syscall_tax`]).
fn syscall_tax(fingerprint: &Fingerprint) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(a) = fingerprint
        .audit
        .as_deref()
        .filter(|a| a.starts_with("on, ") && *a != "on, 0 rules")
    {
        out.push(format!(
            "syscall audit {a}: every system call takes the audit path on entry and exit"
        ));
    }
    if fingerprint.seccomp.as_deref() == Some("2") {
        out.push("a seccomp filter: every system call runs it first".to_string());
    }
    out
}

impl Spec {
    /// The model from a fingerprint and the figures found beside it: the core clock measured,
    /// the memory described, the idle state's exit latency (oslab-probes' `spec::read` finds
    /// them on this machine; tests describe machines this one is not).
    pub fn from_parts(
        fingerprint: &Fingerprint,
        cpu: usize,
        core_ghz: Result<Figure, NoModel>,
        memory: Result<MemorySpec, NoModel>,
        idle_exit_us: Result<Figure, NoModel>,
    ) -> Spec {
        let topology = &fingerprint.topology;
        let mut caches: Vec<CacheLevel> = topology
            .caches_of(cpu)
            .into_iter()
            .filter(|c| c.kind != CacheKind::Instruction)
            .map(|c| CacheLevel {
                level: c.level,
                size: c.size,
                served: None,
            })
            .collect();
        caches.sort_by_key(|c| c.level);
        caches.dedup_by_key(|c| c.level);
        let entry_mitigations = fingerprint
            .mitigations
            .iter()
            .flat_map(|(name, state)| {
                ENTRY_MITIGATIONS
                    .iter()
                    .filter(move |(n, text, _, _)| n == name && costly(state, text))
                    .map(|(n, _, cycles, what)| (n.to_string(), *cycles, *what))
            })
            .collect::<Vec<_>>();
        // One mechanism runs once per entry whichever vulnerabilities asked for it (VERW for
        // MDS and TSA, one return thunk for retbleed and ITS).
        let mut seen = Vec::new();
        let entry_mitigations = entry_mitigations
            .into_iter()
            .filter(|(_, _, what)| {
                let new = !seen.contains(what);
                seen.push(*what);
                new
            })
            .collect();
        let return_mitigation = fingerprint.mitigations.iter().find_map(|(name, state)| {
            RETURN_MITIGATIONS
                .iter()
                .find(|(n, text, _, _)| n == name && costly(state, text))
                .map(|(n, _, cycles, what)| (n.to_string(), *cycles, *what))
        });
        let (cpu, presented) = core_of(fingerprint);
        Spec {
            cpu,
            presented,
            core_ghz,
            caches,
            memory,
            hypervisor: fingerprint.hypervisor.clone(),
            cpu_model: fingerprint.cpu_model.clone(),
            entry_mitigations,
            return_mitigation,
            syscall_tax: syscall_tax(fingerprint),
            tick_hz: fingerprint.tick_hz,
            clocksource: fingerprint.clocksource.clone(),
            idle_exit_us,
            distances: topology.nodes.iter().map(|n| n.distances.clone()).collect(),
        }
    }

    /// The core clock, or why there is none.
    pub fn ghz(&self) -> Result<&Figure, NoModel> {
        self.core_ghz
            .as_ref()
            .map_err(|why| NoModel(format!("core clock unknown: {why}")))
    }

    /// The core's published figures, or why there are none and what that means.
    pub fn uarch(&self) -> Result<&'static Uarch, NoModel> {
        self.cpu.clone().map_err(|why| {
            NoModel(format!(
                "{why}; add the core to crates/oslab-model/src/uarch.rs"
            ))
        })
    }

    /// What a mitigation paid at every kernel return adds to `kernel_cycles` of kernel work: the
    /// model with the returns and their cost as inputs, and the returns with the cycles each
    /// (none without such a mitigation).
    pub(crate) fn return_tax(
        &self,
        model: Model,
        kernel_cycles: f64,
    ) -> (Model, Option<(f64, f64)>) {
        match &self.return_mitigation {
            Some((name, each, what)) if kernel_cycles > 0.0 => {
                let model = model
                    .input(
                        "kernel_cycles_per_return",
                        KERNEL_CYCLES_PER_RETURN,
                        format!("estimate: a return per {KERNEL_CYCLES_PER_RETURN:.0} cycles of kernel work (the null system call's path in Linux 6.x: about {NULL_SYSCALL_RETURNS:.0} returns in {:.0} cycles)", NULL_SYSCALL_CYCLES),
                    )
                    .input(
                        "return_mitigation_cycles",
                        *each,
                        format!("kernel: /sys/devices/system/cpu/vulnerabilities: {name} ({what})"),
                    );
                (
                    model,
                    Some((kernel_cycles / KERNEL_CYCLES_PER_RETURN, *each)),
                )
            }
            _ => (model, None),
        }
    }

    /// Cycles a kernel entry and exit cost for the active mitigations, and what they are.
    pub fn mitigation_cycles(&self) -> (f64, String) {
        // + 0.0: an empty sum is -0.0.
        let cycles = self.entry_mitigations.iter().map(|m| m.1).sum::<f64>() + 0.0;
        let names = self
            .entry_mitigations
            .iter()
            .map(|(n, c, what)| format!("{n} {c:.0} ({what})"))
            .collect::<Vec<_>>()
            .join(", ");
        (
            cycles,
            if names.is_empty() {
                "none of the entry mitigations oslab knows is active".into()
            } else {
                names
            },
        )
    }
}

impl Spec {
    /// The model's inputs for reading, a line each: what the core is and its published figures,
    /// the clock, the memory, what a kernel entry costs, the idle state.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        out.push((
            "core",
            match &self.cpu {
                Ok(u) => format!(
                    "{}: load-to-use L1 {} / L2 {} / L3 {} cycles, DRAM about {} ns; TLB {} + {} entries; {} misses in flight{}",
                    u.name, u.latency[0], u.latency[1], u.latency[2], u.dram_ns, u.tlb[0], u.tlb[1], u.fill_buffers,
                    self.presented.as_ref().map_or(String::new(), |why| format!(" ({why})"))
                ),
                Err(why) => format!("no published figures: {why}"),
            },
        ));
        out.push((
            "core clock",
            match &self.core_ghz {
                Ok(f) => format!("{:.2} GHz ({})", f.value, f.source),
                Err(why) => format!("unknown: {why}"),
            },
        ));
        out.push((
            "memory",
            match &self.memory {
                Ok(m) => format!(
                    "{}: peak {:.1} GB/s ({})",
                    m.describe(),
                    m.peak_gbps(),
                    m.source
                ),
                Err(why) => why.to_string(),
            },
        ));
        let (cycles, what) = self.mitigation_cycles();
        out.push((
            "kernel entry",
            format!("+{cycles:.0} cycles for mitigations: {what}"),
        ));
        if let Some((name, cycles, what)) = &self.return_mitigation {
            out.push((
                "kernel returns",
                format!("+{cycles:.0} cycles each, 1 per {KERNEL_CYCLES_PER_RETURN:.0} cycles of kernel work: {name} ({what})"),
            ));
        }
        out.push((
            "idle exit",
            match &self.idle_exit_us {
                Ok(f) => format!("{} µs ({})", f.value, f.source),
                Err(why) => format!("unknown: {why}"),
            },
        ));
        out
    }
}

impl Spec {
    /// Cycles at the measured core clock, in ns, recording the clock as an input.
    pub(crate) fn at_clock(&self, model: Model, cycles: f64) -> Outcome {
        let ghz = self.ghz()?;
        let mut model = model.figure("core_ghz", ghz);
        model.value = cycles / ghz.value;
        model.formula = format!("{} / {:.2} GHz", model.formula, ghz.value);
        Ok(model)
    }
}

/// The core's published figures. Under a hypervisor whose cpu name carries no model number but
/// says a server ("Intel(R) Xeon(R) Processor") while cpuid's model number is a client core's,
/// the number is one the hypervisor presents: the server core of that generation is taken, and
/// the second value says so.
fn core_of(fingerprint: &Fingerprint) -> (Result<&'static Uarch, NoModel>, Option<String>) {
    let found = uarch::lookup(
        fingerprint.cpu_vendor.as_deref(),
        fingerprint.cpu_signature.as_deref(),
    );
    let (Ok(client), Some(h), Some(name)) = (
        &found,
        &fingerprint.hypervisor,
        fingerprint.cpu_model.as_deref(),
    ) else {
        return (found, None);
    };
    let generic = !name.chars().any(|c| c.is_ascii_digit());
    let server_name = name.contains("Xeon") || name.contains("EPYC");
    match uarch::server_sibling(client) {
        Some(server) if generic && server_name => {
            let why = format!(
                "the hypervisor ({h}) presents model {} ({}) under a server's name (\"{}\"): the figures of that generation's server core",
                fingerprint.cpu_signature.as_deref().unwrap_or("?"),
                client.name,
                oslab_core::text::one_line(name)
            );
            (Ok(server), Some(why))
        }
        _ => (found, None),
    }
}

/// Whether a mitigation's state names the costly variant (`"; IBRS"` must not match
/// "Enhanced / Automatic IBRS").
fn costly(state: &str, text: &str) -> bool {
    // A state the kernel reports as vulnerable is costly only where the table names it whole.
    if text.starts_with("Vulnerable: ") {
        return state == text;
    }
    if !state.starts_with("Mitigation") {
        return false;
    }
    match text.strip_prefix("; ") {
        Some(word) => state
            .split([';', ':'])
            .any(|part| part.trim() == word || part.trim() == format!("Mitigation: {word}")),
        None => state.contains(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costly_variants_are_told_from_cheap_ones() {
        assert!(costly("Mitigation: PTI", "PTI"));
        assert!(!costly("Not affected", "PTI"));
        assert!(!costly(
            "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional",
            "; IBRS"
        ));
        assert!(costly("Mitigation: IBRS; IBPB: conditional", "; IBRS"));
        assert!(costly(
            "Mitigation: Retpolines; BHI: SW loop, KVM: SW loop",
            "BHI: SW loop"
        ));
        // Safe RET applied without its microcode still runs on every kernel return; buffers
        // "attempted" without microcode are not cleared, so they cost nothing.
        let srso = "Vulnerable: Safe RET, no microcode";
        assert!(costly(srso, srso));
        assert!(!costly(srso, "Safe RET"));
        assert!(!costly(
            "Vulnerable: Clear CPU buffers attempted, no microcode",
            "Clear CPU buffers"
        ));
        assert!(costly(
            "Mitigation: Aligned branch/return thunks",
            "return thunks"
        ));
    }

    #[test]
    fn a_client_model_number_under_a_server_name_takes_the_server_core() {
        let mut fp = Fingerprint {
            hostname: "test".into(),
            cpu_vendor: None,
            cpu_model: None,
            cpu_signature: None,
            microcode: None,
            packages: 1,
            cores: 1,
            threads: 1,
            topology: oslab_core::Topology {
                cpus: Vec::new(),
                caches: Vec::new(),
                nodes: Vec::new(),
            },
            memory: None,
            kernel: "test".into(),
            clocksource: None,
            clock: oslab_core::Clock::monotonic("test".into(), false),
            governor: None,
            turbo: None,
            smt: None,
            hypervisor: None,
            mitigations: Vec::new(),
            thp: None,
            thp_defrag: None,
            cmdline: None,
            seccomp: None,
            audit: None,
            tick_hz: None,
            scheduler: Vec::new(),
        };
        fp.cpu_vendor = Some("GenuineIntel".into());
        fp.cpu_signature = Some("6/167/1".into());
        fp.cpu_model = Some("Intel(R) Xeon(R) Processor".into());
        fp.hypervisor = Some("KVM".into());
        let (cpu, why) = core_of(&fp);
        assert!(cpu.unwrap().name.contains("Ice Lake-SP"));
        assert!(why.unwrap().contains("presents model 6/167/1"));
        // A named product, bare metal, or a client's name keep cpuid's core.
        for (name, h) in [
            ("Intel(R) Core(TM) i7-11700K", Some("KVM")),
            ("Intel(R) Xeon(R) Processor", None),
            ("Intel Core Processor (Icelake)", Some("KVM")),
        ] {
            fp.cpu_model = Some(name.into());
            fp.hypervisor = h.map(String::from);
            let (cpu, why) = core_of(&fp);
            assert!(
                cpu.unwrap().name.contains("client") && why.is_none(),
                "{name}"
            );
        }
    }
}
