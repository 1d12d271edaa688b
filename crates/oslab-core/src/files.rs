//! Files users and other nodes hand us, read without surprises, and files written whole.

use std::path::Path;

/// Why a file could not be read or written, naming it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct FileError(pub String);

/// Whether [`read_bounded`] may follow a symbolic link at the path itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A file the user named: a link to a regular file is fine.
    Follow,
    /// A file found in a directory others write to (a fleet's results): a link is refused.
    Refuse,
}

/// Reads a file a user (or another node) supplied: a regular file only (not a device, FIFO or
/// directory: `/dev/zero` would never end), at most `limit` bytes, opened without blocking.
pub fn read_bounded(path: &Path, limit: u64, links: Links) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let cannot = |e: std::io::Error| {
        FileError(match e.raw_os_error() {
            Some(libc::ELOOP) => format!("{} is a symbolic link: refused", path.display()),
            _ => format!("cannot read {}: {e}", path.display()),
        })
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(FileError(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if meta.len() > limit {
        return Err(FileError(format!(
            "{} is {} bytes; at most {limit} are read",
            path.display(),
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(FileError(format!(
            "{} is larger than {limit} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Writes a file through a temporary name, so a failed write never leaves half a file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let tmp = path.with_extension("oslab-partial");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            FileError(format!("cannot write {}: {e}", path.display()))
        })
}
