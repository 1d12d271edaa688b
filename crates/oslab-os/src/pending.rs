//! System settings oslab changed and must put back, written down *before* the change so that even
//! SIGKILL cannot lose the original value: a guard that outlives oslab ([`crate::restorer`]), else
//! the next oslab to start, restores what a dead oslab left changed, and says so. Settings are
//! sysctls and the cpu affinities of other processes' threads (which `oslab shuffle --pid` pins).
//!
//! The record is one small JSON file (`$XDG_STATE_HOME/oslab/pending.json`, else
//! `~/.local/state/oslab/pending.json`), replaced atomically (write, fsync, rename). Each entry
//! names its owner (pid and boot): entries of a live oslab are left alone. Two runs that need one
//! setting the same way share its change (the last to end puts it back); a run that needs it the
//! other way is refused while the first runs. Every read-modify-write
//! holds an exclusive lock (`pending.lock` beside it), so two oslabs never lose each other's
//! entries; and nothing is written in a directory that is not ours alone, nor through a link (a
//! user without a home keeps it under a shared temp directory, where another user could have made
//! the directory, or planted a link at a name we write).
//!
//! The file is an input like any other: whoever could write it could make the next oslab (often
//! run as root) write any value to any file. So it is believed only when it is a regular file of
//! ours, at most [`MAX_BYTES`], not writable by others, in a directory only we (or root) can
//! write; and of its entries only those oslab can have written: a setting in [`SETTINGS`] with a
//! short plain value, or a thread with its start time and a cpu list. The rest is ignored and
//! said.

use crate::restorer::pid_alive;
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
    /// What oslab wrote there (a sysctl): a later oslab that wants the same shares the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The oslab process that changed it.
    pub pid: u32,
    /// Its start time (clock ticks after boot): a later process that takes the pid (after a
    /// cgroup kill or the OOM killer ended oslab and its guard together) is not it. 0 in a
    /// record of an older oslab: the pid alone.
    #[serde(default)]
    pub start: u64,
    /// Other oslab processes sharing the change: it is put back when the last of them ends,
    /// never under a run that still needs it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sharers: Vec<Owner>,
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

/// An oslab process, told apart from a later one that reuses its pid by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "OwnerRecord")]
pub struct Owner {
    /// Its pid.
    pub pid: u32,
    /// Its start time (clock ticks after boot); 0 when an older oslab recorded the pid alone.
    pub start: u64,
}

/// An owner as records hold it: `{"pid", "start"}`, or the bare pid older oslabs wrote.
#[derive(Deserialize)]
#[serde(untagged)]
enum OwnerRecord {
    Pid(u32),
    Full {
        pid: u32,
        #[serde(default)]
        start: u64,
    },
}

impl From<OwnerRecord> for Owner {
    fn from(r: OwnerRecord) -> Owner {
        match r {
            OwnerRecord::Pid(pid) => Owner { pid, start: 0 },
            OwnerRecord::Full { pid, start } => Owner { pid, start },
        }
    }
}

impl Owner {
    /// This process.
    pub fn me() -> Owner {
        let pid = std::process::id();
        let start = Thread::now(pid as i32).map_or(0, |t| t.start);
        Owner { pid, start }
    }

    /// Whether it still runs: its pid is alive and, when its start time was recorded, is the
    /// process that started then.
    pub fn alive(&self) -> bool {
        pid_alive(self.pid)
            && (self.start == 0
                || Thread::now(self.pid as i32).is_some_and(|t| t.start == self.start))
    }
}

impl Change {
    /// The oslab process that made the change.
    pub fn owner(&self) -> Owner {
        Owner {
            pid: self.pid,
            start: self.start,
        }
    }
}

/// The settings oslab changes (and so the only files a record may name).
pub const SETTINGS: &[&str] = &[NUMA_BALANCING];

/// Automatic NUMA balancing, which `cpuman` turns off while it places pages itself.
pub const NUMA_BALANCING: &str = "/proc/sys/kernel/numa_balancing";

/// The largest record believed (a few hundred entries at most are ever written).
pub const MAX_BYTES: u64 = 1 << 20;

