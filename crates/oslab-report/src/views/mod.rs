//! What the terminal shows, built from the [`crate::table`] primitives: a run's measurements, its
//! first view, and the lists (runs, probes, a plan, a fleet).

mod lists;
mod measurements;
mod run;

pub(crate) use lists::program_named;
pub use lists::{fleet, fleet_history, plan, probes, reference_saved, runs};
pub use measurements::measurements;
pub use run::{repredicted, run};
