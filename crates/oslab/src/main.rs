//! The oslab command line: parses arguments, calls the library crates, prints. Nothing else.
//!
//! Exit codes: 0 success, 1 failure, 2 usage error (bad flag, unknown probe, bad cpu list),
//! 128 + the signal that interrupted it: 130 Ctrl-C, 143 SIGTERM, 129 a hang-up (what completed
//! is stored).

mod cli;
mod cmd;
mod error;
mod progress;

use clap::Parser;
use error::UsageError;
use std::process::ExitCode;

fn main() -> ExitCode {
    // An empty variable is an unset one (`OSLAB_DB= oslab runs` was "a value is required").
    for var in ["OSLAB_DB", "OSLAB_DB_TIMEOUT", "OSLAB_MEMORY"] {
        if std::env::var_os(var).is_some_and(|v| v.is_empty()) {
            // Still one thread: nothing reads the environment meanwhile.
            std::env::remove_var(var);
        }
    }
    // A small stack limit (`ulimit -s 64`) overflowed the main thread: then the work runs on a
    // thread with the stack it needs. Otherwise on the main thread, as always (a second thread
    // would change what a forked child copies).
    // SAFETY: getrlimit fills the struct we pass.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    let small = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } == 0
        && limit.rlim_cur != libc::RLIM_INFINITY
        && (limit.rlim_cur as usize) < STACK;
    if small {
        let worker = std::thread::Builder::new()
            .name("main".into())
            .stack_size(STACK)
            .spawn(oslab);
        return match worker.map(|w| w.join()) {
            Ok(Ok(code)) => code,
            Ok(Err(_)) => ExitCode::from(101), // it panicked, and said so
            Err(e) => {
                cmd::say(&format!(
                    "oslab: cannot start with a stack of {STACK} bytes: {e}"
                ));
                ExitCode::from(1)
            }
        };
    }
    oslab()
}

/// The stack oslab's work needs (clap's parser and the report's views are deep).
const STACK: usize = 8 << 20;

fn oslab() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        // `oslab run -V` is oslab's version too (clap would name it `oslab-run`).
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            println!("oslab {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) if !e.use_stderr() => e.exit(), // --help
        Err(e) => {
            // A usage error may quote the argument: bounded and escaped like every message.
            cmd::say(e.render().to_string().trim_end());
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    // The libraries' notices (a store another process holds, a setting not put back) are said
    // here, as every message: bounded and made printable.
    oslab_core::notices::install(cmd::say);
    if args.wide {
        oslab_report::table::set_width(None);
    }
    if args.no_pager {
        cmd::no_pager();
    }
    // Settings a killed oslab left changed are put back first, and said; and once this one has
    // changed any, a guard puts them back after it, however it ends.
    oslab_os::restorer::register("/proc/self/exe", &["oslab", "restore"]);
    for line in oslab_os::pending::recover(&oslab_os::pending::default_file()) {
        cmd::say(&format!("note: {line}"));
    }
    match cmd::dispatch(args) {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            cmd::say(&format!("oslab: {}", once_each(&e)));
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// An error and its causes, each said once: a cause whose text the message already holds (a
/// library error that quotes SQLite's, then SQLite's itself) is not repeated.
fn once_each(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain().map(|c| c.to_string()) {
        if text.is_empty() {
            text = cause;
        } else if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_the_message_already_quotes_is_not_repeated() {
        #[derive(Debug)]
        struct Full;
        impl std::fmt::Display for Full {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("database or disk is full")
            }
        }
        impl std::error::Error for Full {}
        let e = anyhow::Error::new(Full).context("result store error: database or disk is full");
        assert_eq!(
            once_each(&e),
            "result store error: database or disk is full"
        );
        let e = anyhow::Error::new(Full).context("cannot store run 3");
        assert_eq!(
            once_each(&e),
            "cannot store run 3: database or disk is full"
        );
    }
}
