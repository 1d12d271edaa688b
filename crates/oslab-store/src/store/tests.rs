//! The store on real SQLite files: opening, locking, migrating, writing, reading, refusing.

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
    assert!(oslab_files::processes::alive(std::process::id() as i64));
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

#[test]
fn a_store_with_triggers_or_views_it_did_not_create_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (name, sql) in [
        (
            "trigger",
            "CREATE TRIGGER eat AFTER INSERT ON runs BEGIN DELETE FROM runs; END",
        ),
        ("view", "CREATE VIEW v AS SELECT id FROM runs"),
        ("table", "CREATE TABLE extra (x)"),
    ] {
        let path = dir.path().join(format!("{name}.db"));
        drop(Store::open(&path).unwrap());
        Connection::open(&path).unwrap().execute_batch(sql).unwrap();
        let before = std::fs::read(&path).unwrap();
        let err = Store::open(&path).err().unwrap();
        assert!(matches!(err, StoreError::ForeignObjects { .. }), "{err}");
        assert!(err.to_string().contains(name), "{err}");
        let err = Store::open_read_only(&path).err().unwrap();
        assert!(matches!(err, StoreError::ForeignObjects { .. }), "{err}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{name}: the store was written"
        );
    }
    // What oslab created itself is its own, at every version.
    let path = dir.path().join("own.db");
    drop(Store::open(&path).unwrap());
    assert!(Store::open(&path).is_ok() && Store::open_read_only(&path).is_ok());
}

#[test]
fn a_store_whose_schema_was_edited_is_said_in_one_line_without_its_sql() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edited.db");
    drop(Store::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "PRAGMA writable_schema=ON; \
             UPDATE sqlite_master SET sql='CREATE TABLE runs (id INTEGER PRIMARY KEY)' WHERE name='runs';",
        )
        .unwrap();
    let err = Store::open_read_only(&path).unwrap().runs().err().unwrap();
    let text = err.to_string();
    assert!(
        text.contains("no such column") && text.contains("schema is not what"),
        "{text}"
    );
    assert!(!text.contains("SELECT") && !text.contains('\n'), "{text}");
    // Said once: not again as a source.
    assert!(std::error::Error::source(&err).is_none(), "{err:?}");
}

#[test]
fn a_listing_reads_only_the_newest_runs_it_shows() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("s.db")).unwrap();
    for _ in 0..5 {
        s.save_run(&record(), &[], &[]).unwrap();
    }
    let (newest, total) = s.newest_runs(Some(2)).unwrap();
    assert_eq!(total, 5);
    assert_eq!(newest.iter().map(|r| r.id).collect::<Vec<_>>(), [5, 4]);
    assert_eq!(s.newest_runs(None).unwrap().0.len(), 5);
    let (none, total) = s.newest_runs(Some(0)).unwrap();
    assert!(none.is_empty() && total == 5);
}

#[test]
fn importing_a_kept_run_completes_the_partial_copy_the_store_kept() {
    // A full disk: the run began in the store, its end could not be written, and it was kept
    // in a file. Importing the file (space freed) made a second run beside the partial one.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&record()).unwrap();
    s.append(id, &[measured()], 0.1).unwrap();
    // Its writer is gone (a pid that cannot be a live process of ours).
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE runs SET pid = 999999999 WHERE id = ?1", [id])
        .unwrap();
    let kept = crate::exchange::RunDocument::new(
        RunRecord {
            id: None,
            ..record()
        },
        vec![measured(), measured()],
        vec![],
    );
    let file = dir.path().join("kept.json");
    std::fs::write(&file, serde_json::to_string(&kept).unwrap()).unwrap();
    let done = crate::exchange::import(&mut s, &[file]).unwrap();
    assert!(done[0].completed && done[0].run == id, "{}", done[0]);
    let runs = s.runs().unwrap();
    assert_eq!(runs.len(), 1, "a duplicate beside the partial run");
    assert_eq!(runs[0].measurements, 2);
    assert_eq!(runs[0].status, crate::run::RunStatus::Complete);
}
