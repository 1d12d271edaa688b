//! `oslab shuffle simulate`: the shuffling study on a simulated four-socket machine, end to end
//! (tables, the stored run, bad input).

mod common;

use common::{fails, oslab, temp_db};

#[test]
fn a_simulated_four_socket_machine_shows_where_shuffling_pays() {
    let (_dir, db) = temp_db();
    let db_arg = db.to_str().unwrap();
    let out = oslab()
        .args([
            "shuffle",
            "simulate",
            "--runs",
            "2",
            "--iterations",
            "3000",
            "--sweep",
            "50ms,200ms",
            "--db",
            db_arg,
        ])
        .env("COLUMNS", "80")
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    for said in [
        "4 sockets x 8 cores, 32 threads on 4 locks",
        "waits",
        "lock hand-offs that crossed sockets",
        "the monitoring interval, workload high",
        "50 ms",
    ] {
        assert!(text.contains(said), "{said:?} missing:\n{text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // A simulation says nothing about this machine's noise.
    assert!(!text.contains("environment warnings"), "{text}");

    let conn = rusqlite::Connection::open(&db).unwrap();
    let value = |workload: &str, mode: &str, metric: &str| -> f64 {
        conn.query_row(
            "SELECT median FROM measurements WHERE probe = 'shuffle-sim' AND metric = ?3
             AND json_extract(params, '$.workload') = ?1 AND json_extract(params, '$.part') = 'workload'
             AND coalesce(json_extract(params, '$.mode'), '') = ?2",
            [workload, mode, metric],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("{workload} {mode} {metric}: {e}"))
    };
    // Without contention the daemon never acts; with it, hand-offs become local.
    assert_eq!(value("none", "shuffle", "shuffles"), 0.0);
    assert_eq!(value("none", "", "change"), 0.0);
    assert!(value("medium", "shuffle", "shuffles") >= 1.0);
    assert!(
        value("medium", "shuffle", "remote_share")
            < value("medium", "monitor-only", "remote_share")
    );
    let status: String = conn
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "complete");
    // The report charts the study: with / without by contention and by interval.
    let page = db.with_file_name("report.html");
    oslab()
        .args([
            "report",
            "latest",
            "-o",
            page.to_str().unwrap(),
            "--db",
            db_arg,
        ])
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    for title in [
        "time with shuffling / without, by lock contention",
        "time with shuffling / without, by monitoring interval",
    ] {
        assert!(html.contains(title), "{title:?} missing");
    }
}

#[test]
fn bad_simulation_settings_are_refused_before_anything_runs() {
    let (_dir, db) = temp_db();
    let db_arg = db.to_str().unwrap();
    let err = fails(
        &["shuffle", "simulate", "--sockets", "0", "--db", db_arg],
        2,
    );
    assert!(err.contains("--sockets"), "{err}");
    let err = fails(
        &[
            "shuffle",
            "simulate",
            "--line-remote",
            "fast",
            "--db",
            db_arg,
        ],
        2,
    );
    assert!(err.contains("--line-remote"), "{err}");
    // A live watch still needs a process or a command.
    let err = fails(&["shuffle", "--db", db_arg], 2);
    assert!(err.contains("--pid"), "{err}");
    assert!(!db.exists(), "nothing was stored");
}
