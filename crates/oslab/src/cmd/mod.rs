//! One module per subcommand; each returns the process exit code.

mod activity;
mod bind;
mod c2c;
mod check;
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

use crate::cli::{Cli, Command};
use clap::CommandFactory;
use std::process::ExitCode;

/// The store every command uses (`--db`, `--db-timeout`, global options), set once by
/// [`dispatch`].
static STORE: std::sync::OnceLock<oslab_store::Location> = std::sync::OnceLock::new();

/// The store the command line names (or the default one).
pub fn store() -> &'static oslab_store::Location {
    STORE
        .get()
        .expect("dispatch sets the store before any command runs")
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let _ = STORE.set(cli.store);
    match cli.command {
        Command::Info(a) => info::run(a),
        Command::List(a) => list::run(a),
        Command::Run(a) => run::run(a),
        Command::Numa(a) => run::run(a.into()),
        Command::C2c(a) => c2c::run(a),
        Command::Bind(a) => bind::run(a),
        Command::Cpuman(a) => cpuman::run(a),
        Command::Fleet(a) => fleet::run(a),
        Command::Check(a) => check::run(a),
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
        Command::TaskHelper { request } => task_helper(&request),
        Command::Restore { after } => restore(after),
        Command::Completions { shell } => {
            // Written whole by us: a closed pipe then ends quietly instead of panicking.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut completed(), "oslab", &mut script);
            to_stdout(&mut std::io::stdout().lock(), &script)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { path, dir } => man(&path, dir.as_deref()),
    }
}

/// The command line as shells complete it: `oslab run sys<TAB>` offers the probe ids (only
/// here: a run also takes globs and families, which a list of values would refuse).
fn completed() -> clap::Command {
    let ids: Vec<&'static str> = oslab_probes::registry::all()
        .iter()
        .map(|p| p.id())
        .collect();
    Cli::command().mut_subcommand("run", |run| {
        run.mut_arg("probes", |a| {
            a.value_parser(clap::builder::PossibleValuesParser::new(ids))
        })
    })
}

/// `oslab man`: one page to standard output (`path` names a subcommand), or every page into
/// `dir` (written whole, as every output file).
fn man(path: &[String], dir: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let pages = oslab_report::man::pages(<crate::cli::Cli as clap::CommandFactory>::command())?;
    if let Some(dir) = dir {
        oslab_report::man::check_dir(dir).map_err(crate::error::usage)?;
        let written = oslab_report::man::write_all(&pages, dir)?;
        eprintln!("{written} manual pages written to {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let page = oslab_report::man::page(&pages, path).map_err(crate::error::usage)?;
    to_stdout(&mut std::io::stdout().lock(), page)?;
    Ok(ExitCode::SUCCESS)
}

/// What an oslab that ended (SIGKILL included) left changed, put back once it is gone, and said.
fn restore(after: Option<u32>) -> anyhow::Result<ExitCode> {
    oslab_os::pending::restore_after(after)
        .iter()
        .for_each(|l| say(&format!("note: {l}")));
    Ok(ExitCode::SUCCESS)
}

/// The helper parent of the task probes: prints its report as JSON (for a program: never
/// wrapped to the terminal's width).
fn task_helper(request: &str) -> anyhow::Result<ExitCode> {
    let report = oslab_probes::task::helper_main(request).map_err(anyhow::Error::msg)?;
    print_raw(&report)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints JSON, pretty, never wrapped.
pub fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    use anyhow::Context;
    // Written as it is made, never whole in memory (a run of a million measurements is a
    // document of hundreds of MB); paged on a terminal only, where it is small enough to read.
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return print_raw(&serde_json::to_string_pretty(v)?);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut out, v)
        .map_err(std::io::Error::from)
        .and_then(|_| std::io::Write::write_all(&mut out, b"\n"));
    to_stdout(&mut out, b"").and(written.context("cannot write to standard output"))
}

/// Prints text for a person: every control character escaped but the colours of its tables
/// ([`oslab_core::text::for_terminal`]: outside text was made printable where it entered a
/// table, this guards the rest), lines wrapped as words to the terminal's width (`--wide`: not at
/// all; a table already fits it, and its colours take no width).
pub fn print_text(s: &str) -> anyhow::Result<()> {
    let s = &oslab_core::text::for_terminal(&oslab_core::text::trim_line_ends(s)).into_owned();
    match oslab_report::table::width() {
        Some(w) => print_raw(&oslab_core::text::wrap(s, w as usize)),
        None => print_raw(s),
    }
}

/// Says a message on standard error: bounded and made printable, its words wrapped to the
/// terminal's width when standard error is one (a 665-character list of probes ran over the
/// edge, and the terminal split its words: "does no|t exist").
pub fn say(text: &str) {
    use std::io::IsTerminal;
    let text = oslab_core::text::message(text, MESSAGE_CHARS);
    match (
        std::io::stderr().is_terminal(),
        oslab_report::table::width(),
    ) {
        (true, Some(w)) => eprint!(
            "{}",
            oslab_core::text::wrap(&format!("{text}\n"), w as usize)
        ),
        _ => eprintln!("{text}"),
    }
}

/// The most characters of one message: a hostile input of megabytes is never echoed whole.
pub const MESSAGE_CHARS: usize = 2000;

/// Prints `s` (paged on a terminal), ending with a newline; a closed pipe is an error main
/// treats as success.
pub(crate) fn print_raw(s: &str) -> anyhow::Result<()> {
    if let Some(done) = oslab_os::pager::page(s) {
        return done.map_err(Into::into);
    }
    let mut out = std::io::stdout().lock();
    let newline: &[u8] = if s.ends_with('\n') { b"" } else { b"\n" };
    to_stdout(&mut out, &[s.as_bytes(), newline].concat())
}

/// Writes `bytes` to standard output and flushes them (a full disk or `/dev/full` says so now,
/// naming standard output, rather than being lost at exit).
pub fn to_stdout(out: &mut impl std::io::Write, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    out.write_all(bytes)
        .and_then(|_| out.flush())
        .context("cannot write to standard output")
}
