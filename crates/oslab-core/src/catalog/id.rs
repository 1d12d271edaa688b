//! Probe ids, as `&str` constants (usable as match patterns).

/// `timer.rdtsc`.
pub const TIMER_RDTSC: &str = "timer.rdtsc";
/// `timer.rdtscp`.
pub const TIMER_RDTSCP: &str = "timer.rdtscp";
/// `timer.lfence-rdtsc`.
pub const TIMER_LFENCE_RDTSC: &str = "timer.lfence-rdtsc";
/// `timer.cpuid-rdtsc`.
pub const TIMER_CPUID_RDTSC: &str = "timer.cpuid-rdtsc";
/// `timer.clock_gettime`.
pub const TIMER_CLOCK_GETTIME: &str = "timer.clock_gettime";
/// `timer.clock_gettime.syscall`.
pub const TIMER_CLOCK_GETTIME_SYSCALL: &str = "timer.clock_gettime.syscall";
/// `loop.empty`.
pub const LOOP_EMPTY: &str = "loop.empty";
/// `call.args`.
pub const CALL_ARGS: &str = "call.args";
/// `syscall.getpid`.
pub const SYSCALL_GETPID: &str = "syscall.getpid";
/// `syscall.getppid`.
pub const SYSCALL_GETPPID: &str = "syscall.getppid";
/// `syscall.time.vdso`.
pub const SYSCALL_TIME_VDSO: &str = "syscall.time.vdso";
/// `syscall.time.raw`.
pub const SYSCALL_TIME_RAW: &str = "syscall.time.raw";
/// `syscall.read.devzero`.
pub const SYSCALL_READ_DEVZERO: &str = "syscall.read.devzero";
/// `syscall.write.devnull`.
pub const SYSCALL_WRITE_DEVNULL: &str = "syscall.write.devnull";
/// `task.fork`.
pub const TASK_FORK: &str = "task.fork";
/// `task.vfork`.
pub const TASK_VFORK: &str = "task.vfork";
/// `task.posix_spawn`.
pub const TASK_POSIX_SPAWN: &str = "task.posix_spawn";
/// `task.fork-exec`.
pub const TASK_FORK_EXEC: &str = "task.fork-exec";
/// `task.pthread`.
pub const TASK_PTHREAD: &str = "task.pthread";
/// `task.std-thread`.
pub const TASK_STD_THREAD: &str = "task.std-thread";
/// `switch.process.pipe`.
pub const SWITCH_PROCESS_PIPE: &str = "switch.process.pipe";
/// `switch.process.futex`.
pub const SWITCH_PROCESS_FUTEX: &str = "switch.process.futex";
/// `switch.process.eventfd`.
pub const SWITCH_PROCESS_EVENTFD: &str = "switch.process.eventfd";
/// `switch.thread.pipe`.
pub const SWITCH_THREAD_PIPE: &str = "switch.thread.pipe";
/// `switch.thread.futex`.
pub const SWITCH_THREAD_FUTEX: &str = "switch.thread.futex";
/// `switch.thread.eventfd`.
pub const SWITCH_THREAD_EVENTFD: &str = "switch.thread.eventfd";
/// `switch.oneshot`.
pub const SWITCH_ONESHOT: &str = "switch.oneshot";
/// `memory.latency.chunk`.
pub const MEMORY_LATENCY_CHUNK: &str = "memory.latency.chunk";
/// `memory.latency.random`.
pub const MEMORY_LATENCY_RANDOM: &str = "memory.latency.random";
/// `memory.latency.sequential`.
pub const MEMORY_LATENCY_SEQUENTIAL: &str = "memory.latency.sequential";
/// `memory.latency.stride`.
pub const MEMORY_LATENCY_STRIDE: &str = "memory.latency.stride";
/// `memory.latency.pages`.
pub const MEMORY_LATENCY_PAGES: &str = "memory.latency.pages";
/// `memory.latency.parallel`.
pub const MEMORY_LATENCY_PARALLEL: &str = "memory.latency.parallel";
/// `memory.latency.loaded`.
pub const MEMORY_LATENCY_LOADED: &str = "memory.latency.loaded";
/// `bandwidth.stream`.
pub const BANDWIDTH_STREAM: &str = "bandwidth.stream";
/// `bandwidth.threads`.
pub const BANDWIDTH_THREADS: &str = "bandwidth.threads";
/// `bandwidth.mix`.
pub const BANDWIDTH_MIX: &str = "bandwidth.mix";
/// `bandwidth.sweep`.
pub const BANDWIDTH_SWEEP: &str = "bandwidth.sweep";
/// `faults.anon`.
pub const FAULTS_ANON: &str = "faults.anon";
/// `faults.thp`.
pub const FAULTS_THP: &str = "faults.thp";
/// `faults.populate`.
pub const FAULTS_POPULATE: &str = "faults.populate";
/// `faults.file`.
pub const FAULTS_FILE: &str = "faults.file";
/// `numa.matrix`.
pub const NUMA_MATRIX: &str = "numa.matrix";
/// `activity.noise`.
pub const ACTIVITY_NOISE: &str = "activity.noise";
/// `migration.cost`.
pub const MIGRATION_COST: &str = "migration.cost";
/// `c2c.latency`.
pub const C2C_LATENCY: &str = "c2c.latency";
/// `activity`.
pub const ACTIVITY: &str = "activity";
/// `timeslice`.
pub const TIMESLICE: &str = "timeslice";
/// `migrate`.
pub const MIGRATE: &str = "migrate";
/// `cpuman.job`.
pub const CPUMAN_JOB: &str = "cpuman.job";
/// `cpuman.run`.
pub const CPUMAN_RUN: &str = "cpuman.run";
/// `cpuman.speedup`.
pub const CPUMAN_SPEEDUP: &str = "cpuman.speedup";
/// `shuffle`.
pub const SHUFFLE: &str = "shuffle";
/// `shuffle-eval`.
pub const SHUFFLE_EVAL: &str = "shuffle-eval";
/// `shuffle-sim`.
pub const SHUFFLE_SIM: &str = "shuffle-sim";
/// `host`.
pub const HOST: &str = "host";
