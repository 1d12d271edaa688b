//! Files users and other nodes hand us, read without surprises, and files written whole.

pub mod paths;
pub mod private;
pub mod processes;

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

/// Opens a file a user (or another node) supplied for reading: a regular file only (not a device,
/// FIFO or directory: `/dev/zero` would never end, a FIFO could block forever), opened without
/// blocking.
pub fn open_regular(path: &Path, links: Links) -> Result<std::fs::File, FileError> {
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
    if !file.metadata().map_err(cannot)?.is_file() {
        return Err(FileError(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// Reads a file a user (or another node) supplied ([`open_regular`]), at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64, links: Links) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    let file = open_regular(path, links)?;
    let cannot = |e: std::io::Error| FileError(format!("cannot read {}: {e}", path.display()));
    let len = file.metadata().map_err(cannot)?.len();
    if len > limit {
        return Err(FileError(format!(
            "{} is {len} bytes; at most {limit} are read",
            path.display()
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

/// A reader of a file a user (or another node) supplied ([`open_regular`]) of at most `limit`
/// bytes, for a parser that reads as it goes: the file is never held whole.
pub fn reader_bounded(
    path: &Path,
    limit: u64,
    links: Links,
) -> Result<impl std::io::BufRead, FileError> {
    use std::io::Read;
    let file = open_regular(path, links)?;
    let len = file
        .metadata()
        .map_err(|e| FileError(format!("cannot read {}: {e}", path.display())))?
        .len();
    if len > limit {
        return Err(FileError(format!(
            "{} is {len} bytes; at most {limit} are read",
            path.display()
        )));
    }
    Ok(std::io::BufReader::with_capacity(1 << 16, file.take(limit)))
}

/// The lines of a text stream a user supplied, each at most `max` bytes: a longer line (a
/// corrupt or sparse file, one line of gigabytes) is an error after reading `max + 1` bytes of
/// it, never a line held whole. Ends after the first error.
pub fn lines(
    mut input: impl std::io::BufRead,
    max: usize,
) -> impl Iterator<Item = std::io::Result<String>> {
    use std::io::{BufRead, Read};
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut line = Vec::new();
        let read = (&mut input)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut line);
        let result = match read {
            Ok(0) => return None,
            Err(e) => Err(e),
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                if line.len() > max {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("a line longer than {max} bytes"),
                    ))
                } else {
                    String::from_utf8(line).map_err(|_| {
                        std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")
                    })
                }
            }
        };
        done = result.is_err();
        Some(result)
    })
}

/// Writes an output file the user named, by one rule for every command:
/// - a new name, or a regular file of ours: written through a temporary name beside it and
///   renamed over it, so a failed or killed write never leaves half a file (a temporary name a
///   killed oslab left is removed the next time);
/// - a character device (`/dev/null`, a terminal) or a FIFO with a reader: written into as it
///   is, never replaced;
/// - a symbolic link, a directory, another user's file, a FIFO nobody reads: refused, saying
///   why, and left as it was.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_set(&[(path, bytes)])
}

/// [`write_whole`] for a set of files that belong together (a report and its figures): every
/// target is checked and every regular file written under its temporary name before any is
/// renamed into place, so a failure half way (a full disk) leaves none of them half written and
/// no mix of new and old.
pub fn write_set(files: &[(&Path, &[u8])]) -> Result<(), FileError> {
    let targets = files
        .iter()
        .map(|(p, _)| target(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut staged = Vec::new();
    for ((path, bytes), t) in files.iter().zip(&targets) {
        if *t == Target::Replace {
            match stage(path, bytes) {
                Ok(tmp) => staged.push((tmp, *path)),
                Err(e) => {
                    staged.iter().for_each(|(tmp, _)| {
                        let _ = std::fs::remove_file(tmp);
                    });
                    return Err(e);
                }
            }
        }
    }
    let mut renames = staged.iter();
    while let Some((tmp, path)) = renames.next() {
        if let Err(e) = std::fs::rename(tmp, path) {
            let _ = std::fs::remove_file(tmp);
            renames.for_each(|(tmp, _)| {
                let _ = std::fs::remove_file(tmp);
            });
            return Err(FileError(format!("cannot write {}: {e}", path.display())));
        }
    }
    for ((path, bytes), t) in files.iter().zip(&targets) {
        if *t == Target::Into {
            write_into(path, bytes).map_err(|e| FileError(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// Checks, before any work, that [`write_whole`] could write `path`: what it refuses is refused
/// now, and a new name's directory must take a file. A long measurement once ended in an
/// unwritable `--trace` or `--paraver` path, its results neither stored nor printed.
pub fn check_writable(path: &Path) -> Result<(), FileError> {
    if target(path)? == Target::Into {
        return Ok(());
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = dir.join(format!(".oslab-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(FileError(format!(
            "{}: cannot write there: {e}",
            path.display()
        ))),
    }
}

/// How an output path is written, by the rule of [`write_whole`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// New, or a regular file of ours: replaced through a temporary name.
    Replace,
    /// A character device or a FIFO: written into.
    Into,
}

fn target(path: &Path) -> Result<Target, FileError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let said = |what: String| FileError(format!("{}: {what}", path.display()));
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Target::Replace),
        Err(e) => Err(said(format!("cannot write: {e}"))),
        Ok(m) if m.file_type().is_symlink() => Err(said(
            "is a symbolic link: refused, so that nothing it points to is replaced (name its target)"
                .into(),
        )),
        Ok(m) if m.is_dir() => Err(said("is a directory: name a file".into())),
        // SAFETY: geteuid has no preconditions.
        Ok(m) if m.is_file() && m.uid() != unsafe { libc::geteuid() } => Err(said(format!(
            "belongs to user {}: refused, it is not replaced",
            m.uid()
        ))),
        Ok(m) if m.is_file() => Ok(Target::Replace),
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_fifo() => Ok(Target::Into),
        Ok(_) => Err(said(
            "is not a regular file, a character device or a FIFO: refused".into(),
        )),
    }
}

/// The temporary name of `path` for this process.
fn partial(path: &Path, pid: u32) -> std::path::PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.oslab-partial.{pid}"))
}

/// Writes `bytes` to a new temporary file beside `path` (synced) and returns its name; first
/// removes what a killed oslab left under a temporary name of `path`.
fn stage(path: &Path, bytes: &[u8]) -> Result<std::path::PathBuf, FileError> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stale = format!(".{name}.oslab-partial.");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let n = e.file_name();
            let Some(pid) = n.to_str().and_then(|n| n.strip_prefix(&stale)) else {
                continue;
            };
            let alive = pid
                .parse::<i32>()
                .is_ok_and(|p| std::path::Path::new(&format!("/proc/{p}")).exists());
            if !alive {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let tmp = partial(path, std::process::id());
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_data()));
    written.map(|_| tmp.clone()).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        FileError(format!("cannot write {}: {e}", path.display()))
    })
}

