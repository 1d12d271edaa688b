//! Every probe family, run for real with short budgets, must land in a plausible range. These are
//! correctness checks (did we measure the thing at all, in the right unit), not speed targets.

use oslab_core::model::Measurement;
use oslab_probes::session::Session;
use oslab_probes::{registry, runner, Context, HarnessConfig, Options};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Tests take turns: they measure, and one of them counts our child processes.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Passes when `check` does in one of `attempts` tries. For orders between two measurements
/// taken apart (a cache faster than memory): on a shared host a neighbour's burst can invert one
/// pair, never every try; what each try saw is in the failure.
fn in_one_of(attempts: usize, mut check: impl FnMut() -> Result<(), String>) {
    let mut seen = Vec::new();
    for _ in 0..attempts {
        match check() {
            Ok(()) => return,
            Err(e) => seen.push(e),
        }
    }
    panic!(
        "failed in every one of {attempts} tries:\n{}",
        seen.join("\n")
    );
}

/// Runs the probes matching `pattern` (patterns separated by spaces) on a pinned thread and
/// returns their measurements.
fn run(pattern: &str) -> Vec<Measurement> {
    let _turn = serial();
    run_unlocked(pattern)
}

fn run_unlocked(pattern: &str) -> Vec<Measurement> {
    run_with_budget(pattern, Duration::from_millis(40))
}

/// Like [`run_unlocked`], with `budget` per measurement (for curves compared with each other,
/// where a few-millisecond point is too noisy).
fn run_with_budget(pattern: &str, budget: Duration) -> Vec<Measurement> {
    let pattern = pattern.to_string();
    with_budget(budget, move |cx| {
        let patterns: Vec<String> = pattern.split_whitespace().map(String::from).collect();
        let probes = registry::select(&patterns).unwrap();
        runner::run(&probes, 1, cx, &mut runner::Silent).measurements
    })
}

/// Calls `f` with a measuring context on a pinned thread, `budget` per measurement, 16 MiB
/// memory budget.
fn with_budget<T: Send + 'static>(
    budget: Duration,
    f: impl FnOnce(&Context) -> T + Send + 'static,
) -> T {
    std::thread::spawn(move || {
        let session = Session::open(oslab_core::pace::Pace::Quick, None, None).unwrap();
        let _placed = session.place(true).unwrap();
        let mut cfg = HarnessConfig::quick();
        cfg.budget = budget;
        cfg.min_samples = 10;
        cfg.memory_max = 16 << 20;
        let harness = session.harness_with(cfg);
        let options = Options::default();
        let cx = session.context(&harness, &options);
        f(&cx)
    })
    .join()
    .unwrap()
}

/// Asserts every measured `metric` of the results lies in `lo..hi` ns (by median), and that at
/// least one did.
fn assert_range(ms: &[Measurement], metric: &str, lo: f64, hi: f64) {
    let mut seen = 0;
    for m in ms.iter().filter(|m| m.metric == metric) {
        match (&m.summary, &m.status) {
            (Some(s), st) if st.has_value() => {
                seen += 1;
                assert!(
                    s.median > lo && s.median < hi,
                    "{} {} {}: median {} ns outside {lo}..{hi}",
                    m.probe,
                    m.params_text(),
                    m.metric,
                    s.median
                );
                // Fewer samples (a busy host cut the passes short) leave it noisy, never ok.
                assert!(
                    s.n >= 5 || st.is_noisy(),
                    "{}: only {} samples and {st}",
                    m.probe,
                    s.n
                );
                assert!(s.min <= s.median && s.ci_low <= s.ci_high);
            }
            (_, oslab_core::Status::Skipped(_)) => {}
            (_, st) => panic!("{} {}: {st}", m.probe, m.metric),
        }
    }
    assert!(seen > 0, "no {metric} measurement in {ms:?}");
}

