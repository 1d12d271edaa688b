//! The suite's probes, in the order `oslab run` runs them.

use super::*;

/// Why a noise recording's own figures have no model.
const OF_THE_RECORDING: &str =
    "a property of this recording (a chosen threshold or a histogram), not a cost to predict";

/// A probe of the suite.
const fn suite(
    id: &'static str,
    about: &'static str,
    unit: Unit,
    metrics: &'static [Metric],
) -> Entry {
    Entry {
        id,
        about,
        unit,
        metrics,
        origin: Origin::Suite,
    }
}

/// The metrics several timer probes share.
const TIMER_METRICS: &[Metric] = &[predicted(metric::PER_READ, Unit::Ns)];

/// The metrics several syscall probes share.
const SYSCALL_METRICS: &[Metric] = &[predicted(metric::PER_CALL, Unit::Ns)];

/// The metrics several task probes share.
const TASK_METRICS: &[Metric] = &[
    predicted(metric::ROUND_TRIP, Unit::Ns),
    predicted(metric::CREATE, Unit::Ns),
];

/// The metrics several switch probes share.
const SWITCH_METRICS: &[Metric] = &[
    predicted(metric::SWITCH, Unit::Ns),
    predicted(metric::TRANSFER, Unit::Ns),
    predicted(metric::WAKEUP, Unit::Ns),
];

/// The metrics several memory probes share.
const MEMORY_METRICS: &[Metric] = &[predicted(metric::PER_LOAD, Unit::Ns)];

/// The metrics several bandwidth probes share.
const BANDWIDTH_METRICS: &[Metric] = &[
    predicted(metric::BANDWIDTH, Unit::GBps),
    predicted(metric::HW_BANDWIDTH, Unit::GBps),
];

/// The metrics several faults probes share.
const FAULTS_METRICS: &[Metric] = &[
    predicted(metric::PER_FAULT, Unit::Ns),
    predicted(metric::PER_PAGE, Unit::Ns),
    predicted(metric::PER_BYTE, Unit::Ns),
];

