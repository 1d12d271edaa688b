//! Directories of our own in a directory others share (`/tmp`): the one way oslab makes a
//! scratch place there. Another user must never make it first (and so own what we write, or
//! swap a program we run as root), nor write into it after, nor redirect its path later:
//! - the directory asked for (`$TMPDIR`) is resolved once, every link followed, and each
//!   component of the result checked from `/` down: owned by root or us, and not writable by
//!   others unless sticky, so no one else can rename any of them (a link in `$TMPDIR` another
//!   user may re-point is never looked at again);
//! - the name is random and `mkdirat` makes it new or fails, mode 0700, through a descriptor of
//!   the resolved parent; files are made and the whole is removed through descriptors, never by
//!   a path read again.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A private directory, removed (through its descriptors) on drop.
#[derive(Debug)]
pub struct PrivateDir {
    /// The resolved path: every component checked by [`resolve_parent`].
    path: PathBuf,
    parent: OwnedFd,
    dir: OwnedFd,
    name: CString,
}

impl PrivateDir {
    /// Makes `PREFIX.RANDOM` in the temporary directory (`$TMPDIR`, else `/tmp`).
    pub fn new(prefix: &str) -> std::io::Result<PrivateDir> {
        PrivateDir::new_in(&std::env::temp_dir(), prefix)
    }

    /// Makes `PREFIX.RANDOM` in `parent`, which must be safe to make it in ([`resolve_parent`]).
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<PrivateDir> {
        let resolved = resolve_parent(parent)?;
        let parent_fd = open_dir(libc::AT_FDCWD, &cstring(resolved.as_os_str().as_bytes())?)
            .map_err(|e| with_context(e, &format!("temp dir {}", resolved.display())))?;
        // The descriptor must be the directory checked: nothing above it may change, but say so
        // rather than assume it.
        let checked = std::fs::metadata(&resolved)?;
        let opened = fstat(&parent_fd)?;
        if (opened.st_dev, opened.st_ino) != (checked.dev(), checked.ino()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "temp dir {} changed while it was opened",
                    resolved.display()
                ),
            ));
        }
        for _ in 0..16 {
            let name = format!("{prefix}.{}", random_token()?);
            let cname = cstring(name.as_bytes())?;
            // SAFETY: a valid descriptor and C string.
            if unsafe { libc::mkdirat(parent_fd.as_raw_fd(), cname.as_ptr(), 0o700) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    continue;
                }
                return Err(with_context(
                    e,
                    &format!("cannot make a directory in {}", resolved.display()),
                ));
            }
            let dir = match open_dir(parent_fd.as_raw_fd(), &cname) {
                Ok(d) => d,
                Err(e) => {
                    // SAFETY: valid descriptor and name; removes the empty directory just made.
                    unsafe {
                        libc::unlinkat(parent_fd.as_raw_fd(), cname.as_ptr(), libc::AT_REMOVEDIR)
                    };
                    return Err(e);
                }
            };
            let made = PrivateDir {
                path: resolved.join(&name),
                parent: parent_fd,
                dir,
                name: cname,
            };
            // A umask can have taken our own bits away.
            // SAFETY: our descriptor.
            if unsafe { libc::fchmod(made.dir.as_raw_fd(), 0o700) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            return Ok(made);
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{}: 16 random names in a row were taken: someone is filling it",
                resolved.display()
            ),
        ))
    }

    /// The directory, resolved: no component of it can be changed by another user.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's descriptor, for `openat` and `unlinkat` of what is made in it.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.dir.as_fd()
    }

    /// Creates the new file `name` (never an existing one, never through a link) with `mode`,
    /// through the directory's descriptor.
    pub fn create_file(&self, name: &str, mode: u32) -> std::io::Result<std::fs::File> {
        let c = cstring(name.as_bytes())?;
        // SAFETY: valid descriptor and C string.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just opened and own.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        Ok(file)
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        empty_dir(&self.dir, 0);
        // SAFETY: valid descriptor and name.
        unsafe {
            libc::unlinkat(
                self.parent.as_raw_fd(),
                self.name.as_ptr(),
                libc::AT_REMOVEDIR,
            )
        };
    }
}

