//! The oslab result store: one SQLite file (WAL mode) holding runs, their measurements and
//! predictions, with a versioned schema migrated forward on open.
//!
//! # Brief overview
//! - [`Store::open`] creates or opens a store, refusing files that are not oslab databases or were
//!   written by a newer oslab, and checking up front that it can write.
//! - [`Store::save_run`] writes a run and all its measurements in one transaction: a run is either
//!   stored whole (marked `complete` or `interrupted`) or not at all.
//! - [`Store::runs`], [`Store::load_run`], [`Store::load_timeline`] read them back.
//! - [`exchange`]: the `oslab.run/1` JSON document (schema-validated on import) and CSV.
//! - [`compare::compare`]: two runs side by side, with significance and regressions.
#![deny(missing_docs)]

pub mod compare;
pub mod exchange;
pub mod fleet;
mod schema;
mod store;

pub use store::{RunRecord, RunRef, RunStatus, RunSummary, Store, StoreError};
