//! What oslab's tests share.
//!
//! - [`skip`]: a test that cannot run here says why and returns; `scripts/test` counts and lists
//!   what was skipped (through the file named by `OSLAB_TEST_SKIPS`), so a skip is never silent
//!   and never a failure.
//! - [`require`]: the commands a test drives (sysbench, chromium, qemu...), skipping without them.
//! - [`busy`]: how many cpus other work kept busy, for the few tests that need a quiet machine.
//! - [`machine_lock`]: one test at a time, across test binaries, for state the whole machine
//!   shares (a sysctl, the pending-restore file).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Says that the running test is skipped and why (on stderr, and appended to the file named by
/// `OSLAB_TEST_SKIPS` when set). The caller returns right after.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    eprintln!("skipped: {test}: {reason}");
    if let Some(path) = std::env::var_os("OSLAB_TEST_SKIPS") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            // One write per line: concurrent tests append whole lines.
            let _ = f.write_all(format!("{test}\t{reason}\n").as_bytes());
        }
    }
}

/// Whether every command is on `PATH`; if not, the test is skipped naming the missing ones.
#[must_use]
pub fn require(commands: &[&str]) -> bool {
    let missing: Vec<&str> = commands.iter().copied().filter(|c| !on_path(c)).collect();
    if missing.is_empty() {
        return true;
    }
    skip(&format!(
        "needs {} (scripts/test installs it with root and apt-get)",
        missing.join(", ")
    ));
    false
}

/// Whether the caller is root; if not, the test is skipped saying what root is needed for.
#[must_use]
pub fn require_root(for_what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    skip(&format!("needs root, {for_what}"));
    false
}

/// Whether `command` is an executable on `PATH`.
pub fn on_path(command: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| is_executable(&dir.join(command)))
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A process spinning on a cpu, other work for a test, killed and reaped when dropped (a failed
/// assertion leaves no hog behind).
pub struct BusyLoop(std::process::Child);

impl BusyLoop {
    /// Starts one.
    pub fn start() -> BusyLoop {
        BusyLoop(
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh starts"),
        )
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How many cpus work outside this process kept busy over `window` (all cpus' busy time from
/// `/proc/stat`, less this process's own), with the hypervisor's steal counted as busy.
pub fn foreign_cpus(window: Duration) -> f64 {
    let (busy0, ours0) = (machine_busy_ticks(), own_ticks());
    let t = Instant::now();
    std::thread::sleep(window);
    let (busy1, ours1) = (machine_busy_ticks(), own_ticks());
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let foreign = (busy1.saturating_sub(busy0)).saturating_sub(ours1.saturating_sub(ours0));
    foreign as f64 / hz / t.elapsed().as_secs_f64()
}

/// Why a test that needs a quiet machine cannot trust this one, if it cannot: other work kept
/// more than `max_cpus` cpus busy over a quarter of a second.
pub fn busy(max_cpus: f64) -> Option<String> {
    let seen = foreign_cpus(Duration::from_millis(250));
    (seen > max_cpus).then(|| {
        format!("the machine is busy ({seen:.1} cpus of other work; this test needs at most {max_cpus})")
    })
}

/// Skips the test when the machine is busier than `max_cpus` (see [`busy`]); true when it may go on.
#[must_use]
pub fn require_quiet(max_cpus: f64) -> bool {
    match busy(max_cpus) {
        None => true,
        Some(why) => {
            skip(&why);
            false
        }
    }
}

/// Why a test whose work needs a share of the cpus (an emulated guest) cannot have it here, if
/// it cannot: more than `max_per_cpu` runnable tasks per cpu (the median of five looks at
/// /proc/loadavg over a quarter of a second). Busy time cannot tell `stress-ng --cpu 2` on two
/// cpus from `--cpu 8`; the run queue can, and a guest gets a half or a fifth of each cpu.
pub fn crowded(max_per_cpu: f64) -> Option<String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let mut seen: Vec<f64> = (0..5)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(50));
            let avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            avg.split_whitespace()
                .nth(3)
                .and_then(|f| f.split('/').next()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .collect();
    seen.sort_by(f64::total_cmp);
    // Less this thread, which is running while it reads.
    let per_cpu = (seen[2] - 1.0).max(0.0) / cpus;
    (per_cpu > max_per_cpu).then(|| {
        format!("the machine is crowded ({per_cpu:.1} runnable tasks per cpu; this test needs at most {max_per_cpu})")
    })
}

/// user + nice + system + irq + softirq + steal over all cpus, in clock ticks.
fn machine_busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0;
    };
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum()
}

/// This process's user + system time, in clock ticks.
fn own_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which may hold spaces: utime and stime are 14th and 15th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum()
}

/// A lock on state the whole machine shares, held until dropped: tests in different test
/// binaries (cargo may run them at once under `--jobs`, and a developer may run two) take turns.
pub struct MachineLock(std::fs::File);

/// Takes the machine-wide lock named `name` (e.g. "numa_balancing"), waiting for it.
pub fn machine_lock(name: &str) -> MachineLock {
    // A fixed name on purpose: every test process of this user must find the same lock. It
    // lives in oslab's own private directory (0700, refused if another user made or linked
    // it), never in the shared temp directory; it is only locked, never written.
    let dir = oslab_files::paths::homeless_dir();
    oslab_files::paths::create_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    let path = dir.join(format!("test-{name}.lock"));
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .custom_flags(libc::O_NOFOLLOW)
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file we own; released when the file is closed.
    while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            panic!("cannot lock {}", path.display());
        }
    }
    MachineLock(file)
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking our own descriptor.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// A run document (oslab.run/1) with every value (summaries and samples) of its i-th
/// measurement scaled by `f(i)`, and `host` as its host: a node made slower or faster.
pub fn scaled_run(
    doc: &serde_json::Value,
    host: &str,
    f: impl Fn(usize) -> f64,
) -> serde_json::Value {
    let mut d = doc.clone();
    d["run"]["hostname"] = host.into();
    for (i, m) in d["measurements"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let k = f(i);
        if let Some(s) = m["summary"].as_object_mut() {
            for key in [
                "min", "p25", "median", "p75", "max", "mean", "stddev", "ci_low", "ci_high", "p90",
                "p99", "p999",
            ] {
                if let Some(v) = s.get(key).and_then(serde_json::Value::as_f64) {
                    s.insert(key.into(), (v * k).into());
                }
            }
        }
        if let Some(samples) = m["samples"].as_array_mut() {
            for v in samples.iter_mut() {
                *v = (v.as_f64().unwrap() * k).into();
            }
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_written_to_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("skips");
        // The variable is read at each skip; set for this process only while this test runs.
        std::env::set_var("OSLAB_TEST_SKIPS", &list);
        assert!(!require(&["no-such-command-oslab"]));
        std::env::remove_var("OSLAB_TEST_SKIPS");
        let text = std::fs::read_to_string(&list).unwrap();
        assert!(
            text.contains("a_skip_is_written_to_the_list\tneeds no-such-command-oslab"),
            "{text}"
        );
        assert!(require(&["sh"]));
    }

    #[test]
    fn foreign_load_is_a_plausible_number_of_cpus() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let seen = foreign_cpus(Duration::from_millis(100));
        assert!((0.0..=cpus * 1.5 + 0.5).contains(&seen), "{seen}");
    }
}
