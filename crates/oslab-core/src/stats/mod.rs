//! Statistics, one module and one contract for every figure oslab prints, whatever the command
//! (run, show, compare, timeslice, activity, c2c, numa, migrate, shuffle, shuffle-eval, cpuman,
//! simulate, fleet summary):
//!
//! - **A summary** ([`Summary`]): median first, the spread as quartiles, outliers by
//!   Tukey's fences, and the 95% interval of the median from consecutive blocks of samples (so
//!   drift during a measurement widens it). The median lies inside its interval by
//!   construction. An interval from fewer than 3 values is not shown ([`Summary::interval`]):
//!   it would be their range.
//! - **Noisy** by one rule ([`noise_reason`], [`NoiseRule`]): an interval wider than the rule
//!   allows, or fewer than [`MIN_FOR_INTERVAL`] samples. The status carries its cause
//!   (`crate::model::cause`); impossible values (a negative time, a zero-cost operation) are
//!   failures, decided by `crate::model::Measurement::check_possible`.
//! - **Paired differences** ([`paired`]): A/B runs alternate; the verdict is on the paired
//!   differences (mean and Student's t interval) from [`paired::MIN_PAIRS`] pairs, with fewer a
//!   ratio only; [`paired::measurement`] is the one builder of such a figure.
//! - **Repetitions** ([`repetitions`]): a measurement's repetitions pooled for tables and charts.
//! - **Comparisons** ([`compare`]): runs or groups of runs compared as benchstat does, with
//!   independent repetitions as replicates, rank tests ([`ranks`]: Mann-Whitney U,
//!   Hodges-Lehmann shift) and a band widened by how far runs of the same machine drift.

pub mod compare;
pub mod paired;
pub mod ranks;
pub mod repetitions;
mod summary;

pub use summary::*;
