//! Each model's arithmetic on hand-worked inputs: a Sapphire Rapids core at 2 GHz with known
//! caches, so every expected value below can be checked with pencil and paper.

use super::*;
use crate::answer::UNMODELLED;
use crate::memory::MemorySpec;
use crate::spec::CacheLevel;
use oslab_core::catalog::{id, metric};
use oslab_core::model::{Status, Unit};
use oslab_core::{params, Summary};

fn spr() -> &'static uarch::Uarch {
    uarch::lookup(Some("GenuineIntel"), Some("6/143/8")).unwrap()
}

fn spec() -> Spec {
    Spec {
        cpu: Ok(spr()),
        presented: None,
        core_ghz: Ok(Figure::new(2.0, "measured: test")),
        caches: vec![
            CacheLevel {
                level: 1,
                size: 48 << 10,
                served: None,
            },
            CacheLevel {
                level: 2,
                size: 2 << 20,
                served: None,
            },
            CacheLevel {
                level: 3,
                size: 105 << 20,
                served: None,
            },
        ],
        memory: Err("memory speed unknown: describe it with --memory".into()),
        hypervisor: None,
        cpu_model: Some("Intel(R) Xeon(R) Platinum 8480+".into()),
        entry_mitigations: Vec::new(),
        return_mitigation: None,
        syscall_tax: Vec::new(),
        tick_hz: Some(250),
        clocksource: Some("tsc".into()),
        idle_exit_us: Ok(Figure::new(2.0, "kernel: test")),
        distances: vec![vec![10]],
    }
}

fn measured(
    probe: &str,
    params: serde_json::Map<String, serde_json::Value>,
    metric: &str,
    unit: Unit,
    value: f64,
) -> Measurement {
    let mut m = Measurement::not_taken(probe, params, metric, unit, Status::Ok);
    m.summary = Summary::new(&[value, value, value]);
    m
}

/// Predicts `ms` and returns the prediction of the first.
fn predicted(spec: &Spec, mut ms: Vec<Measurement>) -> Measurement {
    predict(spec, &mut ms);
    ms.remove(0)
}

