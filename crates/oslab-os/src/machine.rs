//! What the machine is and what it lets us do, read: the fingerprint, the privileges, the PMU,
//! the limits and the environment's warnings (their types are oslab-core's `machine`).

use crate::cpuinfo;
use oslab_core::clock::Clock;
use oslab_core::cpuset::CpuSet;
use oslab_core::machine::*;
use oslab_core::topology::{Topology, TopologyError};
use std::fs;

/// Reads the machine, calibrating the clock for `calibration`.
pub fn read(
    calibration: std::time::Duration,
) -> Result<Machine, oslab_core::topology::TopologyError> {
    let topology = crate::topology::read()?;
    let clock = crate::clock::detect(calibration);
    let fingerprint = fingerprint(&topology, &clock);
    let environment = environment(&fingerprint);
    Ok(Machine {
        topology,
        fingerprint,
        environment,
    })
}

/// What this process may use and how the kernel pools and tiers memory (the cpuset, hugepage
/// pools, memory tiers, a cgroup's cpu quota and pids), read from /proc and /sys.
pub fn limits() -> Limits {
    let status = read_trim("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    };
    let list = |t: Option<String>| t.and_then(|t| oslab_core::CpuSet::parse_list(&t).ok());
    let online_cpus = list(read_trim("/sys/devices/system/cpu/online"));
    let memory_nodes = list(read_trim("/sys/devices/system/node/has_memory"));
    let isolated = crate::placement::isolated();
    let mut parts = Vec::new();
    if let (Some(all), Some(mine)) = (online_cpus, list(field("Cpus_allowed_list"))) {
        if all
            .iter()
            .any(|c| !mine.contains(c) && !isolated.contains(c))
        {
            parts.push(format!("cpus {} of {}", mine.to_list(), all.to_list()));
        }
    }
    if let (Some(all), Some(mine)) = (memory_nodes, list(field("Mems_allowed_list"))) {
        if all.iter().any(|n| !mine.contains(n)) {
            let mine: oslab_core::CpuSet = mine.iter().filter(|n| all.contains(*n)).collect();
            parts.push(format!(
                "memory nodes {} of {}",
                mine.to_list(),
                all.to_list()
            ));
        }
    }
    let entries = |dir: &str| -> Vec<(String, std::path::PathBuf)> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let number =
        |p: std::path::PathBuf| read_trim(&p.to_string_lossy()).and_then(|v| v.parse::<u64>().ok());
    let hugepages = entries("/sys/kernel/mm/hugepages")
        .into_iter()
        .filter_map(|(name, path)| {
            let size = name.strip_prefix("hugepages-")?.to_string();
            Some((
                size,
                number(path.join("nr_hugepages"))?,
                number(path.join("free_hugepages"))?,
            ))
        })
        .collect();
    let memory_tiers = entries("/sys/devices/virtual/memory_tiering")
        .into_iter()
        .filter(|(name, _)| name.starts_with("memory_tier"))
        .filter_map(|(name, path)| {
            Some((name, read_trim(&path.join("nodelist").to_string_lossy())?))
        })
        .collect();
    Limits {
        cpuset: (!parts.is_empty()).then(|| parts.join("; ")),
        hugepages,
        memory_tiers,
        cpu_quota: crate::cgroup::cpu_quota(),
        pids_left: crate::cgroup::pids_left(),
    }
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn uname() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid out-pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).to_string()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.version)
    )
}

/// Host name.
pub fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

/// The hypervisor vendor: cpuid leaf 0x40000000 signature, else /sys/hypervisor/type.
pub fn hypervisor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        let (_, _, ecx1, _) = crate::clock::arch::cpuid(1, 0);
        if ecx1 & (1 << 31) != 0 {
            let (_, b, c, d) = crate::clock::arch::cpuid(0x4000_0000, 0);
            let sig: Vec<u8> = [b, c, d].iter().flat_map(|r| r.to_le_bytes()).collect();
            let s = String::from_utf8_lossy(&sig)
                .trim_matches('\0')
                .trim()
                .to_string();
            let name = match s.as_str() {
                "KVMKVMKVM" => "KVM".to_string(),
                "Microsoft Hv" => "Hyper-V".to_string(),
                "VMwareVMware" => "VMware".to_string(),
                "XenVMMXenVMM" => "Xen".to_string(),
                "TCGTCGTCGTCG" => "QEMU (TCG)".to_string(),
                "" => "unknown hypervisor".to_string(),
                other => other.to_string(),
            };
            return Some(name);
        }
    }
    read_trim("/sys/hypervisor/type")
}

