//! Placement policies: the lock-contention shuffler and the CPU manager.
//!
//! # Brief overview
//! - [`shuffle`]: the shuffler. [`shuffle::decide`] turns per-thread lock-wait fractions and the
//!   cache domains a target may use into a placement (pure, unit-tested); [`shuffle::locks`]
//!   measures the lock waits of a live process; [`shuffle::Daemon`] runs monitor -> decide ->
//!   re-pin on an interval and restores every affinity it changed; [`shuffle::eval`] runs
//!   workloads with and without it as alternating pairs; [`shuffle::lockbench`] is the built-in
//!   contended-lock workload.
//! - [`cpuman`]: the CPU manager: allocation policies behind one trait ([`cpuman::policy`]), job
//!   kinds and mixes ([`cpuman::jobs`]), SWF traces ([`cpuman::swf`]), live runs of malleable
//!   jobs, the simulator, and comparisons with and without page migration.
#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod args;
pub mod cpuman;
pub mod shuffle;
