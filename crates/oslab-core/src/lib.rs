//! The foundation every oslab measurement stands on: a trustworthy clock, robust statistics, the
//! machine's topology, cpu-list parsing, placement guards that always undo what they changed, the
//! environment report, and the data model shared by probes, store and report.
//!
//! # Brief overview
//! - [`clock::Clock`]: fenced TSC reads (or `clock_gettime` where the TSC cannot be trusted) with a
//!   calibrated frequency and its error.
//! - [`stats`]: the one statistical contract, its front door: [`stats::Summary`] (median-led,
//!   a CI95 of the median from batch medians, so drift between bursts widens it), the noise rule,
//!   paired A/B differences ([`stats::paired`]), repetitions pooled ([`stats::repetitions`]),
//!   comparisons as benchstat makes them ([`stats::compare`], with [`stats::ranks`]).
//! - [`topology::Topology`]: cpus, cores, packages, caches and NUMA nodes read from sysfs (any root, so
//!   tests can describe machines this one is not).
//! - [`cpuset::CpuSet`]: a set of cpus; [`cpulist`]: "0-3,8", "node:1", "socket:0",
//!   "core-sibling-of:0" resolved against the topology.
//! - [`affinity`]: guards for CPU affinity and scheduling policy that restore on drop.
//! - [`signals`]: Ctrl-C / SIGTERM turned into a flag that long loops poll.
//! - [`machine`]: the machine fingerprint and the environment report (noise sources, privileges).
//! - [`files`]: bounded reads of files others supply (no devices, no links where refused) and
//!   whole-or-nothing writes.
//! - [`dmi`]: peak memory bandwidth from the SMBIOS memory devices.
//! - [`interrupts`]: one CPU's interrupt counts from /proc/interrupts, and their deltas.
//! - [`numa`]: bind memory to a node and ask where pages are, behind a trait (page placement on several nodes is tested in guests: `scripts/vm`).
//! - [`counters`]: counters by perf's names, raw and PMU events, L2_TCM/L2_TCA presets, groups.
//! - [`perf`]: one perf_event_open counter on the calling thread (software events need no PMU).
//! - [`model`]: `Measurement`, `Prediction`, `Status`, `Unit`, `TimelineEvent`.
//! - [`text`]: lines and tables an experiment reports, as data the report crate renders.
//! - [`units`]: values and sizes printed for reading (ns to µs/ms/s, KiB/MiB/GiB).
//! - [`tree`]: a started command's process group, ended as a whole, also when oslab dies.
//! - [`catalog`]: what every probe is (id, metrics, units, family, model or why none, chart,
//!   headline), declared once; everything else reads it.
//! - [`beyond_cache`]: whether a bandwidth figure's arrays lie beyond the caches, by the run's own
//!   latency curve.
//! - [`tags`]: the labels a run carries and their rules.
//! - [`args`] (feature `clap`): what several commands' command lines share.
//! - [`placement`]: which cpus to measure on: the measuring cpu, its peer, the farthest one.
#![deny(missing_docs)]

pub mod affinity;
#[cfg(feature = "clap")]
pub mod args;
pub mod balancing;
pub mod beyond_cache;
pub mod catalog;
pub mod cgroup;
pub mod clock;
pub mod counters;
pub mod cpuinfo;
pub mod cpulist;
pub mod cpuset;
pub mod dmi;
pub mod files;
pub mod interrupts;
pub mod machine;
pub mod model;
pub mod notices;
pub mod numa;
pub mod paths;
pub mod pending;
pub mod perf;
pub mod placement;
pub mod relations;
pub mod signals;
pub mod stats;
pub mod tags;
pub mod text;
pub mod time;
pub mod topology;
pub mod tree;
pub mod units;

pub use clock::Clock;
pub use cpuset::CpuSet;
pub use model::{Measurement, ModelKind, Prediction, Status, TimelineEvent, Unit};
pub use stats::Summary;
pub use topology::Topology;
