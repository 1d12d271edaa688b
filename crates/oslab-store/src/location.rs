//! Where a command finds its store: a path (or the default one) and how long to wait for it.

use crate::{Store, StoreError};
use std::path::PathBuf;
use std::time::Duration;

/// Where results are stored (the `--db` and `--db-timeout` options of every command).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Location {
    /// Result store (SQLite). Default: $XDG_DATA_HOME/oslab/oslab.db.
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH", env = "OSLAB_DB"))]
    pub db: Option<PathBuf>,
    /// How long to wait for the store when another process is writing it, e.g. 30s, 2m; if it
    /// stays locked, a run's results are written to a JSON file to import later.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", env = "OSLAB_DB_TIMEOUT", default_value = "30s",
        value_parser = oslab_core::units::parse_duration))]
    pub db_timeout: Duration,
}

impl Location {
    /// The store file: the one given, else the default.
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(Store::default_path)
    }

    /// Opens the store to write it. Only the default location's directory is created: a
    /// mistyped path must not leave directories behind.
    pub fn open(&self) -> Result<Store, StoreError> {
        if let Some(dir) = self
            .db
            .as_deref()
            .and_then(std::path::Path::parent)
            .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
        {
            return Err(StoreError::Unusable {
                path: self.path(),
                reason: format!(
                    "directory {} does not exist (create it first)",
                    dir.display()
                ),
            });
        }
        let mut store = Store::open(&self.path())?;
        store.wait_when_locked(self.db_timeout)?;
        Ok(store)
    }

    /// Opens the store for a command that only reads it: with write access when there is (so an
    /// older store is upgraded), else read-only (a store on read-only media or another user's).
    pub fn open_to_read(&self) -> Result<Store, StoreError> {
        match self.open() {
            Err(e @ StoreError::Unusable { .. }) => {
                Store::open_read_only(&self.path()).map_err(|_| e)
            }
            other => other,
        }
    }
}
