//! Schema migrations, applied in order. Never edit a shipped migration: append a new one.

/// Each entry upgrades the schema by one version (index 0 creates version 1).
pub const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    started       TEXT NOT NULL,
    finished      TEXT NOT NULL,
    status        TEXT NOT NULL,
    oslab_version TEXT NOT NULL,
    git_rev       TEXT,
    command       TEXT NOT NULL,
    hostname      TEXT NOT NULL,
    quick         INTEGER NOT NULL,
    wall_s        REAL NOT NULL,
    fingerprint   TEXT NOT NULL,
    environment   TEXT NOT NULL
);
CREATE TABLE measurements (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    probe    TEXT NOT NULL,
    params   TEXT NOT NULL,
    metric   TEXT NOT NULL,
    unit     TEXT NOT NULL,
    n        INTEGER,
    min      REAL,
    p25      REAL,
    median   REAL,
    p75      REAL,
    max      REAL,
    mean     REAL,
    stddev   REAL,
    ci_low   REAL,
    ci_high  REAL,
    outliers INTEGER,
    cycles   REAL,
    batch    INTEGER,
    overhead REAL,
    status   TEXT NOT NULL,
    note     TEXT,
    samples  BLOB
);
CREATE INDEX measurements_by_run ON measurements(run_id, seq);
CREATE INDEX measurements_by_probe ON measurements(probe, metric);
CREATE TABLE predictions (
    measurement_id INTEGER PRIMARY KEY REFERENCES measurements(id) ON DELETE CASCADE,
    value          REAL NOT NULL,
    model          TEXT NOT NULL,
    inputs         TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE timeline (
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    track    TEXT NOT NULL,
    kind     TEXT NOT NULL,
    start_ns REAL NOT NULL,
    dur_ns   REAL NOT NULL,
    args     TEXT
);
CREATE INDEX timeline_by_run ON timeline(run_id, seq);
"#,
    // Labels on runs, e.g. the Slurm job and node a fleet run came from.
    r#"
CREATE TABLE run_tags (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE INDEX run_tags_by_value ON run_tags(key, value);
"#,
    // Runs are written as they go: a run being measured is `running`, with the process and boot
    // that write it, so a reader can tell a run in progress from one whose writer died.
    // Measurements say whether they are paired differences and how many attempts they took.
    r#"
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN boot_id TEXT;
ALTER TABLE measurements ADD COLUMN difference INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
"#,
    // Runs repeat probes (`--repeat`): each measurement says which repetition it is. What was
    // found while measuring is kept apart from the parameters that identify a measurement.
    r#"
ALTER TABLE measurements ADD COLUMN repetition INTEGER NOT NULL DEFAULT 1;
ALTER TABLE measurements ADD COLUMN context TEXT;
"#,
    // Predictions say what they rest on (specs, or other measurements composed), the formula
    // with its inputs, where each input came from and, far off, the likely reason; a measurement
    // without one says which input was missing.
    r#"
ALTER TABLE predictions ADD COLUMN kind TEXT NOT NULL DEFAULT 'spec';
ALTER TABLE predictions ADD COLUMN formula TEXT NOT NULL DEFAULT '';
ALTER TABLE predictions ADD COLUMN sources TEXT;
ALTER TABLE predictions ADD COLUMN gap TEXT;
ALTER TABLE measurements ADD COLUMN no_model TEXT;
"#,
    // The tail of the samples: 90th, 99th and 99.9th percentiles.
    r#"
ALTER TABLE measurements ADD COLUMN p90 REAL;
ALTER TABLE measurements ADD COLUMN p99 REAL;
ALTER TABLE measurements ADD COLUMN p999 REAL;
"#,
    // The nodes a job listed and how each ended (ok, partial, crashed, failed, missing, with
    // what its files said), as collected: a node that handed in nothing has no run to carry it.
    r#"
CREATE TABLE job_nodes (
    job        TEXT NOT NULL,
    submission TEXT NOT NULL,
    node       TEXT NOT NULL,
    state      TEXT NOT NULL,
    detail     TEXT NOT NULL,
    PRIMARY KEY (job, submission, node)
);
CREATE INDEX job_nodes_by_node ON job_nodes(node);
"#,
];

/// The schema version this build writes.
pub fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Every schema object (type, name) some version of the store has had: the migrations applied
/// one by one to an empty database in memory. SQLite's own (`sqlite_*`) are not listed.
pub fn known_objects() -> &'static std::collections::BTreeSet<(String, String)> {
    static KNOWN: std::sync::OnceLock<std::collections::BTreeSet<(String, String)>> =
        std::sync::OnceLock::new();
    KNOWN.get_or_init(|| {
        let conn = rusqlite::Connection::open_in_memory().expect("an in-memory database");
        let mut known = objects(&conn).expect("reading a new database's schema");
        conn.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            .expect("the version table");
        for sql in MIGRATIONS {
            conn.execute_batch(sql)
                .expect("a shipped migration applies");
            known.extend(objects(&conn).expect("reading the schema"));
        }
        known
    })
}

/// The schema objects (type, name) of a database, SQLite's own left out.
pub fn objects(
    conn: &rusqlite::Connection,
) -> rusqlite::Result<std::collections::BTreeSet<(String, String)>> {
    conn.prepare(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )?
    .query_map([], |r| Ok((r.get("type")?, r.get("name")?)))?
    .collect()
}

/// The schema objects of `conn` no version of the store created (a trigger, a view, a table of
/// another program), named for a message; empty when there are none.
pub fn foreign_objects(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    let known = known_objects();
    Ok(objects(conn)?
        .into_iter()
        .filter(|o| !known.contains(o))
        .map(|(kind, name)| format!("{kind} {name:?}"))
        .collect())
}
