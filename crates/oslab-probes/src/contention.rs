//! Whether other work competed with a probe while it ran. A result measured on a contended machine
//! is not a property of the machine: it is marked noisy and says why, so a phantom cache level or a
//! 5x latency under load is never reported as `ok`.
//!
//! Three signs, compared between a snapshot before and after the probe:
//! - **other work on the cpus**: the busy time /proc/stat counts on every cpu, minus the cpu time
//!   of this process and its reaped children; more than [`MAX_FOREIGN_CPUS`] cpus on average
//!   means something else ran (it takes cache, memory bandwidth, and the measuring cpu itself);
//! - **involuntary context switches** of the measuring thread (getrusage RUSAGE_THREAD): it was
//!   preempted (more than [`MAX_PREEMPTIONS_PER_S`] per second);
//! - **steal time** of the measuring cpu (/proc/stat): the hypervisor ran something else while
//!   this virtual cpu wanted to run (more than [`MAX_STEAL`] of its time).
//!
//! What no counter inside a guest shows is work outside it on the same physical core: another
//! guest on its SMT sibling, or a lower clock. [`core_speed`] times a fixed loop of integer
//! additions for that; the runner checks it before every probe and warns when it varied over the
//! run. It is not a per-probe sign: on a shared host the speed can flip between two levels several
//! times a second, so two checks around a probe would call changes at random.

use std::time::Instant;

/// Average cpus of other work that make a probe contended.
pub const MAX_FOREIGN_CPUS: f64 = 0.3;
/// Involuntary switches of the measuring thread per second that make a probe contended.
pub const MAX_PREEMPTIONS_PER_S: f64 = 100.0;
/// Share of the measuring cpu's time stolen by the hypervisor that makes a probe contended.
pub const MAX_STEAL: f64 = 0.05;

/// Counters at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    /// Per cpu (by number): busy ticks (user, nice, system) and steal ticks.
    cpus: Vec<Option<(u64, u64)>>,
    /// CPU time of this process and its reaped children, ns.
    own_ns: u64,
    /// Involuntary context switches of the calling thread.
    involuntary: u64,
    /// µs some task waited for a cpu, since boot ([`oslab_os::others::cpu_waiting_us`]).
    waiting_us: Option<u64>,
}

/// What competed with a probe, per second of its wall time.
#[derive(Debug, Clone, PartialEq)]
pub struct Contention {
    /// Average cpus busy with work other than ours.
    pub foreign_cpus: f64,
    /// Involuntary context switches of the measuring thread per second.
    pub preemptions_per_s: f64,
    /// Share of the measuring cpu's time stolen by the hypervisor.
    pub steal: f64,
    /// Share of the time some task waited for a cpu (the kernel's cpu pressure); None where it
    /// keeps none.
    pub waiting: Option<f64>,
}

impl Snapshot {
    /// Reads the counters now (call on the measuring thread). None when /proc/stat is unreadable.
    pub fn take() -> Option<Snapshot> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        Some(Snapshot {
            at: Instant::now(),
            cpus: parse_stat(&stat),
            own_ns: own_cpu_ns(),
            involuntary: involuntary_switches(),
            waiting_us: oslab_os::others::cpu_waiting_us(),
        })
    }

    /// What competed between `self` and `later`, with `cpu` the measuring cpu.
    pub fn until(&self, later: &Snapshot, cpu: usize) -> Option<Contention> {
        let wall = later.at.duration_since(self.at).as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let tick_ns = 1e9 / oslab_os::others::ticks_per_s();
        let delta = |i: usize| -> Option<(f64, f64)> {
            let (b0, s0) = (*self.cpus.get(i)?)?;
            let (b1, s1) = (*later.cpus.get(i)?)?;
            Some((
                b1.saturating_sub(b0) as f64 * tick_ns,
                s1.saturating_sub(s0) as f64 * tick_ns,
            ))
        };
        let busy_ns: f64 = (0..later.cpus.len()).filter_map(delta).map(|d| d.0).sum();
        let own_ns = later.own_ns.saturating_sub(self.own_ns) as f64;
        let steal_ns = delta(cpu).map_or(0.0, |d| d.1);
        Some(Contention {
            foreign_cpus: ((busy_ns - own_ns) / 1e9 / wall).max(0.0),
            preemptions_per_s: later.involuntary.saturating_sub(self.involuntary) as f64 / wall,
            steal: steal_ns / 1e9 / wall,
            waiting: self
                .waiting_us
                .zip(later.waiting_us)
                .map(|(a, b)| (b.saturating_sub(a) as f64 / 1e6 / wall).min(1.0)),
        })
    }
}

