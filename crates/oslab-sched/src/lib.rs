//! Placement policies that act on live processes.
//!
//! # Brief overview
//! - [`shuffle`]: the seed's shuffling loop. [`shuffle::decide`] turns per-thread lock-wait
//!   fractions and the cache domains a target may use into a placement (pure, unit-tested);
//!   [`locks`] measures the lock waits of a live process; [`shuffle::Daemon`] runs monitor ->
//!   decide -> re-pin on an interval and restores every affinity it changed.
//! - [`policy`]: processor-allocation policies (native, equipartition, PDPA) behind one trait,
//!   for the CPU manager and its simulator.
//! - [`jobs`]: the seed's job kinds (swim, bt, hydro2d, apsi), their speedups and the W1..W4 mixes.
//! - [`swf`]: Standard Workload Format traces, streamed and validated with line numbers.
//! - [`eval`]: workloads run with and without shuffling, interleaved.
//! - [`cpuman`]: the CPU manager (seed 003): live runs of malleable jobs under a policy.
#![deny(missing_docs)]

pub mod cpuman;
pub mod eval;
pub mod jobs;
pub mod locks;
pub mod policy;
pub mod shuffle;
pub mod swf;
