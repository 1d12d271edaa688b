//! oslab's CPU manager: processor allocation for malleable parallel jobs, with page
//! migration, live on this machine.
//!
//! - [`workload`]: the mixes W1..W4 at a load as SWF, and a mix, a trace or external commands as
//!   the jobs a run starts.
//! - [`work`] and [`job`]: the built-in jobs (real parallel kernels with the paper's four scaling
//!   shapes), run as `oslab cpuman job` processes that follow their allocation.
//! - [`channel`]: the shared page between the manager and a cooperative job.
//! - [`mapping`]: allocation counts to stable, contiguous CPU sets.
//! - [`core`]: arrivals, queue, admission and reallocation, shared by the live manager and the
//!   simulator.
//! - [`manager`]: the live driver (real processes, page migration, observation).
//! - [`observe`]: what the manager reads from the kernel.
//! - [`simulate`]: the same policies and mapping on a modelled CC-NUMA machine of any size.
//! - [`speedups`]: the paper's speedup curves, or curves measured in live runs here.
//! - [`outcome`]: a run's results (live or simulated) as measurements, a timeline and text.
//! - [`tally`]: ended jobs folded into per-kind statistics as they end (memory bounded by the
//!   jobs alive, not the trace).
//! - [`compare`]: stored runs side by side, with and without page migration.

#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod args;
pub mod channel;
pub mod compare;
pub mod core;
pub mod job;
pub mod jobs;
pub mod manager;
pub mod mapping;
pub mod observe;
pub mod outcome;
pub mod policy;
pub mod simulate;
pub mod speedups;
pub mod swf;
pub mod tally;
pub mod work;
pub mod workload;
