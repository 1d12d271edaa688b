//! What a person sees on a real terminal: oslab's output read through a pseudo-terminal at 40,
//! 80, 120 and 200 columns, colour on and off. Piped tests miss what only a terminal shows
//! (colours, the terminal's own width).

mod common;

use common::{oslab, stdout, temp_db};
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

/// What `oslab ARGS` writes to a terminal `columns` wide (carriage returns removed), with
/// colour unless `no_color`. `COLUMNS` is unset: the width is the terminal's.
fn on_terminal(columns: u16, no_color: bool, args: &[&str]) -> String {
    let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
    on_terminal_with(columns, env, false, args)
}

/// [`on_terminal`] with `env` set, and stderr on the terminal too when `stderr`.
fn on_terminal_with(columns: u16, env: &[(&str, &str)], stderr: bool, args: &[&str]) -> String {
    let (mut master, slave) = {
        let (mut m, mut s) = (0, 0);
        let size = libc::winsize {
            ws_row: 50,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills two descriptors we then own.
        let rc = unsafe {
            libc::openpty(
                &mut m,
                &mut s,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both are open and ours alone.
        unsafe { (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s)) }
    };
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("oslab"));
    cmd.args(args)
        .env_remove("COLUMNS")
        .env_remove("NO_COLOR")
        // Read as printed: no pager waiting for keys (a test that wants one sets PAGER).
        .env("PAGER", "cat")
        .stdin(std::process::Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .envs(env.iter().copied());
    if stderr {
        cmd.stderr(slave.try_clone().unwrap());
    } else {
        cmd.stderr(std::process::Stdio::null());
    }
    let mut child = cmd.spawn().unwrap();
    // The terminal ends (EIO) only when no one else holds its other side: the command keeps
    // its copy until dropped.
    drop(cmd);
    drop(slave);
    // Read while it writes (a full terminal buffer would stop it); EIO once it has closed.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        out
    });
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    assert!(
        status.success(),
        "oslab {args:?} at {columns} columns: {status}"
    );
    String::from_utf8(out).unwrap().replace('\r', "")
}

/// The colours oslab writes (a status word's), removed; what is left is what a person reads.
fn seen(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('\u{1b}') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find('m').expect("an escape sequence ends with m");
        let sequence = &tail[..=end];
        assert!(
            sequence == "\u{1b}[39m"
                || sequence
                    .strip_prefix("\u{1b}[38;5;")
                    .and_then(|s| s.strip_suffix('m'))
                    .is_some_and(|n| n.parse::<u8>().is_ok()),
            "an escape sequence that is not one of oslab's colours: {sequence:?}"
        );
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The words of `text` (table rules left out).
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split_whitespace()
        .filter(|w| !w.starts_with('─'))
        .map(str::to_string)
        .collect()
}

