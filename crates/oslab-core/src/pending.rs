//! System settings oslab changed and must put back, written down *before* the change so that even
//! SIGKILL cannot lose the original value: the next oslab to start restores what a dead oslab left
//! changed, and says so. Settings are sysctls and the cpu affinities of other processes' threads
//! (which `oslab shuffle --pid` pins).
//!
//! The record is one small JSON file (`$XDG_STATE_HOME/oslab/pending.json`, else
//! `~/.local/state/oslab/pending.json`), replaced atomically (write, fsync, rename). Each entry
//! names its owner (pid and boot): entries of a live oslab are left alone.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One change to undo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The file written (a sysctl under /proc/sys); empty for a thread's affinity.
    #[serde(default)]
    pub path: PathBuf,
    /// The thread whose cpu affinity was changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<Thread>,
    /// The value it had before oslab wrote it (a cpu list for a thread).
    pub original: String,
    /// The oslab process that changed it.
    pub pid: u32,
    /// The boot it happened in (a pid from another boot is never alive).
    pub boot_id: String,
}

/// A thread, told apart from a later one that reuses its id by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// Its id.
    pub tid: i32,
    /// When it started: clock ticks after boot (/proc/TID/stat, field 22).
    pub start: u64,
}

impl Thread {
    /// The thread `tid` as it is now, if it exists.
    pub fn now(tid: i32) -> Option<Thread> {
        let stat = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
        let after = stat.rsplit_once(')')?.1;
        // Field 3 (state) is the first after the command; field 22 is the 20th.
        let start = after.split_whitespace().nth(19)?.parse().ok()?;
        Some(Thread { tid, start })
    }
}

/// The record file at its default place.
pub fn default_file() -> PathBuf {
    crate::paths::xdg_dir("XDG_STATE_HOME", ".local/state").join("pending.json")
}

