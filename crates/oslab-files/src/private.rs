//! Directories of our own in a directory others share (`/tmp`): the one way oslab makes a
//! scratch place there. Another user must never make it first (and so own what we write, or
//! swap a program we run as root), nor write into it after: the name is random, `mkdir` makes it
//! new or fails (never accepting one that exists), with mode 0700; and the directory it is made
//! in must not let another user rename ours away (a world-writable directory without the sticky
//! bit would). Removed, with what is in it, when dropped.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A private directory, removed on drop.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// Makes `PREFIX.RANDOM` in the temporary directory (`$TMPDIR`, else `/tmp`).
    pub fn new(prefix: &str) -> std::io::Result<PrivateDir> {
        PrivateDir::new_in(&std::env::temp_dir(), prefix)
    }

    /// Makes `PREFIX.RANDOM` in `parent`, which must be safe to make it in ([`check_parent`]).
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<PrivateDir> {
        check_parent(parent)?;
        for _ in 0..16 {
            let path = parent.join(format!("{prefix}.{}", random_token()?));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = PrivateDir { path };
                    // A umask can have taken our own bits away.
                    std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o700))?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot make a directory in {}: {e}", parent.display()),
                    ))
                }
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{}: 16 random names in a row were taken: someone is filling it",
                parent.display()
            ),
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Whether a directory of ours made in `dir` stays ours: `dir` is a directory (a link to one is
/// resolved, as `/tmp` may be), and whoever may write it could not rename or remove what we make
/// there: it is ours or root's, or sticky, or no one else may write it.
pub fn check_parent(dir: &Path) -> std::io::Result<()> {
    let m = std::fs::metadata(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("temp dir {}: {e}", dir.display())))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let others_write = m.mode() & 0o022 != 0;
    let sticky = m.mode() & 0o1000 != 0;
    let owner_ok = m.uid() == me || m.uid() == 0;
    if !m.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("temp dir {} is not a directory", dir.display()),
        ));
    }
    if !owner_ok || (others_write && !sticky) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "temp dir {} is {}: another user could replace what oslab makes there; set TMPDIR to a directory of yours",
                dir.display(),
                if owner_ok {
                    "writable by others without the sticky bit".to_string()
                } else {
                    format!("user {}'s", m.uid())
                }
            ),
        ));
    }
    Ok(())
}

/// 16 hex digits from the kernel's random source: names no one can guess before we use them.
pub fn random_token() -> std::io::Result<String> {
    let mut b = [0u8; 8];
    // SAFETY: getrandom fills at most the buffer's length.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        return Err(std::io::Error::last_os_error());
    }
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_dir_is_new_ours_0700_random_and_gone_after() {
        let parent = tempfile::tempdir().unwrap();
        let a = PrivateDir::new_in(parent.path(), "oslab-x").unwrap();
        let b = PrivateDir::new_in(parent.path(), "oslab-x").unwrap();
        assert_ne!(a.path(), b.path());
        let m = std::fs::symlink_metadata(a.path()).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode() & 0o777, 0o700);
        let p = a.path().to_path_buf();
        std::fs::write(p.join("f"), "x").unwrap();
        drop(a);
        assert!(!p.exists());
    }

    #[test]
    fn a_parent_others_may_rename_in_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = PrivateDir::new_in(parent.path(), "oslab-x").unwrap_err();
        assert!(e.to_string().contains("sticky"), "{e}");
        std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        PrivateDir::new_in(parent.path(), "oslab-x").unwrap();
        let file = parent.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(PrivateDir::new_in(&file, "oslab-x").is_err());
    }
}
