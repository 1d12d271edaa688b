//! The memory a control group leaves this process: a container, a Slurm `--mem` job or a systemd
//! slice caps memory below what /proc/meminfo offers, and a probe sized by MemAvailable alone meets
//! the OOM killer there.

use std::path::{Path, PathBuf};

/// Bytes this process's memory cgroup and every one above it still allow (the least of their
/// limits less their usage), under cgroup v2 or v1; None when no limit applies or none is
/// readable.
pub fn memory_headroom() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    headroom_in(&own, Path::new("/sys/fs/cgroup"))
}

/// [`memory_headroom`] from the text of /proc/self/cgroup and the cgroup mount `root`.
fn headroom_in(own: &str, root: &Path) -> Option<u64> {
    // v1: "4:memory:/path", its files under ROOT/memory; v2: "0::/path", under ROOT.
    let (dir, files) = match own.lines().find_map(|l| memory_v1(l)) {
        Some(path) => (
            root.join("memory").join(path),
            ("memory.limit_in_bytes", "memory.usage_in_bytes"),
        ),
        None => {
            let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
            (
                root.join(path.trim_start_matches('/')),
                ("memory.max", "memory.current"),
            )
        }
    };
    let mut least: Option<u64> = None;
    let mut at: Option<PathBuf> = Some(dir);
    while let Some(d) = at {
        let read = |f: &str| std::fs::read_to_string(d.join(f)).ok();
        // "max" (v2) or a near-2^63 figure (v1) is no limit.
        let limit = read(files.0).and_then(|s| s.trim().parse::<u64>().ok());
        if let Some(limit) = limit.filter(|l| *l < 1 << 60) {
            let used = read(files.1)
                .and_then(|s| s.trim().parse::<u64>().ok())
                .unwrap_or(0);
            let left = limit.saturating_sub(used);
            least = Some(least.map_or(left, |l| l.min(left)));
        }
        at = d
            .parent()
            .filter(|p| p.starts_with(root))
            .map(Path::to_path_buf);
    }
    least
}

/// The path of a cgroup v1 memory line ("4:memory:/a/b" -> "a/b").
fn memory_v1(line: &str) -> Option<&str> {
    let mut parts = line.splitn(3, ':');
    let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
    controllers
        .split(',')
        .any(|c| c == "memory")
        .then(|| path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

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
