//! The measurements of oslab. A probe says what one iteration is; the [`harness`] owns timing
//! (batch sizing, warm-up, interleaving, overhead subtraction, time budgets); the [`runner`] checks
//! what each probe needs, runs it and hands results to a [`runner::Sink`].
//!
//! # Brief overview
//! - [`probe::Probe`]: one row of the registry table: id, description, unit, needs, run function.
//! - [`registry::all`]: every probe, in suite order; it drives `list`, `run` and help text.
//! - Families, one module each: [`timer`], [`loops`], [`call`], [`syscall`], [`task`], [`switch`],
//!   [`memory`], [`chase`], [`loaded`], [`bandwidth`], [`faults`], [`numa`], [`activity`], [`timeslice`], [`migration`], [`c2c`].
//! - [`buffer`], [`kernels`], [`stream`]: memory with explicit pages, assembly bandwidth kernels,
//!   and STREAM-style teams of pinned threads.
//! - [`child`]: forked peers and helpers that are always killed and reaped.
//! - [`session::Session`]: the machine, the chosen cpus, pinning and priority: what every measuring
//!   command starts from.
//! - [`contention`]: whether other work competed with a probe (results then marked noisy).
//! - [`gate`]: samples taken while the measuring core ran slow are left out.
#![deny(missing_docs)]

pub mod activity;
#[cfg(feature = "clap")]
pub mod args;
pub mod bandwidth;
pub mod buffer;
pub mod c2c;
pub mod call;
pub mod chase;
pub mod child;
pub mod contention;
pub mod core_clock;
pub mod disk;
pub mod error;
pub mod faults;
pub mod fs;
pub mod gate;
pub mod harness;
pub mod ipc;
pub mod kernels;
pub mod levels;
pub mod loaded;
pub mod loops;
pub mod memory;
pub mod migration;
pub mod numa;
pub mod poll;
pub mod probe;
pub mod registry;
pub mod runner;
pub mod session;
pub mod signal;
pub mod spec;
pub mod stream;
pub mod switch;
pub mod syscall;
pub mod task;
pub mod timer;
pub mod timeslice;

pub use harness::{Harness, HarnessConfig, Timing};
pub use probe::{Context, Need, Options, Plan, Probe, ProbeError};
