//! Opening, writing and reading the store.

use crate::schema::{current_version, MIGRATIONS};
use oslab_core::model::{Measurement, ModelKind, Prediction, Status, TimelineEvent, Unit};
use oslab_core::stats::Summary;
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::{Deserialize, Serialize};
use serde_json::Map;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors of the store. Each message names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file or its directory cannot be opened or written.
    #[error(
        "cannot use result store {path}: {reason}; check the path is writable or pass --db PATH (or set OSLAB_DB)"
    )]
    Unusable {
        /// The store file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file exists but is not an SQLite database.
    #[error("{path} is not an oslab result store (not an SQLite database); move it aside or pass --db PATH")]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The file is an SQLite database of something else.
    #[error("{path} is an SQLite database but not an oslab result store; pass --db PATH to use another file")]
    Foreign {
        /// The file.
        path: PathBuf,
    },
    /// Written by a newer oslab.
    #[error("{path} has schema version {found}, newer than this oslab understands ({supported}); upgrade oslab")]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// Ours.
        supported: i64,
    },
    /// No run with that id.
    #[error("no run {0} in the store; `oslab runs` lists the stored runs")]
    NoSuchRun(String),
    /// A run that breaks a rule every stored run keeps ([`RunRecord::check`]).
    #[error("run not stored: {0}")]
    Refused(String),
    /// Stored data that does not parse (a damaged row).
    #[error("run data is damaged: {0}")]
    Damaged(String),
    /// Any other SQLite error.
    #[error("result store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

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
    fn parse(s: &str) -> RunStatus {
        match s {
            "interrupted" => RunStatus::Interrupted,
            "running" => RunStatus::Running,
            "crashed" => RunStatus::Crashed,
            _ => RunStatus::Complete,
        }
    }

    /// The status a reader should see: a run stored as `running` whose writer (pid on boot
    /// `boot_id`) is gone has crashed.
    fn seen(self, pid: Option<i64>, boot_id: Option<&str>) -> RunStatus {
        if self != RunStatus::Running {
            return self;
        }
        let same_boot = boot_id.is_some_and(|b| Some(b) == current_boot_id().as_deref());
        let alive = pid.is_some_and(process_alive);
        if same_boot && alive {
            RunStatus::Running
        } else {
            RunStatus::Crashed
        }
    }
}

