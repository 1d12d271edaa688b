//! System settings oslab changed and must put back, written down *before* the change so that even
//! SIGKILL cannot lose the original value: the next oslab to start restores what a dead oslab left
//! changed, and says so.
//!
//! The record is one small JSON file (`$XDG_STATE_HOME/oslab/pending.json`, else
//! `~/.local/state/oslab/pending.json`), replaced atomically (write, fsync, rename). Each entry
//! names its owner (pid and boot): entries of a live oslab are left alone.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One change to undo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The file written (a sysctl under /proc/sys).
    pub path: PathBuf,
    /// The value it had before oslab wrote it.
    pub original: String,
    /// The oslab process that changed it.
    pub pid: u32,
    /// The boot it happened in (a pid from another boot is never alive).
    pub boot_id: String,
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
        match std::fs::write(&c.path, &c.original) {
            Ok(()) => said.push(format!(
                "restored {} to {} (oslab pid {} changed it and ended without restoring it)",
                c.path.display(),
                c.original,
                c.pid
            )),
            Err(e) => {
                said.push(format!(
                    "could not restore {} to {}: {e} (left changed by oslab pid {}); run oslab again as root",
                    c.path.display(),
                    c.original,
                    c.pid
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
        let mut changes = load(&file);
        changes[0].pid = 2147483646;
        save(&file, &changes).unwrap();
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
}
