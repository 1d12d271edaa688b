//! Why a probe produced no measurement: the one error every part of a probe returns.

/// Why a probe produced no measurement.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The user asked us to stop (Ctrl-C / SIGTERM).
    #[error("interrupted")]
    Interrupted,
    /// The machine cannot do this (recorded as `skipped: reason`).
    #[error("{0}")]
    Unsupported(String),
    /// Something went wrong (recorded as `failed: reason`).
    #[error("{0}")]
    Failed(String),
}

impl From<oslab_core::reason::Unavailable> for ProbeError {
    fn from(why: oslab_core::reason::Unavailable) -> ProbeError {
        ProbeError::Unsupported(why.0)
    }
}

impl ProbeError {
    /// A failure from the last OS error, naming what was attempted.
    pub fn os(what: &str) -> ProbeError {
        ProbeError::Failed(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}