/// timer.rdtsc.
pub const TIMER_RDTSC: Entry = suite(
    id::TIMER_RDTSC,
    "rdtsc, unfenced (may overlap neighbouring instructions)",
    Unit::Ns,
    TIMER_METRICS,
);
/// timer.rdtscp.
pub const TIMER_RDTSCP: Entry = suite(
    id::TIMER_RDTSCP,
    "rdtscp (waits for earlier instructions)",
    Unit::Ns,
    TIMER_METRICS,
);
/// timer.lfence-rdtsc.
pub const TIMER_LFENCE_RDTSC: Entry = suite(
    id::TIMER_LFENCE_RDTSC,
    "lfence; rdtsc; lfence (fully ordered read, what oslab itself uses)",
    Unit::Ns,
    TIMER_METRICS,
);
/// timer.cpuid-rdtsc.
pub const TIMER_CPUID_RDTSC: Entry = suite(
    id::TIMER_CPUID_RDTSC,
    "cpuid; rdtsc (a serializing read; cpuid traps to a hypervisor)",
    Unit::Ns,
    TIMER_METRICS,
);
/// timer.clock_gettime.
pub const TIMER_CLOCK_GETTIME: Entry = suite(
    id::TIMER_CLOCK_GETTIME,
    "clock_gettime(CLOCK_MONOTONIC) through the vDSO",
    Unit::Ns,
    TIMER_METRICS,
);
/// timer.clock_gettime.syscall.
pub const TIMER_CLOCK_GETTIME_SYSCALL: Entry = suite(
    id::TIMER_CLOCK_GETTIME_SYSCALL,
    "clock_gettime(CLOCK_MONOTONIC) as a real system call",
    Unit::Ns,
    TIMER_METRICS,
);
/// loop.empty.
pub const LOOP_EMPTY: Entry = suite(
    id::LOOP_EMPTY,
    "one iteration of an empty counted loop (dec; jnz), which the compiler cannot unroll",
    Unit::Ns,
    &[predicted(metric::PER_ITERATION, Unit::Ns)],
);
/// call.args.
pub const CALL_ARGS: Entry = suite(
    id::CALL_ARGS,
    "procedure call with 0..7 integer arguments, absolute and per extra argument",
    Unit::Ns,
    &[
        predicted(metric::PER_CALL, Unit::Ns),
        predicted(metric::INCREMENT, Unit::Ns),
    ],
);
/// syscall.getpid.
pub const SYSCALL_GETPID: Entry = suite(
    id::SYSCALL_GETPID,
    "getpid via raw syscall (no libc caching), hot and cold cache",
    Unit::Ns,
    SYSCALL_METRICS,
);
/// syscall.getppid.
pub const SYSCALL_GETPPID: Entry = suite(
    id::SYSCALL_GETPPID,
    "getppid via raw syscall, hot and cold cache",
    Unit::Ns,
    SYSCALL_METRICS,
);
/// syscall.time.vdso.
pub const SYSCALL_TIME_VDSO: Entry = suite(
    id::SYSCALL_TIME_VDSO,
    "time() through the vDSO (no kernel entry), hot and cold cache",
    Unit::Ns,
    SYSCALL_METRICS,
);
/// syscall.time.raw.
pub const SYSCALL_TIME_RAW: Entry = suite(
    id::SYSCALL_TIME_RAW,
    "time() as a real system call, hot and cold cache",
    Unit::Ns,
    SYSCALL_METRICS,
);
/// syscall.read.devzero.
pub const SYSCALL_READ_DEVZERO: Entry = suite(
    id::SYSCALL_READ_DEVZERO,
    "read(2) of 1 byte from /dev/zero, hot and cold cache",
    Unit::Ns,
    SYSCALL_METRICS,
);
/// syscall.write.devnull.
pub const SYSCALL_WRITE_DEVNULL: Entry = suite(
    id::SYSCALL_WRITE_DEVNULL,
    "write(2) of 1 byte to /dev/null, hot and cold cache",
    Unit::Ns,
    SYSCALL_METRICS,
);
/// task.fork.
pub const TASK_FORK: Entry = suite(
    id::TASK_FORK,
    "fork + _exit + waitpid from a minimal parent, and its cost per MiB the parent touched",
    Unit::Ns,
    &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
        predicted(metric::COST_PER_MIB, Unit::Ns),
        predicted(metric::FIXED_COST, Unit::Ns),
    ],
);
/// task.vfork.
pub const TASK_VFORK: Entry = suite(
    id::TASK_VFORK,
    "vfork (clone CLONE_VM|CLONE_VFORK) + _exit + waitpid",
    Unit::Ns,
    TASK_METRICS,
);
/// task.posix_spawn.
pub const TASK_POSIX_SPAWN: Entry = suite(
    id::TASK_POSIX_SPAWN,
    "posix_spawn of a static do-nothing program + waitpid",
    Unit::Ns,
    TASK_METRICS,
);
/// task.fork-exec.
pub const TASK_FORK_EXEC: Entry = suite(
    id::TASK_FORK_EXEC,
    "fork + execve of a static do-nothing program + waitpid",
    Unit::Ns,
    TASK_METRICS,
);
/// task.pthread.
pub const TASK_PTHREAD: Entry = suite(
    id::TASK_PTHREAD,
    "pthread_create + pthread_join of an empty thread",
    Unit::Ns,
    TASK_METRICS,
);
/// task.std-thread.
pub const TASK_STD_THREAD: Entry = suite(
    id::TASK_STD_THREAD,
    "std::thread::spawn + join of an empty closure",
    Unit::Ns,
    TASK_METRICS,
);
/// switch.process.pipe.
pub const SWITCH_PROCESS_PIPE: Entry = suite(
    id::SWITCH_PROCESS_PIPE,
    "process ping-pong over two pipes: switch (same cpu) and wake-up (cross cpu)",
    Unit::Ns,
    SWITCH_METRICS,
);
/// switch.process.futex.
pub const SWITCH_PROCESS_FUTEX: Entry = suite(
    id::SWITCH_PROCESS_FUTEX,
    "process ping-pong over shared-memory futexes",
    Unit::Ns,
    SWITCH_METRICS,
);
/// switch.process.eventfd.
pub const SWITCH_PROCESS_EVENTFD: Entry = suite(
    id::SWITCH_PROCESS_EVENTFD,
    "process ping-pong over eventfds",
    Unit::Ns,
    SWITCH_METRICS,
);
/// switch.thread.pipe.
pub const SWITCH_THREAD_PIPE: Entry = suite(
    id::SWITCH_THREAD_PIPE,
    "thread ping-pong over two pipes",
    Unit::Ns,
    SWITCH_METRICS,
);
/// switch.thread.futex.
pub const SWITCH_THREAD_FUTEX: Entry = suite(
    id::SWITCH_THREAD_FUTEX,
    "thread ping-pong over futexes",
    Unit::Ns,
    SWITCH_METRICS,
);
/// switch.thread.eventfd.
pub const SWITCH_THREAD_EVENTFD: Entry = suite(
    id::SWITCH_THREAD_EVENTFD,
    "thread ping-pong over eventfds",
    Unit::Ns,
    SWITCH_METRICS,
);
/// switch.oneshot.
pub const SWITCH_ONESHOT: Entry = suite(
    id::SWITCH_ONESHOT,
    "one-shot switch: parent's TSC after fork/create -> the child's first TSC read",
    Unit::Ns,
    &[unmodelled(
        metric::SWITCH,
        Unit::Ns,
        "the one-shot method mixes creation with the first switch; no model separates them",
    )],
);
/// memory.latency.chunk.
pub const MEMORY_LATENCY_CHUNK: Entry = suite(
    id::MEMORY_LATENCY_CHUNK,
    "latency vs working-set size, random within 256 KiB chunks: cache levels, idle DRAM latency",
    Unit::Ns,
    &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::LEVEL_LATENCY, Unit::Ns),
        predicted(metric::LEVEL_SIZE, Unit::Bytes),
    ],
);
/// memory.latency.random.
pub const MEMORY_LATENCY_RANDOM: Entry = suite(
    id::MEMORY_LATENCY_RANDOM,
    "latency vs working-set size, fully random chain (TLB misses included): TLB reach",
    Unit::Ns,
    &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::TLB_REACH, Unit::Bytes),
    ],
);
/// memory.latency.sequential.
pub const MEMORY_LATENCY_SEQUENTIAL: Entry = suite(
    id::MEMORY_LATENCY_SEQUENTIAL,
    "load-to-use latency vs working-set size, lines in address order (prefetch-friendly)",
    Unit::Ns,
    MEMORY_METRICS,
);
/// memory.latency.stride.
pub const MEMORY_LATENCY_STRIDE: Entry = suite(
    id::MEMORY_LATENCY_STRIDE,
    "load latency by working-set size x stride (8 B .. 16 MiB), address order (the lmbench table)",
    Unit::Ns,
    MEMORY_METRICS,
);
/// memory.latency.pages.
pub const MEMORY_LATENCY_PAGES: Entry = suite(
    id::MEMORY_LATENCY_PAGES,
    "random-chain latency on 4 KiB, transparent huge and hugetlb pages (what the TLB costs)",
    Unit::Ns,
    MEMORY_METRICS,
);
/// memory.latency.parallel.
pub const MEMORY_LATENCY_PARALLEL: Entry = suite(
    id::MEMORY_LATENCY_PARALLEL,
    "1..16 independent chases at once: time per load and memory-level parallelism",
    Unit::Ns,
    &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::PARALLELISM, Unit::Count),
    ],
);
/// memory.latency.loaded.
pub const MEMORY_LATENCY_LOADED: Entry = suite(
    id::MEMORY_LATENCY_LOADED,
    "idle-latency chase while the other cpus stream memory at rising intensity (MLC's loaded latency): latency vs bandwidth, reads and 1:1 read/write",
    Unit::Ns,
    &[predicted(metric::PER_LOAD, Unit::Ns), unmodelled(metric::LOAD_BANDWIDTH, Unit::GBps, "the loaders' bandwidth is the experiment's input, not a cost to predict")],
);
/// bandwidth.stream.
pub const BANDWIDTH_STREAM: Entry = suite(
    id::BANDWIDTH_STREAM,
    "RAM bandwidth, one thread: read, write, STREAM copy/scale/add/triad; plain and non-temporal stores",
    Unit::GBps,
    BANDWIDTH_METRICS,
);
/// bandwidth.threads.
pub const BANDWIDTH_THREADS: Entry = suite(
    id::BANDWIDTH_THREADS,
    "RAM bandwidth of read, copy, triad with 1..N pinned threads (a thread per core first, then SMT)",
    Unit::GBps,
    BANDWIDTH_METRICS,
);
/// bandwidth.mix.
pub const BANDWIDTH_MIX: Entry = suite(
    id::BANDWIDTH_MIX,
    "RAM bandwidth of read:write mixes 1:0, 3:1, 2:1, 1:1, 0:1 (plain stores; non-temporal too on all threads), one thread and all",
    Unit::GBps,
    BANDWIDTH_METRICS,
);
/// bandwidth.sweep.
pub const BANDWIDTH_SWEEP: Entry = suite(
    id::BANDWIDTH_SWEEP,
    "bandwidth vs working-set size (read, write, copy, triad): each cache level's bandwidth",
    Unit::GBps,
    &[predicted(metric::BANDWIDTH, Unit::GBps)],
);
/// faults.anon.
pub const FAULTS_ANON: Entry = suite(
    id::FAULTS_ANON,
    "minor fault on first touch of fresh anonymous memory (4 KiB pages, zeroed by the kernel)",
    Unit::Ns,
    FAULTS_METRICS,
);
/// faults.thp.
pub const FAULTS_THP: Entry = suite(
    id::FAULTS_THP,
    "fault on first touch of a transparent huge page (2 MiB, zeroed by the kernel)",
    Unit::Ns,
    FAULTS_METRICS,
);
/// faults.populate.
pub const FAULTS_POPULATE: Entry = suite(
    id::FAULTS_POPULATE,
    "MAP_POPULATE: the kernel fills a mapping in one call, no trap per page (the baseline)",
    Unit::Ns,
    &[
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
);
/// faults.file.
pub const FAULTS_FILE: Entry = suite(
    id::FAULTS_FILE,
    "faults on a mapped file: minor (in page cache, fault-around) and major (evicted, read from disk)",
    Unit::Ns,
    &[predicted(metric::PER_FAULT, Unit::Ns), predicted(metric::PER_PAGE, Unit::Ns), predicted(metric::PER_BYTE, Unit::Ns)],
);
/// numa.matrix.
pub const NUMA_MATRIX: Entry = suite(
    id::NUMA_MATRIX,
    "cpu node x memory node: STREAM bandwidth (4 kernels and average) and idle latency, memory bound with mbind",
    Unit::GBps,
    &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::LATENCY, Unit::Ns)],
);
/// activity.noise.
pub const ACTIVITY_NOISE: Entry = suite(
    id::ACTIVITY_NOISE,
    "interruptions of a pinned busy loop: inferred tick rate, count, CPU time lost (OS noise)",
    Unit::Ns,
    &[
        predicted(metric::INTERRUPTIONS, Unit::Count),
        unmodelled(metric::INTERRUPTION, Unit::Ns, OF_THE_RECORDING),
        predicted(metric::LOST_FRACTION, Unit::Share),
        predicted(metric::TICK_HZ, Unit::Hz),
        unmodelled(
            metric::PERIODIC_HZ,
            Unit::Hz,
            "interruptions from outside this kernel follow the host's scheduling, which nothing inside the guest describes",
        ),
        predicted(metric::READ_OVERHEAD, Unit::Ns),
        unmodelled(metric::THRESHOLD, Unit::Ns, OF_THE_RECORDING),
        unmodelled(metric::COUNT, Unit::Count, OF_THE_RECORDING),
    ],
);
/// migration.cost.
pub const MIGRATION_COST: Entry = suite(
    id::MIGRATION_COST,
    "time to re-touch a warm working set after moving to another cpu, minus re-touching it in place",
    Unit::Ns,
    &[predicted(metric::PER_MIGRATION, Unit::Ns), predicted(metric::RETOUCH_LOCAL, Unit::Ns), predicted(metric::MOVE, Unit::Ns)],
);
/// c2c.latency.
pub const C2C_LATENCY: Entry = suite(
    id::C2C_LATENCY,
    "one-way core-to-core latency: a cache line handed back and forth by compare-and-swap between two pinned threads",
    Unit::Ns,
    &[predicted(metric::ONE_WAY, Unit::Ns)],
);
/// Why the services' figures have no model yet.
const SERVICE_NOT_COMPOSED: &str = "not composed yet from the run's system calls, switches and copies (a composed prediction is planned)";