fn mitigations() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir("/sys/devices/system/cpu/vulnerabilities")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let state = fs::read_to_string(e.path()).ok()?;
                    Some((
                        e.file_name().to_string_lossy().to_string(),
                        state.trim().to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn turbo() -> Option<bool> {
    if let Some(v) = read_trim("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Some(v == "0");
    }
    read_trim("/sys/devices/system/cpu/cpufreq/boost").map(|v| v == "1")
}

fn tick_hz() -> Option<u32> {
    config_hz().or_else(jiffies_hz)
}

/// CONFIG_HZ from /boot/config-$(uname -r).
fn config_hz() -> Option<u32> {
    let release = uname();
    let rel = release.split_whitespace().nth(1)?.to_string();
    let cfg = fs::read_to_string(format!("/boot/config-{rel}")).ok()?;
    cfg.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// CONFIG_HZ from /proc/timer_list (root only on most kernels): its time since boot and jiffies,
/// read together from its head (the file grows with the cpus).
fn jiffies_hz() -> Option<u32> {
    use std::io::{BufRead, BufReader};
    let file = fs::File::open("/proc/timer_list").ok()?;
    let mut now_ns = None;
    for line in BufReader::new(file)
        .lines()
        .take(1000)
        .map_while(Result::ok)
    {
        if let Some(v) = line.strip_prefix("now at ") {
            now_ns = v.split_whitespace().next()?.parse::<u64>().ok();
        } else if let Some(v) = line.strip_prefix("jiffies: ") {
            return hz_from_jiffies(v.trim().parse().ok()?, now_ns? as f64 / 1e9);
        }
    }
    None
}

/// The tick rate from jiffies `uptime_s` after boot. The kernel starts jiffies 300 s of ticks
/// before they wrap 32 bits, so jiffies = 2^32 + HZ x (uptime - 300 s). Only a rate kernels are
/// built with (100, 250, 300, 1000 Hz) within 1% is taken, and only after 10 minutes of uptime,
/// when the moment the tick started counting no longer matters.
fn hz_from_jiffies(jiffies: u64, uptime_s: f64) -> Option<u32> {
    if uptime_s < 600.0 {
        return None;
    }
    let hz = (jiffies as f64 - 4_294_967_296.0) / (uptime_s - 300.0);
    [100, 250, 300, 1000]
        .into_iter()
        .find(|&h| (hz / f64::from(h) - 1.0).abs() < 0.01)
}

/// The chosen word of a sysfs choice such as THP's: "always [madvise] never" -> "madvise".
fn chosen(path: &str) -> Option<String> {
    read_trim(path)?
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
}

/// This process's seccomp mode, from /proc/self/status.
fn seccomp() -> Option<String> {
    fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .map(|v| v.trim().to_string())
}

/// Reads the fingerprint of this machine, with the clock already calibrated.
pub fn fingerprint(topology: &Topology, clock: &Clock) -> Fingerprint {
    let memory = fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let signature = match (
        cpuinfo::field("cpu family"),
        cpuinfo::field("model"),
        cpuinfo::field("stepping"),
    ) {
        (Some(f), Some(m), Some(s)) => Some(format!("{f}/{m}/{s}")),
        // Arm: implementer/part/variant from the MIDR, e.g. "0x41/0xd0c/0x3".
        _ => match (
            cpuinfo::field("CPU implementer"),
            cpuinfo::field("CPU part"),
            cpuinfo::field("CPU variant"),
        ) {
            (Some(i), Some(p), v) => Some(format!("{i}/{p}/{}", v.unwrap_or_default())),
            _ => None,
        },
    };
    Fingerprint {
        hostname: hostname(),
        cpu_vendor: cpuinfo::field("vendor_id").or_else(|| cpuinfo::field("CPU implementer")),
        cpu_model: cpuinfo::field("model name").or_else(|| cpuinfo::field("Hardware")),
        cpu_signature: signature,
        microcode: cpuinfo::field("microcode"),
        packages: topology.packages(),
        cores: topology.cores(),
        threads: topology.cpus.len(),
        topology: topology.clone(),
        memory,
        kernel: uname(),
        clocksource: read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        clock: clock.clone(),
        governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        turbo: turbo(),
        smt: read_trim("/sys/devices/system/cpu/smt/control"),
        hypervisor: hypervisor(),
        mitigations: mitigations(),
        thp: chosen("/sys/kernel/mm/transparent_hugepage/enabled"),
        thp_defrag: chosen("/sys/kernel/mm/transparent_hugepage/defrag"),
        cmdline: read_trim("/proc/cmdline"),
        seccomp: seccomp(),
        audit: crate::audit::state(),
        tick_hz: tick_hz(),
        scheduler: scheduler(),
    }
}

/// How this process is scheduled, as it starts: the kernel's autogroup and timer migration, its
/// nice value and scheduling class.
fn scheduler() -> Vec<(String, String)> {
    let on_off = |path: &str| {
        read_trim(path).map(|v| match v.as_str() {
            "0" => "off".to_string(),
            "1" => "on".to_string(),
            other => other.to_string(),
        })
    };
    let mut out = Vec::new();
    for (name, path) in [
        ("autogroup", "/proc/sys/kernel/sched_autogroup_enabled"),
        ("timer migration", "/proc/sys/kernel/timer_migration"),
    ] {
        if let Some(v) = on_off(path) {
            out.push((name.to_string(), v));
        }
    }
    // SAFETY: plain queries of this process; errno is cleared first, as getpriority may
    // return -1 as a value.
    let (nice, class) = unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        let nice = (*libc::__errno_location() == 0).then_some(nice);
        (nice, libc::sched_getscheduler(0))
    };
    if let Some(n) = nice {
        out.push(("nice".to_string(), n.to_string()));
    }
    let class = match class {
        libc::SCHED_OTHER => "other",
        libc::SCHED_BATCH => "batch",
        libc::SCHED_IDLE => "idle",
        libc::SCHED_FIFO => "fifo",
        libc::SCHED_RR => "rr",
        _ => "",
    };
    if !class.is_empty() {
        out.push(("class".to_string(), class.to_string()));
    }
    out
}

fn capability_bits() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

/// Reads what this process may do.
pub fn privileges() -> Privileges {
    let caps = capability_bits();
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid out-pointer.
    let memlock = if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } == 0
        && lim.rlim_cur != libc::RLIM_INFINITY
    {
        Some(lim.rlim_cur)
    } else {
        None
    };
    let user_namespace = in_user_namespace();
    Privileges {
        // SAFETY: geteuid has no preconditions.
        root: unsafe { libc::geteuid() } == 0 && !user_namespace,
        cap_perfmon: (has(38) || has(21)) && !user_namespace,
        cap_sys_nice: has(23),
        user_namespace,
        sched_fifo: crate::affinity::fifo_permitted(),
        perf_event_paranoid: read_trim("/proc/sys/kernel/perf_event_paranoid")
            .and_then(|v| v.parse().ok()),
        memlock_limit: memlock,
    }
}

/// Whether this process runs in a user namespace other than the kernel's own: the initial one
/// maps every id to itself ("0 0 4294967295").
pub fn in_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|m| {
        let f: Vec<&str> = m.split_whitespace().collect();
        f != ["0", "0", "4294967295"]
    })
}

