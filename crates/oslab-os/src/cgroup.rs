//! What a control group leaves this process: a container, a Slurm job or a systemd slice caps
//! memory below what /proc/meminfo offers (a probe sized by MemAvailable alone meets the OOM
//! killer there), the cpu time below what its cpus could give (a throttled period stretches
//! whatever it interrupts), and the processes it may start.

use std::path::{Path, PathBuf};

/// Bytes this process's memory cgroup and every one above it still allow (the least of their
/// limits less their usage), under cgroup v2 or v1; None when no limit applies or none is
/// readable.
pub fn memory_headroom() -> Option<u64> {
    headroom_in(&own_groups()?, Path::new(MOUNT))
}

/// [`memory_headroom`] from the text of /proc/self/cgroup and the cgroup mount `root`.
fn headroom_in(own: &str, root: &Path) -> Option<u64> {
    let (dir, v1) = group_dir(own, root, "memory")?;
    let (limit, usage) = match v1 {
        true => ("memory.limit_in_bytes", "memory.usage_in_bytes"),
        false => ("memory.max", "memory.current"),
    };
    least_up(dir, root, |d| {
        // "max" (v2) or a near-2^63 figure (v1) is no limit.
        let limit = number(d, limit).filter(|l| *l < (1u64 << 60) as f64)?;
        Some((limit - number(d, usage).unwrap_or(0.0)).max(0.0))
    })
    .map(|left| left as u64)
}

/// The directory of this process's group under a controller, and the v1 mount's name for it
/// (`cpu,cpuacct`), or the v2 group's directory.
fn group_dir(own: &str, root: &Path, controller: &str) -> Option<(PathBuf, bool)> {
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == controller) {
            let mount = root.join(controllers);
            let mount = match mount.is_dir() {
                true => mount,
                false => root.join(controller),
            };
            return Some((mount.join(path.trim_start_matches('/')), true));
        }
    }
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some((root.join(path.trim_start_matches('/')), false))
}

/// The least of `value` over this process's group and every group above it, within `root`.
fn least_up(dir: PathBuf, root: &Path, value: impl Fn(&Path) -> Option<f64>) -> Option<f64> {
    let mut least: Option<f64> = None;
    let mut at = Some(dir);
    while let Some(d) = at {
        if let Some(v) = value(&d) {
            least = Some(least.map_or(v, |l| l.min(v)));
        }
        at = d
            .parent()
            .filter(|p| p.starts_with(root))
            .map(Path::to_path_buf);
    }
    least
}

/// Bytes of page cache this process's memory cgroup and every one above it could hold (the
/// least of their limits less their anonymous memory, which the cache cannot take back), under
/// cgroup v2 or v1; None when no limit applies or none is readable.
pub fn page_cache_room() -> Option<u64> {
    cache_room_in(&own_groups()?, Path::new(MOUNT))
}

/// [`page_cache_room`] from the text of /proc/self/cgroup and the cgroup mount `root`.
fn cache_room_in(own: &str, root: &Path) -> Option<u64> {
    let (dir, v1) = group_dir(own, root, "memory")?;
    let (limit, anon) = match v1 {
        true => ("memory.limit_in_bytes", "rss"),
        false => ("memory.max", "anon"),
    };
    least_up(dir, root, |d| {
        let limit = number(d, limit).filter(|l| *l < (1u64 << 60) as f64)?;
        let stat = std::fs::read_to_string(d.join("memory.stat")).unwrap_or_default();
        let used = stat
            .lines()
            .find_map(|l| l.strip_prefix(anon)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0.0);
        Some((limit - used).max(0.0))
    })
    .map(|room| room as u64)
}

/// The cpus' worth of time this process's cpu cgroup and those above it allow (quota over
/// period: 0.5 is half of one cpu's time), under cgroup v2 (`cpu.max`) or v1 (`cpu.cfs_quota_us`
/// over `cpu.cfs_period_us`); None when no quota applies or none is readable.
pub fn cpu_quota() -> Option<f64> {
    cpu_quota_in(&own_groups()?, Path::new(MOUNT))
}

/// Where the cgroup file systems are mounted.
const MOUNT: &str = "/sys/fs/cgroup";

/// This process's groups, as /proc/self/cgroup lists them.
fn own_groups() -> Option<String> {
    std::fs::read_to_string("/proc/self/cgroup").ok()
}

