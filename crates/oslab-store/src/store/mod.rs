//! Opening, writing and reading the store.

use crate::run::*;
use crate::schema::{current_version, MIGRATIONS};
use oslab_core::model::{Measurement, ModelKind, Prediction, Status, TimelineEvent, Unit};
use oslab_core::stats::Summary;
use rows::*;
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::Map;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod rows;

/// Why a store could not be opened: SQLite says "unable to open database file" alike for a path
/// it may not write and for a process out of file descriptors; the second is said as such.
fn cannot_open(sqlite: String) -> String {
    match out_of_descriptors() {
        Some(limit) => {
            format!("{sqlite}: no file descriptor left (the open-file limit is {limit})")
        }
        None => sqlite,
    }
}

/// This process's open-file limit, when it has no descriptor to spare.
fn out_of_descriptors() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let limit = lim.rlim_cur;
    match std::fs::read_dir("/proc/self/fd") {
        // Listing the descriptors takes one: none left fails it, one left shows all but it.
        Err(e) if e.raw_os_error() == Some(libc::EMFILE) => Some(limit),
        Ok(fds) => (fds.count() as u64 + 1 >= limit).then_some(limit),
        Err(_) => None,
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sqlite(e)
    }
}

/// An SQLite error in a line: a statement the store's schema cannot answer (a column or table
/// missing) is said as that, without the statement's text (hundreds of characters of SQL).
fn brief(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. } => format!(
            "{msg}: the store's schema is not what this oslab wrote (damaged or edited); move the file aside or pass --db PATH"
        ),
        other => other.to_string(),
    }
}

/// What to do about an unusable store, by why it is.
fn advice(reason: &str) -> &'static str {
    match reason.contains("no file descriptor left") {
        true => "raise the limit (ulimit -n) or close what holds the descriptors",
        false => "check the path is writable or pass --db PATH (or set OSLAB_DB)",
    }
}

/// Refuses a store holding schema objects no version of oslab created.
fn refuse_foreign(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let found = crate::schema::foreign_objects(conn)?;
    match found.is_empty() {
        true => Ok(()),
        false => Err(StoreError::ForeignObjects {
            path: path.to_path_buf(),
            objects: oslab_core::text::shortened(&found.join(", "), 200),
        }),
    }
}