/// The metrics of the stream transports.
const STREAM_METRICS: &[Metric] = &[
    unmodelled(metric::ROUND_TRIP, Unit::Ns, SERVICE_NOT_COMPOSED),
    unmodelled(metric::BANDWIDTH, Unit::GBps, SERVICE_NOT_COMPOSED),
];

/// ipc.pipe.
pub const IPC_PIPE: Entry = suite(
    id::IPC_PIPE,
    "a 1-byte round trip over two pipes (same cpu, cross cpu); bandwidth by write size",
    Unit::Ns,
    &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        unmodelled(metric::BANDWIDTH, Unit::GBps, SERVICE_NOT_COMPOSED),
    ],
);
/// ipc.unix.
pub const IPC_UNIX: Entry = suite(
    id::IPC_UNIX,
    "a 1-byte round trip over an AF_UNIX stream socket; bandwidth by write size",
    Unit::Ns,
    STREAM_METRICS,
);
/// ipc.tcp.
pub const IPC_TCP: Entry = suite(
    id::IPC_TCP,
    "a 1-byte round trip over TCP on loopback (Nagle off); bandwidth by write size",
    Unit::Ns,
    STREAM_METRICS,
);
/// ipc.udp.
pub const IPC_UDP: Entry = suite(
    id::IPC_UDP,
    "a 1-byte datagram's round trip over UDP on loopback",
    Unit::Ns,
    &[unmodelled(
        metric::ROUND_TRIP,
        Unit::Ns,
        SERVICE_NOT_COMPOSED,
    )],
);
/// ipc.tcp-connect.
pub const IPC_TCP_CONNECT: Entry = suite(
    id::IPC_TCP_CONNECT,
    "a TCP connection on loopback made and closed: socket, connect, accept, close",
    Unit::Ns,
    &[unmodelled(metric::CONNECT, Unit::Ns, SERVICE_NOT_COMPOSED)],
);
/// signal.install.
pub const SIGNAL_INSTALL: Entry = suite(
    id::SIGNAL_INSTALL,
    "sigaction of a handler",
    Unit::Ns,
    &[unmodelled(metric::PER_CALL, Unit::Ns, SERVICE_NOT_COMPOSED)],
);
/// signal.catch.
pub const SIGNAL_CATCH: Entry = suite(
    id::SIGNAL_CATCH,
    "a signal sent to this thread and caught by a handler",
    Unit::Ns,
    &[unmodelled(metric::PER_CALL, Unit::Ns, SERVICE_NOT_COMPOSED)],
);
/// signal.protection-fault.
pub const SIGNAL_PROTECTION_FAULT: Entry = suite(
    id::SIGNAL_PROTECTION_FAULT,
    "a write to a read-only page caught (SIGSEGV), the handler making it writable",
    Unit::Ns,
    &[unmodelled(
        metric::PER_FAULT,
        Unit::Ns,
        SERVICE_NOT_COMPOSED,
    )],
);
/// The metrics of the waiting probes.
const POLL_METRICS: &[Metric] = &[unmodelled(metric::PER_CALL, Unit::Ns, SERVICE_NOT_COMPOSED)];
/// poll.select.
pub const POLL_SELECT: Entry = suite(
    id::POLL_SELECT,
    "select over 10, 100 and 1,000 ready descriptors, zero timeout",
    Unit::Ns,
    POLL_METRICS,
);
/// poll.poll.
pub const POLL_POLL: Entry = suite(
    id::POLL_POLL,
    "poll over 10, 100 and 1,000 ready descriptors, zero timeout",
    Unit::Ns,
    POLL_METRICS,
);
/// poll.epoll.
pub const POLL_EPOLL: Entry = suite(
    id::POLL_EPOLL,
    "epoll_wait over 10, 100 and 1,000 ready descriptors, zero timeout",
    Unit::Ns,
    POLL_METRICS,
);