#[test]
fn timer_reads_cost_nanoseconds() {
    let ms = run("timer");
    // Six timers, and no host rows from six probe runs, however many were retried
    // (runner::HOST_MIN_CHECKS).
    assert_eq!(ms.len(), 6, "{ms:?}");
    assert_range(&ms, "per_read", 1.0, 100_000.0);
    // The vDSO never enters the kernel; the raw syscall always does.
    let median = |id: &str| {
        ms.iter()
            .find(|m| m.probe == id)
            .unwrap()
            .summary
            .as_ref()
            .unwrap()
            .median
    };
    assert!(median("timer.clock_gettime") < median("timer.clock_gettime.syscall"));
}

#[test]
fn empty_loop_is_about_a_cycle() {
    let ms = run("loop");
    assert_range(&ms, "per_iteration", 0.05, 5.0);
    assert!(ms[0].prediction.is_some() || ms[0].cycles.is_none());
}

#[test]
fn calls_cost_about_a_nanosecond_and_increments_are_small() {
    let ms = run("call");
    assert_eq!(ms.iter().filter(|m| m.metric == "per_call").count(), 8);
    assert_range(&ms, "per_call", 0.05, 100.0);
    for m in ms.iter().filter(|m| m.metric == "increment") {
        let s = m.summary.as_ref().unwrap();
        assert!(
            s.median.abs() < 20.0,
            "increment {} ns per argument",
            s.median
        );
        // A difference has no best sample and never a negative cycle count.
        assert!(m.difference && m.best().is_none());
        assert!(m.cycles.is_none_or(|c| c >= 0.0), "{m:?}");
        if m.difference_spans_zero() {
            assert!(m.note.as_deref().unwrap().contains("no measurable cost"));
        }
    }
}

#[test]
fn syscalls_cost_between_10ns_and_100us() {
    let ms = run("syscall.getppid");
    let hot: Vec<_> = ms
        .iter()
        .filter(|m| m.params["cache"] == "hot")
        .cloned()
        .collect();
    assert_range(&hot, "per_call", 10.0, 100_000.0);
    let cold: Vec<_> = ms
        .iter()
        .filter(|m| m.params["cache"] == "cold")
        .cloned()
        .collect();
    assert_range(&cold, "per_call", 10.0, 1_000_000.0);
    let vdso = run("syscall.time.vdso");
    let hot: Vec<_> = vdso
        .iter()
        .filter(|m| m.params["cache"] == "hot")
        .cloned()
        .collect();
    assert_range(&hot, "per_call", 0.1, 10_000.0);
}

#[test]
fn process_and_thread_creation_take_microseconds() {
    let ms = run("task.fork");
    assert_range(&ms, "create", 1_000.0, 50_000_000.0);
    assert_range(&ms, "round_trip", 1_000.0, 50_000_000.0);
    let c = ms
        .iter()
        .find(|m| m.metric == "create")
        .unwrap()
        .summary
        .clone()
        .unwrap();
    let r = ms
        .iter()
        .find(|m| m.metric == "round_trip")
        .unwrap()
        .summary
        .clone()
        .unwrap();
    assert!(
        c.median < r.median,
        "fork returns before the child is reaped"
    );
    for id in [
        "task.vfork",
        "task.posix_spawn",
        "task.fork-exec",
        "task.pthread",
        "task.std-thread",
    ] {
        let ms = run(id);
        assert_range(&ms, "round_trip", 500.0, 50_000_000.0);
    }
}

#[test]
fn context_switches_take_between_100ns_and_1ms() {
    for id in [
        "switch.process.pipe",
        "switch.thread.futex",
        "switch.process.eventfd",
    ] {
        let ms = run(id);
        assert_range(&ms, "switch", 50.0, 1_000_000.0);
        assert_range(&ms, "transfer", 20.0, 100_000.0);
        if ms
            .iter()
            .any(|m| m.metric == "wakeup" && m.status.has_value())
        {
            assert_range(&ms, "wakeup", 100.0, 10_000_000.0);
        }
    }
    let oneshot = run("switch.oneshot");
    assert_eq!(oneshot.len(), 2);
    assert_range(&oneshot, "switch", 100.0, 50_000_000.0);
}

