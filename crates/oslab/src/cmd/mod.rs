//! One module per subcommand; each returns the process exit code.

mod activity;
mod compare;
mod cpuman;
mod exchange;
mod fleet;
mod info;
mod list;
mod lockbench;
mod migrate;
mod report;
mod run;
pub(crate) mod session;
mod shuffle;
mod shuffle_eval;
mod stored;
mod timeslice;

use crate::cli::{Cli, Command, StoreArgs};
use oslab_store::Store;
use std::process::ExitCode;

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Info(a) => info::run(a),
        Command::List(a) => list::run(a),
        Command::Run(a) => run::run(a),
        Command::Numa(a) => run::run(a.into()),
        Command::Cpuman(a) => cpuman::run(a),
        Command::Fleet(a) => fleet::run(a),
        Command::Activity(a) => activity::run(a),
        Command::Migrate(a) => migrate::run(a),
        Command::Shuffle(a) => shuffle::run(a),
        Command::ShuffleEval(a) => shuffle_eval::run(a),
        Command::Lockbench(a) => lockbench::run(a),
        Command::Timeslice(a) => timeslice::run(a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Export(a) => exchange::export(a),
        Command::Import(a) => exchange::import(a),
        Command::Runs(a) => stored::runs(a),
        Command::Show(a) => stored::show(a),
        Command::TaskHelper(a) => task_helper(a),
    }
}

/// The helper parent of the task probes: prints its report as JSON.
fn task_helper(args: crate::cli::TaskHelperArgs) -> anyhow::Result<ExitCode> {
    let report = oslab_probes::task::helper_main(&args.request).map_err(anyhow::Error::msg)?;
    print_text(&report)?;
    Ok(ExitCode::SUCCESS)
}

/// Opens the store the user chose (or the default one).
pub fn open_store(args: &StoreArgs) -> anyhow::Result<Store> {
    // Only the default location's directory is created: a mistyped --db must not leave
    // directories behind.
    if let Some(dir) = args
        .db
        .as_deref()
        .and_then(std::path::Path::parent)
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        return Err(oslab_store::StoreError::Unusable {
            path: args.db.clone().unwrap_or_default(),
            reason: format!(
                "directory {} does not exist (create it first)",
                dir.display()
            ),
        }
        .into());
    }
    let path = args.db.clone().unwrap_or_else(Store::default_path);
    Ok(Store::open(&path)?)
}

/// Prints JSON, pretty.
pub fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

/// Prints text to stdout, reporting a closed pipe as an error main treats as success.
pub fn print_text(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    if !s.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(())
}

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
pub fn read_bounded(path: &std::path::Path, limit: u64, links: Links) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let cannot = |e: std::io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) => anyhow::anyhow!("{} is a symbolic link: refused", path.display()),
        _ => anyhow::anyhow!("cannot read {}: {e}", path.display()),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        anyhow::bail!("{} is not a regular file", path.display());
    }
    if meta.len() > limit {
        anyhow::bail!(
            "{} is {} bytes; at most {limit} are read",
            path.display(),
            meta.len()
        );
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        anyhow::bail!("{} is larger than {limit} bytes", path.display());
    }
    Ok(bytes)
}

/// Writes a file through a temporary name, so a failed write never leaves half a file.
pub fn write_whole(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("oslab-partial");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("cannot write {}: {e}", path.display())
        })
}

/// Writes a Paraver trace as BASE.prv, BASE.pcf and BASE.row.
pub fn write_paraver(
    base: &std::path::Path,
    p: &oslab_report::paraver::Paraver,
) -> anyhow::Result<()> {
    for (ext, body) in [("prv", &p.prv), ("pcf", &p.pcf), ("row", &p.row)] {
        write_whole(&base.with_extension(ext), body.as_bytes())?;
    }
    Ok(())
}