/// Whether a probe's own tasks take the measuring cpu from its thread (ping-pong on one cpu:
/// the switches, and the IPC round trips whose peer shares the cpu): then its involuntary
/// switches are the measurement, not competition.
pub fn preempts_itself(probe_id: &str) -> bool {
    probe_id.starts_with("switch.") || probe_id.starts_with("ipc.")
}

impl Contention {
    /// The same, for a probe that preempts itself: its preemptions do not count.
    pub fn for_probe(mut self, probe_id: &str) -> Contention {
        if preempts_itself(probe_id) {
            self.preemptions_per_s = 0.0;
        }
        self
    }

    /// The other work beside the probe, in cpus: what it kept busy plus the share of the time a
    /// task waited for a cpu. Quiet reads about 0; one cpu hog beside a one-thread probe on two
    /// cpus about 1 (it has a cpu of its own); two hogs about 2.3 (1.3 busy, someone always
    /// waiting), where the busy share alone reads 1.3 and saturates at the cpus there are.
    pub fn other_work(&self) -> f64 {
        self.foreign_cpus + self.waiting.unwrap_or(0.0)
    }

    /// Why the probe counts as contended, or None when nothing competed enough to matter.
    pub fn reason(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.foreign_cpus > MAX_FOREIGN_CPUS {
            why.push(format!(
                "other work kept {:.1} cpus busy on average",
                self.foreign_cpus
            ));
        }
        if self.preemptions_per_s > MAX_PREEMPTIONS_PER_S {
            why.push(format!(
                "the measuring thread was preempted {:.0} times a second",
                self.preemptions_per_s
            ));
        }
        if self.steal > MAX_STEAL {
            why.push(format!(
                "the hypervisor took {:.0}% of the measuring cpu (steal time)",
                100.0 * self.steal
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// Additions per loop pass (four independent chains).
const ADDS_PER_PASS: u64 = 4;
/// Loop passes per timing: about 0.1 ms on a 2020s core.
const PASSES: u64 = 100_000;

/// How fast the calling thread's core runs independent integer additions now, in billions a
/// second: the best of three short timings (about 0.1 ms each), so an interrupt does not count.
/// Four independent chains keep the core's integer units busy the way most measured code does, so
/// a sibling thread sharing them, or a lower clock, shows as a lower figure.
pub fn core_speed() -> f64 {
    let best = (0..3)
        .map(|_| {
            let t = Instant::now();
            add_chains(PASSES);
            t.elapsed()
        })
        .min()
        .unwrap_or_default();
    (PASSES * ADDS_PER_PASS) as f64 / best.as_nanos().max(1) as f64
}

/// `passes` x four independent additions, in assembly on x86-64 so the compiler cannot fold the
/// loop.
#[inline(never)]
pub fn add_chains(passes: u64) {
    let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..passes {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: register-only arithmetic.
        unsafe {
            std::arch::asm!(
                "add {a}, 1", "add {b}, 1", "add {c}, 1", "add {d}, 1",
                a = inout(reg) a, b = inout(reg) b, c = inout(reg) c, d = inout(reg) d,
                options(nomem, nostack),
            );
        }
        // Elsewhere the optimizer is kept out by black_box: the same loop every time, which is
        // all a speed check compared with itself needs.
        #[cfg(not(target_arch = "x86_64"))]
        {
            (a, b, c, d) = std::hint::black_box((a + 1, b + 1, c + 1, d + 1));
        }
    }
    std::hint::black_box((a, b, c, d));
}

/// Per cpu: (user + nice + system, steal) ticks, indexed by cpu number.
fn parse_stat(stat: &str) -> Vec<Option<(u64, u64)>> {
    let mut cpus: Vec<Option<(u64, u64)>> = Vec::new();
    for line in stat.lines() {
        // "cpuN ..." lines; the total line ("cpu  ...") has no number.
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let Some(Ok(n)) = fields.next().map(str::parse::<usize>) else {
            continue;
        };
        let v: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
        if v.len() < 8 {
            continue;
        }
        if cpus.len() <= n {
            cpus.resize(n + 1, None);
        }
        cpus[n] = Some((v[0] + v[1] + v[2], v[7]));
    }
    cpus
}

fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: rusage is plain data, filled by the call.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(who, &mut ru) };
    ru
}

fn tv_ns(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000
}

/// User + system time of this process and its reaped children, ns.
fn own_cpu_ns() -> u64 {
    [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN]
        .into_iter()
        .map(rusage)
        .map(|ru| tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime))
        .sum()
}

/// Involuntary context switches of the calling thread.
fn involuntary_switches() -> u64 {
    rusage(libc::RUSAGE_THREAD).ru_nivcsw.max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that spin processes, and the one that needs the machine quiet without them,
    /// take turns: one's hogs made the other skip as "busy".
    static SPINNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn reads_busy_and_steal_per_cpu() {
        let stat = "cpu  10 0 5 100 0 0 0 3 0 0\ncpu0 4 0 2 50 0 0 0 1 0 0\ncpu2 6 1 3 50 0 0 0 2 0 0\nintr 5\n";
        assert_eq!(parse_stat(stat), vec![Some((6, 1)), None, Some((10, 2))]);
    }

    #[test]
    fn contention_is_said_only_beyond_the_thresholds() {
        let quiet = Contention {
            foreign_cpus: 0.05,
            preemptions_per_s: 2.0,
            steal: 0.01,
            waiting: Some(0.0),
        };
        assert_eq!(quiet.reason(), None);
        let busy = Contention {
            foreign_cpus: 1.8,
            preemptions_per_s: 400.0,
            steal: 0.2,
            waiting: None,
        };
        let why = busy.clone().reason().unwrap();
        assert!(why.contains("1.8 cpus") && why.contains("400 times") && why.contains("20%"));
        // A ping-pong on one cpu preempts its own measuring thread: that is not competition.
        let why = busy.for_probe("switch.thread.pipe").reason().unwrap();
        assert!(!why.contains("preempted"), "{why}");
    }

    #[test]
    fn the_core_speed_is_plausible() {
        // Between a slow embedded core at 0.5 GHz (one addition a cycle) and six a cycle at 6 GHz.
        let speed = core_speed();
        assert!((0.5..36.0).contains(&speed), "{speed} additions per ns");
    }

    #[test]
    fn a_busy_thread_of_ours_is_not_foreign_work_but_another_process_is() {
        let _turn = SPINNING.lock().unwrap_or_else(|e| e.into_inner());
        // Under other work, a spinning process adds nothing the machine does not already show.
        if !oslab_testkit::require_quiet(0.3) {
            return;
        }
        let cpu = 0;
        let foreign = |work: &dyn Fn()| {
            let a = Snapshot::take().unwrap();
            work();
            a.until(&Snapshot::take().unwrap(), cpu)
                .unwrap()
                .foreign_cpus
        };
        let idle = || std::thread::sleep(std::time::Duration::from_millis(300));
        // Our own spinning thread: its time is ours. Judged only in a window whose neighbours
        // were quiet too (other work that starts mid-test is not ours either way), up to 3 tries.
        let spin = || {
            std::thread::spawn(|| {
                let t = Instant::now();
                while t.elapsed().as_millis() < 400 {
                    std::hint::black_box(0u64);
                }
            })
            .join()
            .unwrap()
        };
        let mut seen = Vec::new();
        let clean = (0..3).find_map(|_| {
            let (before, ours, after) = (foreign(&idle), foreign(&spin), foreign(&idle));
            seen.push((before, ours, after));
            (before.max(after) < 0.3).then_some(ours)
        });
        match clean {
            Some(ours) => assert!(ours < 0.5, "{seen:?}"),
            None => {
                return oslab_testkit::skip(&format!(
                    "other work came and went during each try (foreign cpus before, during, after: {seen:?})"
                ))
            }
        }
        // Another process spinning: foreign.
        let a = Snapshot::take().unwrap();
        let other = oslab_testkit::BusyLoop::start();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let seen = a.until(&Snapshot::take().unwrap(), cpu).unwrap();
        drop(other);
        assert!(seen.foreign_cpus > 0.5, "{seen:?}");
    }

    #[test]
    fn other_work_beyond_the_cpus_shows_as_waiting() {
        // One more spinning process than there are cpus: they keep every cpu busy, and one of
        // them always waits, which the busy share alone cannot show.
        let _turn = SPINNING.lock().unwrap_or_else(|e| e.into_inner());
        if oslab_os::others::cpu_waiting_us().is_none() {
            return oslab_testkit::skip("the kernel keeps no cpu pressure (/proc/pressure/cpu)");
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let a = Snapshot::take().unwrap();
        let spinners: Vec<_> = (0..=cpus)
            .map(|_| oslab_testkit::BusyLoop::start())
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let seen = a.until(&Snapshot::take().unwrap(), 0).unwrap();
        drop(spinners);
        assert!(seen.waiting.unwrap() > 0.5, "{seen:?}");
        assert!(seen.other_work() > cpus as f64, "{seen:?}");
    }
}
