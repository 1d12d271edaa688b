//! What several commands' command lines share. Each library declares its own commands'
//! arguments (its `args` module, with the `clap` feature) and flattens these; the CLI assembles
//! the commands.

use clap::Args;

/// How a command prints what it did: text, or JSON for programs.
#[derive(Debug, Args, Clone)]
pub struct Output {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