/// Where the TSC cannot be trusted the harness times with CLOCK_MONOTONIC_RAW: every interval's
/// two ends come from that clock (a child's raw TSC stamp against the parent's nanoseconds once
/// read a switch of 313 s).
#[test]
fn the_fallback_clock_times_every_interval_on_itself() {
    let _turn = serial();
    let ms = std::thread::spawn(|| {
        let session = Session::open(oslab_core::pace::Pace::Quick, None, None).unwrap();
        let _placed = session.place(true).unwrap();
        let mut cfg = HarnessConfig::quick();
        cfg.budget = Duration::from_millis(40);
        cfg.min_samples = 10;
        let clock = oslab_core::Clock::monotonic("a test of the fallback".into(), false);
        let harness = oslab_probes::Harness::new(clock, cfg);
        let options = Options::default();
        let cx = session.context(&harness, &options);
        let probes = registry::select(&["switch.oneshot".to_string()]).unwrap();
        runner::run(&probes, 1, &cx, &mut runner::Silent).measurements
    })
    .join()
    .unwrap();
    assert_eq!(ms.len(), 2);
    assert_range(&ms, "switch", 100.0, 50_000_000.0);
}

#[test]
fn no_children_are_left_behind() {
    let _turn = serial();
    let before = children_of_self();
    run_unlocked("switch.process.futex");
    run_unlocked("task.fork");
    assert_eq!(children_of_self(), before);
}

fn children_of_self() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // Field 4 (ppid) follows the parenthesised command name.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                == Some(me.as_str())
        })
        .count()
}

#[test]
fn memory_latency_rises_from_cache_to_memory() {
    // Orders between points measured apart: a neighbour's burst can invert one (see in_one_of).
    in_one_of(3, || {
        let ms = run("memory.latency.chunk");
        assert_range(&ms, "per_load", 0.2, 2_000.0);
        let at = |size: usize| {
            ms.iter()
                .filter(|m| m.metric == "per_load")
                .find(|m| m.params["size"] == size)
                .and_then(|m| m.summary.as_ref())
                .map(|s| s.median)
                .unwrap()
        };
        // 4 KiB sits in L1 everywhere; 16 MiB is beyond every private cache.
        if at(16 << 20) <= 2.0 * at(4096) {
            return Err(format!(
                "16 MiB {} ns vs 4 KiB {} ns",
                at(16 << 20),
                at(4096)
            ));
        }
        let curve: Vec<_> = ms.iter().filter(|m| m.metric == "per_load").collect();
        assert!(curve.iter().all(|m| m.context["pages"] == "4k"));
        // The curve's plateaus are reported as levels, the last one being memory.
        let levels: Vec<_> = ms.iter().filter(|m| m.metric == "level_latency").collect();
        assert!(!levels.is_empty());
        assert_eq!(levels.last().unwrap().params["level"], "memory");
        for m in ms.iter().filter(|m| m.metric == "level_size") {
            let size = m.summary.as_ref().unwrap().median;
            assert!((4096.0..=(16 << 20) as f64).contains(&size), "{m:?}");
        }
        // L1 and L2 are private caches a virtual machine sees whole: found where sysfs says,
        // within one sweep step (the plateau's last size at most a step below, the first size
        // off it at most a step above).
        let topology = oslab_os::topology::read().unwrap();
        let cpu = ms[0].params["cpu"].as_u64().unwrap() as usize;
        for claim in topology.caches_of(cpu).iter().filter(|c| c.level <= 2) {
            let level = format!("L{}", claim.level);
            let found = ms
                .iter()
                .find(|m| m.metric == "level_size" && m.params["level"] == level.as_str());
            let note = found.and_then(|m| m.note.as_deref()).unwrap_or_default();
            if !note.contains(": agrees") {
                return Err(format!("{level} ({} B): {note:?}", claim.size));
            }
        }
        // The idle latency (prefetchers defeated) is the memory level's, measured far beyond
        // the caches: not below the per-line chain at the sweep's largest size (prefetchers
        // only help that one).
        let memory = levels.last().unwrap();
        assert_eq!(memory.params["spacing"], 256);
        let largest = curve.last().unwrap().summary.as_ref().unwrap().median;
        let idle = memory.summary.as_ref().unwrap().median;
        if !(idle > 0.8 * largest && idle < 2_000.0) {
            return Err(format!("idle {idle} ns vs per-line {largest} ns"));
        }
        Ok(())
    });
}