/// The record file at its default place.
pub fn default_file() -> PathBuf {
    oslab_files::paths::xdg_dir("XDG_STATE_HOME", ".local/state").join("pending.json")
}

fn load(file: &Path) -> Vec<Change> {
    read(file).unwrap_or_default()
}

/// The record's directory, made ours alone if new; an error when it is not a directory only we
/// (or root) can write: another user's, a link, or writable by others.
fn own_dir(file: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    // Ours alone whatever the umask: a record others can write is not believed. An existing
    // directory (another user may have made it first) is checked below.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let m = std::fs::symlink_metadata(&dir)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_dir() || ![me, 0].contains(&m.uid()) || m.mode() & 0o022 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory of this user's alone (a link, another user's, or writable by others): the record of settings to restore is not kept there",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

/// Opens a file of ours in the record's directory to write, never through a link; `fresh` makes
/// it new (O_EXCL), else an existing one is opened as it is.
fn open_own(path: &Path, fresh: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    match fresh {
        true => o.create_new(true),
        false => o.create(true),
    };
    o.open(path)
}

/// The record locked for a read-modify-write; the lock goes with the file handle.
struct Locked {
    _lock: std::fs::File,
}

/// Takes the record's lock (waiting for another oslab's write to end).
fn lock(file: &Path) -> std::io::Result<Locked> {
    own_dir(file)?;
    let f = open_own(&file.with_extension("lock"), false)?;
    // SAFETY: flock on a descriptor we own; it is released when the file is closed.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Locked { _lock: f })
}

/// Something one oslab at a time may do (shuffle one process), held until dropped: a lock
/// file beside the record, holding the holder's pid.
#[derive(Debug)]
pub struct Claim {
    file: std::fs::File,
    path: PathBuf,
}

/// Claims `what` (a plain name) for this oslab; Err(pid of the holder, when it said) when
/// another oslab holds it.
pub fn claim(record: &Path, what: &str) -> std::io::Result<Result<Claim, Option<u32>>> {
    let dir = own_dir(record)?;
    let path = dir.join(format!("{what}.claim"));
    let mut file = open_own(&path, false)?;
    // SAFETY: flock on a descriptor we own; it is released when the file is closed.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let holder = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        return Ok(Err(holder));
    }
    file.set_len(0)?;
    std::io::Write::write_all(&mut file, format!("{}\n", std::process::id()).as_bytes())?;
    Ok(Ok(Claim { file, path }))
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still held, so no later claimer locks a file about to go.
        let _ = std::fs::remove_file(&self.path);
        let _ = &self.file;
    }
}

/// The record, if it can be believed ([`trusted`]); Ok(empty) when there is none.
fn read(file: &Path) -> Result<Vec<Change>, String> {
    if !file.exists() {
        return Ok(Vec::new());
    }
    trusted(file)?;
    let bytes = oslab_files::read_bounded(file, MAX_BYTES, oslab_files::Links::Refuse)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: not a record: {e}", file.display()))
}

