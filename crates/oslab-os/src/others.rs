//! Other work on the machine, read from every process's cpu time over a short window: what a
//! run begins beside, named (a stray busy loop left by an earlier job reads `runaway (pid 149)
//! 0.98 cpus`), where the load average says only that something ran. Inside a Slurm job, the
//! job's own processes are not other work: the batch script's sruns starting the other nodes'
//! steps took 0.35 cpus of a guest as its step began.

use oslab_core::machine::{BusyProcess, OtherWork};
use std::time::{Duration, Instant};

/// How long other work is watched as a run begins.
pub const WINDOW: Duration = Duration::from_millis(200);

/// The cpu time other processes take over `window` (this process and its threads left out);
/// None when /proc cannot be listed.
pub fn other_work(window: Duration) -> Option<OtherWork> {
    let before = cpu_ticks()?;
    let t = Instant::now();
    std::thread::sleep(window);
    let after = cpu_ticks()?;
    let seconds = t.elapsed().as_secs_f64();
    let job = std::env::var("SLURM_JOB_ID").ok();
    let ours = |pid: u32| job.as_deref().is_some_and(|j| in_job(pid, j));
    Some(between(&before, &after, seconds, ticks_per_s(), ours))
}

/// Whether process `pid` belongs to Slurm job `job` (its environment names it). A process
/// whose environment cannot be read (another user's) is not ours.
fn in_job(pid: u32, job: &str) -> bool {
    let want = format!("SLURM_JOB_ID={job}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
}

/// One process's command name and cpu ticks (user + system, all its threads), by pid.
type Ticks = std::collections::BTreeMap<u32, (String, u64)>;

/// What the processes not `ours` took between two readings `seconds` apart, counting those
/// present at both. One that began in the window is left out: its time there is mostly its
/// start (exec, loading: 60 ms for a guest's periodic `sleep` under emulation, 0.3 cpus of the
/// window), which a window this short cannot tell from lasting work; what lasts is there at
/// both readings. One that ended is gone with its time.
fn between(
    before: &Ticks,
    after: &Ticks,
    seconds: f64,
    hz: f64,
    ours: impl Fn(u32) -> bool,
) -> OtherWork {
    let mut busy: Vec<BusyProcess> = after
        .iter()
        .filter_map(|(pid, (command, t1))| {
            let (_, t0) = before.get(pid)?;
            Some(BusyProcess {
                pid: *pid,
                command: command.clone(),
                cpus: t1.saturating_sub(*t0) as f64 / hz / seconds.max(1e-9),
            })
        })
        .filter(|p| p.cpus > 0.0 && !ours(p.pid))
        .collect();
    busy.sort_by(|a, b| b.cpus.total_cmp(&a.cpus));
    // Folded from +0.0: an empty f64 sum is -0.0.
    let cpus = busy.iter().map(|p| p.cpus).fold(0.0, |a, b| a + b);
    busy.retain(|p| p.cpus >= OtherWork::NAMED);
    busy.truncate(3);
    OtherWork {
        window_s: seconds,
        cpus,
        busiest: busy,
    }
}

/// Every other process's ticks now.
fn cpu_ticks() -> Option<Ticks> {
    let me = std::process::id();
    let mut out = Ticks::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Gone since the listing, or not ours to read: not counted.
        if let Some(p) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| parse_stat(&s))
        {
            out.insert(pid, p);
        }
    }
    Some(out)
}

/// The command name and user + system ticks of a /proc/PID/stat line. The name sits in
/// parentheses and may hold spaces and parentheses itself: the fields follow the last `)`.
fn parse_stat(line: &str) -> Option<(String, u64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let command = line.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // Field 3 (state) is the first after the name; utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((command, utime + stime))
}

/// How long, in µs since boot, some task waited for a cpu it was ready to run on: the kernel's
/// cpu pressure (`/proc/pressure/cpu`, `some total=`). Where other work saturates the cpus, its
/// busy time stops growing with it (two hogs on a 2-cpu guest take the same 2 cpus as three),
/// and the waiting does. None where the kernel keeps no pressure figures (`psi=0`, before 4.20).
pub fn cpu_waiting_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    waiting_total(&text)
}

/// The `some` line's `total=` of a pressure file.
fn waiting_total(text: &str) -> Option<u64> {
    let some = text.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The kernel's clock ticks a second (USER_HZ: /proc's cpu times count them), 100 where
/// sysconf cannot say.
pub fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_pressure_total_is_read_from_its_some_line() {
        let text = "some avg10=0.07 avg60=1.82 avg300=14.12 total=7570394812\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(waiting_total(text), Some(7_570_394_812));
        assert_eq!(waiting_total("full total=3\n"), None);
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_is_read_whole() {
        let line = "149 (run (a) way) R 1 149 149 0 -1 4194304 100 0 0 0 250 7 0 0 20 0 1 0 5";
        assert_eq!(parse_stat(line), Some(("run (a) way".to_string(), 257)));
        assert_eq!(parse_stat("12 (x) R 1"), None);
    }

    #[test]
    fn the_busiest_are_named_and_every_lasting_process_counted() {
        let before: Ticks = [
            (1, ("init".into(), 5)),
            (149, ("runaway".into(), 100)),
            (200, ("poller".into(), 40)),
        ]
        .into();
        let after: Ticks = [
            (1, ("init".into(), 6)),
            (149, ("runaway".into(), 120)),
            (200, ("poller".into(), 43)),
            // Born in the window: its start-up is not lasting work (a cluster test's node read
            // `busy` at 0.31 cpus, mostly a `sleep` its init started every 20 s).
            (300, ("sleep".into(), 6)),
        ]
        .into();
        let w = between(&before, &after, 0.2, 100.0, |_| false);
        assert!((w.cpus - 1.2).abs() < 1e-9, "{w:?}");
        assert_eq!(w.busiest.len(), 2, "{w:?}");
        assert_eq!(w.busiest[0].command, "runaway");
        assert!((w.busiest[0].cpus - 1.0).abs() < 1e-9);
        assert_eq!(
            w.describe(),
            "runaway (pid 149) 1.00 cpus, poller (pid 200) 0.15 cpus; 1.20 cpus in all"
        );
        // The job's own processes are not other work.
        let w = between(&before, &after, 0.2, 100.0, |pid| pid == 149);
        assert!((w.cpus - 0.2).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn a_process_of_our_slurm_job_is_told_by_its_environment() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .env("SLURM_JOB_ID", "4711")
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let (yes, no) = (in_job(child.id(), "4711"), in_job(child.id(), "471"));
        let _ = child.kill();
        let _ = child.wait();
        assert!(yes && !no);
    }

    #[test]
    fn a_busy_loop_beside_us_is_seen_and_named() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let w = other_work(Duration::from_millis(300)).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        // A shared host may take the loop's cpu for part of the window; a tenth is the floor.
        let spin = w.busiest.iter().find(|p| p.pid == child.id());
        assert!(spin.is_some_and(|p| p.cpus > 0.1), "{w:?}");
        assert!(w.cpus >= spin.unwrap().cpus);
    }
}
