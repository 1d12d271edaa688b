//! Probe ids: the [`Probe`] enum (a `match` on it without a wildcard names every probe, so a new
//! probe the model does not place does not compile) and the same ids as `&str` constants (usable
//! as match patterns on stored text). Stored and foreign runs keep their ids as text; an id this
//! version does not know parses to no `Probe` and still loads.

use std::str::FromStr;

/// Declares each probe once: its variant, its constant and its id.
macro_rules! probes {
    ($($variant:ident $constant:ident = $id:literal;)*) => {
        /// Every probe this version knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Probe {
            $(#[doc = concat!("`", $id, "`.")] $variant,)*
        }

        impl Probe {
            /// Every probe, in declaration order.
            pub const ALL: &'static [Probe] = &[$(Probe::$variant,)*];

            /// Its id, as runs store it.
            pub const fn id(self) -> &'static str {
                match self {
                    $(Probe::$variant => $id,)*
                }
            }
        }

        $(#[doc = concat!("`", $id, "`.")] pub const $constant: &str = $id;)*
    };
}

probes! {
    TimerRdtsc TIMER_RDTSC = "timer.rdtsc";
    TimerRdtscp TIMER_RDTSCP = "timer.rdtscp";
    TimerLfenceRdtsc TIMER_LFENCE_RDTSC = "timer.lfence-rdtsc";
    TimerCpuidRdtsc TIMER_CPUID_RDTSC = "timer.cpuid-rdtsc";
    TimerClockGettime TIMER_CLOCK_GETTIME = "timer.clock_gettime";
    TimerClockGettimeSyscall TIMER_CLOCK_GETTIME_SYSCALL = "timer.clock_gettime.syscall";
    LoopEmpty LOOP_EMPTY = "loop.empty";
    CallArgs CALL_ARGS = "call.args";
    SyscallGetpid SYSCALL_GETPID = "syscall.getpid";
    SyscallGetppid SYSCALL_GETPPID = "syscall.getppid";
    SyscallTimeVdso SYSCALL_TIME_VDSO = "syscall.time.vdso";
    SyscallTimeRaw SYSCALL_TIME_RAW = "syscall.time.raw";
    SyscallReadDevzero SYSCALL_READ_DEVZERO = "syscall.read.devzero";
    SyscallWriteDevnull SYSCALL_WRITE_DEVNULL = "syscall.write.devnull";
    TaskFork TASK_FORK = "task.fork";
    TaskVfork TASK_VFORK = "task.vfork";
    TaskPosixSpawn TASK_POSIX_SPAWN = "task.posix_spawn";
    TaskForkExec TASK_FORK_EXEC = "task.fork-exec";
    TaskPthread TASK_PTHREAD = "task.pthread";
    TaskStdThread TASK_STD_THREAD = "task.std-thread";
    SwitchProcessPipe SWITCH_PROCESS_PIPE = "switch.process.pipe";
    SwitchProcessFutex SWITCH_PROCESS_FUTEX = "switch.process.futex";
    SwitchProcessEventfd SWITCH_PROCESS_EVENTFD = "switch.process.eventfd";
    SwitchThreadPipe SWITCH_THREAD_PIPE = "switch.thread.pipe";
    SwitchThreadFutex SWITCH_THREAD_FUTEX = "switch.thread.futex";
    SwitchThreadEventfd SWITCH_THREAD_EVENTFD = "switch.thread.eventfd";
    SwitchOneshot SWITCH_ONESHOT = "switch.oneshot";
    IpcPipe IPC_PIPE = "ipc.pipe";
    IpcUnix IPC_UNIX = "ipc.unix";
    IpcTcp IPC_TCP = "ipc.tcp";
    IpcUdp IPC_UDP = "ipc.udp";
    IpcTcpConnect IPC_TCP_CONNECT = "ipc.tcp-connect";
    SignalInstall SIGNAL_INSTALL = "signal.install";
    SignalCatch SIGNAL_CATCH = "signal.catch";
    SignalProtectionFault SIGNAL_PROTECTION_FAULT = "signal.protection-fault";
    PollSelect POLL_SELECT = "poll.select";
    PollPoll POLL_POLL = "poll.poll";
    PollEpoll POLL_EPOLL = "poll.epoll";
    FsCreate FS_CREATE = "fs.create";
    FsCachedRead FS_CACHED_READ = "fs.cached-read";
    FsCacheSize FS_CACHE_SIZE = "fs.cache-size";
    FsUncachedRead FS_UNCACHED_READ = "fs.uncached-read";
    FsReaders FS_READERS = "fs.readers";
    MemoryLatencyChunk MEMORY_LATENCY_CHUNK = "memory.latency.chunk";
    MemoryLatencyRandom MEMORY_LATENCY_RANDOM = "memory.latency.random";
    MemoryLatencySequential MEMORY_LATENCY_SEQUENTIAL = "memory.latency.sequential";
    MemoryLatencyStride MEMORY_LATENCY_STRIDE = "memory.latency.stride";
    MemoryLatencyPages MEMORY_LATENCY_PAGES = "memory.latency.pages";
    MemoryLatencyParallel MEMORY_LATENCY_PARALLEL = "memory.latency.parallel";
    MemoryLatencyLoaded MEMORY_LATENCY_LOADED = "memory.latency.loaded";
    BandwidthStream BANDWIDTH_STREAM = "bandwidth.stream";
    BandwidthThreads BANDWIDTH_THREADS = "bandwidth.threads";
    BandwidthMix BANDWIDTH_MIX = "bandwidth.mix";
    BandwidthSweep BANDWIDTH_SWEEP = "bandwidth.sweep";
    FaultsAnon FAULTS_ANON = "faults.anon";
    FaultsThp FAULTS_THP = "faults.thp";
    FaultsPopulate FAULTS_POPULATE = "faults.populate";
    FaultsFile FAULTS_FILE = "faults.file";
    NumaMatrix NUMA_MATRIX = "numa.matrix";
    ActivityNoise ACTIVITY_NOISE = "activity.noise";
    MigrationCost MIGRATION_COST = "migration.cost";
    C2cLatency C2C_LATENCY = "c2c.latency";
    Activity ACTIVITY = "activity";
    Timeslice TIMESLICE = "timeslice";
    Migrate MIGRATE = "migrate";
    CpumanJob CPUMAN_JOB = "cpuman.job";
    CpumanRun CPUMAN_RUN = "cpuman.run";
    CpumanSpeedup CPUMAN_SPEEDUP = "cpuman.speedup";
    Shuffle SHUFFLE = "shuffle";
    ShuffleEval SHUFFLE_EVAL = "shuffle-eval";
    ShuffleSim SHUFFLE_SIM = "shuffle-sim";
    Host HOST = "host";
}

/// An id no probe of this version has (an imported run's, or a typo).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a probe of this version")]
pub struct UnknownProbe(pub String);

impl FromStr for Probe {
    type Err = UnknownProbe;

    fn from_str(s: &str) -> Result<Probe, UnknownProbe> {
        Probe::ALL
            .iter()
            .copied()
            .find(|p| p.id() == s)
            .ok_or_else(|| UnknownProbe(s.to_string()))
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_parses_back_to_its_probe_and_no_two_share_one() {
        for p in Probe::ALL {
            assert_eq!(p.id().parse::<Probe>(), Ok(*p));
        }
        let mut ids: Vec<&str> = Probe::ALL.iter().map(|p| p.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Probe::ALL.len());
        assert_eq!(
            "syscall.nosuch".parse::<Probe>(),
            Err(UnknownProbe("syscall.nosuch".into()))
        );
    }
}