/// Whether only we (or root) can have written `file`: ours and not writable by others, in a
/// directory that is ours or root's and not writable by others.
fn trusted(file: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for (what, path, owners) in [("file", file, [me, me]), ("directory", dir, [me, 0])] {
        let m = std::fs::symlink_metadata(path)
            .map_err(|e| format!("cannot check {}: {e}", path.display()))?;
        if what == "file" && !m.file_type().is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        if !owners.contains(&m.uid()) {
            return Err(format!(
                "its {what} {} belongs to user {}, not to you",
                path.display(),
                m.uid()
            ));
        }
        if m.mode() & 0o022 != 0 {
            return Err(format!(
                "its {what} {} can be written by others (mode {:o})",
                path.display(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Why an entry is not one oslab can have written, if it is not.
fn implausible(c: &Change, settings: &[&Path]) -> Option<String> {
    match c.thread {
        None if !settings.contains(&c.path.as_path()) => Some(format!(
            "{} is not a setting oslab changes",
            oslab_core::text::shortened(&c.path.display().to_string(), 80)
        )),
        None if [Some(&c.original), c.value.as_ref()]
            .into_iter()
            .flatten()
            .any(|v| {
                v.len() > 32
                    || !v
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || " -_.".contains(ch))
            }) =>
        {
            Some(format!(
                "the value recorded for {} is not one it had",
                c.path.display()
            ))
        }
        _ if c.sharers.len() > 64 || c.sharers.iter().any(|o| o.pid == 0) => {
            Some("its list of runs sharing a change is not one oslab writes".to_string())
        }
        Some(t)
            if t.tid <= 0
                || t.start == 0
                || oslab_core::CpuSet::parse_list(&c.original).is_err() =>
        {
            Some(format!(
                "thread {} is not recorded as oslab records one",
                t.tid
            ))
        }
        _ => None,
    }
}

fn save(file: &Path, changes: &[Change]) -> std::io::Result<()> {
    if changes.is_empty() {
        return match std::fs::remove_file(file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    own_dir(file)?;
    // A new file of a name no one can guess ahead, never through a link planted at it.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = file.with_extension(format!("json.{}.{nanos}", std::process::id()));
    let written = open_own(&tmp, true).and_then(|mut f| {
        std::io::Write::write_all(&mut f, &serde_json::to_vec_pretty(changes)?)?;
        f.sync_all()
    });
    match written.and_then(|_| std::fs::rename(&tmp, file)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn boot_id() -> String {
    oslab_files::processes::boot_id().unwrap_or_default()
}

/// Whether an oslab that made or shares the change still runs.
fn alive(c: &Change) -> bool {
    c.boot_id == boot_id()
        && std::iter::once(c.owner())
            .chain(c.sharers.iter().copied())
            .any(|o| o.alive())
}

/// Writes `value` to `path` (a sysctl), after recording in `file` the value it had, so it can be
/// restored even if we are killed; returns the value it had, or None when `satisfied` says the
/// current value already does (nothing changed, nothing to put back). A live oslab's change
/// that satisfies us is shared (put back when the last sharer ends); one that does not is an
/// error: one run never undoes another's setting under it. If a dead oslab left the setting
/// changed, its recorded original is the one kept (not the value it left behind).
pub fn change(
    file: &Path,
    path: &Path,
    value: &str,
    satisfied: impl Fn(&str) -> bool,
) -> std::io::Result<Option<String>> {
    // Whatever ends this oslab, a guard puts the change back after it.
    crate::restorer::ensure_started();
    let _locked = lock(file)?;
    let mut changes = load(file);
    let me = Owner::me();
    let current = std::fs::read_to_string(path)?.trim().to_string();
    let entry = changes
        .iter_mut()
        .find(|c| c.path == path && c.thread.is_none());
    let original = match entry {
        Some(c) if alive(c) => {
            let held = c.value.clone().unwrap_or_else(|| current.clone());
            if !satisfied(&held) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ResourceBusy,
                    format!(
                        "oslab pid {} holds it at {held} for its run; wait for it to end",
                        c.pid
                    ),
                ));
            }
            if c.owner() != me && !c.sharers.contains(&me) {
                c.sharers.push(me);
            }
            let original = c.original.clone();
            save(file, &changes)?;
            return Ok(Some(original));
        }
        Some(c) => c.original.clone(),
        None if satisfied(&current) => return Ok(None),
        None => current,
    };
    changes.retain(|c| c.path != path);
    changes.push(Change {
        path: path.to_path_buf(),
        thread: None,
        original: original.clone(),
        value: Some(value.to_string()),
        pid: me.pid,
        start: me.start,
        sharers: Vec::new(),
        boot_id: boot_id(),
    });
    save(file, &changes)?;
    if let Err(e) = std::fs::write(path, value) {
        // Nothing changed: nothing to restore later.
        changes.retain(|c| c.path != path);
        let _ = save(file, &changes);
        return Err(e);
    }
    Ok(Some(original))
}

/// Records the cpu affinity of each of `threads` before oslab changes it, so that the next oslab
/// puts it back if this one is killed. A thread already recorded keeps its first original.
pub fn record_affinities(
    file: &Path,
    threads: &[(i32, oslab_core::CpuSet)],
) -> std::io::Result<()> {
    crate::restorer::ensure_started();
    let _locked = lock(file)?;
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
            value: None,
            pid: Owner::me().pid,
            start: Owner::me().start,
            sharers: Vec::new(),
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
    let _locked = lock(file)?;
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
            let set = oslab_core::CpuSet::parse_list(&c.original)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            crate::affinity::set_affinity(t.tid, &set)
                .map(|_| true)
                .map_err(|e| std::io::Error::other(e.to_string()))
        }
    }
}

/// This oslab's part of the change to `path` ends: the last run sharing it puts the recorded
/// original back and forgets the record; while another still runs, it is left to that one.
pub fn restore(file: &Path, path: &Path) -> std::io::Result<()> {
    let _locked = lock(file)?;
    let mut changes = load(file);
    let me = Owner::me();
    if let Some(c) = changes.iter_mut().find(|c| c.path == path) {
        c.sharers.retain(|o| *o != me && o.alive());
        if c.owner() == me || !c.owner().alive() {
            match c.sharers.pop() {
                Some(next) => (c.pid, c.start) = (next.pid, next.start),
                None => {
                    std::fs::write(path, &c.original)?;
                    changes.retain(|c| c.path != path);
                }
            }
        }
    }
    save(file, &changes)
}

/// What `oslab restore --after PID` (the guard of [`crate::restorer`]) does: waits (up to 10 s)
/// for that oslab to be gone, then restores what the default record holds of any oslab that
/// is; what was restored, in words.
pub fn restore_after(pid: Option<u32>) -> Vec<String> {
    let Some(pid) = pid else {
        // Asked by a person: an empty answer says what was looked at. Each user's oslab keeps
        // its own record; what root's oslab changed only root may restore.
        let said = recover(&default_file());
        if !said.is_empty() {
            return said;
        }
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        return vec![format!(
            "nothing to restore: {} holds no change of an oslab that ended{}",
            default_file().display(),
            match root {
                true => "",
                false => " (this user's record; a setting root's oslab changed is in root's, for `sudo oslab restore`)",
            }
        )];
    };
    crate::restorer::wait_gone(pid, std::time::Duration::from_secs(10));
    recover(&default_file())
}

/// Restores every change whose owner is gone (killed, or from an earlier boot); returns what was
/// restored, in words, for the user. Changes of a live oslab are kept; a record or an entry that
/// oslab cannot have written is ignored, and said.
pub fn recover(file: &Path) -> Vec<String> {
    let settings: Vec<&Path> = SETTINGS.iter().map(Path::new).collect();
    recover_among(file, &settings)
}

fn recover_among(file: &Path, settings: &[&Path]) -> Vec<String> {
    if !file.exists() {
        return Vec::new();
    }
    let ignored = |why: String| {
        vec![format!(
            "ignored {}, the record of settings to restore: {why}",
            file.display()
        )]
    };
    let _locked = match lock(file) {
        Ok(l) => l,
        Err(e) => return ignored(e.to_string()),
    };
    let changes = match read(file) {
        Ok(c) => c,
        Err(why) => return ignored(why),
    };
    if changes.is_empty() {
        return Vec::new();
    }
    let mut said = Vec::new();
    let (believed, refused): (Vec<Change>, Vec<Change>) = changes
        .into_iter()
        .partition(|c| implausible(c, settings).is_none());
    for c in &refused {
        said.push(format!(
            "ignored an entry of {}: {}",
            file.display(),
            implausible(c, settings).unwrap_or_default()
        ));
    }
    let (live, dead): (Vec<Change>, Vec<Change>) = believed.into_iter().partition(alive);
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
                // SAFETY: geteuid has no preconditions.
                let hint = if unsafe { libc::geteuid() } == 0 {
                    ""
                } else {
                    "; run oslab again as root"
                };
                said.push(format!(
                    "could not restore {what} to {}: {e} (left changed by oslab pid {}){hint}",
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
        let is_one = |v: &str| v == "1";
        assert_eq!(change(&file, &setting, "1", is_one).unwrap().unwrap(), "0");
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        assert_eq!(load(&file).len(), 1);
        // A second change by this run keeps the first original, not the value left behind.
        assert_eq!(change(&file, &setting, "1", is_one).unwrap().unwrap(), "0");
        restore(&file, &setting).unwrap();
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
        assert!(!file.exists());
        // Our own (live) change is not recovered; a dead owner's is.
        change(&file, &setting, "1", is_one).unwrap();
        assert!(recover_among(&file, &[&setting]).is_empty());
        orphan(&file, |_| {});
        let said = recover_among(&file, &[&setting]);
        assert!(
            said[0].contains("restored") && said[0].contains("2147483646"),
            "{said:?}"
        );
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
        assert!(!file.exists());
        // A write that fails leaves no record behind.
        let missing = dir.path().join("no/such/setting");
        assert!(change(&file, &missing, "1", is_one).is_err());
        assert!(!file.exists());
    }

    #[test]
    fn a_setting_two_runs_need_is_put_back_by_the_last_and_never_switched_under_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/pending.json");
        let setting = dir.path().join("setting");
        std::fs::write(&setting, "1\n").unwrap();
        // Another live oslab switched it off (a child stands for it).
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let off = |v: &str| v == "0";
        assert_eq!(change(&file, &setting, "0", off).unwrap().unwrap(), "1");
        let mut changes = load(&file);
        (changes[0].pid, changes[0].start) = (other.id(), 0);
        save(&file, &changes).unwrap();
        // We want it off too: we share the change, and our end leaves it off for the other.
        assert_eq!(change(&file, &setting, "0", off).unwrap().unwrap(), "1");
        assert_eq!(load(&file)[0].sharers, vec![Owner::me()]);
        restore(&file, &setting).unwrap();
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
        assert_eq!(load(&file)[0].pid, other.id());
        assert!(load(&file)[0].sharers.is_empty());
        // Wanting it on while the other holds it off is refused, the setting untouched.
        let e = change(&file, &setting, "1", |v| v != "0").unwrap_err();
        assert!(
            e.to_string().contains(&format!("oslab pid {}", other.id())),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
        // The other ends without restoring (killed): the next oslab puts the original back.
        other.kill().unwrap();
        other.wait().unwrap();
        let said = recover_among(&file, &[&setting]);
        assert!(said[0].contains("restored"), "{said:?}");
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        // A sharer that outlives the maker is the one to put it back.
        let mut maker = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        change(&file, &setting, "0", off).unwrap();
        let mut changes = load(&file);
        changes[0].sharers = vec![changes[0].owner()];
        (changes[0].pid, changes[0].start) = (maker.id(), 0);
        save(&file, &changes).unwrap();
        maker.kill().unwrap();
        maker.wait().unwrap();
        assert!(
            recover_among(&file, &[&setting]).is_empty(),
            "a live sharer's change"
        );
        restore(&file, &setting).unwrap();
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        assert!(!file.exists());
    }

    #[test]
    fn one_claim_at_a_time_and_none_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/pending.json");
        let first = claim(&file, "shuffle-42-7").unwrap().unwrap();
        assert_eq!(
            claim(&file, "shuffle-42-7").unwrap().unwrap_err(),
            Some(std::process::id())
        );
        assert!(claim(&file, "shuffle-43-7").unwrap().is_ok());
        drop(first);
        let again = claim(&file, "shuffle-42-7").unwrap().unwrap();
        drop(again);
        let left: Vec<_> = std::fs::read_dir(dir.path().join("state"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn the_record_is_never_written_through_a_link_or_in_a_directory_others_may_write() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let setting = dir.path().join("setting");
        std::fs::write(&setting, "1").unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // Another user got there first: a link where the lock goes.
        let state = dir.path().join("planted");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&victim, state.join("pending.lock")).unwrap();
        assert!(change(&state.join("pending.json"), &setting, "0", |v| v == "0").is_err());
        // A directory anyone may write.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = change(&open.join("pending.json"), &setting, "0", |v| v == "0").unwrap_err();
        assert!(
            e.to_string()
                .contains("not a directory of this user's alone"),
            "{e}"
        );
        // Nothing written, nothing changed.
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    }

    #[test]
    fn concurrent_writers_lose_no_entry() {
        // Unlocked, 4 threads left pinned after SIGKILL once in 6 trials: a record written
        // over another's.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state").join("pending.json");
        for _ in 0..5 {
            let barrier = std::sync::Barrier::new(8);
            std::thread::scope(|s| {
                for _ in 0..8 {
                    s.spawn(|| {
                        // SAFETY: gettid has no preconditions.
                        let tid = unsafe { libc::gettid() };
                        barrier.wait();
                        let set = oslab_core::CpuSet::single(0);
                        record_affinities(&file, &[(tid, set)]).unwrap();
                    });
                }
            });
            assert_eq!(load(&file).len(), 8);
            std::fs::remove_file(&file).unwrap();
        }
    }

    #[test]
    fn a_hand_written_record_makes_oslab_write_nothing_it_did_not_change() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let file = state.join("pending.json");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let entry = |path: &Path, original: &str| Change {
            path: path.to_path_buf(),
            thread: None,
            original: original.into(),
            value: None,
            pid: 2147483646,
            start: 0,
            sharers: Vec::new(),
            boot_id: boot_id(),
        };
        let known = dir.path().join("setting");
        std::fs::write(&known, "1").unwrap();
        // Any path, any value: ignored, said, and dropped from the record.
        save(&file, &[entry(&victim, "0")]).unwrap();
        let said = recover_among(&file, &[&known]);
        assert!(
            said[0].contains("is not a setting oslab changes"),
            "{said:?}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!file.exists());
        // A known setting with a value it cannot have had (a script, a long text): ignored.
        save(&file, &[entry(&known, "0\n* * * * * root sh -c evil")]).unwrap();
        let said = recover_among(&file, &[&known]);
        assert!(said[0].contains("not one it had"), "{said:?}");
        assert_eq!(std::fs::read_to_string(&known).unwrap(), "1");
        // A record others could have written is not read at all.
        save(&file, &[entry(&known, "0")]).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
        let said = recover_among(&file, &[&known]);
        assert!(said[0].contains("writable by others"), "{said:?}");
        assert_eq!(std::fs::read_to_string(&known).unwrap(), "1");
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(recover_among(&file, &[&known])[0].contains("can be written by others"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A symbolic link in its place is not followed.
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&victim, &file).unwrap();
        assert!(recover_among(&file, &[&known])[0].contains("not a regular file"));
        std::fs::remove_file(&file).unwrap();
        // The same entry, in a record of ours: believed.
        save(&file, &[entry(&known, "0")]).unwrap();
        let said = recover_among(&file, &[&known]);
        assert!(said[0].contains("restored"), "{said:?}");
        assert_eq!(std::fs::read_to_string(&known).unwrap(), "0");
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
        crate::affinity::set_affinity(tid, &oslab_core::CpuSet::single(first)).unwrap();
        // Recorded once, by a live owner: left alone.
        record_affinities(&file, &[(tid, oslab_core::CpuSet::single(first))]).unwrap();
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

    /// A process that took a dead oslab's pid (its guard killed with it) is not that oslab:
    /// the change is restored at once, not when the stranger ends.
    #[test]
    fn a_reused_pid_does_not_keep_a_dead_oslabs_change() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/pending.json");
        let setting = dir.path().join("setting");
        std::fs::write(&setting, "1\n").unwrap();
        change(&file, &setting, "0", |v| v == "0").unwrap();
        let mut stranger = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut changes = load(&file);
        // The recorded oslab started long before the stranger now holding its pid.
        let start = Thread::now(stranger.id() as i32).unwrap().start;
        (changes[0].pid, changes[0].start) = (stranger.id(), start.saturating_sub(1).max(1));
        save(&file, &changes).unwrap();
        let said = recover_among(&file, &[&setting]);
        stranger.kill().unwrap();
        stranger.wait().unwrap();
        assert!(
            said.first().is_some_and(|l| l.contains("restored")),
            "{said:?}"
        );
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        // A record of an older oslab (bare pids) still reads.
        let old: Change = serde_json::from_str(
            r#"{"path": "/x", "original": "1", "pid": 7, "sharers": [8, 9], "boot_id": "b"}"#,
        )
        .unwrap();
        assert_eq!(old.sharers[1], Owner { pid: 9, start: 0 });
    }
}
