//! The pure core every oslab crate stands on: the data model, the statistics, the catalog of
//! probes, units and text. It never reads or changes the operating system (no files, devices,
//! processes, threads, environment or system calls; the one outside fact it takes is the time of
//! day, for a run's timestamps): what the machine is comes in as data `oslab-os` reads, so the
//! store, the report and the model build on it without the OS side, and a change there rebuilds
//! none of them (`crates/oslab/tests/layers.rs` holds both).
//!
//! # Brief overview
//! - [`model`]: `Measurement`, `Prediction`, `Status`, `Unit`, `TimelineEvent`.
//! - [`stats`]: the one statistical contract, its front door: [`stats::Summary`] (median-led,
//!   a CI95 of the median from batch medians, so drift between bursts widens it), the noise rule,
//!   paired A/B differences ([`stats::paired`]), repetitions pooled ([`stats::repetitions`]),
//!   comparisons as benchstat makes them ([`stats::compare`], with [`stats::ranks`]).
//! - [`catalog`]: what every probe is (id, metrics, units, family, model or why none, chart,
//!   headline), declared once; everything else reads it.
//! - [`relations`]: the relations figures obey across each other; [`beyond_cache`]: whether a
//!   figure's working set lies beyond the caches, by the run's own latency curve.
//! - [`machine`], [`topology`], [`clock`], [`dmi`]: what a machine is, as data (the fingerprint,
//!   the environment, cpus, caches, nodes, the calibrated clock, SMBIOS memory devices parsed
//!   from their bytes); `oslab-os` reads them.
//! - [`cpuset::CpuSet`]: a set of cpus; [`cpulist`]: "0-3,8", "node:1", "socket:0",
//!   "core-sibling-of:0" resolved against a topology.
//! - [`text`]: lines and tables an experiment reports, as data the report crate renders.
//! - [`units`]: values and sizes printed for reading (ns to µs/ms/s, KiB/MiB/GiB), three
//!   significant figures, fewer when the interval is wide.
//! - [`notices`]: what a library must tell a person and cannot return, through the CLI's sink.
//! - [`reason`]: reasons as types ([`reason::BadValue`], [`reason::Unavailable`], `reason!` for
//!   more).
//! - [`pace::Pace`]: `--quick` or not, decided once and passed down.
//! - [`tags`]: the labels a run carries and their rules; [`time`]: timestamps as text.
//! - `args` (feature `clap`): what several commands' command lines share.
#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod args;
pub mod beyond_cache;
pub mod binding;
pub mod catalog;
pub mod clock;
pub mod conditions;
pub mod cpulist;
pub mod cpuset;
pub mod dmi;
pub mod machine;
pub mod model;
pub mod notices;
pub mod pace;
pub mod reason;
pub mod relations;
pub mod stats;
pub mod tags;
pub mod text;
pub mod time;
pub mod topology;
pub mod units;

pub use clock::Clock;
pub use cpuset::CpuSet;
pub use model::{Measurement, ModelKind, Prediction, Status, TimelineEvent, Unit};
pub use stats::Summary;
pub use topology::Topology;
