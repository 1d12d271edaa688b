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
    // A small stack limit (`ulimit -s 64`) once overflowed the main thread.
    oslab_os::stack::with_stack(8 << 20, oslab).unwrap_or_else(|e| {
        cmd::say(&format!("oslab: cannot start with the stack it needs: {e}"));
        ExitCode::from(1)
    })
}

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
    oslab_core::notices::show_details(args.verbose);
    if args.wide {
        oslab_report::table::set_width(None);
    }
    if args.no_pager {
        oslab_os::pager::no_pager();
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
            let causes = e.chain().map(|c| c.to_string());
            cmd::say(&format!("oslab: {}", oslab_core::text::once_each(causes)));
            // 2 for a usage error, else 1.
            ExitCode::from(1 + u8::from(e.downcast_ref::<UsageError>().is_some()))
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