/// The number a cgroup file holds (None for "max", or a file not there).
fn number(dir: &Path, file: &str) -> Option<f64> {
    std::fs::read_to_string(dir.join(file))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// [`cpu_quota`] from the text of /proc/self/cgroup and the cgroup mount `root`.
fn cpu_quota_in(own: &str, root: &Path) -> Option<f64> {
    let (dir, v1) = group_dir(own, root, "cpu")?;
    least_up(dir, root, |d| match v1 {
        // -1 is no quota.
        true => Some(number(d, "cpu.cfs_quota_us")?)
            .filter(|q| *q > 0.0)
            .zip(number(d, "cpu.cfs_period_us"))
            .map(|(q, p)| q / p),
        false => {
            let text = std::fs::read_to_string(d.join("cpu.max")).ok()?;
            let mut words = text.split_whitespace();
            let quota: f64 = words.next()?.parse().ok()?; // "max" is no quota
            let period: f64 = words.next()?.parse().ok()?;
            Some(quota / period)
        }
    })
}

/// How many more processes and threads this process's pids cgroup and those above it allow;
/// None when no limit applies or none is readable.
pub fn pids_left() -> Option<u64> {
    pids_left_in(&own_groups()?, Path::new(MOUNT))
}

/// [`pids_left`] from the text of /proc/self/cgroup and the cgroup mount `root`.
fn pids_left_in(own: &str, root: &Path) -> Option<u64> {
    let (dir, _) = group_dir(own, root, "pids")?;
    least_up(dir, root, |d| {
        let max = number(d, "pids.max")?; // "max" is no limit
        Some((max - number(d, "pids.current").unwrap_or(0.0)).max(0.0))
    })
    .map(|left| left as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_quota_and_a_pids_limit_are_read_up_the_tree() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let put = |d: &Path, f: &str, v: &str| {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(f), v).unwrap()
        };
        // v1, cpu and cpuacct mounted together, a Slurm job's half a cpu under an unlimited parent.
        let job = r.join("cpu,cpuacct/slurm/job_7");
        put(&job, "cpu.cfs_quota_us", "50000");
        put(&job, "cpu.cfs_period_us", "100000");
        put(&r.join("cpu,cpuacct/slurm"), "cpu.cfs_quota_us", "-1");
        let own = "5:pids:/slurm/job_7\n3:cpu,cpuacct:/slurm/job_7\n0::/\n";
        assert_eq!(cpu_quota_in(own, r), Some(0.5));
        put(&r.join("pids/slurm/job_7"), "pids.max", "100");
        put(&r.join("pids/slurm/job_7"), "pids.current", "12");
        put(&r.join("pids/slurm"), "pids.max", "max");
        assert_eq!(pids_left_in(own, r), Some(88));
        // v2: a container's 1.5 cpus in cpu.max; "max" is none.
        let app = r.join("system.slice/box");
        put(&app, "cpu.max", "150000 100000");
        put(&r.join("system.slice"), "cpu.max", "max 100000");
        assert_eq!(cpu_quota_in("0::/system.slice/box\n", r), Some(1.5));
        put(&app, "cpu.max", "max 100000");
        assert_eq!(cpu_quota_in("0::/system.slice/box\n", r), None);
        assert_eq!(pids_left_in("0::/system.slice/box\n", r), None);
    }

    #[test]
    fn the_page_cache_may_take_what_anonymous_memory_leaves() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let app = r.join("system.slice/box");
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(app.join("memory.max"), "201326592\n").unwrap();
        // The cache already charged (file) does not count against the room; anonymous memory does.
        std::fs::write(
            app.join("memory.stat"),
            "anon_thp 0\nanon 20971520\nfile 150000000\n",
        )
        .unwrap();
        std::fs::write(r.join("system.slice/memory.max"), "max\n").unwrap();
        assert_eq!(
            cache_room_in("0::/system.slice/box\n", r),
            Some(201326592 - 20971520)
        );
        std::fs::write(app.join("memory.max"), "max\n").unwrap();
        assert_eq!(cache_room_in("0::/system.slice/box\n", r), None);
    }

    #[test]
    fn the_least_headroom_of_the_group_and_its_parents_counts() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let job = r.join("memory/slurm/job_7");
        std::fs::create_dir_all(&job).unwrap();
        let put = |d: &Path, f: &str, v: &str| std::fs::write(d.join(f), v).unwrap();
        put(&job, "memory.limit_in_bytes", "1073741824");
        put(&job, "memory.usage_in_bytes", "73741824");
        put(
            &r.join("memory/slurm"),
            "memory.limit_in_bytes",
            "9223372036854771712",
        );
        let own = "9:pids:/\n4:memory:/slurm/job_7\n0::/\n";
        assert_eq!(headroom_in(own, r), Some(1_000_000_000));
        // A parent tighter than the group: its headroom.
        put(
            &r.join("memory/slurm"),
            "memory.limit_in_bytes",
            "600000000",
        );
        put(
            &r.join("memory/slurm"),
            "memory.usage_in_bytes",
            "100000000",
        );
        assert_eq!(headroom_in(own, r), Some(500_000_000));
        // v2: "max" is no limit.
        let v2 = r.join("user.slice/app");
        std::fs::create_dir_all(&v2).unwrap();
        put(&v2, "memory.max", "max");
        assert_eq!(headroom_in("0::/user.slice/app\n", r), None);
        put(&v2, "memory.max", "536870912");
        put(&v2, "memory.current", "36870912");
        assert_eq!(headroom_in("0::/user.slice/app\n", r), Some(500_000_000));
    }
}