/// Whether process `pid` exists and is not a zombie (a killed writer is a zombie until reaped).
fn process_alive(pid: i64) -> bool {
    if pid <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may itself hold ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

/// This boot's random id (changes at every boot), so a pid from an earlier boot is never taken
/// for a live process.
fn current_boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
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

/// The most tags a run carries (the schema's `maxProperties`).
pub const MAX_TAGS: usize = 256;
/// The most characters of a tag's key or value (the schema's `maxLength`).
pub const MAX_TAG_CHARS: usize = 1024;

/// Whether one tag is one a run may carry: both parts non-empty and at most [`MAX_TAG_CHARS`],
/// the key without spaces or ':' (a `tag:KEY=VALUE` selector reads up to the first '=').
pub fn check_tag(key: &str, value: &str) -> Result<(), String> {
    let long = |s: &str| s.chars().count() > MAX_TAG_CHARS;
    if key.is_empty() || value.is_empty() {
        Err("a tag is KEY=VALUE, both non-empty, e.g. kernel=6.18".into())
    } else if key.contains(|c: char| c.is_whitespace() || c == ':' || c == '=') {
        Err("a tag's key has no spaces, ':' or '='".into())
    } else if long(key) || long(value) {
        Err(format!(
            "a tag's key and value are at most {MAX_TAG_CHARS} characters each"
        ))
    } else {
        Ok(())
    }
}

impl RunRecord {
    /// The rules every stored run keeps, whether it was measured here, imported or collected:
    /// dates in RFC 3339, a positive id, at most [`MAX_TAGS`] tags that pass [`check_tag`], a
    /// wall time that is a time. The schema says the same of a document; this also holds for a
    /// run `oslab run` is about to store, so what it stores always imports again.
    pub fn check(&self) -> Result<(), String> {
        for (what, t) in [("started", &self.started), ("finished", &self.finished)] {
            if !oslab_core::time::is_rfc3339(t) {
                return Err(format!(
                    "{what} is {:?}: not an RFC 3339 date and time",
                    oslab_core::text::shortened(t, 40)
                ));
            }
        }
        if self.id.is_some_and(|id| id < 1) {
            return Err(format!("run id {}: ids start at 1", self.id.unwrap_or(0)));
        }
        if !(self.wall_s.is_finite() && self.wall_s >= 0.0) {
            return Err(format!("wall_s is {}: not a duration", self.wall_s));
        }
        if self.tags.len() > MAX_TAGS {
            return Err(format!(
                "{} tags: a run carries at most {MAX_TAGS}",
                self.tags.len()
            ));
        }
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
    type Err = String;
    fn from_str(s: &str) -> Result<RunRef, String> {
        match s {
            "latest" | "last" => Ok(RunRef::Latest),
            _ => s
                .parse::<i64>()
                .ok()
                .filter(|&v| v > 0)
                .map(RunRef::Id)
                .ok_or_else(|| format!("{s:?} is not a run id (a positive number, or 'latest')")),
        }
    }
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The file's device and inode when opened (None in memory): a store deleted or replaced
    /// while a run writes it is noticed at the next write, not reported as stored.
    file: Option<(u64, u64)>,
}

/// The device and inode of the file at `path` now.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Store {
    /// The default location: `$XDG_DATA_HOME/oslab/oslab.db` (or `~/.local/share/oslab/oslab.db`).
    pub fn default_path() -> PathBuf {
        oslab_core::paths::xdg_dir("XDG_DATA_HOME", ".local/share").join("oslab.db")
    }

    /// Opens (creating if needed) the store at `path` and migrates it to the current schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let mut s = Store::connect(path)?;
        match s.migrate() {
            Err(StoreError::Sqlite(e)) => Err(s.classify_error(e)),
            other => other.map(|_| s),
        }
    }

    /// A store with nothing in it that is never written to disk: what a reading command sees
    /// where no store has been created yet (it must not create one by looking).
    pub fn empty(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory().map_err(|e| StoreError::Unusable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            file: None,
        };
        store.classify(store.init())?;
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing store only to read it (a store on read-only media, or another user's):
    /// nothing is created, migrated or locked for writing. A store of an older schema must be
    /// opened once with write access first.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let unusable = |reason: String| StoreError::Unusable {
            path: path.to_path_buf(),
            reason,
        };
        if !path.is_file() {
            return Err(unusable("no store there".into()));
        }
        // A store in WAL mode needs its -shm file, which a reader without write access cannot
        // create: it is read as immutable then (what it holds at open time, without locking).
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let uri = |extra: &str| {
            let mut u = String::from("file:");
            for b in path.as_os_str().as_encoded_bytes() {
                match b {
                    b'%' | b'?' | b'#' | 0x80.. => u.push_str(&format!("%{b:02X}")),
                    _ => u.push(*b as char),
                }
            }
            u + extra
        };
        let conn = Connection::open_with_flags(uri("?mode=ro"), flags)
            .and_then(|c| {
                c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
                    .map(|_| c)
            })
            .or_else(|_| Connection::open_with_flags(uri("?mode=ro&immutable=1"), flags))
            .map_err(|e| unusable(e.to_string()))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            file: identity(path),
        };
        store.classify(store.conn.busy_timeout(std::time::Duration::from_secs(5)))?;
        let version: Option<i64> = store
            .classify(
                store
                    .conn
                    .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0)),
            )
            .map_err(|e| match e {
                StoreError::Sqlite(_) => StoreError::Foreign {
                    path: path.to_path_buf(),
                },
                other => other,
            })?;
        match version.unwrap_or(0) {
            v if v == current_version() => Ok(store),
            v if v > current_version() => Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: v,
                supported: current_version(),
            }),
            _ => Err(unusable(
                "written by an older oslab and read-only here: open it once with write access to upgrade it".into(),
            )),
        }
    }

    /// Opens the file and checks it is a writable SQLite database.
    fn connect(path: &Path) -> Result<Store, StoreError> {
        let unusable = |reason: String| StoreError::Unusable {
            path: path.to_path_buf(),
            reason,
        };
        // SQLite would open a device or a FIFO and leave its journal beside it (a world-writable
        // /dev/null-journal): a store is a regular file or nothing yet.
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(unusable(
                "not a regular file (a store is an SQLite file)".into(),
            ));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            oslab_core::paths::create_dir(dir)
                .map_err(|e| unusable(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| unusable(e.to_string()))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            file: identity(path),
        };
        store.classify(store.init())?;
        Ok(store)
    }

    /// How long a write waits for another process that holds the store, saying once (after a
    /// second) that it waits. The default is 5 s.
    pub fn wait_when_locked(&mut self, timeout: std::time::Duration) -> Result<(), StoreError> {
        LOCK_WAIT_MS.store(
            timeout.as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        let set = self.conn.busy_handler(Some(wait_for_lock));
        self.classify(set)
    }

    /// Path of the store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction that takes the write lock at once (waiting for it as long as
    /// [`Store::wait_when_locked`] says): a deferred one that read first fails at once, without
    /// waiting, when another process wrote meanwhile. Refused when the file opened is no longer
    /// at the store's path (deleted or replaced): what it writes would be lost.
    fn write(&self) -> Result<rusqlite::Transaction<'_>, StoreError> {
        if self.file.is_some() && identity(&self.path) != self.file {
            return Err(StoreError::Unusable {
                path: self.path.clone(),
                reason: "the file was deleted or replaced while oslab was using it".into(),
            });
        }
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        );
        self.classify(tx)
    }

    fn classify<T>(&self, r: Result<T, rusqlite::Error>) -> Result<T, StoreError> {
        r.map_err(|e| self.classify_error(e))
    }

    /// Turns SQLite's codes into errors that say what to do.
    fn classify_error(&self, e: rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotADatabase {
                path: self.path.clone(),
            },
            Some(rusqlite::ErrorCode::ReadOnly)
            | Some(rusqlite::ErrorCode::CannotOpen)
            | Some(rusqlite::ErrorCode::PermissionDenied)
            | Some(rusqlite::ErrorCode::DatabaseBusy)
            | Some(rusqlite::ErrorCode::SystemIoFailure) => StoreError::Unusable {
                path: self.path.clone(),
                reason: e.to_string(),
            },
            _ => StoreError::Sqlite(e),
        }
    }

    /// Sets the connection up. Several oslabs opening a new store at once contend for switching
    /// it to WAL, and SQLite answers that with busy at once rather than waiting (seen: one of
    /// four runs started together said "database is locked"): it is tried again for a while.
    fn init(&self) -> Result<(), rusqlite::Error> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match self.init_once() {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                other => return other,
            }
        }
    }

    fn init_once(&self) -> Result<(), rusqlite::Error> {
        self.conn.busy_timeout(std::time::Duration::from_secs(5))?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        // Touch the file: this is where a non-database file is detected.
        self.conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        self.conn.pragma_update(None, "journal_mode", "WAL")?;
        // Take the write lock now, so an unwritable store fails before any measuring.
        self.conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")?;
        Ok(())
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        // The schema is read under the write lock: two oslabs creating one store at once would
        // otherwise both find it empty, and the second would run the migrations again.
        let tx = self.write()?;
        let tables: Vec<String> = tx
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let has_version = tables.iter().any(|t| t == "schema_version");
        if !has_version && !tables.is_empty() {
            return Err(StoreError::Foreign {
                path: self.path.clone(),
            });
        }
        let found: i64 = if has_version {
            tx.query_row("SELECT max(version) FROM schema_version", [], |r| {
                r.get::<_, Option<i64>>(0)
            })?
            .unwrap_or(0)
        } else {
            0
        };
        if found > current_version() {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                supported: current_version(),
            });
        }
        tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
            [],
        )?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                [i as i64 + 1],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Writes a run, its measurements and its timeline in one transaction; returns the new run id.
    pub fn save_run(
        &mut self,
        run: &RunRecord,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
    ) -> Result<i64, StoreError> {
        self.save_tagged_run(run, measurements, timeline, &[])
    }

    /// [`Store::save_run`] with tags (key, value) added to the run's own, in the same
    /// transaction.
    pub fn save_tagged_run(
        &mut self,
        run: &RunRecord,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
        tags: &[(&str, &str)],
    ) -> Result<i64, StoreError> {
        let mut run = run.clone();
        run.tags
            .extend(tags.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let tx = self.write()?;
        let run_id = insert_run(&tx, &run, None)?;
        insert_measurements(&tx, run_id, 0, measurements)?;
        insert_timeline(&tx, run_id, timeline)?;
        tx.commit()?;
        Ok(run_id)
    }

    /// Starts a run that is written as it goes: stored at once as `running`, with this process's
    /// pid and boot, so that if we die a reader sees it as `crashed` with what it holds. Add
    /// measurements with [`Store::append`] and end it with [`Store::finish_run`].
    pub fn begin_run(&mut self, run: &RunRecord) -> Result<i64, StoreError> {
        let tx = self.write()?;
        let running = RunRecord {
            status: RunStatus::Running,
            ..run.clone()
        };
        let id = insert_run(&tx, &running, Some(std::process::id()))?;
        tx.commit()?;
        Ok(id)
    }

    /// Adds measurements to a running run, in one transaction (after the ones it holds), and
    /// records the wall time so far.
    pub fn append(
        &self,
        run_id: i64,
        measurements: &[Measurement],
        wall_s: f64,
    ) -> Result<(), StoreError> {
        // Shared access: the runner appends while probes hold the session. SQLite still makes it
        // one transaction.
        let tx = self.write()?;
        let next: i64 = tx.query_row(
            "SELECT coalesce(max(seq) + 1, 0) FROM measurements WHERE run_id = ?1",
            [run_id],
            |r| r.get(0),
        )?;
        insert_measurements(&tx, run_id, next, measurements)?;
        tx.execute(
            "UPDATE runs SET wall_s = ?2 WHERE id = ?1",
            params![run_id, wall_s],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Ends a running run: its final measurements (replacing what was appended, so results measured
    /// again replace the first attempt), its timeline, end time, wall time, status and environment
    /// report (warnings found while measuring), in one transaction.
    pub fn finish_run(
        &mut self,
        run_id: i64,
        run: &RunRecord,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute("DELETE FROM measurements WHERE run_id = ?1", [run_id])?;
        tx.execute("DELETE FROM timeline WHERE run_id = ?1", [run_id])?;
        insert_measurements(&tx, run_id, 0, measurements)?;
        insert_timeline(&tx, run_id, timeline)?;
        let changed = tx.execute(
            "UPDATE runs SET finished = ?2, status = ?3, wall_s = ?4, environment = ?5 WHERE id = ?1",
            params![
                run_id,
                run.finished,
                run.status.as_str(),
                run.wall_s,
                run.environment.to_string()
            ],
        )?;
        if changed != 1 {
            return Err(StoreError::NoSuchRun(run_id.to_string()));
        }
        tx.commit()?;
        Ok(())
    }

    /// The timeline of a run, in recording order (empty when it has none).
    pub fn load_timeline(&self, run: &RunRef) -> Result<Vec<TimelineEvent>, StoreError> {
        let id = self.resolve(run)?;
        let mut stmt = self.conn.prepare(
            "SELECT track, kind, start_ns, dur_ns, args FROM timeline WHERE run_id = ?1 ORDER BY seq",
        )?;
        let events = stmt
            .query_map([id], |r| {
                let args: Option<String> = r.get(4)?;
                Ok(TimelineEvent {
                    track: r.get(0)?,
                    kind: r.get::<_, String>(1)?.into(),
                    start_ns: r.get(2)?,
                    dur_ns: r.get(3)?,
                    args: args
                        .as_deref()
                        .and_then(|a| parse_map(a).ok())
                        .unwrap_or_default(),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(events)
    }

    /// Every stored run, newest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.started, r.status, r.hostname, r.command, r.wall_s,
                    (SELECT count(*) FROM measurements m WHERE m.run_id = r.id), r.pid, r.boot_id
             FROM runs r ORDER BY r.id DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(RunSummary {
                id: r.get(0)?,
                started: r.get(1)?,
                status: RunStatus::parse(&r.get::<_, String>(2)?)
                    .seen(r.get(7)?, r.get::<_, Option<String>>(8)?.as_deref()),
                hostname: r.get(3)?,
                command: r.get(4)?,
                wall_s: r.get(5)?,
                measurements: r.get(6)?,
                tags: BTreeMap::new(),
            })
        })?;
        let mut rows: Vec<RunSummary> = rows.collect::<Result<_, _>>()?;
        for r in &mut rows {
            r.tags = self.tags(r.id)?;
        }
        Ok(rows)
    }

    /// The runs tagged `key` = `value`, oldest first.
    pub fn tagged(&self, key: &str, value: &str) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT run_id FROM run_tags WHERE key = ?1 AND value = ?2 ORDER BY run_id")?;
        let ids = stmt.query_map([key, value], |r| r.get(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    }

    /// The stored run that is `run` with `measurements`: the same host, command, start, end,
    /// machine and environment, and the same figures (samples aside: an export may leave them
    /// out). Importing a file twice, or a run exported from this store, finds it; an edited copy
    /// does not.
    pub fn same_run(
        &self,
        run: &RunRecord,
        measurements: &[Measurement],
    ) -> Result<Option<i64>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id FROM runs WHERE hostname = ?1 AND command = ?2 AND started = ?3 AND finished = ?4 ORDER BY id",
        )?;
        let ids: Vec<i64> = stmt
            .query_map(
                params![run.hostname, run.command, run.started, run.finished],
                |r| r.get(0),
            )?
            .collect::<Result<_, _>>()?;
        let figures = |ms: &[Measurement]| -> Vec<serde_json::Value> {
            ms.iter()
                .map(|m| {
                    let mut v = serde_json::to_value(m).unwrap_or_default();
                    if let Some(o) = v.as_object_mut() {
                        o.remove("samples");
                    }
                    v
                })
                .collect()
        };
        let wanted = figures(measurements);
        for id in ids {
            let (stored, ms) = self.load_run_summaries(&RunRef::Id(id))?;
            if stored.fingerprint == run.fingerprint
                && stored.environment == run.environment
                && figures(&ms) == wanted
            {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// A run's tags.
    pub fn tags(&self, run_id: i64) -> Result<BTreeMap<String, String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, value FROM run_tags WHERE run_id = ?1")?;
        let tags = stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(tags.collect::<Result<_, _>>()?)
    }

    /// Resolves a run reference to an id.
    pub fn resolve(&self, run: &RunRef) -> Result<i64, StoreError> {
        let id = match run {
            RunRef::Id(id) => self
                .conn
                .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()?,
            RunRef::Latest => self
                .conn
                .query_row("SELECT max(id) FROM runs", [], |r| r.get(0))?,
        };
        id.ok_or_else(|| {
            StoreError::NoSuchRun(match run {
                RunRef::Id(i) => i.to_string(),
                RunRef::Latest => "(the store is empty)".into(),
            })
        })
    }

    /// Loads a run and its measurements (with predictions and raw samples).
    pub fn load_run(&self, run: &RunRef) -> Result<(RunRecord, Vec<Measurement>), StoreError> {
        self.load(run, true)
    }

    /// Loads a run and its measurements without their raw samples (summaries only: quicker for
    /// many runs).
    pub fn load_run_summaries(
        &self,
        run: &RunRef,
    ) -> Result<(RunRecord, Vec<Measurement>), StoreError> {
        self.load(run, false)
    }

    fn load(
        &self,
        run: &RunRef,
        samples: bool,
    ) -> Result<(RunRecord, Vec<Measurement>), StoreError> {
        let id = self.resolve(run)?;
        let record = self.conn.query_row(
            "SELECT id, started, finished, status, oslab_version, git_rev, command, hostname, quick, wall_s, fingerprint, environment, pid, boot_id
             FROM runs WHERE id = ?1",
            [id],
            |r| {
                Ok(RunRecord {
                    id: Some(r.get(0)?),
                    started: r.get(1)?,
                    finished: r.get(2)?,
                    status: RunStatus::parse(&r.get::<_, String>(3)?)
                        .seen(r.get(12)?, r.get::<_, Option<String>>(13)?.as_deref()),
                    oslab_version: r.get(4)?,
                    git_rev: r.get(5)?,
                    command: r.get(6)?,
                    hostname: r.get(7)?,
                    quick: r.get(8)?,
                    wall_s: r.get(9)?,
                    fingerprint: parse_json(&r.get::<_, String>(10)?),
                    environment: parse_json(&r.get::<_, String>(11)?),
                    tags: BTreeMap::new(),
                })
            },
        )?;
        let record = RunRecord {
            tags: self.tags(id)?,
            ..record
        };
        let mut stmt = self.conn.prepare(
            &format!("SELECT m.probe, m.params, m.metric, m.unit, m.n, m.min, m.p25, m.median, m.p75, m.max, m.mean, m.stddev,
                    m.ci_low, m.ci_high, m.outliers, m.cycles, m.batch, m.overhead, m.status, m.note, {},
                    p.value, p.model, p.inputs, m.difference, m.attempts, m.repetition, m.context,
                    p.kind, p.formula, p.sources, p.gap, m.no_model, m.p90, m.p99, m.p999
             FROM measurements m LEFT JOIN predictions p ON p.measurement_id = m.id
             WHERE m.run_id = ?1 ORDER BY m.seq",
            if samples { "m.samples" } else { "NULL" }),
        )?;
        let ms = stmt
            .query_map([id], read_measurement)?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(StoreError::Damaged)?;
        Ok((record, ms))
    }
}

/// How long [`wait_for_lock`] waits, in ms.
static LOCK_WAIT_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(5000);
/// Its pause between tries.
const LOCK_RETRY_MS: u64 = 20;

/// SQLite's busy handler: try again every 20 ms until the wait is spent, saying once (after a
/// second) that another process holds the store.
fn wait_for_lock(tries: i32) -> bool {
    let waited = tries as u64 * LOCK_RETRY_MS;
    let limit = LOCK_WAIT_MS.load(std::sync::atomic::Ordering::Relaxed);
    if waited == 1000 {
        oslab_core::notices::say(&format!(
            "waiting for the store: another process is writing it (up to {:.0} s, --db-timeout)",
            limit as f64 / 1e3
        ));
    }
    if waited >= limit {
        return false;
    }
    std::thread::sleep(std::time::Duration::from_millis(LOCK_RETRY_MS));
    true
}

/// Inserts the run row; `pid` marks a run being written by this process.
fn insert_run(
    tx: &rusqlite::Transaction,
    run: &RunRecord,
    pid: Option<u32>,
) -> Result<i64, StoreError> {
    run.check().map_err(StoreError::Refused)?;
    tx.execute(
        "INSERT INTO runs (started, finished, status, oslab_version, git_rev, command, hostname, quick, wall_s, fingerprint, environment, pid, boot_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            run.started,
            run.finished,
            run.status.as_str(),
            run.oslab_version,
            run.git_rev,
            run.command,
            run.hostname,
            run.quick,
            run.wall_s,
            run.fingerprint.to_string(),
            run.environment.to_string(),
            pid,
            pid.and_then(|_| current_boot_id()),
        ],
    )?;
    let id = tx.last_insert_rowid();
    let mut tag = tx.prepare("INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)")?;
    for (k, v) in &run.tags {
        tag.execute(params![id, k, v])?;
    }
    Ok(id)
}

/// Inserts measurements (and their predictions) with sequence numbers from `first_seq`.
fn insert_measurements(
    tx: &rusqlite::Transaction,
    run_id: i64,
    first_seq: i64,
    measurements: &[Measurement],
) -> Result<(), StoreError> {
    let mut ins = tx.prepare(
        "INSERT INTO measurements (run_id, seq, probe, params, metric, unit, n, min, p25, median, p75, max, mean, stddev,
         ci_low, ci_high, outliers, cycles, batch, overhead, status, note, samples, difference, attempts, repetition, context, no_model, p90, p99, p999)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)",
    )?;
    let mut pred = tx.prepare(
        "INSERT INTO predictions (measurement_id, value, model, inputs, kind, formula, sources, gap)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (seq, m) in measurements.iter().enumerate() {
        let s = m.summary.as_ref();
        ins.execute(params![
            run_id,
            first_seq + seq as i64,
            m.probe,
            serde_json::Value::Object(m.params.clone()).to_string(),
            m.metric,
            m.unit.name(),
            s.map(|s| s.n as i64),
            s.map(|s| s.min),
            s.map(|s| s.p25),
            s.map(|s| s.median),
            s.map(|s| s.p75),
            s.map(|s| s.max),
            s.map(|s| s.mean),
            s.map(|s| s.stddev),
            s.map(|s| s.ci_low),
            s.map(|s| s.ci_high),
            s.map(|s| s.outliers as i64),
            m.cycles,
            m.batch.map(|b| b as i64),
            m.overhead,
            m.status.to_string(),
            m.note,
            m.samples.as_deref().map(encode_samples),
            m.difference,
            m.attempts,
            m.repetition,
            (!m.context.is_empty())
                .then(|| serde_json::Value::Object(m.context.clone()).to_string()),
            m.no_model,
            s.and_then(|s| s.p90),
            s.and_then(|s| s.p99),
            s.and_then(|s| s.p999),
        ])?;
        if let Some(p) = &m.prediction {
            pred.execute(params![
                tx.last_insert_rowid(),
                p.value,
                p.model,
                serde_json::Value::Object(p.inputs.clone()).to_string(),
                p.kind.name(),
                p.formula,
                (!p.sources.is_empty())
                    .then(|| serde_json::Value::Object(p.sources.clone()).to_string()),
                p.gap,
            ])?;
        }
    }
    Ok(())
}

fn insert_timeline(
    tx: &rusqlite::Transaction,
    run_id: i64,
    timeline: &[TimelineEvent],
) -> Result<(), StoreError> {
    let mut ev = tx.prepare(
        "INSERT INTO timeline (run_id, seq, track, kind, start_ns, dur_ns, args) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (seq, e) in timeline.iter().enumerate() {
        ev.execute(params![
            run_id,
            seq as i64,
            e.track,
            e.kind.name(),
            e.start_ns,
            e.dur_ns,
            (!e.args.is_empty()).then(|| serde_json::Value::Object(e.args.clone()).to_string()),
        ])?;
    }
    Ok(())
}

fn parse_json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or(serde_json::Value::Null)
}

fn parse_map(s: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        _ => Err(format!("expected a JSON object, found {s:?}")),
    }
}

