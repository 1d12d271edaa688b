//! The suite's probes, in the order `oslab run` runs them.

use super::*;

/// Why no published figure predicts a creation cost.
const NO_FIGURE: &str =
    "no published figure to predict it from; compare it with the other creation costs";
/// Why a noise recording's own figures have no model.
const OF_THE_RECORDING: &str =
    "a property of this recording (a chosen threshold or a histogram), not a cost to predict";

/// timer.rdtsc.
pub const TIMER_RDTSC: Entry = Entry {
    id: id::TIMER_RDTSC,
    about: "rdtsc, unfenced (may overlap neighbouring instructions)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.rdtscp.
pub const TIMER_RDTSCP: Entry = Entry {
    id: id::TIMER_RDTSCP,
    about: "rdtscp (waits for earlier instructions)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.lfence-rdtsc.
pub const TIMER_LFENCE_RDTSC: Entry = Entry {
    id: id::TIMER_LFENCE_RDTSC,
    about: "lfence; rdtsc; lfence (fully ordered read, what oslab itself uses)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.cpuid-rdtsc.
pub const TIMER_CPUID_RDTSC: Entry = Entry {
    id: id::TIMER_CPUID_RDTSC,
    about: "cpuid; rdtsc (a serializing read; cpuid traps to a hypervisor)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.clock_gettime.
pub const TIMER_CLOCK_GETTIME: Entry = Entry {
    id: id::TIMER_CLOCK_GETTIME,
    about: "clock_gettime(CLOCK_MONOTONIC) through the vDSO",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.clock_gettime.syscall.
pub const TIMER_CLOCK_GETTIME_SYSCALL: Entry = Entry {
    id: id::TIMER_CLOCK_GETTIME_SYSCALL,
    about: "clock_gettime(CLOCK_MONOTONIC) as a real system call",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// loop.empty.
pub const LOOP_EMPTY: Entry = Entry {
    id: id::LOOP_EMPTY,
    about: "one iteration of an empty counted loop (dec; jnz), which the compiler cannot unroll",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_ITERATION, Unit::Ns)],
    origin: Origin::Suite,
};
/// call.args.
pub const CALL_ARGS: Entry = Entry {
    id: id::CALL_ARGS,
    about: "procedure call with 0..7 integer arguments, absolute and per extra argument",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_CALL, Unit::Ns),
        predicted(metric::INCREMENT, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// syscall.getpid.
pub const SYSCALL_GETPID: Entry = Entry {
    id: id::SYSCALL_GETPID,
    about: "getpid via raw syscall (no libc caching), hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.getppid.
pub const SYSCALL_GETPPID: Entry = Entry {
    id: id::SYSCALL_GETPPID,
    about: "getppid via raw syscall, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.time.vdso.
pub const SYSCALL_TIME_VDSO: Entry = Entry {
    id: id::SYSCALL_TIME_VDSO,
    about: "time() through the vDSO (no kernel entry), hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.time.raw.
pub const SYSCALL_TIME_RAW: Entry = Entry {
    id: id::SYSCALL_TIME_RAW,
    about: "time() as a real system call, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.read.devzero.
pub const SYSCALL_READ_DEVZERO: Entry = Entry {
    id: id::SYSCALL_READ_DEVZERO,
    about: "read(2) of 1 byte from /dev/zero, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.write.devnull.
pub const SYSCALL_WRITE_DEVNULL: Entry = Entry {
    id: id::SYSCALL_WRITE_DEVNULL,
    about: "write(2) of 1 byte to /dev/null, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// task.fork.
pub const TASK_FORK: Entry = Entry {
    id: id::TASK_FORK,
    about: "fork + _exit + waitpid from a minimal parent, and its cost per MiB the parent touched",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        unmodelled(metric::CREATE, Unit::Ns, NO_FIGURE),
        predicted(metric::COST_PER_MIB, Unit::Ns),
        unmodelled(metric::FIXED_COST, Unit::Ns, NO_FIGURE),
    ],
    origin: Origin::Suite,
};
/// task.vfork.
pub const TASK_VFORK: Entry = Entry {
    id: id::TASK_VFORK,
    about: "vfork (clone CLONE_VM|CLONE_VFORK) + _exit + waitpid",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// task.posix_spawn.
pub const TASK_POSIX_SPAWN: Entry = Entry {
    id: id::TASK_POSIX_SPAWN,
    about: "posix_spawn of a static do-nothing program + waitpid",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// task.fork-exec.
pub const TASK_FORK_EXEC: Entry = Entry {
    id: id::TASK_FORK_EXEC,
    about: "fork + execve of a static do-nothing program + waitpid",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// task.pthread.
pub const TASK_PTHREAD: Entry = Entry {
    id: id::TASK_PTHREAD,
    about: "pthread_create + pthread_join of an empty thread",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::ROUND_TRIP, Unit::Ns, NO_FIGURE),
        unmodelled(metric::CREATE, Unit::Ns, NO_FIGURE),
    ],
    origin: Origin::Suite,
};
/// task.std-thread.
pub const TASK_STD_THREAD: Entry = Entry {
    id: id::TASK_STD_THREAD,
    about: "std::thread::spawn + join of an empty closure",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.process.pipe.
pub const SWITCH_PROCESS_PIPE: Entry = Entry {
    id: id::SWITCH_PROCESS_PIPE,
    about: "process ping-pong over two pipes: switch (same cpu) and wake-up (cross cpu)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.process.futex.
pub const SWITCH_PROCESS_FUTEX: Entry = Entry {
    id: id::SWITCH_PROCESS_FUTEX,
    about: "process ping-pong over shared-memory futexes",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.process.eventfd.
pub const SWITCH_PROCESS_EVENTFD: Entry = Entry {
    id: id::SWITCH_PROCESS_EVENTFD,
    about: "process ping-pong over eventfds",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.thread.pipe.
pub const SWITCH_THREAD_PIPE: Entry = Entry {
    id: id::SWITCH_THREAD_PIPE,
    about: "thread ping-pong over two pipes",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.thread.futex.
pub const SWITCH_THREAD_FUTEX: Entry = Entry {
    id: id::SWITCH_THREAD_FUTEX,
    about: "thread ping-pong over futexes",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.thread.eventfd.
pub const SWITCH_THREAD_EVENTFD: Entry = Entry {
    id: id::SWITCH_THREAD_EVENTFD,
    about: "thread ping-pong over eventfds",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.oneshot.
pub const SWITCH_ONESHOT: Entry = Entry {
    id: id::SWITCH_ONESHOT,
    about: "one-shot switch: parent's TSC after fork/create -> the child's first TSC read",
    unit: Unit::Ns,
    metrics: &[unmodelled(
        metric::SWITCH,
        Unit::Ns,
        "the one-shot method mixes creation with the first switch; no model separates them",
    )],
    origin: Origin::Suite,
};
/// memory.latency.chunk.
pub const MEMORY_LATENCY_CHUNK: Entry = Entry {
    id: id::MEMORY_LATENCY_CHUNK,
    about:
        "latency vs working-set size, random within 256 KiB chunks: cache levels, idle DRAM latency",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::LEVEL_LATENCY, Unit::Ns),
        predicted(metric::LEVEL_SIZE, Unit::Bytes),
    ],
    origin: Origin::Suite,
};
/// memory.latency.random.
pub const MEMORY_LATENCY_RANDOM: Entry = Entry {
    id: id::MEMORY_LATENCY_RANDOM,
    about: "latency vs working-set size, fully random chain (TLB misses included): TLB reach",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::TLB_REACH, Unit::Bytes),
    ],
    origin: Origin::Suite,
};
/// memory.latency.sequential.
pub const MEMORY_LATENCY_SEQUENTIAL: Entry = Entry {
    id: id::MEMORY_LATENCY_SEQUENTIAL,
    about: "load-to-use latency vs working-set size, lines in address order (prefetch-friendly)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns)],
    origin: Origin::Suite,
};
/// memory.latency.stride.
pub const MEMORY_LATENCY_STRIDE: Entry = Entry {
    id: id::MEMORY_LATENCY_STRIDE,
    about: "load latency by working-set size x stride (8 B .. 16 MiB), address order (the lmbench table)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns)],
    origin: Origin::Suite,
};
/// memory.latency.pages.
pub const MEMORY_LATENCY_PAGES: Entry = Entry {
    id: id::MEMORY_LATENCY_PAGES,
    about: "random-chain latency on 4 KiB, transparent huge and hugetlb pages (what the TLB costs)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns)],
    origin: Origin::Suite,
};
/// memory.latency.parallel.
pub const MEMORY_LATENCY_PARALLEL: Entry = Entry {
    id: id::MEMORY_LATENCY_PARALLEL,
    about: "1..16 independent chases at once: time per load and memory-level parallelism",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::PARALLELISM, Unit::Count),
    ],
    origin: Origin::Suite,
};
/// memory.latency.loaded.
pub const MEMORY_LATENCY_LOADED: Entry = Entry {
    id: id::MEMORY_LATENCY_LOADED,
    about: "idle-latency chase while the other cpus stream memory at rising intensity (MLC's loaded latency): latency vs bandwidth, reads and 1:1 read/write",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns), unmodelled(metric::LOAD_BANDWIDTH, Unit::GBps, "the loaders' bandwidth is the experiment's input, not a cost to predict")],
    origin: Origin::Suite,
};
/// bandwidth.stream.
pub const BANDWIDTH_STREAM: Entry = Entry {
    id: id::BANDWIDTH_STREAM,
    about: "RAM bandwidth, one thread: read, write, STREAM copy/scale/add/triad; plain and non-temporal stores",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::HW_BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// bandwidth.threads.
pub const BANDWIDTH_THREADS: Entry = Entry {
    id: id::BANDWIDTH_THREADS,
    about: "RAM bandwidth of read, copy, triad with 1..N pinned threads (a thread per core first, then SMT)",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::HW_BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// bandwidth.mix.
pub const BANDWIDTH_MIX: Entry = Entry {
    id: id::BANDWIDTH_MIX,
    about: "RAM bandwidth of read:write mixes 1:0, 3:1, 2:1, 1:1, 0:1 (plain stores; non-temporal too on all threads), one thread and all",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::HW_BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// bandwidth.sweep.
pub const BANDWIDTH_SWEEP: Entry = Entry {
    id: id::BANDWIDTH_SWEEP,
    about: "bandwidth vs working-set size (read, write, copy, triad): each cache level's bandwidth",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// faults.anon.
pub const FAULTS_ANON: Entry = Entry {
    id: id::FAULTS_ANON,
    about:
        "minor fault on first touch of fresh anonymous memory (4 KiB pages, zeroed by the kernel)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_FAULT, Unit::Ns),
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// faults.thp.
pub const FAULTS_THP: Entry = Entry {
    id: id::FAULTS_THP,
    about: "fault on first touch of a transparent huge page (2 MiB, zeroed by the kernel)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_FAULT, Unit::Ns),
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// faults.populate.
pub const FAULTS_POPULATE: Entry = Entry {
    id: id::FAULTS_POPULATE,
    about: "MAP_POPULATE: the kernel fills a mapping in one call, no trap per page (the baseline)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// faults.file.
pub const FAULTS_FILE: Entry = Entry {
    id: id::FAULTS_FILE,
    about: "faults on a mapped file: minor (in page cache, fault-around) and major (evicted, read from disk)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_FAULT, Unit::Ns), predicted(metric::PER_PAGE, Unit::Ns), predicted(metric::PER_BYTE, Unit::Ns)],
    origin: Origin::Suite,
};
/// numa.matrix.
pub const NUMA_MATRIX: Entry = Entry {
    id: id::NUMA_MATRIX,
    about: "cpu node x memory node: STREAM bandwidth (4 kernels and average) and idle latency, memory bound with mbind",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::LATENCY, Unit::Ns)],
    origin: Origin::Suite,
};
/// activity.noise.
pub const ACTIVITY_NOISE: Entry = Entry {
    id: id::ACTIVITY_NOISE,
    about:
        "interruptions of a pinned busy loop: inferred tick rate, count, CPU time lost (OS noise)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::INTERRUPTIONS, Unit::Count),
        unmodelled(metric::INTERRUPTION, Unit::Ns, OF_THE_RECORDING),
        predicted(metric::LOST_FRACTION, Unit::Share),
        predicted(metric::TICK_HZ, Unit::Count),
        unmodelled(
            metric::PERIODIC_HZ,
            Unit::Count,
            "interruptions from outside this kernel follow the host's scheduling, which nothing inside the guest describes",
        ),
        predicted(metric::READ_OVERHEAD, Unit::Ns),
        unmodelled(metric::THRESHOLD, Unit::Ns, OF_THE_RECORDING),
        unmodelled(metric::COUNT, Unit::Count, OF_THE_RECORDING),
    ],
    origin: Origin::Suite,
};
/// migration.cost.
pub const MIGRATION_COST: Entry = Entry {
    id: id::MIGRATION_COST,
    about: "time to re-touch a warm working set after moving to another cpu, minus re-touching it in place",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_MIGRATION, Unit::Ns), predicted(metric::RETOUCH_LOCAL, Unit::Ns), predicted(metric::MOVE, Unit::Ns)],
    origin: Origin::Suite,
};
/// c2c.latency.
pub const C2C_LATENCY: Entry = Entry {
    id: id::C2C_LATENCY,
    about: "one-way core-to-core latency: a cache line handed back and forth by compare-and-swap between two pinned threads",
    unit: Unit::Ns,
    metrics: &[predicted(metric::ONE_WAY, Unit::Ns)],
    origin: Origin::Suite,
};
/// The suite's probes, in the order it runs them.
pub const SUITE: &[&Entry] = &[
    &TIMER_RDTSC,
    &TIMER_RDTSCP,
    &TIMER_LFENCE_RDTSC,
    &TIMER_CPUID_RDTSC,
    &TIMER_CLOCK_GETTIME,
    &TIMER_CLOCK_GETTIME_SYSCALL,
    &LOOP_EMPTY,
    &CALL_ARGS,
    &SYSCALL_GETPID,
    &SYSCALL_GETPPID,
    &SYSCALL_TIME_VDSO,
    &SYSCALL_TIME_RAW,
    &SYSCALL_READ_DEVZERO,
    &SYSCALL_WRITE_DEVNULL,
    &TASK_FORK,
    &TASK_VFORK,
    &TASK_POSIX_SPAWN,
    &TASK_FORK_EXEC,
    &TASK_PTHREAD,
    &TASK_STD_THREAD,
    &SWITCH_PROCESS_PIPE,
    &SWITCH_PROCESS_FUTEX,
    &SWITCH_PROCESS_EVENTFD,
    &SWITCH_THREAD_PIPE,
    &SWITCH_THREAD_FUTEX,
    &SWITCH_THREAD_EVENTFD,
    &SWITCH_ONESHOT,
    &MEMORY_LATENCY_CHUNK,
    &MEMORY_LATENCY_RANDOM,
    &MEMORY_LATENCY_SEQUENTIAL,
    &MEMORY_LATENCY_STRIDE,
    &MEMORY_LATENCY_PAGES,
    &MEMORY_LATENCY_PARALLEL,
    &MEMORY_LATENCY_LOADED,
    &BANDWIDTH_STREAM,
    &BANDWIDTH_THREADS,
    &BANDWIDTH_MIX,
    &BANDWIDTH_SWEEP,
    &FAULTS_ANON,
    &FAULTS_THP,
    &FAULTS_POPULATE,
    &FAULTS_FILE,
    &NUMA_MATRIX,
    &ACTIVITY_NOISE,
    &MIGRATION_COST,
    &C2C_LATENCY,
];
