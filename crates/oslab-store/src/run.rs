//! What the store holds of a run: its record, its status (and how a crashed one is told from a
//! running one), its tags, a summary for listing, and how a command names a run.

use oslab_core::reason::BadValue;
use oslab_core::tags::{check_count, check_tag};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a run ended, or that it has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every selected probe ran.
    Complete,
    /// Stopped by the user; holds what completed.
    Interrupted,
    /// Being measured now: the process that writes it still exists.
    Running,
    /// Left `running` by a process that no longer exists (killed, out of memory, power lost);
    /// holds every probe that completed before. Never written: seen when reading.
    Crashed,
}

impl RunStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Running => "running",
            RunStatus::Crashed => "crashed",
        }
    }
    pub(crate) fn parse(s: &str) -> RunStatus {
        match s {
            "interrupted" => RunStatus::Interrupted,
            "running" => RunStatus::Running,
            "crashed" => RunStatus::Crashed,
            _ => RunStatus::Complete,
        }
    }

    /// The status a reader should see: a run stored as `running` whose writer (pid on boot
    /// `boot_id`) is gone has crashed.
    pub(crate) fn seen(self, pid: Option<i64>, boot_id: Option<&str>) -> RunStatus {
        if self != RunStatus::Running {
            return self;
        }
        let same_boot =
            boot_id.is_some_and(|b| Some(b) == oslab_files::processes::boot_id().as_deref());
        let alive = pid.is_some_and(oslab_files::processes::alive);
        if same_boot && alive {
            RunStatus::Running
        } else {
            RunStatus::Crashed
        }
    }
}

/// A run's metadata.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Assigned by the store.
    pub id: Option<i64>,
    /// UTC start.
    pub started: String,
    /// UTC end.
    pub finished: String,
    /// How it ended.
    pub status: RunStatus,
    /// oslab version.
    pub oslab_version: String,
    /// Git revision of the build, when known.
    pub git_rev: Option<String>,
    /// The command line.
    pub command: String,
    /// Host name.
    pub hostname: String,
    /// `--quick`.
    pub quick: bool,
    /// Wall time of the run in seconds.
    pub wall_s: f64,
    /// Machine fingerprint (JSON of `oslab_core::machine::Fingerprint`).
    pub fingerprint: serde_json::Value,
    /// Environment report (JSON of `oslab_core::machine::Environment`).
    pub environment: serde_json::Value,
    /// Labels the user or a collector gave the run (`--tag kernel=6.18`, the fleet job and node):
    /// runs are grouped by them when compared.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

impl RunRecord {
    /// The rules every stored run keeps, whether it was measured here, imported or collected:
    /// dates in RFC 3339, the end not before the start, a positive id, at most [`MAX_TAGS`] tags that pass [`check_tag`], a
    /// wall time that is a time. The schema says the same of a document; this also holds for a
    /// run `oslab run` is about to store, so what it stores always imports again.
    pub fn check(&self) -> Result<(), BadValue> {
        for (what, t) in [("started", &self.started), ("finished", &self.finished)] {
            if !oslab_core::time::is_rfc3339(t) {
                return Err(format!(
                    "{what} is {:?}: not an RFC 3339 date and time",
                    oslab_core::text::shortened(t, 40)
                )
                .into());
            }
        }
        let at = oslab_core::time::epoch_seconds;
        if let (Some(s), Some(f)) = (at(&self.started), at(&self.finished)) {
            if f < s {
                return Err(format!(
                    "finished ({}) before it started ({})",
                    self.finished, self.started
                )
                .into());
            }
        }
        if self.id.is_some_and(|id| id < 1) {
            return Err(format!("run id {}: ids start at 1", self.id.unwrap_or(0)).into());
        }
        if !(self.wall_s.is_finite() && self.wall_s >= 0.0) {
            return Err(format!("wall_s is {}: not a duration", self.wall_s).into());
        }
        check_count(self.tags.len())?;
        for (k, v) in &self.tags {
            check_tag(k, v)
                .map_err(|e| format!("tag {:?}: {e}", oslab_core::text::shortened(k, 40)))?;
        }
        Ok(())
    }
}

/// One line of `oslab runs`.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// UTC start.
    pub started: String,
    /// How it ended.
    pub status: RunStatus,
    /// Host name.
    pub hostname: String,
    /// Command line.
    pub command: String,
    /// Number of measurements.
    pub measurements: i64,
    /// Its tags.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// Wall time in seconds.
    pub wall_s: f64,
}

/// A reference to a run: its id or `latest`.
#[derive(Debug, Clone, PartialEq)]
pub enum RunRef {
    /// By id.
    Id(i64),
    /// The most recent.
    Latest,
}

impl std::str::FromStr for RunRef {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<RunRef, BadValue> {
        match s {
            "latest" | "last" => Ok(RunRef::Latest),
            _ => s
                .parse::<i64>()
                .ok()
                .filter(|&v| v > 0)
                .map(RunRef::Id)
                .ok_or_else(|| {
                    BadValue(format!(
                        "{s:?} is not a run id (a positive number, or 'latest')"
                    ))
                }),
        }
    }
}