/// A store with a measured run and a copy of it whose rows are noisy, failed and skipped, as a
/// busy machine's would be (imported: every status is there, whatever this machine does).
fn store() -> (tempfile::TempDir, String) {
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap().to_string();
    oslab()
        .args([
            "run",
            "--quick",
            "timer",
            "syscall.getppid",
            "switch.thread.futex",
        ])
        .args(["faults.anon", "memory.latency.pages", "--db", &db])
        .assert()
        .success();
    let doc = stdout(&["export", "1", "--db", &db]);
    let mut doc: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    doc["run"]["tags"] = serde_json::json!({"host": "busy"});
    for (i, m) in doc["measurements"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let (status, reason) = match i % 4 {
            0 => ("noisy", "contention"),
            1 => ("noisy", "spread"),
            _ => continue,
        };
        m["status"] = status.into();
        m["reason"] = reason.into();
    }
    let file = dir.path().join("busy.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    oslab()
        .args(["import", file.to_str().unwrap(), "--db", &db])
        .assert()
        .success();
    // Fleet job 5: three nodes, the third 30% slower.
    for (node, k) in [("n1", 1.0), ("n2", 1.01), ("n3", 1.3)] {
        let mut d = oslab_testkit::scaled_run(&doc, node, |_| k);
        d["run"]["tags"] = serde_json::json!({"fleet.job": "5", "fleet.node": node});
        let file = dir.path().join(format!("{node}.json"));
        std::fs::write(&file, d.to_string()).unwrap();
        oslab()
            .args(["import", file.to_str().unwrap(), "--db", &db])
            .assert()
            .success();
    }
    (dir, db)
}

#[test]
fn a_terminal_of_any_width_shows_colours_never_their_codes_and_splits_no_word() {
    let (_dir, db) = store();
    let views: [&[&str]; 6] = [
        &[
            "run",
            "--quick",
            "timer.rdtsc",
            "syscall.getppid",
            "switch.thread.futex",
        ],
        &["show", "2"],
        &["show", "2", "--details"],
        &["compare", "1", "2", "--all"],
        &["runs"],
        &["fleet", "summary", "5"],
    ];
    for args in views {
        let args: Vec<&str> = args.iter().copied().chain(["--db", &db]).collect();
        let wide = seen(&on_terminal(200, false, &[&args[..], &["--wide"]].concat()));
        let mut known = words(&wide);
        // The headers of the layouts narrow terminals get.
        known.extend(["measurement".to_string(), "A,".to_string()]);
        for columns in [40u16, 80, 120, 200] {
            for no_color in [false, true] {
                let raw = on_terminal(columns, no_color, &args);
                let text = seen(&raw);
                let what = format!("oslab {args:?} at {columns} columns, NO_COLOR {no_color}");
                assert!(
                    !text.contains("\\u{1b}"),
                    "{what}: an escaped colour\n{text}"
                );
                if no_color {
                    assert!(!raw.contains('\u{1b}'), "{what}: colour despite NO_COLOR");
                }
                // Below 80 columns a table stacks its cells in one column, uncoloured.
                if columns < 80 {
                    continue;
                }
                // The imported run's noisy rows are coloured (a run measured here may have none).
                if !no_color && args[0] == "show" {
                    assert!(
                        raw.contains('\u{1b}'),
                        "{what}: no colour on a terminal\n{raw}"
                    );
                }
                for line in text.lines() {
                    assert!(
                        line.chars().count() <= columns as usize,
                        "{what}: a line wider than the terminal: {line:?}\n{text}"
                    );
                    assert!(
                        !line.ends_with(' '),
                        "{what}: a line ending in spaces (a coloured cell's padding?): {line:?}"
                    );
                    // A table's status cell wrapped onto a line of its own sits far right; a
                    // sentence of prose may end with the word on its continuation line.
                    let alone = line.trim();
                    let indent = line.len() - line.trim_start().len();
                    assert!(
                        indent <= 4 || !["noisy", "failed", "skipped", "ok"].contains(&alone),
                        "{what}: a status alone on a line\n{text}"
                    );
                }
                // Text wraps between words: every word is one the widest rendering has (a
                // run measures anew each time: its `show` stands for it).
                if args[0] == "run" {
                    continue;
                }
                let split: Vec<String> = words(&text)
                    .difference(&known)
                    .filter(|w| !w.ends_with('…'))
                    .cloned()
                    .collect();
                assert!(split.is_empty(), "{what}: words split {split:?}\n{text}");
            }
        }
    }
}

#[test]
fn outside_text_on_a_terminal_is_shown_never_obeyed() {
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    oslab()
        .args(["run", "--quick", "timer.rdtsc", "--db", db])
        .assert()
        .success();
    let doc = stdout(&["export", "1", "--db", db]);
    let mut doc: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    doc["run"]["hostname"] = "far\u{1b}]0;owned\u{7}\u{1b}[38;5;9maway\nforged: a line".into();
    doc["run"]["tags"] = serde_json::json!({"k": "\u{1b}[2Jcleared"});
    doc["measurements"][0]["status"] = "noisy".into();
    doc["measurements"][0]["reason"] = "spread\u{1b}[1A".into();
    let file = dir.path().join("hostile.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    oslab()
        .args(["import", file.to_str().unwrap(), "--db", db])
        .assert()
        .success();
    for args in [
        &["show", "2", "--details"][..],
        &["runs"][..],
        &["show", "2"][..],
    ] {
        let args: Vec<&str> = args.iter().copied().chain(["--db", db]).collect();
        // `seen` fails on any escape sequence but oslab's own colours.
        let text = seen(&on_terminal(120, false, &args));
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?}: {text:?}"
        );
        if args[0] == "show" {
            assert!(text.contains("far\\u{1b}]0;owned"), "{args:?}: {text}");
        }
        // A line break in a field is shown, not obeyed: no line of its own.
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("forged")),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn at_80_columns_each_headline_figure_keeps_its_trust_beside_it() {
    let (_dir, db) = store();
    let text = seen(&on_terminal(80, true, &["show", "2", "--db", &db]));
    let headline: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("headline"))
        .skip(3)
        .take_while(|l| l.starts_with(' '))
        .collect();
    assert!(headline.len() >= 2, "{text}");
    // A row is a row: every line that holds a figure ends with the word that says whether to
    // trust it (a stacked layout put it four lines below).
    let trust = ["ok", "noisy", "tight", "failed", "skipped"];
    let figures: Vec<&&str> = headline
        .iter()
        .filter(|l| {
            l.split_whitespace()
                .any(|w| ["ns", "µs", "ms", "GB/s"].contains(&w))
        })
        .collect();
    assert!(!figures.is_empty(), "{text}");
    for l in figures {
        let last = l.split_whitespace().last().unwrap_or("");
        assert!(
            trust.contains(&last),
            "no trust word beside the figure: {l:?}\n{text}"
        );
    }
}

