//! Helpers shared by the CLI test files: running the real binary.
#![allow(dead_code)] // each test file uses its own subset

use assert_cmd::Command;
use std::path::PathBuf;

/// The oslab binary built for these tests.
pub fn oslab() -> Command {
    Command::cargo_bin("oslab").expect("binary built")
}

/// A fresh directory and a store path inside it.
pub fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("oslab.db");
    (dir, db)
}

/// Runs oslab with `args`, expects success, returns stdout.
pub fn stdout(args: &[&str]) -> Vec<u8> {
    oslab()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// Runs oslab with `args`, expects exit code `code`, returns stderr.
pub fn fails(args: &[&str], code: i32) -> String {
    let out = oslab().args(args).assert().code(code).get_output().clone();
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Runs oslab with `args` and `XDG_STATE_HOME` at `state` (where a killed oslab left its record
/// of what to restore), expects success, returns stderr: what the next oslab put back.
pub fn restoring(state: &std::path::Path, args: &[&str]) -> String {
    let out = oslab()
        .args(args)
        .env("XDG_STATE_HOME", state)
        .assert()
        .success()
        .get_output()
        .clone();
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Whether user nobody can reach the built oslab (every directory above it lets others
/// through): from a clone in a directory of mode 0700 it cannot, and a test that runs oslab as
/// nobody is then skipped, saying why, rather than failed with "Permission denied".
pub fn nobody_can_run_oslab() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let bin = assert_cmd::cargo::cargo_bin("oslab");
    let closed = bin
        .ancestors()
        .skip(1)
        .find(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 == 0));
    match closed {
        Some(d) => {
            oslab_testkit::skip(&format!(
                "user nobody cannot reach {} ({} lets others no further): clone where others may pass to run it",
                bin.display(),
                d.display()
            ));
            false
        }
        None => true,
    }
}

/// oslab run as user nobody (setpriv; the caller is root), ready for arguments.
#[allow(dead_code)] // not every test file acts as another user
pub fn oslab_as_nobody() -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(assert_cmd::cargo::cargo_bin("oslab"));
    c
}

/// Runs `program` (another tool: hwloc, python) with `args`, expects success, returns its
/// standard output; a failure shows everything it printed.
pub fn tool(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        printed(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a finished command printed, its standard output then its error output.
pub fn printed(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Command lines of live processes that mention `marker` (a unique path every forked peer of
/// a run carries in its arguments).
pub fn processes_mentioning(marker: &std::path::Path) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker.to_str().unwrap()))
        .collect()
}

/// Sleeps for `least` and a part of `span` no test can plan for (the clock's nanoseconds are
/// the seed): a signal or a kill then lands anywhere in what runs.
pub fn sleep_until_a_random_moment(least: std::time::Duration, span: std::time::Duration) {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u128;
    let extra = seed % span.as_nanos().max(1);
    std::thread::sleep(least + std::time::Duration::from_nanos(extra as u64));
}
