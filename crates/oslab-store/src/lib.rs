//! The oslab result store: one SQLite file (WAL mode) holding runs, their measurements and
//! predictions, with a versioned schema migrated forward on open.
//!
//! # Brief overview
//! - [`Store::open`] creates or opens a store, refusing files that are not oslab databases or were
//!   written by a newer oslab, and checking up front that it can write.
//! - [`Store::begin_run`], [`Store::append`], [`Store::finish_run`]: a run written as it is measured.
//!   It is `running` from the start (with the writer's pid and boot id), each probe's results are
//!   added in one transaction, and the final results replace them in one transaction. A run whose
//!   writer died reads as `crashed`, holding every probe that completed.
//! - [`Recorder`]: the same for a measuring command: assembles the run record from the machine and
//!   writes the run through those three steps.
//! - [`Store::save_run`] writes a finished run (an import, a fleet node) in one transaction: it is
//!   stored whole or not at all.
//! - [`Store::runs`], [`Store::load_run`], [`Store::load_timeline`] read them back.
//! - [`RunSet`]: several runs taken together (`3,4,5`, `tag:kernel=6.18`), loaded with
//!   [`Store::load_set`].
//! - [`Location`]: where a command finds the store (`--db`, `--db-timeout`) and how it opens it.
//! - [`exchange`]: the `oslab.run/1` JSON document (schema-validated on import) and CSV.
#![deny(missing_docs)]

pub mod exchange;
mod location;
pub mod recorder;
mod run;
mod runset;
mod schema;
mod store;
mod validate;

pub use location::Location;
pub use oslab_core::tags::{check_tag, MAX_TAGS, MAX_TAG_CHARS};
pub use recorder::{NotStored, Program, Recorder};
pub use run::{RunRecord, RunRef, RunStatus, RunSummary};
pub use runset::{Loaded, RunSet};
pub use store::{Store, StoreError};