/// A short run on a terminal of `columns` of kind `term`, stderr (its progress bar) on it too.
fn quick_run_on(columns: u16, term: &str, db: &str) -> String {
    on_terminal_with(
        columns,
        &[("TERM", term)],
        true,
        &[
            "run",
            "--quick",
            "timer.rdtsc",
            "syscall.getppid",
            "--no-pager",
            "--db",
            db,
        ],
    )
}

#[test]
fn a_terminal_without_cursor_or_colour_codes_gets_none() {
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // The progress bar (stderr) and the tables' colours (stdout), both on the terminal.
    let text = quick_run_on(100, "dumb", db);
    assert!(
        text.contains("headline") || text.contains("timer.rdtsc"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

#[test]
fn a_terminal_that_reports_no_size_is_taken_as_80_columns() {
    // A pty opened with no size (`script` from a process without a terminal) reads 0 x 0: `show`
    // laid every word on a line of its own there (4,189 lines for a 122-line run).
    let (_dir, db) = store();
    let text = seen(&on_terminal(0, true, &["show", "1", "--db", &db]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{text}");
    assert!(
        lines.iter().any(|l| l.chars().count() > 60),
        "laid out narrower than 80 columns:\n{text}"
    );
}

#[test]
fn the_progress_bar_and_the_last_line_fit_a_narrow_terminal() {
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    // Stderr on a 50-column terminal: the bar redrawn in place (each redraw after a carriage
    // return or a cursor code) and the closing line with the store's path (100 columns once).
    let text = quick_run_on(50, "xterm", db);
    // What is drawn on one line: text between line ends, carriage returns and cursor codes
    // (a colour code is part of its line).
    let mut drawn = vec![String::new()];
    let mut rest = text.as_str();
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '\n' | '\r' => drawn.push(String::new()),
            '\u{1b}' => {
                let end = rest
                    .find(|c: char| c.is_ascii_alphabetic())
                    .map_or(rest.len(), |e| e + 1);
                if !rest[..end].ends_with('m') {
                    drawn.push(String::new());
                }
                rest = &rest[end..];
            }
            c => drawn.last_mut().unwrap().push(c),
        }
    }
    assert!(
        drawn.iter().any(|l| l.contains("left")),
        "no bar drawn: {text:?}"
    );
    assert!(drawn.iter().any(|l| l.contains("stored as")), "{text:?}");
    for l in &drawn {
        assert!(l.chars().count() <= 50, "wider than the terminal: {l:?}");
    }
}

#[test]
fn long_output_on_a_terminal_goes_through_the_pager_unless_asked_not_to() {
    let (dir, db) = temp_db();
    let db = db.to_str().unwrap();
    stdout(&["run", "--quick", "timer.rdtsc", "--db", db]);
    let paged = dir.path().join("paged");
    let pager = format!("cat > {}", paged.display());
    let env = [("PAGER", pager.as_str())];
    let seen_here = on_terminal_with(80, &env, false, &["show", "latest", "--db", db]);
    let through = std::fs::read_to_string(&paged).unwrap();
    assert!(through.contains("timer.rdtsc"), "{through}");
    assert!(!seen_here.contains("timer.rdtsc"), "{seen_here}");
    std::fs::remove_file(&paged).unwrap();
    let seen_here = on_terminal_with(
        80,
        &env,
        false,
        &["show", "latest", "--no-pager", "--db", db],
    );
    assert!(
        seen_here.contains("timer.rdtsc") && !paged.exists(),
        "{seen_here}"
    );
    // Into a pipe, never a pager.
    let piped = oslab()
        .args(["show", "latest", "--db", db])
        .env("PAGER", &pager)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&piped.stdout).contains("timer.rdtsc") && !paged.exists());
}