/// Removes what is in the directory `dir`, through descriptors (links are removed, never
/// followed), at most 16 levels down.
fn empty_dir(dir: &OwnedFd, depth: u32) {
    // SAFETY: dup of our descriptor; fdopendir takes the copy, closedir closes it.
    let copy = unsafe { libc::dup(dir.as_raw_fd()) };
    if copy < 0 {
        return;
    }
    // SAFETY: a valid descriptor of a directory.
    let stream = unsafe { libc::fdopendir(copy) };
    if stream.is_null() {
        // SAFETY: ours.
        unsafe { libc::close(copy) };
        return;
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: a live stream.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: readdir's entry holds a NUL-terminated name.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_owned();
        if name.as_bytes() != b"." && name.as_bytes() != b".." {
            names.push(name);
        }
    }
    // SAFETY: the stream we opened.
    unsafe { libc::closedir(stream) };
    for name in names {
        // SAFETY: valid descriptor and name.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } == 0 || depth >= 16 {
            continue;
        }
        if let Ok(sub) = open_dir(dir.as_raw_fd(), &name) {
            empty_dir(&sub, depth + 1);
            // SAFETY: valid descriptor and name.
            unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) };
        }
    }
}

/// Opens the directory `name` relative to `at`, never through a link at `name` itself.
fn open_dir(at: libc::c_int, name: &CStr) -> std::io::Result<OwnedFd> {
    // SAFETY: a valid C string; `at` is a descriptor or AT_FDCWD.
    let fd = unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just opened and own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: &OwnedFd) -> std::io::Result<libc::stat> {
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn cstring(bytes: &[u8]) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path with a NUL byte")
    })
}

fn with_context(e: std::io::Error, what: &str) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Resolves `dir` once (every link followed) and checks that a directory of ours made in the
/// result stays ours: each component, from `/` down, is a directory owned by root or us, and
/// whoever else may write it cannot rename what is in it (sticky). The resolved path is the one
/// to use from then on: a link on the way, which its owner may re-point, is not read again.
pub fn resolve_parent(dir: &Path) -> std::io::Result<PathBuf> {
    let resolved = std::fs::canonicalize(dir)
        .map_err(|e| with_context(e, &format!("temp dir {}", dir.display())))?;
    if !resolved.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("temp dir {} is not a directory", dir.display()),
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for component in resolved.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let m = std::fs::symlink_metadata(component)?;
        let others_write = m.mode() & 0o022 != 0;
        let sticky = m.mode() & 0o1000 != 0;
        let owner_ok = m.uid() == me || m.uid() == 0;
        if m.is_dir() && owner_ok && (!others_write || sticky) {
            continue;
        }
        let what = if !m.is_dir() {
            "not a directory".to_string()
        } else if owner_ok {
            "writable by others without the sticky bit".to_string()
        } else {
            format!("user {}'s", m.uid())
        };
        let place = if component == resolved {
            format!("temp dir {}", resolved.display())
        } else {
            format!(
                "temp dir {} lies in {}, which",
                resolved.display(),
                component.display()
            )
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{place} is {what}: another user could replace what oslab makes there; set TMPDIR to a directory of yours",
            ),
        ));
    }
    Ok(resolved)
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

    #[test]
    fn a_linked_parent_is_resolved_once_and_the_link_never_read_again() {
        let real = tempfile::tempdir().unwrap();
        let links = tempfile::tempdir().unwrap();
        let link = links.path().join("tmp");
        std::os::unix::fs::symlink(real.path(), &link).unwrap();
        let dir = PrivateDir::new_in(&link, "oslab-x").unwrap();
        let real_path = std::fs::canonicalize(real.path()).unwrap();
        assert!(dir.path().starts_with(&real_path), "{:?}", dir.path());
        dir.create_file("f", 0o600).unwrap();
        assert!(dir.create_file("f", 0o600).is_err(), "made twice");
        // Re-pointed after: what is made and removed stays in the real directory.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
        std::fs::create_dir(elsewhere.path().join(dir.path().file_name().unwrap())).unwrap();
        dir.create_file("g", 0o600).unwrap();
        let made = dir.path().to_path_buf();
        assert!(made.join("g").exists());
        drop(dir);
        assert!(!made.exists());
        assert_eq!(std::fs::read_dir(real.path()).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 1);
    }

    #[test]
    #[ignore = "needs root to give a directory to another user (CI runs it as root)"]
    fn a_parent_inside_another_users_directory_is_refused() {
        let top = tempfile::tempdir().unwrap();
        let theirs = top.path().join("u");
        std::fs::create_dir_all(theirs.join("tmp")).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = PrivateDir::new_in(&theirs.join("tmp"), "oslab-x").unwrap_err();
        assert!(e.to_string().contains("user 65534's"), "{e}");
        assert_eq!(std::fs::read_dir(theirs.join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn everything_made_inside_is_removed_links_not_followed() {
        let parent = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let dir = PrivateDir::new_in(parent.path(), "oslab-x").unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("l")).unwrap();
        drop(dir);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
        assert!(outside.path().join("keep").exists());
    }
}