/// fs.create.
pub const FS_CREATE: Entry = suite(
    id::FS_CREATE,
    "a file of 0 B, 1 KiB, 4 KiB or 10 KiB created and deleted, in --temp-dir",
    Unit::Ns,
    &[
        unmodelled(metric::CREATE, Unit::Ns, SERVICE_NOT_COMPOSED),
        unmodelled(metric::DELETE, Unit::Ns, SERVICE_NOT_COMPOSED),
    ],
);
/// fs.cached-read.
pub const FS_CACHED_READ: Entry = suite(
    id::FS_CACHED_READ,
    "a file in the page cache read by pread and through mmap, by block size",
    Unit::GBps,
    &[predicted(metric::BANDWIDTH, Unit::GBps)],
);
/// Why a read that goes to the device has no model.
const DEVICE_NOT_MODELLED: &str = "the device's latency and queue (and, in a guest, the host's cache) are not in the machine's specifications";
/// fs.cache-size.
pub const FS_CACHE_SIZE: Entry = suite(
    id::FS_CACHE_SIZE,
    "a file re-read as it grows past the page cache, until reads go to the device (only when named: it evicts the cache)",
    Unit::GBps,
    &[
        unmodelled(metric::BANDWIDTH, Unit::GBps, DEVICE_NOT_MODELLED),
        predicted(metric::CAPACITY, Unit::Bytes),
    ],
);
/// fs.uncached-read.
pub const FS_UNCACHED_READ: Entry = suite(
    id::FS_UNCACHED_READ,
    "4 KiB reads of a file not in the page cache, sequential and random (only when named)",
    Unit::Ns,
    &[unmodelled(metric::PER_READ, Unit::Ns, DEVICE_NOT_MODELLED)],
);
/// fs.readers.
pub const FS_READERS: Entry = suite(
    id::FS_READERS,
    "1, 2, 4 and 8 processes each reading its own uncached file at once (only when named)",
    Unit::Ns,
    &[unmodelled(metric::PER_READ, Unit::Ns, DEVICE_NOT_MODELLED)],
);

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
    &IPC_PIPE,
    &IPC_UNIX,
    &IPC_TCP,
    &IPC_UDP,
    &IPC_TCP_CONNECT,
    &SIGNAL_INSTALL,
    &SIGNAL_CATCH,
    &SIGNAL_PROTECTION_FAULT,
    &POLL_SELECT,
    &POLL_POLL,
    &POLL_EPOLL,
    &FS_CREATE,
    &FS_CACHED_READ,
    &FS_CACHE_SIZE,
    &FS_UNCACHED_READ,
    &FS_READERS,
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
