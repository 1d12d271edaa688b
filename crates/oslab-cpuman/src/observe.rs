//! What the live CPU manager reads from the kernel: where each thread of a job ran since the last
//! look (/proc task schedstat + processor), context switches and busy time per CPU (the
//! sched:sched_switch tracepoint counted per CPU, /proc/stat), pages migrated (/proc/vmstat),
//! and the automatic NUMA balancing switch, restored when the guard drops.

use super::outcome::CpuBursts;
use oslab_core::reason::Unavailable;
use oslab_os::perf::{self, Counter};
use std::collections::BTreeMap;
use std::fs;

/// One thread's progress since the previous sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// Thread id.
    pub tid: i32,
    /// CPU it was last on.
    pub cpu: usize,
    /// Time it ran since the last sample, ns.
    pub ns: u64,
}

/// Samples the threads of one process.
#[derive(Debug, Default)]
pub struct TaskSampler {
    last: BTreeMap<i32, u64>,
}

impl TaskSampler {
    /// Threads of `pid` that ran since the last call (all of them on the first call), and the
    /// ids of every live thread. A process that is gone yields nothing.
    pub fn sample(&mut self, pid: i32) -> (Vec<Ran>, Vec<i32>) {
        let mut ran = Vec::new();
        let mut live = Vec::new();
        let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
            return (ran, live);
        };
        let mut now = BTreeMap::new();
        for entry in dir.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let base = format!("/proc/{pid}/task/{tid}");
            // A thread can exit between the listing and the reads: skip it then.
            let (Some(on_cpu), Some(cpu)) = (schedstat_ns(&base), last_cpu(&base)) else {
                continue;
            };
            live.push(tid);
            let before = self.last.get(&tid).copied().unwrap_or(0);
            if on_cpu > before {
                ran.push(Ran {
                    tid,
                    cpu,
                    ns: on_cpu - before,
                });
            }
            now.insert(tid, on_cpu);
        }
        self.last = now;
        (ran, live)
    }
}

fn schedstat_ns(base: &str) -> Option<u64> {
    fs::read_to_string(format!("{base}/schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn last_cpu(base: &str) -> Option<usize> {
    let stat = fs::read_to_string(format!("{base}/stat")).ok()?;
    // Field 39 (processor), counted after the command name's closing parenthesis.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(36)?
        .parse()
        .ok()
}

/// Busy (not idle, not iowait) time of every CPU so far, in USER_HZ ticks, from /proc/stat.
fn busy_ticks() -> BTreeMap<usize, u64> {
    let text = fs::read_to_string("/proc/stat").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu: usize = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal ...; steal is time not had.
            let busy = v.iter().take(7).sum::<u64>() - v.get(3)? - v.get(4).unwrap_or(&0);
            Some((cpu, busy))
        })
        .collect()
}

/// Context switches and busy time per CPU over an interval.
pub struct BurstCounter {
    counters: Vec<(usize, Counter)>,
    busy: BTreeMap<usize, u64>,
}

impl BurstCounter {
    /// Starts counting sched_switch on `cpus`; the error says why it cannot (permission).
    pub fn start(cpus: &[usize]) -> Result<BurstCounter, Unavailable> {
        let id = perf::tracepoint_id("sched", "sched_switch")
            .map_err(|e| format!("no sched:sched_switch tracepoint: {e}"))?;
        let mut counters = Vec::new();
        for &cpu in cpus {
            let c = Counter::open_cpu(perf::TYPE_TRACEPOINT, id, cpu)
                .map_err(|e| format!("counting context switches per CPU: {}", perf::explain(&e)))?;
            c.start().map_err(|e| e.to_string())?;
            counters.push((cpu, c));
        }
        Ok(BurstCounter {
            counters,
            busy: busy_ticks(),
        })
    }

    /// The counts since `start`.
    pub fn finish(self) -> Result<Vec<CpuBursts>, Unavailable> {
        let busy = busy_ticks();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        self.counters
            .iter()
            .map(|(cpu, c)| {
                let switches = c.stop().map_err(|e| e.to_string())?;
                let ticks = busy.get(cpu).unwrap_or(&0) - self.busy.get(cpu).unwrap_or(&0);
                Ok(CpuBursts {
                    cpu: *cpu,
                    switches,
                    busy_s: ticks as f64 / hz,
                })
            })
            .collect()
    }
}

/// Pages the kernel migrated so far (system-wide), from /proc/vmstat.
pub fn pages_migrated() -> Option<u64> {
    fs::read_to_string("/proc/vmstat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("pgmigrate_success "))?
        .trim()
        .parse()
        .ok()
}

const BALANCING: &str = oslab_os::pending::NUMA_BALANCING;

pub use oslab_os::balancing::BalancingGuard;

/// Why automatic NUMA balancing could not be switched on here, found before anything starts.
pub fn balancing_check() -> Result<(), Unavailable> {
    let path = std::ffi::CString::new(BALANCING).map_err(|e| e.to_string())?;
    if !std::path::Path::new(BALANCING).exists() {
        return Err(format!("{BALANCING} does not exist (a kernel without CONFIG_NUMA_BALANCING cannot migrate pages automatically)").into());
    }
    // SAFETY: a valid C string; access only reads it.
    if unsafe { libc::access(path.as_ptr(), libc::W_OK) } != 0 {
        return Err(format!(
            "--migration kernel switches automatic NUMA balancing on for the run, and this user may not write {BALANCING} (run as root, or use --migration manual or off)"
        ).into());
    }
    Ok(())
}

/// Pages of `pid` per node in 4 KiB pages, from /proc/PID/numa_maps (each mapping's `N<node>=`
/// counts, in its `kernelpagesize_kB`); None when unreadable (the process ended).
pub fn node_pages(pid: i32) -> Option<BTreeMap<usize, u64>> {
    fs::read_to_string(format!("/proc/{pid}/numa_maps"))
        .ok()
        .map(|text| parse_numa_maps(&text))
}

/// Sums the `N<node>=<pages>` fields of numa_maps lines, scaled to 4 KiB pages.
fn parse_numa_maps(text: &str) -> BTreeMap<usize, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let kib = fields
            .iter()
            .find_map(|f| f.strip_prefix("kernelpagesize_kB="))
            .and_then(|k| k.parse::<u64>().ok())
            .unwrap_or(4);
        for f in &fields {
            let Some((node, pages)) = f.strip_prefix('N').and_then(|r| r.split_once('=')) else {
                continue;
            };
            if let (Ok(node), Ok(pages)) = (node.parse::<usize>(), pages.parse::<u64>()) {
                *out.entry(node).or_insert(0) += pages * (kib / 4).max(1);
            }
        }
    }
    out
}

