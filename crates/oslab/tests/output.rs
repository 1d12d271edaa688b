//! What people read: tables that fit the terminal, sizes humanized, a headline first, shell
//! completions and a manual page, no jargon from the design documents in the help.

mod common;

use common::{oslab, temp_db};

/// What `oslab ARGS` prints on a terminal `columns` wide.
fn text_at(columns: &str, args: &[&str]) -> String {
    let out = oslab()
        .env("COLUMNS", columns)
        .args(args)
        .assert()
        .success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn a_binary_at_a_long_path_still_fits_80_columns() {
    // From a clone at /tmp/tmp.XXXXXXXXXX/x/oslab/tests/oslab the run line printed the
    // binary's path as one word wider than the terminal.
    let dir = tempfile::tempdir().unwrap();
    let deep = dir
        .path()
        .join("a-rather-long-directory-name/x/oslab/tests/oslab/target/release");
    std::fs::create_dir_all(&deep).unwrap();
    let bin = deep.join("oslab");
    std::fs::copy(assert_cmd::cargo::cargo_bin("oslab"), &bin).unwrap();
    assert!(bin.as_os_str().len() > 80);
    let out = std::process::Command::new(&bin)
        .args(["run", "--quick", "timer.rdtsc", "--db"])
        .arg(dir.path().join("o.db"))
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty(), "{wide:?}");
    assert!(text.contains("oslab run --quick timer.rdtsc"), "{text}");
}

#[test]
fn a_run_fits_120_and_80_column_terminals_with_sizes_humanized_and_a_headline() {
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let text = text_at(
        "120",
        &[
            "run",
            "--quick",
            "timer",
            "syscall.getppid",
            "memory.latency.pages",
            "faults.anon",
            "switch.thread.pipe",
            "--details",
            "--db",
            db,
        ],
    );
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 120, "a line of {widest} characters:\n{text}");
    assert!(
        text.contains("headline") && text.contains("system call (getppid)"),
        "{text}"
    );
    // Colour is for terminals: none in a pipe.
    assert!(!text.contains('\x1b'), "escape codes in a pipe");
    // Sizes read as sizes, never as raw byte counts.
    assert!(text.contains("MiB"), "{text}");
    let raw = regex_free_raw_bytes(&text);
    assert!(raw.is_empty(), "raw byte counts: {raw:?}");
    // An 80-column terminal gets a compact layout, not columns squeezed a letter wide: the
    // headline drops the spread (the details keep it), parameters go under the probe.
    let narrow = text_at("80", &["show", "latest", "--details", "--db", db]);
    assert!(
        narrow.contains("system call (getppid)") && narrow.contains("  cache=hot"),
        "{narrow}"
    );
    // The comparison too (the run against itself).
    let compared = text_at("80", &["compare", "1", "1", "--all", "--db", db]);
    assert!(compared.contains("  cache=hot"), "{compared}");
    for text in [&narrow, &compared] {
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 80, "a line of {widest} characters:\n{text}");
        let crumbs: Vec<&str> = text.lines().filter(|l| broken_cell(l)).collect();
        assert!(crumbs.is_empty(), "cells broken a letter a line:\n{text}");
    }
    // Narrower still (60 and 50 columns): the run and the comparison stack their columns (the
    // headline too), the list of runs keeps one line a run (the command shortened, or left out
    // where too little room is left).
    for (columns, args) in [
        ("60", vec!["show", "latest", "--details", "--db", db]),
        ("50", vec!["show", "latest", "--details", "--db", db]),
        ("80", vec!["show", "latest", "--db", db]),
        ("50", vec!["show", "latest", "--db", db]),
        ("50", vec!["compare", "1", "1", "--all", "--db", db]),
        ("60", vec!["runs", "--db", db]),
        ("80", vec!["runs", "--db", db]),
    ] {
        let text = text_at(columns, &args);
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(
            widest <= columns.parse().unwrap(),
            "a line of {widest} characters:\n{text}"
        );
        if args[0] == "runs" {
            assert_eq!(text.lines().count(), 3, "one line a run:\n{text}");
        }
        let crumbs = text.lines().filter(|l| broken_cell(l)).count();
        assert_eq!(crumbs, 0, "cells broken a letter a line:\n{text}");
    }
    // As wide as its content with --wide: every column, longer lines.
    let wide = text_at(
        "120",
        &["show", "latest", "--details", "--wide", "--db", db],
    );
    assert!(
        wide.contains("TSC ticks") && wide.contains("outliers"),
        "{wide}"
    );
}

#[test]
fn the_first_view_of_the_whole_suite_fits_about_120_lines_with_the_headline_first() {
    let (_dir, db) = temp_db();
    let db = db.to_str().unwrap();
    let started = std::time::Instant::now();
    let out = oslab()
        .env("COLUMNS", "120")
        .args(["run", "--quick", "--db", db])
        .assert()
        .success();
    let took = started.elapsed();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let said = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    // Without a terminal, a progress line every 10 s keeps a CI log from going silent.
    // Its estimate of the time left comes from this run's pace against the plan: of the order
    // of the whole run (it was 'about 2m left' three seconds into a 20-second run).
    if took > std::time::Duration::from_secs(12) {
        assert!(said.contains("progress: probe "), "{took:?}: {said}");
        for line in said.lines().filter(|l| l.starts_with("progress: ")) {
            let left = line.split("about ").nth(1).unwrap_or_default();
            let left = left
                .strip_suffix(" left")
                .unwrap_or_else(|| panic!("{line}"));
            let seconds: f64 = match left.split_once("m ") {
                Some((m, s)) => {
                    m.parse::<f64>().unwrap() * 60.0
                        + s.trim_end_matches('s').parse::<f64>().unwrap()
                }
                None => left.trim_end_matches(" s").parse().unwrap(),
            };
            assert!(
                seconds <= 2.0 * took.as_secs_f64() + 10.0,
                "{took:?}: {line}"
            );
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 125, "{} lines:\n{text}", lines.len());
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 120, "a line of {widest} characters:\n{text}");
    let headline = lines.iter().position(|l| l.starts_with("headline"));
    assert!(headline.is_some_and(|h| h < 8), "{text}");
    // A line per probe, what to distrust by cause, the model in a line.
    assert!(
        text.contains("bandwidth.threads") && text.contains("model: "),
        "{text}"
    );
    // Every row is one flag away.
    let details = text_at("120", &["show", "latest", "--details", "--db", db]);
    assert!(details.lines().count() > 3 * lines.len(), "{details}");
}

