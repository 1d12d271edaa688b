//! Placement policies: the lock-contention shuffler and the CPU manager.
//!
//! # Brief overview
//! - [`shuffle`]: the shuffling loop. [`shuffle::decide`] turns per-thread lock-wait
//!   fractions and the cache domains a target may use into a placement (pure, unit-tested);
//!   [`locks`] measures the lock waits of a live process; [`shuffle::Daemon`] runs monitor ->
//!   decide -> re-pin on an interval and restores every affinity it changed.
//! - [`policy`]: processor-allocation policies (native, equipartition, PDPA) behind one trait,
//!   for the CPU manager and its simulator.
//! - [`jobs`]: the job kinds (swim, bt, hydro2d, apsi), their speedups and the W1..W4 mixes.
//! - [`swf`]: Standard Workload Format traces, streamed and validated with line numbers.
//! - [`eval`]: workloads run with and without shuffling, as alternating pairs.
//! - [`lockbench`]: the built-in contended-lock workload.
//! - [`cpuman`]: the CPU manager: malleable jobs under a policy, live or simulated, and their
//!   comparison.
#![deny(missing_docs)]

pub mod cpuman;
pub mod eval;
pub mod jobs;
pub mod lockbench;
pub mod locks;
pub mod policy;
pub mod shuffle;
pub mod swf;