/// Tries to open a hardware cycles counter on this thread.
pub fn pmu_status() -> PmuStatus {
    let reason = match crate::perf::Counter::open(
        crate::perf::TYPE_HARDWARE,
        crate::perf::HW_CPU_CYCLES,
        false,
    ) {
        Ok(_) => {
            return PmuStatus {
                available: true,
                reason: None,
            }
        }
        Err(e)
            if e.raw_os_error()
                .is_some_and(|c| [libc::ENOENT, libc::ENODEV, libc::EOPNOTSUPP].contains(&c)) =>
        {
            "no PMU (virtualized?): hardware events are not supported here".to_string()
        }
        Err(e) => crate::perf::explain(&e),
    };
    PmuStatus {
        available: false,
        reason: Some(reason),
    }
}

/// Reads the environment and derives warnings from it and the fingerprint.
pub fn environment(fp: &Fingerprint) -> Environment {
    let privileges = privileges();
    let pmu = pmu_status();
    let la = read_trim("/proc/loadavg");
    let loadavg = la
        .as_deref()
        .and_then(|s| s.split_whitespace().next()?.parse().ok());
    let runnable = la
        .as_deref()
        .and_then(|s| s.split_whitespace().nth(3)?.split('/').next()?.parse().ok());
    let cmdline = read_trim("/proc/cmdline").unwrap_or_default();
    let isolation = cmdline
        .split_whitespace()
        .filter(|w| {
            ["isolcpus=", "nohz_full=", "rcu_nocbs=", "irqaffinity="]
                .iter()
                .any(|p| w.starts_with(p))
        })
        .map(str::to_string)
        .collect();
    let mut env = Environment {
        privileges,
        pmu,
        loadavg,
        runnable,
        numa_balancing: read_trim("/proc/sys/kernel/numa_balancing"),
        isolation,
        warnings: Vec::new(),
        limits: limits(),
        other_work: crate::others::other_work(crate::others::WINDOW),
    };
    env.warnings = warnings(fp, &env);
    env
}