/// A line holding one letter of a word broken a letter a line (a lone `-` is an empty cell: a
/// comparison's side with no value, e.g. every repetition measured on a slowed core).
fn broken_cell(line: &str) -> bool {
    let t = line.trim();
    t.chars().count() == 1 && t != "-"
}

/// `size=`, `bytes=` and the like followed by a bare number.
fn regex_free_raw_bytes(text: &str) -> Vec<String> {
    text.split_whitespace()
        .filter(|w| {
            ["size=", "bytes=", "stride="].iter().any(|k| {
                w.split_once(k)
                    .is_some_and(|(_, v)| v.parse::<u64>().is_ok_and(|n| n >= 1024))
            })
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn completions_and_the_manual_page_are_generated_and_help_speaks_plainly() {
    for shell in ["bash", "zsh", "fish"] {
        let out = oslab()
            .args(["completions", shell])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let script = String::from_utf8(out).unwrap();
        assert!(
            script.contains("oslab") && script.contains("compare"),
            "{shell}: {script}"
        );
        // `oslab run sys<TAB>` offers the probe ids (bash and zsh list them).
        if shell != "fish" {
            assert!(script.contains("syscall.getppid"), "{shell}");
        }
    }
    // Completion lists ids; the command line still takes globs and families.
    oslab()
        .args([
            "run",
            "syscall.*",
            "switch",
            "--plan",
            "--db",
            "/dev/shm/oslab-plan-only.db",
        ])
        .assert()
        .success();
    let man = oslab()
        .arg("man")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let man = String::from_utf8(man).unwrap();
    assert!(
        man.contains(".TH oslab 1") && man.contains("compare"),
        "{man}"
    );
    oslab().args(["completions", "tcsh"]).assert().code(2);
    // No subcommand's help speaks of "seeds" (the design documents a user never sees).
    let help = String::from_utf8(
        oslab()
            .arg("--help")
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    let commands: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(commands.len() > 10, "{help}");
    // Every command, and every subcommand of one (`cpuman simulate`, `fleet submit`, ...).
    // Each wrapped to an 80-column terminal: not a line wider (run --help had one of 386).
    let help_of = |words: &[&str]| {
        let out = oslab()
            .args(words)
            .arg("--help")
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(
            wide.is_empty(),
            "oslab {words:?} --help at 80 columns: {wide:?}"
        );
        text
    };
    let subcommands = |help: &str| -> Vec<String> {
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|c| c != "help")
            .collect()
    };
    let mut checked = 0;
    for c in commands.iter().chain(std::iter::once(&String::new())) {
        let words: Vec<&str> = [c.as_str()].into_iter().filter(|w| !w.is_empty()).collect();
        let text = help_of(&words);
        assert!(
            !text.to_lowercase().contains("seed"),
            "oslab {c} --help: {text}"
        );
        checked += 1;
        if c.is_empty() {
            continue;
        }
        for sub in subcommands(&text) {
            let text = help_of(&[c.as_str(), sub.as_str()]).to_lowercase();
            assert!(!text.contains("seed"), "oslab {c} {sub} --help: {text}");
            checked += 1;
        }
    }
    assert!(
        checked > commands.len() + 5,
        "only {checked} help texts read"
    );
}

/// Only the CLI prints (docs/ARCHITECTURE.md): the libraries return data, and what they must
/// say while working goes through `oslab_core::notices`. Their sources, tests aside, hold no
/// print.
#[test]
fn no_library_prints() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let (mut found, mut scanned) = (Vec::new(), 0);
    let mut stack = vec![crates.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.to_string_lossy().to_string();
            // Judged by the path inside the workspace's crates, never by where the checkout
            // lives (a clone at /tmp/x/oslab/tests/oslab skipped every crate).
            let inside = path.strip_prefix(&crates).unwrap();
            let crate_name = inside.components().next().unwrap().as_os_str();
            if path.is_dir() {
                // The CLI prints; tests and the test kit may.
                let printing = ["oslab", "oslab-testkit"].iter().any(|c| crate_name == *c)
                    || ["tests", "target"].iter().any(|d| entry.file_name() == *d);
                if !printing {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                scanned += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                for (i, line) in code.lines().enumerate() {
                    let line = line.trim_start();
                    let printing = ["println!(", "eprintln!(", "print!(", "eprint!("]
                        .iter()
                        .any(|p| line.starts_with(p) || line.contains(&format!(" {p}")));
                    if printing && !line.starts_with("//") {
                        found.push(format!("{name}:{}", i + 1));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "libraries that print: {found:?}");
    assert!(scanned > 50, "only {scanned} library files read");
}