/// Pages a move to `to` brought, from numa_maps read before and after it: those that both left
/// the other nodes and arrived on `to`. A job runs on meanwhile: its first touches arrive on
/// `to` without leaving anywhere (counting arrivals alone read 1950 pages where the kernel
/// migrated 1867 over the whole run), and pages it frees leave without arriving.
pub fn moved(before: &BTreeMap<usize, u64>, after: &BTreeMap<usize, u64>, to: &[usize]) -> u64 {
    let pages = |m: &BTreeMap<usize, u64>, n: &usize| m.get(n).copied().unwrap_or(0);
    let nodes: std::collections::BTreeSet<&usize> = before.keys().chain(after.keys()).collect();
    let (mut left, mut arrived) = (0, 0);
    for n in nodes {
        match to.contains(n) {
            true => arrived += pages(after, n).saturating_sub(pages(before, n)),
            false => left += pages(before, n).saturating_sub(pages(after, n)),
        }
    }
    left.min(arrived)
}

/// Moves the pages of `pid` to `to` nodes from every other node (migrate_pages); returns the
/// pages it could not move.
pub fn migrate_process_pages(pid: i32, to: &[usize], nodes: usize) -> std::io::Result<u64> {
    let words = nodes.div_ceil(64).max(1);
    let mut from = vec![0u64; words];
    let mut dest = vec![0u64; words];
    for n in 0..nodes {
        if to.contains(&n) {
            dest[n / 64] |= 1 << (n % 64);
        } else {
            from[n / 64] |= 1 << (n % 64);
        }
    }
    // SAFETY: both masks hold `words * 64` bits, the count we pass.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid,
            (words * 64) as libc::c_ulong,
            from.as_ptr(),
            dest.as_ptr(),
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(rc as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_maps_are_summed_per_node_in_base_pages() {
        let text = "\
55d0c0000000 default file=/usr/bin/oslab mapped=300 N0=200 N1=100 kernelpagesize_kB=4
7f0000000000 default anon=176 dirty=176 N3=176 kernelpagesize_kB=4
7f4000000000 default anon=2 dirty=2 N1=2 kernelpagesize_kB=2048
7ffd00000000 default stack anon=3 dirty=3 active=0 N0=3 kernelpagesize_kB=4
";
        let pages = parse_numa_maps(text);
        assert_eq!(pages.get(&0), Some(&203));
        assert_eq!(pages.get(&1), Some(&(100 + 2 * 512)));
        assert_eq!(pages.get(&3), Some(&176));
        let after: BTreeMap<usize, u64> = [(0, 379), (1, 1124), (3, 0)].into_iter().collect();
        assert_eq!(moved(&pages, &after, &[0]), 176);
        // 40 pages first touched on node 0 meanwhile arrive without leaving anywhere.
        let touched: BTreeMap<usize, u64> = [(0, 419), (1, 1124), (3, 0)].into_iter().collect();
        assert_eq!(moved(&pages, &touched, &[0]), 176);
        // This process has a map to read; an ended one has none.
        assert!(node_pages(std::process::id() as i32).is_some_and(|p| !p.is_empty()));
        assert!(node_pages(i32::MAX).is_none());
    }

    #[test]
    fn a_busy_thread_is_seen_running_and_an_exited_process_yields_nothing() {
        let pid = std::process::id() as i32;
        let mut s = TaskSampler::default();
        let (_, live) = s.sample(pid);
        assert!(live.contains(&oslab_os::affinity::gettid()));
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 30 {
            std::hint::spin_loop();
        }
        let (ran, _) = s.sample(pid);
        let me = ran
            .iter()
            .find(|r| r.tid == oslab_os::affinity::gettid())
            .expect("this thread ran");
        // It ran, and not longer than the wall time that passed (other tests share the cpus).
        let wall = t.elapsed().as_nanos() as u64;
        assert!(
            me.ns > 0 && me.ns <= wall + 5_000_000,
            "{me:?} in {wall} ns"
        );
        assert_eq!(s.sample(i32::MAX), (vec![], vec![]));
    }

    #[test]
    fn busy_time_and_migration_counters_read() {
        let b = busy_ticks();
        assert!(!b.is_empty());
        assert!(pages_migrated().is_some());
        // Every node of this machine is a destination: nothing to move, nothing refused.
        let pid = std::process::id() as i32;
        assert_eq!(migrate_process_pages(pid, &[0], 1).unwrap(), 0);
    }
}