fn read_measurement(r: &Row) -> rusqlite::Result<Result<Measurement, String>> {
    let n: Option<i64> = r.get(4)?;
    let summary = match n {
        Some(n) => Some(Summary {
            n: n as usize,
            min: r.get(5)?,
            p25: r.get(6)?,
            median: r.get(7)?,
            p75: r.get(8)?,
            max: r.get(9)?,
            mean: r.get(10)?,
            stddev: r.get(11)?,
            ci_low: r.get(12)?,
            ci_high: r.get(13)?,
            outliers: r.get::<_, i64>(14)? as usize,
            p90: r.get(33)?,
            p99: r.get(34)?,
            p999: r.get(35)?,
        }),
        None => None,
    };
    let unit_name: String = r.get(3)?;
    let params_text: String = r.get(1)?;
    let prediction = match r.get::<_, Option<f64>>(21)? {
        Some(value) => Some((value, r.get::<_, String>(22)?, r.get::<_, String>(23)?)),
        None => None,
    };
    let samples: Option<Vec<u8>> = r.get(20)?;
    let probe: String = r.get(0)?;
    let metric: String = r.get(2)?;
    let cycles = r.get(15)?;
    let batch = r.get::<_, Option<i64>>(16)?.map(|b| b as u64);
    let overhead = r.get(17)?;
    let status = Status::parse(&r.get::<_, String>(18)?);
    let note = r.get(19)?;
    let difference = r.get(24)?;
    let attempts = r.get(25)?;
    let repetition = r.get(26)?;
    let context: Option<String> = r.get(27)?;
    let kind: Option<String> = r.get(28)?;
    let formula: Option<String> = r.get(29)?;
    let sources: Option<String> = r.get(30)?;
    let gap: Option<String> = r.get(31)?;
    let no_model: Option<String> = r.get(32)?;
    Ok((|| {
        let unit =
            Unit::from_name(&unit_name).ok_or_else(|| format!("unknown unit {unit_name:?}"))?;
        let prediction = match prediction {
            Some((value, model, inputs)) => Some(Prediction {
                value,
                model,
                inputs: parse_map(&inputs)?,
                kind: ModelKind::from_name(kind.as_deref().unwrap_or_default()),
                formula: formula.unwrap_or_default(),
                sources: match sources {
                    Some(s) => parse_map(&s)?,
                    None => Map::new(),
                },
                gap,
            }),
            None => None,
        };
        Ok(Measurement {
            probe,
            params: parse_map(&params_text)?,
            metric,
            unit,
            summary,
            cycles,
            batch,
            overhead,
            status,
            note,
            prediction,
            no_model,
            samples: samples.map(|b| decode_samples(&b)),
            difference,
            attempts,
            repetition,
            context: match context {
                Some(c) => parse_map(&c)?,
                None => Map::new(),
            },
        })
    })())
}

