//! Another user on the same machine: what they can make first in a shared temp directory, oslab
//! neither writes into nor runs from (issue 71). Each test plants the attacker's files as one
//! user and runs oslab as another, in a sticky world-writable temp directory as /tmp is.

mod common;

use common::{oslab, oslab_as_nobody, temp_db};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const NOBODY: u32 = 65534;

/// A temp directory as /tmp is: world-writable and sticky.
fn sticky_tmp() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
}

fn can_act_as_nobody() -> bool {
    oslab_testkit::require_root("acting as user nobody to plant files and be the victim")
        && oslab_testkit::require(&["setpriv"])
        && common::nobody_can_run_oslab()
}

/// The old names of the do-nothing program's directory (`oslab-nop-PID-TID`) for the next pids,
/// made by nobody, open to all: the program run as root must be in none of them, and none may
/// hold anything after the run.
#[test]
#[ignore = "needs root to act as another user (CI runs it as root)"]
fn root_runs_no_program_from_a_directory_another_user_made() {
    if !can_act_as_nobody() {
        return;
    }
    let tmp = sticky_tmp();
    let next: u32 = std::fs::read_to_string("/proc/loadavg")
        .unwrap()
        .split_whitespace()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    let mut planted = Vec::new();
    for pid in next..next + 150 {
        for tid in pid..pid + 40 {
            let d = tmp.path().join(format!("oslab-nop-{pid}-{tid}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
            chown(&d, NOBODY);
            planted.push(d);
        }
    }
    let (_d, db) = temp_db();
    let out = oslab()
        .args([
            "run",
            "--quick",
            "task.fork-exec",
            "task.posix_spawn",
            "--json",
            "--db",
        ])
        .arg(&db)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let used: Vec<_> = planted
        .iter()
        .filter(|d| std::fs::read_dir(d).unwrap().next().is_some())
        .collect();
    assert!(used.is_empty(), "oslab wrote into {used:?}");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = run["measurements"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|m| m["status"] == "ok" || m["status"] == "noisy"),
        "{run}"
    );
    // Nothing of ours is left beside the planted directories.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.metadata().unwrap().uid() != NOBODY)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A temp directory another user may rename things in (world-writable, not sticky) would let
/// them swap oslab's directory for theirs: refused with the reason, never used.
#[test]
#[ignore = "needs root to act as another user (CI runs it as root)"]
fn a_temp_dir_others_may_rename_in_is_refused_for_the_program() {
    if !can_act_as_nobody() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (_d, db) = temp_db();
    let out = oslab()
        .args(["run", "--quick", "task.fork-exec", "--json", "--db"])
        .arg(&db)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &run["measurements"].as_array().unwrap()[0];
    let why = row["reason"].as_str().unwrap_or_default();
    assert!(row["status"] == "failed" && why.contains("sticky"), "{run}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// A fleet node's scratch store at the name the old code used, planted by another user (root
/// here, nobody the victim: root may remove anything in a sticky directory, nobody may not), an
/// empty file anyone may write: the victim's run goes neither into it nor from it.
#[test]
#[ignore = "needs root to act as another user (CI runs it as root)"]
fn a_fleet_node_stores_nothing_in_a_file_another_user_made() {
    if !can_act_as_nobody() {
        return;
    }
    let tmp = sticky_tmp();
    let results = tempfile::tempdir().unwrap();
    std::fs::set_permissions(results.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let planted = tmp.path().join("oslab-fleet-777.0a1b2c3d-alpha.db");
    std::fs::write(&planted, "").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = oslab_as_nobody()
        .args(["fleet", "task", "--submission", "0a1b2c3d", "--results"])
        .arg(results.path())
        .args(["--", "--quick", "syscall.getp*"])
        .env("SLURM_JOB_ID", "777")
        .env("SLURMD_NODENAME", "alpha")
        .env("TMPDIR", tmp.path())
        .env("HOME", "/nonexistent")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(&planted).unwrap().len(),
        0,
        "written into"
    );
    let handed = results.path().join("777.0a1b2c3d/node-alpha.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(handed).unwrap()).unwrap();
    assert!(!doc["measurements"].as_array().unwrap().is_empty());
    // The node's scratch is gone: only the planted file (and nobody's own state directory).
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("oslab-fleet"))
        .collect();
    assert_eq!(left, ["oslab-fleet-777.0a1b2c3d-alpha.db"]);
}

/// Issue 85's first finding: `TMPDIR` is a link in a directory another user owns, to a sticky
/// directory root owns; that user waits for the do-nothing program's directory, builds its own
/// of the same name and re-points the link. Root must run only its own program (the path is
/// resolved once, never read through the link again) and remove its own directory.
#[test]
#[ignore = "needs root to act as another user (CI runs it as root)"]
fn root_never_runs_a_program_swapped_in_through_a_link_in_tmpdir() {
    if !can_act_as_nobody() {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = top.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let home = top.path().join("u");
    std::fs::create_dir(&home).unwrap();
    chown(&home, NOBODY);
    let link = home.join("tmp");
    let marker = home.join("ran-as");
    // The attacker, as nobody: re-points the link at a directory of its own holding a program
    // of the same name, as soon as oslab's directory appears.
    let script = format!(
        r#"ln -s {shared} {link}
        while :; do
            for d in {shared}/oslab-nop.*; do
                [ -d "$d" ] || continue
                n=$(basename "$d")
                mkdir -p {home}/evil/$n
                printf '#!/bin/sh\nid > {marker}\n' > {home}/evil/$n/nop
                chmod 755 {home}/evil/$n/nop
                ln -sfn {home}/evil {link}.new && mv -T {link}.new {link}
                touch {home}/swapped
                exit 0
            done
        done"#,
        shared = shared.display(),
        link = link.display(),
        home = home.display(),
        marker = marker.display(),
    );
    let mut attacker = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(&script)
        .spawn()
        .unwrap();
    while std::fs::symlink_metadata(&link).is_err() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (_d, db) = temp_db();
    let out = oslab()
        .args([
            "run",
            "--quick",
            "task.fork-exec",
            "task.posix_spawn",
            "task.fork-exec",
            "--json",
            "--db",
        ])
        .arg(&db)
        .env("TMPDIR", &link)
        .output()
        .unwrap();
    let _ = attacker.kill();
    let _ = attacker.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        home.join("swapped").exists(),
        "the attacker never saw oslab's directory: the race was not run"
    );
    assert!(
        !marker.exists(),
        "root ran the other user's program: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        run["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["status"] == "ok" || m["status"] == "noisy"),
        "{run}"
    );
    // Root's own directory went with the run, removed where it was made.
    let left: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `--db` is written as an output is: a link another user planted (to a file of root's) is not
/// followed, and a store another user owns is not written by root; both say why, and neither
/// file changes.
#[test]
#[ignore = "needs root to act as another user (CI runs it as root)"]
fn a_store_is_never_written_through_a_link_or_into_another_users_file() {
    if !can_act_as_nobody() {
        return;
    }
    let tmp = sticky_tmp();
    let precious = tmp.path().join("root-secret");
    std::fs::write(&precious, "").unwrap();
    std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = tmp.path().join("nobodys.db");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    chown(&link, NOBODY);
    let out = oslab()
        .args(["run", "--quick", "timer.rdtsc", "--db"])
        .arg(&link)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("symbolic link"), "{e}");
    assert_eq!(
        std::fs::metadata(&precious).unwrap().len(),
        0,
        "written into"
    );
    // A store nobody owns: root reads it, never writes it.
    let theirs = tmp.path().join("theirs.db");
    let made = oslab_as_nobody()
        .args(["run", "--quick", "timer.rdtsc", "--db"])
        .arg(&theirs)
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let before = std::fs::read(&theirs).unwrap();
    let out = oslab()
        .args(["run", "--quick", "timer.rdtsc", "--db"])
        .arg(&theirs)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("user 65534's"), "{e}");
    assert_eq!(std::fs::read(&theirs).unwrap(), before, "written into");
    let shown = oslab()
        .args(["runs", "--db"])
        .arg(&theirs)
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
}

/// A normal user's `oslab restore` says plainly what it looked at and that what root's oslab
/// changed is root's to restore, rather than "run oslab again as root" with nothing done.
#[test]
#[ignore = "needs root to act as another user (CI runs it as root)"]
fn a_normal_users_restore_says_it_has_nothing_it_may_restore() {
    if !can_act_as_nobody() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    chown(state.path(), NOBODY);
    let out = oslab_as_nobody()
        .arg("restore")
        .env("XDG_STATE_HOME", state.path())
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(
        e.contains("nothing to restore") && e.contains("sudo oslab restore"),
        "{e}"
    );
}