/// Processes and threads the suite may hold at once, at most: a team of workers per cpu, their
/// helpers, a fork's child and its guard.
const PIDS_NEEDED: u64 = 64;

fn warn(kind: &str, message: String, remedy: &str) -> Warning {
    Warning::new(kind, message, remedy)
}

fn warnings(fp: &Fingerprint, env: &Environment) -> Vec<Warning> {
    let mut w = Vec::new();
    // Hooks the tests and scripts/false-alarms use to make a change on purpose: a run under one
    // is not the machine's, whoever set it.
    for var in ["OSLAB_TEST_EXTRA_WORK", "OSLAB_INJECT_GETPPID_WORK"] {
        if let Some(v) = std::env::var(var)
            .ok()
            .filter(|v| v.parse::<u64>().is_ok_and(|n| n > 0))
        {
            w.push(warn(
                "test-hook",
                format!("{var}={v} is set: figures are slowed on purpose (a test hook), the rows it touches say so"),
                &format!("unset {var}"),
            ));
        }
    }
    if fp.emulated_cpu() {
        w.push(warn(
            "emulated",
            format!("the CPU is emulated ({}): {EMULATED}", fp.hypervisor.as_deref().unwrap_or("QEMU")),
            "measure costs where the CPU runs natively (bare metal, or a KVM guest); use emulated guests for topology and placement",
        ));
    } else if let Some(h) = &fp.hypervisor {
        w.push(warn(
            "hypervisor",
            format!("running under {h}: the host shares the CPUs, identical runs can differ by 10-50%, and cpuid traps to the hypervisor"),
            "compare ratios of interleaved runs, or measure on bare metal",
        ));
    }
    if let Some(g) = &fp.governor {
        if g != "performance" {
            w.push(warn(
                "governor",
                format!("cpufreq governor is {g}: the clock rate may change during a measurement"),
                "cpupower frequency-set -g performance",
            ));
        }
    }
    if fp.turbo == Some(true) {
        w.push(warn(
            "turbo",
            "turbo/boost is on: core cycles and TSC cycles differ, and the rate depends on load and temperature".into(),
            "disable it for stable numbers (intel_pstate/no_turbo=1 or cpufreq/boost=0)",
        ));
    }
    if fp.clock.fallback_reason.is_some() {
        w.push(warn(
            "clock",
            format!("not using the TSC: {}", fp.clock.describe()),
            "results are in ns from clock_gettime; cycle counts are not available",
        ));
    }
    if let Some(o) = env
        .other_work
        .as_ref()
        .filter(|o| o.cpus >= OtherWork::COMPETES)
    {
        w.push(warn(
            "other-work",
            format!("other processes were busy as oslab began ({}): they compete for the cpus, caches and memory", o.describe()),
            "stop it (a stray process left by an earlier job is a common cause), or pin oslab with --cpu to a cpu it does not use",
        ));
    } else if let (Some(la), threads) = (env.loadavg, fp.threads) {
        if la > threads as f64 * 0.25 {
            w.push(warn(
                "load",
                format!("load average {la:.2} on {threads} cpus: other work competes for the cpus"),
                "stop other work, or pin oslab with --cpu to an idle cpu",
            ));
        }
    }
    if !env.pmu.available {
        w.push(warn(
            "pmu",
            env.pmu.reason.clone().unwrap_or_else(|| "no PMU".into()),
            "hardware-counter figures are reported as unavailable; software events still work",
        ));
    }
    if !env.privileges.sched_fifo {
        w.push(warn(
            "sched_fifo",
            "SCHED_FIFO not permitted: measuring threads run at normal priority and can be preempted".into(),
            "run as root or grant CAP_SYS_NICE",
        ));
    }
    if let Some(quota) = env.limits.cpu_quota.filter(|q| *q < fp.threads as f64) {
        w.push(warn(
            "cpu-quota",
            format!("a cgroup allows this process {quota:.2} cpus' worth of time, of {} cpus: a period it is throttled in stretches whatever it interrupts, and threads beyond the quota wait their turn", fp.threads),
            "measure outside the quota (a job or container with whole cpus), or read the rows that run threads on every cpu as the quota's",
        ));
    }
    if let Some(left) = env.limits.pids_left.filter(|l| *l < PIDS_NEEDED) {
        w.push(warn(
            "pids",
            format!("a cgroup allows {left} more processes and threads: the probes that start them (task, switch, bandwidth's threads) may be refused"),
            "raise the group's pids.max, or run where it is not limited",
        ));
    }
    if env.isolation.is_empty() && fp.threads > 1 {
        w.push(warn(
            "isolation",
            "no isolated cpus (isolcpus/nohz_full): timer ticks and other tasks interrupt the measuring cpu".into(),
            "boot with isolcpus= and nohz_full= for the measuring cpus",
        ));
    }
    w
}