/// Samples are stored as little-endian f64s: compact, exact, and readable from any language.
fn encode_samples(s: &[f64]) -> Vec<u8> {
    s.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_samples(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::EventKind;
    use oslab_core::params;

    #[test]
    fn a_read_only_store_can_be_read_but_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro.db");
        let mut w = Store::open(&path).unwrap();
        w.save_run(&record(), &[], &[]).unwrap();
        drop(w);
        let mut r = Store::open_read_only(&path).unwrap();
        assert_eq!(r.runs().unwrap().len(), 1);
        assert!(r.save_run(&record(), &[], &[]).is_err());
        let missing = Store::open_read_only(&dir.path().join("none.db"));
        assert!(missing.is_err() && !dir.path().join("none.db").exists());
    }

    #[test]
    fn many_openers_of_a_new_store_at_once_all_get_it() {
        // Eight oslabs started together on a store nobody created yet: about 1 in 24 used to be
        // told "database is locked" (switching to WAL answers busy without waiting), and two
        // that both found it empty ran the migrations twice.
        for round in 0..10 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("new.db");
            let start = std::sync::Barrier::new(8);
            std::thread::scope(|s| {
                let openers: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            Store::open(&path)?.save_run(&record(), &[], &[])
                        })
                    })
                    .collect();
                for o in openers {
                    if let Err(e) = o.join().unwrap() {
                        panic!("round {round}: {e}");
                    }
                }
            });
            assert_eq!(Store::open(&path).unwrap().runs().unwrap().len(), 8);
        }
    }

    #[test]
    fn a_store_deleted_during_a_run_is_noticed_at_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.db");
        let mut s = Store::open(&path).unwrap();
        let id = s.begin_run(&record()).unwrap();
        s.append(id, &[measured()], 1.0).unwrap();
        std::fs::remove_file(&path).unwrap();
        let e = s.append(id, &[measured()], 2.0).unwrap_err();
        assert!(e.to_string().contains("deleted or replaced"), "{e}");
        assert!(s.finish_run(id, &record(), &[measured()], &[]).is_err());
        // Replaced by another file of the same name: the same.
        let mut s = Store::open(&path).unwrap();
        let id = s.begin_run(&record()).unwrap();
        std::fs::rename(&path, dir.path().join("moved.db")).unwrap();
        Store::open(&path).unwrap();
        assert!(s.finish_run(id, &record(), &[], &[]).is_err());
    }

    fn record() -> RunRecord {
        RunRecord {
            id: None,
            started: "2026-01-01T00:00:00Z".into(),
            finished: "2026-01-01T00:00:05Z".into(),
            status: RunStatus::Complete,
            oslab_version: "0.1.0".into(),
            git_rev: Some("abc123".into()),
            command: "oslab run".into(),
            hostname: "host".into(),
            quick: true,
            wall_s: 5.0,
            fingerprint: serde_json::json!({"cpu_model": "test"}),
            environment: serde_json::json!({"warnings": []}),
            tags: BTreeMap::new(),
        }
    }

    fn measured() -> Measurement {
        let mut m = Measurement::not_taken(
            "syscall.getppid",
            params! {"cache" => "hot"},
            "per_call",
            Unit::Ns,
            Status::Ok,
        );
        m.summary = Summary::new(&[100.0, 101.0, 99.0, 250.0]);
        m.cycles = Some(270.0);
        m.batch = Some(64);
        m.overhead = Some(0.3);
        m.samples = Some(vec![100.0, 101.0, 99.0, 250.0]);
        m.prediction = Some(Prediction {
            kind: ModelKind::Composed,
            formula: "1 + 89".into(),
            sources: params! {"x" => "measured"},
            gap: Some("far off".into()),
            ..Prediction::new(90.0, "test", params! {"x" => 1})
        });
        m
    }

    #[test]
    fn an_older_store_is_migrated_forward_keeping_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            // A store as the first release wrote it: schema version 1 and one run.
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(crate::schema::MIGRATIONS[0]).unwrap();
            conn.execute_batch(
                "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);
                 INSERT INTO runs (started, finished, status, oslab_version, command, hostname, quick, wall_s, fingerprint, environment)
                 VALUES ('a', 'b', 'complete', '0.1.0', 'oslab run', 'h', 0, 1.0, '{}', '{}');",
            )
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.runs().unwrap().len(), 1);
        assert!(s.load_timeline(&RunRef::Latest).unwrap().is_empty());
        let version: i64 = s
            .conn
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, current_version());
    }

    #[test]
    fn run_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/oslab.db");
        let mut s = Store::open(&path).unwrap();
        let skipped = Measurement::not_taken(
            "switch.x",
            params! {},
            "wakeup",
            Unit::Ns,
            Status::Skipped("needs 2 cpus".into()),
        );
        let timeline = vec![
            TimelineEvent {
                track: "cpu 1".into(),
                kind: EventKind::Inactive,
                start_ns: 4.0e6,
                dur_ns: 2500.0,
                args: params! {"irq" => "LOC"},
            },
            TimelineEvent {
                track: "cpu 1".into(),
                kind: EventKind::Active,
                start_ns: 0.0,
                dur_ns: 4.0e6,
                args: params! {},
            },
        ];
        let id = s
            .save_run(&record(), &[measured(), skipped.clone()], &timeline)
            .unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        let (rec, ms) = s.load_run(&RunRef::Latest).unwrap();
        assert_eq!(rec.id, Some(id));
        assert_eq!(rec.fingerprint["cpu_model"], "test");
        assert_eq!(ms, vec![measured(), skipped]);
        assert_eq!(s.runs().unwrap()[0].measurements, 2);
        assert_eq!(s.load_timeline(&RunRef::Latest).unwrap(), timeline);
    }

    #[test]
    fn a_run_written_as_it_goes_is_running_then_finished_or_crashed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("a.db")).unwrap();
        let id = s.begin_run(&record()).unwrap();
        s.append(id, &[measured()], 1.5).unwrap();
        s.append(id, &[measured()], 2.5).unwrap();
        let (rec, ms) = s.load_run(&RunRef::Id(id)).unwrap();
        assert_eq!(
            (rec.status, ms.len(), rec.wall_s),
            (RunStatus::Running, 2, 2.5)
        );
        // The final write replaces what was appended.
        let mut done = record();
        done.status = RunStatus::Interrupted;
        s.finish_run(id, &done, &[measured()], &[]).unwrap();
        let (rec, ms) = s.load_run(&RunRef::Id(id)).unwrap();
        assert_eq!((rec.status, ms.len()), (RunStatus::Interrupted, 1));

        // A writer that is gone: a pid that is not alive, then another boot.
        let other = s.begin_run(&record()).unwrap();
        s.append(other, &[measured()], 1.0).unwrap();
        s.conn
            .execute("UPDATE runs SET pid = 2147483646 WHERE id = ?1", [other])
            .unwrap();
        assert_eq!(s.runs().unwrap()[0].status, RunStatus::Crashed);
        s.conn
            .execute(
                "UPDATE runs SET pid = ?2, boot_id = 'an-earlier-boot' WHERE id = ?1",
                [other, std::process::id() as i64],
            )
            .unwrap();
        let (rec, ms) = s.load_run(&RunRef::Id(other)).unwrap();
        assert_eq!((rec.status, ms.len()), (RunStatus::Crashed, 1));
        assert!(process_alive(std::process::id() as i64));
    }

    #[test]
    fn missing_run_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("a.db")).unwrap();
        assert!(s
            .load_run(&RunRef::Latest)
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(s
            .load_run(&RunRef::Id(7))
            .unwrap_err()
            .to_string()
            .contains("no run 7"));
        assert!("0".parse::<RunRef>().is_err());
        assert_eq!("latest".parse::<RunRef>(), Ok(RunRef::Latest));
    }

    #[test]
    fn refuses_garbage_and_foreign_databases() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x42u8; 8192]).unwrap();
        let err = Store::open(&garbage).err().unwrap();
        assert!(matches!(err, StoreError::NotADatabase { .. }), "{err}");
        assert_eq!(
            std::fs::read(&garbage).unwrap(),
            vec![0x42u8; 8192],
            "garbage file was modified"
        );

        let foreign = dir.path().join("foreign.db");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let err = Store::open(&foreign).err().unwrap();
        assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    }

    #[test]
    fn refuses_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        drop(Store::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute("INSERT INTO schema_version VALUES (999)", [])
            .unwrap();
        let err = Store::open(&path).err().unwrap();
        assert!(err.to_string().contains("upgrade oslab"), "{err}");
    }

    #[test]
    fn unwritable_location_fails_on_open() {
        let err = Store::open(Path::new("/proc/oslab-test/x.db"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("--db"), "{err}");
        // A device is not a store, and nothing is created beside it.
        let err = Store::open(Path::new("/dev/null")).err().unwrap();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(!Path::new("/dev/null-journal").exists());
        assert!(!Path::new("/dev/null-wal").exists());
        let dir = tempfile::tempdir().unwrap();
        assert!(Store::open(dir.path()).is_err());
    }

    #[test]
    fn a_failed_save_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut s = Store::open(&path).unwrap();
        // A trigger makes the second measurement insert fail half-way through the run.
        s.conn
            .execute_batch("CREATE TRIGGER boom BEFORE INSERT ON measurements WHEN NEW.seq = 1 BEGIN SELECT RAISE(ABORT, 'boom'); END;")
            .unwrap();
        assert!(s
            .save_run(&record(), &[measured(), measured()], &[])
            .is_err());
        assert!(s.runs().unwrap().is_empty());
        let count: i64 = s
            .conn
            .query_row("SELECT count(*) FROM measurements", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 0);
    }

    #[test]
    fn tags_are_stored_with_the_run_and_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("t.db")).unwrap();
        let a = s
            .save_tagged_run(
                &record(),
                &[measured()],
                &[],
                &[("fleet.job", "7"), ("fleet.node", "n1")],
            )
            .unwrap();
        let b = s.save_run(&record(), &[measured()], &[]).unwrap();
        let c = s
            .save_tagged_run(
                &record(),
                &[],
                &[],
                &[("fleet.job", "7"), ("fleet.node", "n2")],
            )
            .unwrap();
        assert_eq!(s.tagged("fleet.job", "7").unwrap(), vec![a, c]);
        assert!(s.tagged("fleet.job", "8").unwrap().is_empty());
        assert_eq!(s.tags(c).unwrap()["fleet.node"], "n2");
        assert!(s.tags(b).unwrap().is_empty());
        // The run's own tags are kept beside those added; an added key wins; both load back.
        let mut own = record();
        own.tags.insert("kernel".into(), "6.18".into());
        own.tags.insert("fleet.node".into(), "mine".into());
        let d = s
            .save_tagged_run(&own, &[measured()], &[], &[("fleet.node", "n3")])
            .unwrap();
        let (back, _) = s.load_run(&RunRef::Id(d)).unwrap();
        assert_eq!(back.tags["kernel"], "6.18");
        assert_eq!(back.tags["fleet.node"], "n3");
        assert_eq!(s.tagged("kernel", "6.18").unwrap(), vec![d]);
    }
}