#[test]
fn tlb_reach_is_where_the_random_chain_leaves_the_chunked_one() {
    // The random sweep times a chunked chain of each size interleaved with its own: alone, it
    // finds the reach. Points of 200 ms, as a ratio of two chains is looked at.
    let _turn = serial();
    in_one_of(3, || {
        let ms = run_with_budget("memory.latency.random", Duration::from_millis(200));
        let reach: Vec<_> = ms.iter().filter(|m| m.metric == "tlb_reach").collect();
        // The memory budget (16 MiB) allows chains to 8 MiB, beyond every first-level data TLB
        // (at most a few thousand 4 KiB pages); below 256 KiB both chains are the same, so the
        // reach is never found there.
        let [one] = reach[..] else {
            return Err(format!("{} reaches found", reach.len()));
        };
        let note = one.note.as_deref().unwrap_or_default();
        assert!(note.contains("timed interleaved"), "{note}");
        // The reach is the interval of sizes where the chains part, not one size that flips.
        let between = one.context["departs"].as_str().unwrap_or_default();
        assert!(
            between.starts_with("between ") && between.contains(" and "),
            "{between}"
        );
        let bytes = one.summary.as_ref().unwrap().median;
        (256.0 * 1024.0..=8.0 * 1048576.0)
            .contains(&bytes)
            .then_some(())
            .ok_or_else(|| format!("reach {bytes} B: {note}"))
    });
}

fn median_of(ms: &[Measurement], metric: &str, params: &[(&str, &str)]) -> f64 {
    ms.iter()
        .filter(|m| m.metric == metric)
        .find(|m| {
            params.iter().all(|(k, v)| match m.params.get(*k) {
                Some(serde_json::Value::String(s)) => s == v,
                Some(other) => other.as_u64().is_some_and(|n| v.parse() == Ok(n)),
                None => false,
            })
        })
        .and_then(|m| m.summary.as_ref())
        .map(|s| s.median)
        .unwrap_or_else(|| panic!("no {metric} {params:?} in {ms:?}"))
}

#[test]
#[ignore = "needs AVX (x86-64 with AVX; CI runs it)"]
fn bandwidth_is_gigabytes_per_second_and_counts_write_allocate() {
    oslab_probes::kernels::available().expect("the bandwidth kernels need AVX");
    let ms = run("bandwidth.stream");
    // From a slow DIMM to an L1 cache: 0.1 GB/s .. 5 TB/s.
    assert_range(&ms, "bandwidth", 0.1, 5_000.0);
    let triad = [("kernel", "triad"), ("stores", "plain")];
    let ratio = median_of(&ms, "hw_bandwidth", &triad) / median_of(&ms, "bandwidth", &triad);
    assert!((ratio - 32.0 / 24.0).abs() < 1e-9, "{ratio}");
    for k in ["read", "write", "copy", "scale", "add", "triad"] {
        median_of(&ms, "bandwidth", &[("kernel", k)]);
    }
    median_of(
        &ms,
        "bandwidth",
        &[("kernel", "copy"), ("stores", "libc-memcpy")],
    );
}