/// The machine a placement is planned for, its host name and the cpus a plan may use: the one
/// an hwloc XML `file` describes (`lstopo --of xml`, `oslab info --hwloc`; every cpu, its host
/// name or the file's), else this one (the cpus this process may use). A file that is no
/// machine is refused with why.
pub fn planned(
    file: Option<&std::path::Path>,
) -> Result<(Topology, String, oslab_core::cpuset::CpuSet), PlannedError> {
    let Some(file) = file else {
        let mut t = crate::topology::read()?;
        let (allowed, mems) = allowed(&t)?;
        // Memory nodes a cpuset keeps from this process are no place for a rank's memory.
        if let Some(mems) = mems {
            t.nodes.retain(|n| mems.contains(n.id));
        }
        return Ok((t, hostname(), allowed));
    };
    /// hwloc's XML of a thousand-cpu machine is a few MB.
    const LIMIT: u64 = 64 << 20;
    let bytes = oslab_files::read_bounded(file, LIMIT, oslab_files::Links::Follow)
        .map_err(|e| PlannedError::File(e.to_string()))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut d = oslab_core::topology::hwloc::read(&text)
        .map_err(|why| PlannedError::File(format!("{}: {why}", file.display())))?;
    if let Some(mems) = &d.allowed_nodes {
        d.topology.nodes.retain(|n| mems.contains(n.id));
    }
    let host = d.host.unwrap_or_else(|| file.display().to_string());
    Ok((d.topology, host, d.allowed))
}

/// A machine to describe: its topology, its name, and what may be used of it (cpus, and memory
/// nodes when restricted).
pub type Described = (Topology, String, (CpuSet, Option<CpuSet>));

