//! The one error type the CLI adds: a usage error, which exits 2 instead of 1.

oslab_core::reason! {
    /// The user asked for something that cannot be (unknown probe, bad cpu list); exit code 2.
    UsageError
}

/// Shorthand: `Err(usage("..."))?`.
pub fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    UsageError(msg.to_string()).into()
}