#[test]
#[ignore = "needs AVX (x86-64 with AVX; CI runs it)"]
fn bandwidth_sweep_is_faster_in_l1_than_beyond_l2() {
    oslab_probes::kernels::available().expect("the bandwidth kernels need AVX");
    in_one_of(3, || {
        let ms = run("bandwidth.sweep");
        assert_range(&ms, "bandwidth", 0.1, 5_000.0);
        let read = |size: &str| median_of(&ms, "bandwidth", &[("kernel", "read"), ("size", size)]);
        // memory_max 16 MiB: the sweep ends at 4 MiB; 16 KiB fits every L1.
        let (l1, big) = (read("16384"), read("4194304"));
        (l1 > big)
            .then_some(())
            .ok_or_else(|| format!("read 16 KiB {l1} GB/s vs 4 MiB {big} GB/s"))
    });
}

#[test]
fn page_faults_cost_microseconds_and_file_faults_map_several_pages() {
    let ms = run("faults.anon");
    assert_range(&ms, "per_fault", 50.0, 1_000_000.0);
    let ms = run("faults.file");
    assert_range(&ms, "per_fault", 50.0, 100_000_000.0);
    let minor = median_of(&ms, "per_fault", &[("cache", "page cache (minor)")]);
    let per_page = median_of(&ms, "per_page", &[("cache", "page cache (minor)")]);
    // Fault-around maps several cached pages per fault, so a page costs less than a fault.
    assert!(
        per_page < minor,
        "per page {per_page} ns vs per fault {minor} ns"
    );
    let major = median_of(
        &ms,
        "per_fault",
        &[("cache", "evicted (major, no readahead)")],
    );
    assert!(major > minor, "major {major} ns vs minor {minor} ns");
}

#[test]
#[ignore = "needs AVX (x86-64 with AVX; CI runs it)"]
fn numa_matrix_on_the_real_node_places_every_page_there() {
    oslab_probes::kernels::available().expect("the bandwidth kernels need AVX");
    let ms = run("numa.matrix");
    assert_range(&ms, "bandwidth", 0.1, 5_000.0);
    assert_range(&ms, "latency", 0.2, 2_000.0);
    assert!(ms.iter().all(|m| m.context["placed"] == "100%"), "{ms:?}");
}

#[test]
fn strided_and_parallel_chases_are_plausible() {
    let ms = run("memory.latency.stride");
    assert_range(&ms, "per_load", 0.2, 2_000.0);
    // Every table size from 4 KiB to the budget, each with the strides that fit twice.
    assert!(ms
        .iter()
        .any(|m| m.params["size"] == 4096 && m.params["stride"] == 8));
    assert!(ms
        .iter()
        .any(|m| m.params["size"] == (16 << 20) && m.params["stride"] == (4 << 20)));
    let ms = run("memory.latency.parallel");
    assert_range(&ms, "per_load", 0.1, 2_000.0);
    // The chases follow the idle-latency chain (one element per 256 B), not a per-line one the
    // adjacent-line prefetcher half serves: its one-chase point is the idle latency again.
    assert!(ms
        .iter()
        .all(|m| m.params["spacing"] == 256 && m.params["order"] == "chunk"));
    let mlp = median_of(&ms, "parallelism", &[("chases", "16")]);
    // Independent chases overlap on every out-of-order core (prefetchers and a noisy host can
    // push the ratio past the number of chases, never by an order of magnitude).
    assert!(mlp > 1.0 && mlp < 160.0, "parallelism {mlp}");
    let ms = run("memory.latency.pages");
    assert!(ms.iter().any(|m| m.params["asked"] == "hugetlb"));
    assert!(ms
        .iter()
        .filter(|m| m.params["asked"] == "4k" && m.status.has_value())
        .all(|m| m.context["pages"] == "4k"));
}