fn value(m: &Measurement) -> f64 {
    m.prediction
        .as_ref()
        .unwrap_or_else(|| panic!("no prediction: {:?}", m.no_model))
        .value
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn loop_and_calls_are_cycles_at_the_measured_clock() {
    let s = spec();
    // 1 cycle at 2 GHz.
    let m = predicted(
        &s,
        vec![measured(
            id::LOOP_EMPTY,
            params! {"cpu" => 0},
            "per_iteration",
            Unit::Ns,
            0.6,
        )],
    );
    assert!(close(value(&m), 0.5));
    // call + ret with 4 arguments: (2 + 0.5 x 4) cycles / 2 GHz = 2 ns.
    let m = predicted(
        &s,
        vec![measured(
            id::CALL_ARGS,
            params! {"args" => 4},
            "per_call",
            Unit::Ns,
            2.2,
        )],
    );
    assert!(close(value(&m), 2.0));
    let p = m.prediction.unwrap();
    assert_eq!(p.kind, ModelKind::Spec);
    assert!(p.sources["core_ghz"]
        .as_str()
        .unwrap()
        .starts_with("measured"));
}

#[test]
fn a_null_system_call_pays_its_mitigations() {
    let mut s = spec();
    let hot = || {
        measured(
            id::SYSCALL_GETPPID,
            params! {"cache" => "hot"},
            "per_call",
            Unit::Ns,
            100.0,
        )
    };
    // 150 cycles / 2 GHz = 75 ns.
    assert!(close(value(&predicted(&s, vec![hot()])), 75.0));
    // Page-table isolation adds two CR3 writes: (150 + 200) / 2 = 175 ns.
    s.entry_mitigations = vec![("meltdown".into(), 200.0, "page-table isolation")];
    assert!(close(value(&predicted(&s, vec![hot()])), 175.0));
    // SRSO's safe return is paid at each of the path's 10 returns: (350 + 10 x 13) / 2 = 240 ns.
    s.return_mitigation = Some(("spec_rstack_overflow".into(), 13.0, "safe return"));
    let p = predicted(&s, vec![hot()]).prediction.unwrap();
    assert!(close(p.value, 240.0), "{p:?}");
    assert!(p.inputs.contains_key("kernel_cycles_per_return"), "{p:?}");
}

#[test]
fn cache_latency_is_the_level_that_holds_the_working_set() {
    let s = spec();
    let chunk = |size: u64| {
        measured(
            id::MEMORY_LATENCY_CHUNK,
            params! {"size" => size, "order" => "chunk"},
            "per_load",
            Unit::Ns,
            5.0,
        )
    };
    // 1 MiB lives in the 2 MiB L2: 16 cycles / 2 GHz = 8 ns.
    assert!(close(value(&predicted(&s, vec![chunk(1 << 20)])), 8.0));
    // 32 KiB in L1: 5 cycles = 2.5 ns; 1 GiB in memory: the table's 110 ns.
    assert!(close(value(&predicted(&s, vec![chunk(32 << 10)])), 2.5));
    assert!(close(value(&predicted(&s, vec![chunk(1 << 30)])), 110.0));
    // Random over 64 MiB: L3 (110 cycles = 55 ns) + an STLB hit (9 cycles = 4.5 ns) + a walk
    // whose page tables (64 MiB / 512 = 128 KiB) sit in L2 (8 ns).
    let random = measured(
        id::MEMORY_LATENCY_RANDOM,
        params! {"size" => 64u64 << 20, "order" => "random"},
        "per_load",
        Unit::Ns,
        70.0,
    );
    assert!(close(value(&predicted(&s, vec![random])), 55.0 + 4.5 + 8.0));
}

#[test]
fn in_a_guest_the_last_cache_holds_what_the_run_found_it_serving() {
    let mut s = spec();
    let random = |size: u64| {
        measured(
            id::MEMORY_LATENCY_RANDOM,
            params! {"size" => size, "order" => "random"},
            "per_load",
            Unit::Ns,
            120.0,
        )
    };
    let plateau = measured(
        id::MEMORY_LATENCY_CHUNK,
        params! {"level" => "L3"},
        metric::LEVEL_SIZE,
        Unit::Bytes,
        16.0 * (1 << 20) as f64,
    );
    // On bare metal the plateau is the chase's, not a share: 64 MiB is in the 105 MiB L3.
    let p = predicted(&s, vec![random(64 << 20), plateau.clone()]);
    assert_eq!(p.prediction.unwrap().kind, ModelKind::Spec);
    // In a guest 64 MiB is past the 16 MiB the L3 serves it: memory (110 ns) + an STLB hit
    // (4.5 ns) + a walk from L2 (8 ns), resting on the run's plateau (composed).
    s.hypervisor = Some("KVM".into());
    let p = predicted(&s, vec![random(64 << 20), plateau.clone()])
        .prediction
        .unwrap();
    assert!(close(p.value, 110.0 + 4.5 + 8.0), "{p:?}");
    assert_eq!(p.kind, ModelKind::Composed);
    assert!(p.inputs.contains_key("served_bytes"), "{p:?}");
    // A working set both place alike stays a spec prediction.
    let p = predicted(&s, vec![random(8 << 20), plateau.clone()]);
    assert_eq!(p.prediction.unwrap().kind, ModelKind::Spec);
    // The plateau's own row is judged against what sysfs claims.
    let mut ms = vec![plateau.clone(), random(64 << 20)];
    predict(&s, &mut ms);
    assert!(close(
        ms[0].prediction.as_ref().unwrap().value,
        (105u64 << 20) as f64
    ));
    // One core's rate from beyond the cache has no model, and says where the cache ended.
    let bw = measured(
        id::BANDWIDTH_SWEEP,
        params! {"kernel" => "read", "size" => 64u64 << 20, "stores" => "plain", "threads" => 1},
        "bandwidth",
        Unit::GBps,
        20.0,
    );
    let why = predicted(&s, vec![bw, plateau]).no_model.unwrap();
    assert!(
        why.contains("prefetchers") && why.contains("beyond the 16 MiB"),
        "{why}"
    );
}

#[test]
fn strides_are_prefetched_within_a_page_and_compete_for_sets_beyond() {
    let s = spec();
    let stride = |size: u64, stride: u64| {
        let m = measured(
            id::MEMORY_LATENCY_STRIDE,
            params! {"size" => size, "stride" => stride},
            "per_load",
            Unit::Ns,
            3.0,
        );
        value(&predicted(&s, vec![m]))
    };
    // 16 B over 8 MiB: a quarter of the loads start a line, streamed from L3 at 16 B/cycle x 2
    // GHz (64 B in 2 ns); Intel's L1 prefetchers run one stride ahead, so a line's first load
    // waits for the L2, which the streamer keeps ahead (16 cycles, 8 ns); the rest hit L1:
    // 0.25 x 8 + 0.75 x 2.5 = 3.875 ns.
    assert!(close(stride(8 << 20, 16), 3.875));
    // 128 B: every load starts a line: max(8 ns, 128 B / 32 GB/s = 4 ns).
    assert!(close(stride(8 << 20, 128), 8.0));
    // Within the L1 (48 KiB) nothing waits for the L2: 2.5 ns.
    assert!(close(stride(32 << 10, 64), 2.5));
    // A page: 2,048 lines at one page offset, the sets of all 8 MiB: L3 (110 cycles, 55 ns),
    // past the first-level TLB's 96 entries (9 cycles, 4.5 ns).
    assert!(close(stride(8 << 20, 4096), 59.5));
    // 64 KiB: 128 lines compete for the sets of 512 KiB: L2 (16 cycles, 8 ns) + 4.5 ns.
    assert!(close(stride(8 << 20, 64 << 10), 12.5));
    // Four lines: L1, whatever their distance.
    assert!(close(stride(8 << 20, 2 << 20), 2.5));
    // AMD's L1 prefetchers run ahead of the chain: a line's first load hits L1, 2.5 ns (Zen 4's
    // latencies differ, but its 4-cycle L1 at 2 GHz is 2 ns, and L3 fills 64 B in 2 ns).
    let mut zen4 = spec();
    zen4.cpu = Ok(uarch::lookup(Some("AuthenticAMD"), Some("25/17/1")).unwrap());
    let m = measured(
        id::MEMORY_LATENCY_STRIDE,
        params! {"size" => 8u64 << 20, "stride" => 128u64},
        "per_load",
        Unit::Ns,
        3.0,
    );
    let p = predicted(&zen4, vec![m]).prediction.unwrap();
    assert!(p.formula.contains("max(L1 "), "{}", p.formula);
}

/// One thread's STREAM bandwidth of `kernel` with plain stores, as this run measured it.
fn one_thread_stream(kernel: &str, gbps: f64) -> Measurement {
    measured(
        id::BANDWIDTH_STREAM,
        params! {"kernel" => kernel, "stores" => "plain", "threads" => 1},
        "bandwidth",
        Unit::GBps,
        gbps,
    )
}

#[test]
fn bandwidth_from_ports_levels_and_the_run_s_one_thread_rate() {
    let mut s = spec();
    let bw = |kernel: &str, size: u64, threads: u32| {
        measured(
            id::BANDWIDTH_SWEEP,
            params! {"kernel" => kernel, "size" => size, "stores" => "plain", "threads" => threads},
            "bandwidth",
            Unit::GBps,
            50.0,
        )
    };
    // Read in L1: four accumulators wait 2 cycles per add, so 0.5 cycle per 32-byte vector
    // (the loads need 1/3): 64 B/cycle x 2 GHz = 128 GB/s.
    assert!(close(
        value(&predicted(&s, vec![bw("read", 16 << 10, 1)])),
        128.0
    ));
    // Copy in L2 on Intel: the L1 takes the two lines in and the dirty one out, a cycle each,
    // beside a line's loads (64/96 cycle) and stores (64/64): 128 B / 4.67 cycles x 2 GHz.
    assert!(close(
        value(&predicted(&s, vec![bw("copy", 1 << 20, 1)])),
        128.0 / (3.0 + 2.0 / 3.0 + 1.0) * 2.0
    ));
    // AMD's L1 takes fills beside the accesses: the L2's 64 B a cycle moves three lines (a
    // plain store's comes in and goes back), 128 B / 3 cycles x 2 GHz.
    let mut zen4 = spec();
    zen4.cpu = Ok(uarch::lookup(Some("AuthenticAMD"), Some("25/17/1")).unwrap());
    assert!(close(
        value(&predicted(&zen4, vec![bw("copy", 1 << 20, 1)])),
        128.0 / 3.0 * 2.0
    ));
    // One thread from memory: no specification gives its prefetchers' lines in flight.
    let why = predicted(&s, vec![bw("triad", 1 << 30, 1)])
        .no_model
        .unwrap();
    assert!(why.contains("prefetchers"), "{why}");
    // More threads: this run's one thread times the threads (a composed check), up to the
    // memory's peak (a spec figure): 8 x 10 GB/s wanted, DDR4-3200 x 2 channels x 8 B = 51.2.
    let one = one_thread_stream("read", 10.0);
    let four = predicted(&s, vec![bw("read", 1 << 30, 4), one.clone()]);
    assert!(close(value(&four), 40.0));
    assert_eq!(four.prediction.unwrap().kind, ModelKind::Composed);
    s.memory = MemorySpec::parse("DDR4-3200x2").map_err(|e| NoModel(e.0));
    let m = predicted(&s, vec![bw("read", 1 << 30, 8), one]);
    assert!(close(value(&m), 51.2));
    let p = m.prediction.unwrap();
    assert_eq!((p.model.as_str(), p.kind), ("memory peak", ModelKind::Spec));
    // Without the one-thread row, the check says what to run.
    let alone = predicted(&s, vec![bw("read", 1 << 30, 4)])
        .no_model
        .unwrap();
    assert!(alone.contains(id::BANDWIDTH_STREAM), "{alone}");
}

#[test]
fn composed_models_say_so_and_use_the_run() {
    let s = spec();
    let rt = |probe: &str, v: f64| measured(probe, params! {"cpu" => 0}, "round_trip", Unit::Ns, v);
    let run = vec![
        rt(id::TASK_POSIX_SPAWN, 45_000.0),
        rt(id::TASK_VFORK, 10_000.0),
        rt(id::TASK_FORK_EXEC, 100_000.0),
        rt(id::TASK_FORK, 70_000.0),
    ];
    let mut ms = run.clone();
    predict(&s, &mut ms);
    // posix_spawn = vfork + exec, exec = fork+exec - fork, all measured: 10 + (100 - 70) us.
    let p = ms[0].prediction.as_ref().unwrap();
    assert!(close(p.value, 40_000.0));
    assert_eq!(p.kind, ModelKind::Composed);
    assert!(p.sources["creation_ns"]
        .as_str()
        .unwrap()
        .starts_with("measured in this run"));
    // Without the parts, the composed model says what to measure.
    let alone = predicted(&s, vec![run[0].clone()]);
    assert!(alone.no_model.unwrap().contains(id::TASK_VFORK));
}

#[test]
fn switches_are_the_schedulers_work_in_cycles() {
    let mut s = spec();
    let same = || params! {"placement" => "same-cpu"};
    let one = |s: &Spec, probe: &str, metric: &str| {
        let m = predicted(s, vec![measured(probe, same(), metric, Unit::Ns, 1000.0)]);
        assert_eq!(
            m.prediction.as_ref().unwrap().kind,
            ModelKind::Spec,
            "{probe} {metric}"
        );
        value(&m)
    };
    // 1,500 cycles at 2 GHz; a process adds 200 for the address space.
    assert!(close(one(&s, id::SWITCH_THREAD_PIPE, "switch"), 750.0));
    assert!(close(one(&s, id::SWITCH_PROCESS_PIPE, "switch"), 850.0));
    // A pipe's transfer: 2 entries (150) + 2 VFS paths (150) + the pipe's 800 cycles.
    assert!(close(one(&s, id::SWITCH_THREAD_PIPE, "transfer"), 700.0));
    // A futex's: 2 entries + 750 cycles of keys, bucket and value.
    assert!(close(one(&s, id::SWITCH_THREAD_FUTEX, "transfer"), 525.0));
    // Across cpus: the transfer, a switch, the wake and the IPI (1,400 + 1,500 + 1,500 +
    // 1,000 cycles) and the idle state's 2 us exit.
    assert!(close(
        one(&s, id::SWITCH_THREAD_PIPE, "wakeup"),
        2_700.0 + 2_000.0
    ));
    // Under a hypervisor: two VM exits (2 x 1,200 cycles), the host's wake of the vcpu (3 us)
    // and its core's idle exit (30 us).
    s.hypervisor = Some("KVM".into());
    assert!(close(
        one(&s, id::SWITCH_THREAD_PIPE, "wakeup"),
        4_700.0 + 1_200.0 + 33_000.0
    ));
}

#[test]
fn creation_counts_what_fork_copies_and_a_thread_shares() {
    let s = spec();
    let mut fork = measured(
        id::TASK_FORK,
        params! {"cpu" => 0},
        "create",
        Unit::Ns,
        30_000.0,
    );
    // Without the parent's map there is nothing to count.
    assert!(predicted(&s, vec![fork.clone()])
        .no_model
        .unwrap()
        .contains("parent's map"));
    fork.context
        .insert(oslab_core::model::PARENT_VMAS.into(), 10.into());
    fork.context
        .insert(oslab_core::model::PARENT_COPIED.into(), (100 * 4096).into());
    // (150 entry + 7,000 task + 5,000 files and signals + 8,000 mm + 10 x 2,500 mappings +
    // 100 x 60 pages) cycles / 2 GHz, + 100 page lines x 110 ns / 16 misses in flight.
    let m = predicted(&s, vec![fork]);
    assert!(
        close(value(&m), 51_150.0 / 2.0 + 100.0 * 110.0 / 16.0),
        "{}",
        value(&m)
    );
    assert_eq!(m.prediction.unwrap().kind, ModelKind::Spec);
    // Per MiB: 256 pages x (60 + 60) cycles + 512 page lines.
    let per_mib = measured(
        id::TASK_FORK,
        params! {"cpu" => 0, "fit" => "touched memory"},
        "cost_per_mib",
        Unit::Ns,
        12_000.0,
    );
    assert!(close(
        value(&predicted(&s, vec![per_mib])),
        256.0 * 120.0 / 2.0 + 512.0 * 110.0 / 16.0
    ));
    // pthread_create: (150 + 2,000 glibc + 7,000 task) cycles.
    let thread = measured(
        id::TASK_PTHREAD,
        params! {"cpu" => 0},
        "create",
        Unit::Ns,
        5000.0,
    );
    assert!(close(value(&predicted(&s, vec![thread])), 4_575.0));
}

#[test]
fn a_major_fault_waits_for_its_disk() {
    let s = spec();
    let fault = |cache: &str, class: &str| {
        let mut m = measured(
            id::FAULTS_FILE,
            params! {"cache" => cache, "page_bytes" => 4096},
            "per_fault",
            Unit::Ns,
            90_000.0,
        );
        m.context
            .insert(oslab_core::model::DEVICE.into(), "vda".into());
        m.context
            .insert(oslab_core::model::DEVICE_CLASS.into(), class.into());
        predicted(&s, vec![m])
    };
    // (150 trap + 10,000 path) cycles / 2 GHz + the disk's 100 us.
    let m = fault("evicted (major, no readahead)", "virtio");
    assert!(close(value(&m), 5_075.0 + 100_000.0));
    assert_eq!(m.prediction.unwrap().kind, ModelKind::Spec);
    let hdd = fault("evicted (major, no readahead)", "hdd");
    assert!(value(&hdd) > 10e6);
    assert!(fault("evicted (major, no readahead)", "other")
        .no_model
        .unwrap()
        .contains("kind is unknown"));
    assert!(fault("evicted (major, readahead)", "nvme")
        .no_model
        .unwrap()
        .contains("sequential rate"));
}

#[test]
fn a_page_fault_is_a_trap_an_allocation_and_zeroing() {
    let s = spec();
    let fault = measured(
        id::FAULTS_ANON,
        params! {"page_bytes" => 4096},
        "per_fault",
        Unit::Ns,
        2000.0,
    );
    let write = one_thread_stream("write", 10.0);
    // (150 + 500) cycles / 2 GHz = 325 ns, + 4096 B at 10 GB/s = 409.6 ns.
    let m = predicted(&s, vec![fault, write]);
    assert!(close(value(&m), 325.0 + 409.6));
    assert_eq!(m.prediction.unwrap().kind, ModelKind::Composed);
}

#[test]
fn missing_inputs_say_which_and_how_to_supply_them() {
    let mut s = spec();
    s.tick_hz = None;
    let tick = measured(
        id::ACTIVITY_NOISE,
        params! {"cpu" => 0},
        "tick_hz",
        Unit::Hz,
        250.0,
    );
    assert!(predicted(&s, vec![tick])
        .no_model
        .unwrap()
        .contains("CONFIG_HZ"));
    s.cpu = uarch::lookup(Some("GenuineIntel"), Some("6/1/0"));
    let l1 = measured(
        id::MEMORY_LATENCY_CHUNK,
        params! {"size" => 4096, "order" => "chunk"},
        "per_load",
        Unit::Ns,
        2.0,
    );
    let why = predicted(&s, vec![l1]).no_model.unwrap();
    assert!(
        why.contains("not in oslab's table") && why.contains("uarch.rs"),
        "{why}"
    );
    s = spec();
    s.core_ghz = Err("no chain".into());
    let lp = measured(id::LOOP_EMPTY, params! {}, "per_iteration", Unit::Ns, 0.5);
    assert!(predicted(&s, vec![lp])
        .no_model
        .unwrap()
        .contains("core clock unknown"));
}

#[test]
fn far_gaps_are_explained_near_ones_are_not() {
    let mut s = spec();
    let hot = |ns: f64| {
        measured(
            id::SYSCALL_GETPPID,
            params! {"cache" => "hot"},
            "per_call",
            Unit::Ns,
            ns,
        )
    };
    // 150 ns against 75 predicted: exactly 2x, not flagged.
    assert!(predicted(&s, vec![hot(150.0)])
        .prediction
        .unwrap()
        .gap
        .is_none());
    s.hypervisor = Some("KVM".into());
    s.entry_mitigations = vec![(
        "mds".into(),
        100.0,
        "VERW clears the cpu buffers on every return to user",
    )];
    // (150 + 100) / 2 = 125 ns predicted, 1250 measured.
    let gap = predicted(&s, vec![hot(1250.0)])
        .prediction
        .unwrap()
        .gap
        .unwrap();
    assert!(gap.starts_with("measured 10.0x the prediction"), "{gap}");
    assert!(gap.contains("mds") && gap.contains("KVM"), "{gap}");
}

#[test]
fn a_miss_names_the_input_it_rests_on() {
    let mut s = spec();
    s.hypervisor = Some("KVM".into());
    s.cpu_model = Some("Intel(R) Xeon(R) Processor".into());
    let gap = |s: &Spec, m: Measurement| predicted(s, vec![m]).prediction.unwrap().gap.unwrap();
    // cpuid under KVM: the exit this host took, from the measurement, against the one assumed.
    let cpuid = || {
        measured(
            id::TIMER_CPUID_RDTSC,
            params! {},
            "per_read",
            Unit::Ns,
            4600.0,
        )
    };
    let why = gap(&s, cpuid());
    assert!(
        why.contains("the exit and re-entry took about 4.")
            && why.contains("against the 1200 cycles"),
        "{why}"
    );
    // A cold call's miss names the estimates it rests on: its misses, and the fill buffers and
    // page walkers they overlap across.
    let cold = || {
        measured(
            id::SYSCALL_GETPPID,
            params! {"cache" => "cold", "evicted" => "private"},
            "per_call",
            Unit::Ns,
            50.0,
        )
    };
    let why = gap(&s, cold());
    assert!(
        why.contains("40 lines across 16 fill buffers") && why.contains("4 at a time"),
        "{why}"
    );
    // A kernel path's miss is not the presented core's: that clause is for the core's tables.
    assert!(!why.contains("names no product"), "{why}");
    // An audit rule taxes every call, and a slow call says so first.
    s.syscall_tax = vec![
        "syscall audit on, 1 rule: every system call takes the audit path on entry and exit".into(),
    ];
    let slow = measured(
        id::SYSCALL_GETPPID,
        params! {"cache" => "hot"},
        "per_call",
        Unit::Ns,
        5000.0,
    );
    let why = gap(&s, slow);
    assert!(why.contains(": syscall audit on, 1 rule"), "{why}");
    // A same-cpu switch far above its model: by how many cycles, beside its largest estimated
    // step, and SRSO's returns where they are paid; no IPI, which a same-cpu switch never sends.
    s.syscall_tax.clear();
    s.return_mitigation = Some(("spec_rstack_overflow".into(), 13.0, "safe return"));
    let switch = measured(
        id::SWITCH_THREAD_PIPE,
        params! {"placement" => "same-cpu", "sched" => "other"},
        "switch",
        Unit::Ns,
        20000.0,
    );
    let why = gap(&s, switch);
    assert!(
        why.contains("; this row: ")
            && why.ends_with(
                "cycles over the model at 2.00 GHz, its largest estimated step thread_switch at 1,500 cycles"
            )
            && why.contains("spec_rstack_overflow's safe return")
            && !why.contains("IPI"),
        "{why}"
    );
}

#[test]
fn a_hypervisor_that_names_no_product_may_present_another_core() {
    let mut s = spec();
    s.hypervisor = Some("KVM".into());
    let l3 = || {
        measured(
            id::MEMORY_LATENCY_CHUNK,
            params! {"level" => "L3"},
            "level_latency",
            Unit::Ns,
            200.0,
        )
    };
    // A named product: its table row is believed.
    let gap = predicted(&s, vec![l3()]).prediction.unwrap().gap.unwrap();
    assert!(!gap.contains("names no product"), "{gap}");
    // "Intel(R) Xeon(R) Processor": cpuid's model may be the hypervisor's choice.
    s.cpu_model = Some("Intel(R) Xeon(R) Processor".into());
    let gap = predicted(&s, vec![l3()]).prediction.unwrap().gap.unwrap();
    assert!(
        gap.contains("names no product") && gap.contains("Sapphire"),
        "{gap}"
    );
    // Without a hypervisor, the name is the host's own.
    s.hypervisor = None;
    let gap = predicted(&s, vec![l3()]).prediction.unwrap().gap.unwrap();
    assert!(!gap.contains("names no product"), "{gap}");
}

#[test]
fn reference_predictions_from_the_probe_are_kept() {
    let s = spec();
    let mut m = measured("timeslice.x", params! {}, "switches", Unit::Count, 10.0);
    m.prediction = Some(oslab_core::Prediction {
        kind: ModelKind::Reference,
        ..oslab_core::Prediction::new(12.0, "the kernel's count", params! {})
    });
    assert!(close(value(&predicted(&s, vec![m])), 12.0));
}

/// Walks the catalog: every metric it says the model predicts reaches a model arm (the answer
/// is a prediction, or the input it lacks), and every metric it says has none gets the
/// catalog's reason.
#[test]
fn every_metric_the_catalog_calls_predicted_has_a_model_arm() {
    let spec = spec();
    for e in oslab_core::catalog::all() {
        for metric in e.metrics {
            let mut m =
                Measurement::not_taken(e.id, params! {}, metric.name, metric.unit, Status::Ok);
            m.summary = Summary::new(&[1.0, 1.0, 1.0]);
            let run = Run::new(vec![m.clone()]);
            let answer = model(&spec, &run, &m);
            match metric.predicted {
                oslab_core::catalog::Predicted::Yes => {
                    if let Err(why) = &answer {
                        assert!(
                            !why.0.starts_with(UNMODELLED),
                            "{} {}: {why}",
                            e.id,
                            metric.name
                        );
                    }
                }
                oslab_core::catalog::Predicted::No(reason) => {
                    assert_eq!(
                        answer.err().map(|w| w.0).as_deref(),
                        Some(reason),
                        "{} {}",
                        e.id,
                        metric.name
                    );
                }
            }
        }
    }
}

/// `docs/models.md` names every probe whose metrics the model predicts, and names no probe the
/// catalog does not have: the page a reader checks a prediction against cannot fall behind.
#[test]
fn the_models_page_names_every_modelled_probe_and_no_other() {
    let page = include_str!("../../../docs/models.md");
    // Names in backticks that look like probe ids, patterns (`switch.*.pipe`) included.
    let named: Vec<&str> = page
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            (w.contains('.')
                && !w.contains(' ')
                && oslab_core::catalog::Family::of(w.trim_start_matches("*.")).is_some())
                || oslab_core::catalog::entry(w).is_some()
        })
        .collect();
    let matches = |pattern: &str, id: &str| {
        let (p, i): (Vec<&str>, Vec<&str>) =
            (pattern.split('.').collect(), id.split('.').collect());
        match pattern.starts_with("*.") {
            true => id.ends_with(&pattern[1..]),
            false => {
                p.len() <= i.len()
                    && p.iter().zip(&i).all(|(a, b)| *a == "*" || a == b)
                    && (p.len() == i.len() || p.last() == Some(&"*"))
            }
        }
    };
    let catalog: Vec<&oslab_core::catalog::Entry> = oslab_core::catalog::all().collect();
    for name in &named {
        assert!(
            catalog.iter().any(|e| matches(name, e.id)),
            "docs/models.md names `{name}`, which no probe in the catalog is"
        );
    }
    let missing: Vec<&str> = catalog
        .iter()
        .filter(|e| {
            e.metrics
                .iter()
                .any(|m| m.predicted == oslab_core::catalog::Predicted::Yes)
        })
        .filter(|e| !named.iter().any(|n| matches(n, e.id)))
        .map(|e| e.id)
        .collect();
    assert!(
        missing.is_empty(),
        "the model predicts metrics of these probes, and docs/models.md does not name them: {}",
        missing.join(", ")
    );
}