/// Errors of the store. Each message names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file or its directory cannot be opened or written.
    #[error("cannot use result store {path}: {reason}; {}", advice(.reason))]
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
    /// The store holds schema objects oslab did not create (a trigger would run on our writes).
    #[error("{path} holds {objects}, which oslab did not create; refusing to use it: remove them, or pass --db PATH to use another file")]
    ForeignObjects {
        /// The file.
        path: PathBuf,
        /// What they are (`trigger "t"`, `view "v"`), joined.
        objects: String,
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
    /// Any other SQLite error, said once (not also as its source) and without the statement it
    /// came from.
    #[error("result store error: {}", brief(.0))]
    Sqlite(rusqlite::Error),
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
        oslab_files::paths::xdg_dir("XDG_DATA_HOME", ".local/share").join("oslab.db")
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
        refuse_foreign(&store.conn, path)?;
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
        // Written as outputs are: never through a link (whoever made it chose where we write),
        // never into another user's file (root would turn any file it names into a store, or
        // write into one that user controls). Another user's store can still be read.
        if let Ok(m) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::MetadataExt;
            if m.file_type().is_symlink() {
                return Err(unusable(
                    "it is a symbolic link: a store is written at its own path, never through a link (name the file itself)".into(),
                ));
            }
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if m.uid() != me {
                return Err(unusable(format!(
                    "it is user {}'s file, not this user's: oslab writes only its own stores (commands that only read can still read it)",
                    m.uid()
                )));
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            oslab_files::paths::create_dir(dir)
                .map_err(|e| unusable(format!("cannot create {}: {e}", dir.display())))?;
        }
        // NOFOLLOW: a link put there after the check above is refused by SQLite itself.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| unusable(cannot_open(e.to_string())))?;
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
                reason: cannot_open(e.to_string()),
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
        // Before anything is written: a foreign trigger would fire on our own writes.
        refuse_foreign(&tx, &self.path)?;
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
                let args: Option<String> = r.get("args")?;
                Ok(TimelineEvent {
                    track: r.get("track")?,
                    kind: r.get::<_, String>("kind")?.into(),
                    start_ns: r.get("start_ns")?,
                    dur_ns: r.get("dur_ns")?,
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
        Ok(self.newest_runs(None)?.0)
    }

    /// The newest `limit` stored runs (every one when None), newest first, and how many the
    /// store holds: a listing costs what it shows (every run of 200,000 took 14 s and 585 MB).
    pub fn newest_runs(
        &self,
        limit: Option<usize>,
    ) -> Result<(Vec<RunSummary>, usize), StoreError> {
        let total: i64 = self
            .conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))?;
        let limit = limit.map_or(-1, |l| l.min(i64::MAX as usize) as i64);
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.started, r.status, r.hostname, r.command, r.wall_s,
                    (SELECT count(*) FROM measurements m WHERE m.run_id = r.id) AS measurements,
                    r.pid, r.boot_id
             FROM runs r ORDER BY r.id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit], |r| {
            Ok(RunSummary {
                id: r.get("id")?,
                started: r.get("started")?,
                status: status_seen(r)?,
                hostname: r.get("hostname")?,
                command: r.get("command")?,
                wall_s: r.get("wall_s")?,
                measurements: r.get("measurements")?,
                tags: BTreeMap::new(),
            })
        })?;
        let mut rows: Vec<RunSummary> = rows.collect::<Result<_, _>>()?;
        for r in &mut rows {
            r.tags = self.tags(r.id)?;
        }
        Ok((rows, total as usize))
    }

    /// The run this store began for `run` and never finished, its writer gone (same host,
    /// command and start; status running, its process dead): what a store that could not take
    /// a run's end keeps of it beside the file the run was kept in.
    pub fn partial_copy(&self, run: &RunRecord) -> Result<Option<i64>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, status, pid, boot_id FROM runs WHERE hostname = ?1 AND command = ?2 AND started = ?3 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![run.hostname, run.command, run.started], |r| {
            Ok((r.get::<_, i64>("id")?, status_seen(r)?))
        })?;
        for row in rows {
            let (id, status) = row?;
            if status == RunStatus::Crashed {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The runs tagged `key` = `value`, oldest first.
    pub fn tagged(&self, key: &str, value: &str) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT run_id FROM run_tags WHERE key = ?1 AND value = ?2 ORDER BY run_id")?;
        let ids = stmt.query_map([key, value], |r| r.get(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    }

    /// Records how each node a job listed ended (node, state, detail), replacing what an earlier
    /// collection of the job said of it; `submission` is empty for a job without one.
    pub fn record_job_nodes(
        &mut self,
        job: &str,
        submission: &str,
        nodes: &[(String, String, String)],
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        for (node, state, detail) in nodes {
            tx.execute(
                "INSERT OR REPLACE INTO job_nodes (job, submission, node, state, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
                [job, submission, node, state, detail],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The nodes a job listed and how each ended (node, state, detail), by node name.
    pub fn job_nodes(
        &self,
        job: &str,
        submission: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT node, state, detail FROM job_nodes WHERE job = ?1 AND submission = ?2 ORDER BY node",
        )?;
        let rows = stmt.query_map([job, submission], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The jobs (job, submission) that listed `node`, in the order recorded.
    pub fn node_jobs(&self, node: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT job, submission FROM job_nodes WHERE node = ?1 ORDER BY rowid")?;
        let rows = stmt.query_map([node], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Makes `runs` the only runs tagged `key` = `value` (a named set, such as a fleet's saved
    /// reference), in one transaction: the runs that had it before lose it, and a run's earlier
    /// value of `key` is replaced.
    pub fn retag(&mut self, key: &str, value: &str, runs: &[i64]) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute(
            "DELETE FROM run_tags WHERE key = ?1 AND value = ?2",
            [key, value],
        )?;
        for id in runs {
            tx.execute(
                "INSERT OR REPLACE INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                rusqlite::params![id, key, value],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The newest core-to-core and NUMA-matrix figures stored for a machine (its host name and
    /// `topology`, which a renamed or resized machine does not share), and the runs they are
    /// from in words ("core-to-core of run 12"): what `oslab bind --policy by-cost` places by.
    pub fn measured_costs(
        &self,
        host: &str,
        topology: &oslab_core::topology::Topology,
    ) -> Result<oslab_core::binding::Costs, StoreError> {
        use oslab_core::catalog::id;
        let here = serde_json::to_value(topology).ok();
        let mut costs = oslab_core::binding::Costs::default();
        for (probe, what) in [
            (id::C2C_LATENCY, "core-to-core"),
            (id::NUMA_MATRIX, "NUMA matrix"),
        ] {
            let mut stmt = self.conn.prepare(
                "SELECT r.id FROM runs r WHERE r.hostname = ?1 AND EXISTS
                   (SELECT 1 FROM measurements m WHERE m.run_id = r.id AND m.probe = ?2)
                 ORDER BY r.id DESC LIMIT 5",
            )?;
            let ids: Vec<i64> = stmt
                .query_map([host, probe], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for run in ids {
                let (record, ms) = self.load_run(&RunRef::Id(run))?;
                if record.fingerprint.get("topology") == here.as_ref() {
                    // An emulated cpu's timings are the emulator's, not the machine's: its
                    // costs would place ranks on noise.
                    if record.fingerprint["hypervisor"].as_str() == Some("QEMU (TCG)") {
                        costs.set_aside.push(format!(
                            "{what} of run {run}: measured on an emulated cpu (QEMU TCG), whose timings are the emulator's"
                        ));
                        break;
                    }
                    let found = oslab_core::binding::Costs::from_measurements(&ms);
                    costs.pairs.extend(found.pairs);
                    costs.memory.extend(found.memory);
                    costs.from.push(format!("{what} of run {run}"));
                    break;
                }
            }
        }
        Ok(costs)
    }

    /// The stored run that is `run` with `measurements`: the same host, command, start, end,
    /// machine and environment, and the same figures and samples (where the document has them:
    /// an export may leave them out). Importing a file twice, or a run exported from this store,
    /// finds it; an edited copy does not.
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
        // Compared one measurement at a time, samples included (a re-export whose samples
        // changed is another run); the document's measurements are never copied (a million of
        // them as JSON values once took gigabytes).
        let same = |stored: &Measurement, m: &Measurement| {
            let figures = |m: &Measurement, samples: bool| {
                let mut v = serde_json::to_value(m).ok();
                if let Some(o) = v
                    .as_mut()
                    .and_then(|v| v.as_object_mut())
                    .filter(|_| !samples)
                {
                    o.remove("samples");
                }
                v
            };
            let samples = m.samples.is_some();
            figures(stored, samples) == figures(m, samples)
        };
        for id in ids {
            let stored = self.record(id)?;
            if stored.fingerprint != run.fingerprint || stored.environment != run.environment {
                continue;
            }
            let (mut seen, mut alike) = (0, true);
            self.each_measurement(id, true, |m| {
                alike = measurements.get(seen).is_some_and(|d| same(&m, d));
                seen += 1;
                alike
            })?;
            if alike && seen == measurements.len() {
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
        let tags = stmt.query_map([run_id], |r| Ok((r.get("key")?, r.get("value")?)))?;
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
        let record = self.record(id)?;
        let mut ms = Vec::new();
        self.each_measurement(id, samples, |m| {
            ms.push(m);
            true
        })?;
        Ok((record, ms))
    }

    /// Run `id`'s record and tags.
    fn record(&self, id: i64) -> Result<RunRecord, StoreError> {
        let record = self.conn.query_row(
            "SELECT id, started, finished, status, oslab_version, git_rev, command, hostname, quick, wall_s, fingerprint, environment, pid, boot_id
             FROM runs WHERE id = ?1",
            [id],
            |r| {
                Ok(RunRecord {
                    id: Some(r.get("id")?),
                    started: r.get("started")?,
                    finished: r.get("finished")?,
                    status: status_seen(r)?,
                    oslab_version: r.get("oslab_version")?,
                    git_rev: r.get("git_rev")?,
                    command: r.get("command")?,
                    hostname: r.get("hostname")?,
                    quick: r.get("quick")?,
                    wall_s: r.get("wall_s")?,
                    fingerprint: parse_json(&r.get::<_, String>("fingerprint")?),
                    environment: parse_json(&r.get::<_, String>("environment")?),
                    tags: BTreeMap::new(),
                })
            },
        )?;
        Ok(RunRecord {
            tags: self.tags(id)?,
            ..record
        })
    }

    /// Hands each measurement of run `id`, in order, to `f` until it returns false: one in
    /// memory at a time (a run of a million measurements is not held to compare it).
    fn each_measurement(
        &self,
        id: i64,
        samples: bool,
        mut f: impl FnMut(Measurement) -> bool,
    ) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare(
            &format!("SELECT m.probe, m.params, m.metric, m.unit, m.n, m.min, m.p25, m.median, m.p75, m.max, m.mean, m.stddev,
                    m.ci_low, m.ci_high, m.outliers, m.cycles, m.batch, m.overhead, m.status, m.note, {} AS samples,
                    p.value AS p_value, p.model AS p_model, p.inputs AS p_inputs, m.difference, m.attempts, m.repetition, m.context,
                    p.kind AS p_kind, p.formula AS p_formula, p.sources AS p_sources, p.gap AS p_gap, m.no_model, m.p90, m.p99, m.p999
             FROM measurements m LEFT JOIN predictions p ON p.measurement_id = m.id
             WHERE m.run_id = ?1 ORDER BY m.seq",
            if samples { "m.samples" } else { "NULL" }),
        )?;
        for row in stmt.query_map([id], read_measurement)? {
            if !f(row?.map_err(StoreError::Damaged)?) {
                break;
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests;

/// A run's status as it stands now, from its row's `status`, `pid` and `boot_id`: a run still
/// marked running whose writer is gone is crashed.
fn status_seen(r: &rusqlite::Row) -> rusqlite::Result<RunStatus> {
    Ok(RunStatus::parse(&r.get::<_, String>("status")?).seen(
        r.get("pid")?,
        r.get::<_, Option<String>>("boot_id")?.as_deref(),
    ))
}
