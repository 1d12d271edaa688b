//! Rendering of oslab results for people: aligned terminal tables with units chosen for reading,
//! and the machine description of `oslab info`.
//!
//! # Brief overview
//! - [`c2c`]: the core-to-core latency matrix and its topology classes as text.
//! - [`comparison`]: `oslab compare`: the sides loaded with their drift, as text and JSON.
//! - [`headline`]: the lines a person quotes from a run, printed first.
//! - [`summary`]: the rest of a run's first view: a line per probe, what to distrust, the model.
//! - [`table`]: the measurement table, the runs table and the probe list.
//! - [`machine`]: `oslab info` as text.
//! - [`activity`]: period lists and histograms of activity recordings.
//! - [`html`]: the self-contained HTML report of a run (inline CSS and SVG, everything escaped).
//! - [`model_view`]: "model vs measured" per family: prediction, measurement, analysis.
//! - [`plots`]: SVG charts (plotters): lines over log sizes, bars, heatmaps, timelines.
//! - [`trace`]: timelines as Chrome trace-event JSON (Perfetto).
//! - [`numa`]: the NUMA matrix views (bandwidth, latency, ratios to local, SLIT distances).
#![deny(missing_docs)]

pub mod activity;
#[cfg(feature = "clap")]
pub mod args;
pub mod binding;
pub mod c2c;
pub mod charts;
pub mod comparison;
pub mod export;
pub mod headline;
pub mod html;
pub mod hwloc;
pub mod machine;
pub mod machine_map;
#[cfg(feature = "clap")]
pub mod man;
pub mod markdown;
pub mod markup;
pub mod model_view;
pub mod numa;
pub mod paraver;
pub mod plots;
pub mod summary;
pub mod table;
pub mod trace;
pub mod views;