/// The machine `info --hwloc` describes: this one (with what this process may use), or the
/// one whose file system was copied to `root` (every cpu it lists; named by the directory).
pub fn described(root: Option<&std::path::Path>) -> Result<Described, TopologyError> {
    let Some(root) = root else {
        let t = crate::topology::read()?;
        let allowed = allowed(&t).map_err(|source| TopologyError::Read {
            path: "/proc/self/status".into(),
            source,
        })?;
        return Ok((t, hostname(), allowed));
    };
    let t = crate::topology::read_from(&root.join("sys/devices/system"))?;
    let all = t.online();
    Ok((t, root.display().to_string(), (all, None)))
}

/// What this process may use of `t`: its cpus (affinity, online), and its memory nodes when a
/// cpuset restricts them (as lstopo's `allowed_cpuset` and `allowed_nodeset`).
pub fn allowed(
    t: &Topology,
) -> std::io::Result<(
    oslab_core::cpuset::CpuSet,
    Option<oslab_core::cpuset::CpuSet>,
)> {
    let cpus = crate::affinity::get_affinity(0)?.intersection(&t.online());
    let nodes = crate::numa::Numa::mems_allowed(&crate::numa::LinuxNuma::new(t));
    Ok((cpus, nodes))
}

/// Why the machine to plan for cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum PlannedError {
    /// The file named is unreadable or no machine (the user's to mend).
    #[error("{0}")]
    File(String),
    /// This machine's topology could not be read.
    #[error(transparent)]
    Topology(#[from] oslab_core::topology::TopologyError),
    /// This process's affinity could not be read.
    #[error("reading this process's cpu affinity: {0}")]
    Affinity(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_s_cpu_quota_and_pids_limit_are_warned_of() {
        let topo = crate::topology::read().unwrap();
        let fp = fingerprint(&topo, &Clock::monotonic("test".into(), false));
        let mut env = environment(&fp);
        env.limits.cpu_quota = Some(0.5);
        env.limits.pids_left = Some(10);
        let kinds: Vec<String> = warnings(&fp, &env).into_iter().map(|w| w.kind).collect();
        assert!(kinds.iter().any(|k| k == "cpu-quota"), "{kinds:?}");
        assert!(kinds.iter().any(|k| k == "pids"), "{kinds:?}");
        // A quota of every cpu's time, and room for the suite's threads: nothing to say.
        env.limits.cpu_quota = Some(fp.threads as f64);
        env.limits.pids_left = Some(10_000);
        let kinds: Vec<String> = warnings(&fp, &env).into_iter().map(|w| w.kind).collect();
        assert!(
            !kinds.iter().any(|k| k == "cpu-quota" || k == "pids"),
            "{kinds:?}"
        );
    }

    #[test]
    fn the_tick_rate_follows_from_jiffies_and_uptime() {
        // Read together on a 250 Hz kernel 3,885 s after boot.
        assert_eq!(hz_from_jiffies(4_295_863_522, 3885.209), Some(250));
        assert_eq!(
            hz_from_jiffies(4_294_967_296 + 1000 * 3600, 3900.0),
            Some(1000)
        );
        // Too soon after boot, or a rate no kernel is built with: unknown, never guessed.
        assert_eq!(hz_from_jiffies(4_294_967_296 + 250 * 100, 400.0), None);
        assert_eq!(hz_from_jiffies(4_294_967_296 + 180 * 3600, 3900.0), None);
        // Where the kernel lets us read it, it is one of the rates kernels are built with.
        if let Some(hz) = jiffies_hz() {
            assert!([100, 250, 300, 1000].contains(&hz), "{hz}");
        }
    }

    #[test]
    fn fingerprint_of_this_machine_is_plausible() {
        let topo = crate::topology::read().unwrap();
        let clock = crate::clock::detect(std::time::Duration::from_millis(20));
        let fp = fingerprint(&topo, &clock);
        assert!(fp.threads >= 1 && fp.cores >= 1 && fp.packages >= 1);
        assert!(fp.kernel.starts_with("Linux"));
        assert!(fp.memory.unwrap_or(0) > 64 << 20);
        let env = environment(&fp);
        // With no PMU the reason must say so; with one, no reason.
        assert_eq!(env.pmu.available, env.pmu.reason.is_none());
        for w in &env.warnings {
            assert!(!w.remedy.is_empty(), "warning {} has no remedy", w.kind);
        }
    }
}