#[test]
#[ignore = "needs 2 cpus in our affinity mask (CI runs it)"]
fn migration_cost_is_measured_per_distance_class() {
    let ms = run("migration.cost");
    assert!(
        !ms.iter()
            .all(|m| matches!(m.status, oslab_core::Status::Skipped(_))),
        "migration.cost was skipped: it needs a second cpu: {ms:?}"
    );
    // Moving a thread (sched_setaffinity to another cpu) takes between 100 ns and 10 ms.
    assert_range(&ms, "move", 100.0, 1e7);
    assert_range(&ms, "retouch_local", 1.0, 1e8);
    assert!(ms.iter().all(|m| m.params["class"].as_str().is_some()));
}

#[test]
#[ignore = "needs 2 cpus in our affinity mask (CI runs it)"]
fn a_cache_line_crosses_between_two_cpus_in_nanoseconds() {
    let ms = run("c2c.latency");
    // One pair here (the measuring cpu and its peer): a line handed over takes between 5 ns (SMT
    // siblings) and 50 µs (a preempted virtual cpu).
    assert_eq!(ms.len(), 1, "{ms:?}");
    assert_range(&ms, "one_way", 5.0, 5e4);
    let m = &ms[0];
    assert!(m.params["from"] != m.params["to"], "{m:?}");
    assert!(m.params["class"].as_str().is_some_and(|c| c != "same cpu"));
    // The model predicts it from the class: the latency of the level the two cpus share.
    assert!(
        m.prediction.is_some() || m.no_model.is_some(),
        "neither a prediction nor why not: {m:?}"
    );
}

#[test]
fn read_write_mixes_cover_every_ratio_and_count_write_allocate() {
    let ms = run("bandwidth.mix");
    let rows = |threads: u64, stores: &str| -> Vec<&Measurement> {
        ms.iter()
            .filter(|m| {
                m.metric == "bandwidth"
                    && m.params["threads"] == threads
                    && m.params["stores"] == stores
            })
            .collect()
    };
    let one = rows(1, "plain");
    let ratios: Vec<&str> = one
        .iter()
        .map(|m| m.params["read_write"].as_str().unwrap())
        .collect();
    assert_eq!(ratios, ["1:0", "3:1", "2:1", "1:1", "0:1"], "{ms:?}");
    assert_range(&ms, "bandwidth", 0.1, 1e4);
    // Plain stores read the line first: the bus carries more than STREAM counts, by the share
    // written (a quarter more at 3:1, twice at 0:1).
    for m in ms.iter().filter(|m| m.metric == "hw_bandwidth") {
        let counted = ms
            .iter()
            .find(|c| c.metric == "bandwidth" && c.params == m.params)
            .and_then(|c| c.summary.as_ref())
            .unwrap()
            .median;
        let ratio = m.summary.as_ref().unwrap().median / counted;
        let expected = match m.params["read_write"].as_str().unwrap() {
            "3:1" => 1.25,
            "2:1" => 4.0 / 3.0,
            "1:1" => 1.5,
            _ => 2.0,
        };
        assert!((ratio - expected).abs() < 1e-9, "{m:?}");
    }
}

#[test]
#[ignore = "needs 2 cpus in our affinity mask (CI runs it)"]
fn loaded_latency_pairs_each_point_with_the_traffic_beside_it() {
    let ms = run("memory.latency.loaded");
    let latency: Vec<&Measurement> = ms.iter().filter(|m| m.metric == "per_load").collect();
    assert!(latency.len() >= 3, "{ms:?}");
    assert_eq!(latency[0].params["pause"], "idle");
    assert_range(&ms, "per_load", 1.0, 1e5);
    // Every loaded point has the loaders' bandwidth beside it, and they moved something.
    for m in latency.iter().skip(1) {
        let bw = ms
            .iter()
            .find(|b| b.metric == "load_bandwidth" && b.params == m.params)
            .unwrap_or_else(|| panic!("no bandwidth beside {m:?}"));
        assert!(bw.summary.as_ref().unwrap().median > 0.0, "{bw:?}");
    }
}