/// Writes into a device or a FIFO as it is (a FIFO that nobody reads is refused at once rather
/// than waited on).
fn write_into(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => "a FIFO nobody reads: refused".to_string(),
            _ => format!("cannot write: {e}"),
        })?;
    // Blocking from here: a slow reader is waited for, not failed.
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    f.write_all(bytes).map_err(|e| format!("cannot write: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_of_files_is_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("report.md");
        std::fs::write(&page, "old").unwrap();
        // The second cannot be written (as a full disk would refuse it): the first stays old.
        let figure = dir.path().join("no-such-dir/figure.svg");
        let e = write_set(&[(&page, b"new"), (&figure, b"<svg/>")]).unwrap_err();
        assert!(e.0.contains("figure.svg"), "{e}");
        assert_eq!(std::fs::read(&page).unwrap(), b"old");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        // A refused target refuses the set before anything is written.
        let link = dir.path().join("link.svg");
        std::os::unix::fs::symlink(&page, &link).unwrap();
        assert!(write_set(&[(&page, b"new"), (&link, b"x")]).is_err());
        assert_eq!(std::fs::read(&page).unwrap(), b"old");
        let figure = dir.path().join("figure.svg");
        write_set(&[(&page, b"new"), (&figure, b"<svg/>")]).unwrap();
        assert_eq!(std::fs::read(&page).unwrap(), b"new");
        assert_eq!(std::fs::read(&figure).unwrap(), b"<svg/>");
    }

    #[test]
    fn lines_are_bounded_and_a_huge_one_is_an_error_not_an_allocation() {
        let text = b"one\r\ntwo\n\nthree";
        let got: Vec<String> = lines(&text[..], 5).map(Result::unwrap).collect();
        assert_eq!(got, ["one", "two", "", "three"]);
        // Exactly the limit is a line; one byte more is an error, and the stream ends there.
        assert_eq!(lines(&b"12345\n"[..], 5).next().unwrap().unwrap(), "12345");
        let mut it = lines(&b"123456\nok\n"[..], 5);
        let e = it.next().unwrap().unwrap_err();
        assert!(e.to_string().contains("longer than 5 bytes"), "{e}");
        assert!(it.next().is_none());
        // A sparse file of 8 GiB is one line of NULs: refused after reading a few KiB of it.
        let dir = tempfile::tempdir().unwrap();
        let sparse = dir.path().join("sparse.swf");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        let f = std::io::BufReader::new(open_regular(&sparse, Links::Follow).unwrap());
        assert!(lines(f, 4096).next().unwrap().is_err());
        // Devices and FIFOs are not opened for reading at all.
        let e = open_regular(Path::new("/dev/zero"), Links::Follow).unwrap_err();
        assert!(e.0.contains("not a regular file"), "{e}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&fifo, Links::Follow).unwrap_err();
        assert!(e.0.contains("not a regular file"), "{e}");
    }

    #[test]
    fn an_output_replaces_only_a_regular_file_of_ours_and_never_what_a_name_points_at() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.json");
        // New, then replaced whole.
        write_whole(&file, b"one").unwrap();
        write_whole(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        // A temporary name a killed oslab left (a pid that is not running) is cleared.
        let stale = partial(&file, 999_999_999);
        std::fs::write(&stale, b"half").unwrap();
        write_whole(&file, b"three").unwrap();
        assert!(!stale.exists());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        // A symbolic link is refused; what it points at is untouched.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let e = write_whole(&link, b"x").unwrap_err();
        assert!(e.0.contains("symbolic link"), "{e}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&file).unwrap(), b"three");
        // A device is written into, never replaced by a regular file.
        write_whole(Path::new("/dev/null"), b"gone").unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // A FIFO nobody reads is refused at once; a directory too.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = write_whole(&fifo, b"x").unwrap_err();
        assert!(e.0.contains("nobody reads"), "{e}");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(write_whole(dir.path(), b"x")
            .unwrap_err()
            .0
            .contains("directory"));
    }

    #[test]
    fn another_users_file_is_not_replaced() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return; // only root can make a file that belongs to someone else
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("theirs.html");
        std::fs::write(&file, b"theirs").unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let e = write_whole(&file, b"ours").unwrap_err();
        assert!(e.0.contains("belongs to user 65534"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"theirs");
    }
}
