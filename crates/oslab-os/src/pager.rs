//! Long output through a pager on a terminal, as git does.

static PAGING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// `--no-pager`: long output is printed as it is.
pub fn no_pager() {
    let _ = PAGING.set(false);
}

/// Shows `s` through a pager when standard output is a terminal, as git does: $PAGER, else `less`
/// with LESS=FRX (it quits at once when the text fits the screen, leaves it there, passes
/// colour); None where there is none (`--no-pager`, PAGER empty or `cat`, or no such program:
/// the text is then printed as it is).
pub fn page(s: &str) -> Option<std::io::Result<()>> {
    use std::io::{IsTerminal, Write};
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less".into());
    let wanted = PAGING.get().copied().unwrap_or(true) && !["", "cat"].contains(&pager.trim());
    if !wanted || !std::io::stdout().is_terminal() {
        return None;
    }
    let mut child = std::process::Command::new("sh")
        .args(["-c", &pager])
        .env(
            "LESS",
            std::env::var("LESS").unwrap_or_else(|_| "FRX".into()),
        )
        .stdin(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    // A pager quit before the end is no error.
    let _ = child.stdin.take()?.write_all(s.as_bytes());
    match child.wait() {
        Ok(status) if status.code() == Some(127) => None, // sh found no such pager
        done => Some(done.map(|_| ())),
    }
}
