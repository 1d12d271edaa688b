//! What oslab reads from the operating system and the hardware, and what it changes there (always
//! undone): the machine's topology from sysfs, the clock's reads and calibration, the machine's
//! fingerprint and environment, counters, affinity and scheduling-class guards, page placement,
//! sysctls and affinities recorded for restoring after a crash, Ctrl-C as a flag, process trees.
//! The data these produce are oslab-core's types; oslab-core itself never touches the OS.
//!
//! # Brief overview
//! - [`topology`]: [`oslab_core::Topology`] read from sysfs (any root, so tests describe machines
//!   this one is not).
//! - [`clock`]: fenced TSC reads ([`clock::Ticks`]) or `clock_gettime` where the TSC cannot be
//!   trusted, detected and calibrated.
//! - [`machine`]: the fingerprint, privileges, PMU, limits and environment warnings, read.
//! - [`affinity`]: guards for CPU affinity and scheduling policy that restore on drop.
//! - [`placement`]: which cpus to measure on: the measuring cpu, its peer, the farthest one.
//! - [`signals`]: Ctrl-C / SIGTERM turned into a flag that long loops poll.
//! - [`dmi`]: the SMBIOS table read (oslab-core's `dmi` parses it).
//! - [`interrupts`]: one CPU's interrupt counts from /proc/interrupts, and their deltas.
//! - [`numa`]: bind memory to a node and ask where pages are, behind a trait (page placement on
//!   several nodes is tested in guests: `scripts/vm`).
//! - [`counters`]: counters by perf's names, raw and PMU events, L2_TCM/L2_TCA presets, groups.
//! - [`perf`]: one perf_event_open counter on the calling thread (software events need no PMU).
//! - [`pending`]: sysctls and affinities to restore after a crash; claims on shared things.
//! - [`balancing`]: the kernel's automatic NUMA balancing switched for a run and put back.
//! - [`cgroup`]: the memory this process's cgroup and its parents still allow.
//! - [`cpuinfo`]: /proc/cpuinfo's first block.
//! - [`others`]: the cpu time other processes take as a run begins, the busiest named.
//! - [`tree`]: a started command's process group, ended as a whole, also when oslab dies.
#![deny(missing_docs)]

pub mod affinity;
pub mod audit;
pub mod balancing;
pub mod cgroup;
pub mod clock;
pub mod counters;
pub mod cpuinfo;
pub mod dmi;
pub mod interrupts;
pub mod machine;
pub mod numa;
pub mod others;
pub mod pager;
pub mod pending;
pub mod perf;
pub mod placement;
pub mod restorer;
pub mod signals;
pub mod stack;
pub mod topology;
pub mod tree;