fn load(file: &Path) -> Vec<Change> {
    std::fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save(file: &Path, changes: &[Change]) -> std::io::Result<()> {
    if changes.is_empty() {
        return match std::fs::remove_file(file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = file.with_extension(format!("json.{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, &serde_json::to_vec_pretty(changes)?)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, file)
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn alive(c: &Change) -> bool {
    c.boot_id == boot_id() && Path::new(&format!("/proc/{}", c.pid)).exists()
}

/// Writes `value` to `path` (a sysctl), after recording in `file` the value it had, so it can be
/// restored even if we are killed. Returns the original value. If a dead oslab left the setting
/// changed, its recorded original is the one kept (not the value it left behind).
pub fn change(file: &Path, path: &Path, value: &str) -> std::io::Result<String> {
    let mut changes = load(file);
    let current = std::fs::read_to_string(path)?.trim().to_string();
    let original = changes
        .iter()
        .find(|c| c.path == path)
        .map_or(current, |c| c.original.clone());
    changes.retain(|c| c.path != path);
    changes.push(Change {
        path: path.to_path_buf(),
        thread: None,
        original: original.clone(),
        pid: std::process::id(),
        boot_id: boot_id(),
    });
    save(file, &changes)?;
    if let Err(e) = std::fs::write(path, value) {
        // Nothing changed: nothing to restore later.
        changes.retain(|c| c.path != path);
        let _ = save(file, &changes);
        return Err(e);
    }
    Ok(original)
}

/// Records the cpu affinity of each of `threads` before oslab changes it, so that the next oslab
/// puts it back if this one is killed. A thread already recorded keeps its first original.
pub fn record_affinities(file: &Path, threads: &[(i32, crate::CpuSet)]) -> std::io::Result<()> {
    let mut changes = load(file);
    let before = changes.len();
    for (tid, set) in threads {
        let Some(thread) = Thread::now(*tid) else {
            continue; // gone: nothing will change
        };
        if changes.iter().any(|c| c.thread == Some(thread)) {
            continue;
        }
        changes.push(Change {
            path: PathBuf::new(),
            thread: Some(thread),
            original: set.to_list(),
            pid: std::process::id(),
            boot_id: boot_id(),
        });
    }
    if changes.len() == before {
        return Ok(());
    }
    save(file, &changes)
}

/// Forgets this process's affinity records (it put them back itself).
pub fn forget_affinities(file: &Path) -> std::io::Result<()> {
    let mut changes = load(file);
    let before = changes.len();
    changes.retain(|c| c.thread.is_none() || c.pid != std::process::id());
    if changes.len() == before {
        return Ok(());
    }
    save(file, &changes)
}

/// Puts a change back: a sysctl's value, or a thread's affinity if it is still that thread
/// (Ok(false) when it is gone: nothing to put back).
fn undo(c: &Change) -> std::io::Result<bool> {
    match c.thread {
        None => std::fs::write(&c.path, &c.original).map(|_| true),
        Some(t) => {
            if Thread::now(t.tid) != Some(t) {
                return Ok(false);
            }
            let set = crate::CpuSet::parse_list(&c.original)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            crate::affinity::set_affinity(t.tid, &set)
                .map(|_| true)
                .map_err(|e| std::io::Error::other(e.to_string()))
        }
    }
}

/// Puts `path` back to its recorded original and forgets the record.
pub fn restore(file: &Path, path: &Path) -> std::io::Result<()> {
    let mut changes = load(file);
    if let Some(c) = changes.iter().find(|c| c.path == path) {
        std::fs::write(path, &c.original)?;
    }
    changes.retain(|c| c.path != path);
    save(file, &changes)
}

/// Restores every change whose owner is gone (killed, or from an earlier boot); returns what was
/// restored, in words, for the user. Changes of a live oslab are kept.
pub fn recover(file: &Path) -> Vec<String> {
    let changes = load(file);
    if changes.is_empty() {
        return Vec::new();
    }
    let (live, dead): (Vec<Change>, Vec<Change>) = changes.into_iter().partition(alive);
    let mut said = Vec::new();
    let mut kept = live;
    for c in dead {
        let what = match c.thread {
            None => c.path.display().to_string(),
            Some(t) => format!("the cpu affinity of thread {}", t.tid),
        };
        match undo(&c) {
            Ok(true) => said.push(format!(
                "restored {what} to {} (oslab pid {} changed it and ended without restoring it)",
                c.original, c.pid
            )),
            Ok(false) => {} // the thread is gone
            Err(e) => {
                said.push(format!(
                    "could not restore {what} to {}: {e} (left changed by oslab pid {}); run oslab again as root",
                    c.original, c.pid
                ));
                kept.push(c);
            }
        }
    }
    let _ = save(file, &kept);
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first record's owner made dead (a pid that never exists), then `edit`ed.
    fn orphan(file: &Path, edit: impl FnOnce(&mut Change)) {
        let mut changes = load(file);
        changes[0].pid = 2147483646;
        edit(&mut changes[0]);
        save(file, &changes).unwrap();
    }

    #[test]
    fn a_change_is_recorded_first_restored_and_recovered_after_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/pending.json");
        let setting = dir.path().join("setting");
        std::fs::write(&setting, "0\n").unwrap();
        assert_eq!(change(&file, &setting, "1").unwrap(), "0");
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        assert_eq!(load(&file).len(), 1);
        // A second change by a later run keeps the first original, not the value left behind.
        assert_eq!(change(&file, &setting, "1").unwrap(), "0");
        restore(&file, &setting).unwrap();
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
        assert!(!file.exists());
        // Our own (live) change is not recovered; a dead owner's is.
        change(&file, &setting, "1").unwrap();
        assert!(recover(&file).is_empty());
        orphan(&file, |_| {});
        let said = recover(&file);
        assert!(
            said[0].contains("restored") && said[0].contains("2147483646"),
            "{said:?}"
        );
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
        assert!(!file.exists());
        // A write that fails leaves no record behind.
        let missing = dir.path().join("no/such/setting");
        assert!(change(&file, &missing, "1").is_err());
        assert!(!file.exists());
    }

    #[test]
    fn a_thread_left_pinned_by_a_killed_oslab_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pending.json");
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::gettid() }).unwrap();
            let _ = stop_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let original = crate::affinity::get_affinity(tid).unwrap();
        let first = original.iter().next().unwrap();
        record_affinities(&file, &[(tid, original.clone())]).unwrap();
        crate::affinity::set_affinity(tid, &crate::CpuSet::single(first)).unwrap();
        // Recorded once, by a live owner: left alone.
        record_affinities(&file, &[(tid, crate::CpuSet::single(first))]).unwrap();
        assert_eq!(load(&file).len(), 1);
        assert!(recover(&file).is_empty());
        // Its owner "died": the next oslab puts the thread back and says so.
        orphan(&file, |_| {});
        let said = recover(&file);
        assert!(
            said[0].contains(&format!("cpu affinity of thread {tid}")),
            "{said:?}"
        );
        assert_eq!(crate::affinity::get_affinity(tid).unwrap(), original);
        assert!(!file.exists());
        // A record of a thread that is gone (or another thread with its id) is dropped quietly.
        record_affinities(&file, &[(tid, original.clone())]).unwrap();
        orphan(&file, |c| c.thread = Some(Thread { tid, start: 1 }));
        assert!(recover(&file).is_empty());
        assert!(!file.exists());
        // The owner that restores its threads forgets its records.
        record_affinities(&file, &[(tid, original)]).unwrap();
        forget_affinities(&file).unwrap();
        assert!(!file.exists());
        stop_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
