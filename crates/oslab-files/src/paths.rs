//! Where oslab keeps its files: under the XDG base directories, or, for a user without a home
//! (a service account whose home is `/nonexistent`), in a private directory of their own.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// oslab's directory under an XDG base directory: `$VAR/oslab`, else `$HOME/FALLBACK/oslab`
/// (e.g. `XDG_DATA_HOME`, `.local/share`) when the home directory exists, else
/// [`homeless_dir`]. Never the current directory: a relative `$VAR` is ignored, as the XDG
/// specification says.
pub fn xdg_dir(var: &str, fallback: &str) -> PathBuf {
    if let Some(v) = absolute_var(var) {
        return v.join("oslab");
    }
    match std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
    {
        Some(home) if home.is_dir() => home.join(fallback).join("oslab"),
        _ => homeless_dir(),
    }
}

/// Where oslab keeps files for a user with no home to keep them in: `$XDG_RUNTIME_DIR/oslab`,
/// else `/tmp/oslab-UID`. Neither outlives a reboot; callers say so.
pub fn homeless_dir() -> PathBuf {
    match absolute_var("XDG_RUNTIME_DIR") {
        Some(run) => run.join("oslab"),
        // SAFETY: getuid has no preconditions.
        // The temp dir resolved once ([`crate::private::resolve_parent`]): a link in `$TMPDIR`
        // that its owner re-points later is not followed again.
        None => {
            let tmp = std::env::temp_dir();
            let tmp = std::fs::canonicalize(&tmp).unwrap_or(tmp);
            tmp.join(format!("oslab-{}", unsafe { libc::getuid() }))
        }
    }
}

/// The environment variable `var` when it holds an absolute path.
fn absolute_var(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// Whether `path` lies in [`homeless_dir`].
pub fn is_homeless(path: &Path) -> bool {
    path.starts_with(homeless_dir())
}

/// Creates `dir` (and its parents) for our files. [`homeless_dir`] in a shared temp directory is
/// created private (0700) and, when it exists, must be a real directory of ours that no one
/// else may write: another user could have made it first, or put a link there.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    let private = homeless_dir();
    if !dir.starts_with(&private) {
        return std::fs::create_dir_all(dir);
    }
    if let Some(parent) = private.parent() {
        crate::private::resolve_parent(parent)?;
    }
    // Made private as it is made (mode 0700, no moment with the umask's wider mode), and its
    // name, predictable by design, checked when it was there before us.
    match std::fs::DirBuilder::new().mode(0o700).create(&private) {
        Ok(()) => std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(&private)?;
            // SAFETY: getuid has no preconditions.
            let ours = m.uid() == unsafe { libc::getuid() };
            if !m.is_dir() || !ours || m.mode() & 0o022 != 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "{} is not a private directory of this user (a link, another owner's, or writable by others)",
                        private.display()
                    ),
                ));
            }
        }
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(dir)
}
