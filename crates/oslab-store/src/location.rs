//! Where a command finds its store: a path (or the default one) and how long to wait for it.

use crate::{Store, StoreError};
use std::path::PathBuf;
use std::time::Duration;

/// Where results are stored (the `--db` and `--db-timeout` options of every command).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Location {
    /// Result store (SQLite). Default: $XDG_DATA_HOME/oslab/oslab.db.
    #[cfg_attr(
        feature = "clap",
        arg(long, global = true, value_name = "PATH", env = "OSLAB_DB")
    )]
    pub db: Option<PathBuf>,
    /// How long to wait for the store when another process is writing it, e.g. 30s, 2m; if it
    /// stays locked, a run's results are written to a JSON file to import later.
    #[cfg_attr(feature = "clap", arg(long, global = true, value_name = "TIME", env = "OSLAB_DB_TIMEOUT", default_value = "30s",
        value_parser = oslab_core::units::parse_duration))]
    pub db_timeout: Duration,
}

impl Location {
    /// The store file: the one given, else the default.
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(Store::default_path)
    }

    /// Opens the store to write it. Only the default location's directory is created: a
    /// mistyped path must not leave directories behind. When the default location cannot be
    /// created (a home directory that is not writable), the store goes to oslab's private
    /// directory instead, and the user is told where and how to choose another.
    pub fn open(&self) -> Result<Store, StoreError> {
        let path = self.checked_path()?;
        let mut store = match Store::open(&path) {
            Err(StoreError::Unusable { reason, .. })
                if self.db.is_none() && !oslab_files::paths::is_homeless(&path) =>
            {
                let instead = oslab_files::paths::homeless_dir().join("oslab.db");
                oslab_core::notices::say(&format!(
                    "note: the default store {} cannot be created ({reason})",
                    path.display()
                ));
                Store::open(&instead)?
            }
            other => other?,
        };
        if self.db.is_none() && oslab_files::paths::is_homeless(store.path()) {
            oslab_core::notices::say(&format!(
                "note: results are stored in {}, which does not outlive a reboot; choose a store with --db PATH or OSLAB_DB=PATH",
                store.path().display()
            ));
        }
        store.wait_when_locked(self.db_timeout)?;
        Ok(store)
    }

    /// What the store holds of `host`'s core-to-core and NUMA costs on `topology`
    /// ([`Store::measured_costs`]); none where the store cannot be read, so a command that
    /// only uses them where they exist (a placement, an export) never fails for them.
    pub fn measured_costs(
        &self,
        host: &str,
        topology: &oslab_core::topology::Topology,
    ) -> oslab_core::binding::Costs {
        self.open_to_read()
            .and_then(|s| s.measured_costs(host, topology))
            .unwrap_or_default()
    }

    /// Opens the store for a command that only reads it: with write access when there is (so an
    /// older store is upgraded), else read-only (a store on read-only media or another user's).
    /// Where no store exists yet, an empty one that is never written: looking creates nothing.
    pub fn open_to_read(&self) -> Result<Store, StoreError> {
        let path = self.checked_path()?;
        if !path.exists() {
            return Store::empty(&path);
        }
        match self.open() {
            Err(e @ StoreError::Unusable { .. }) => Store::open_read_only(&path).map_err(|_| e),
            other => other,
        }
    }

    /// The store's path, refused early when it cannot be a store file: a directory, or a file
    /// in a directory that does not exist (for a path given; the default one is created).
    fn checked_path(&self) -> Result<PathBuf, StoreError> {
        let path = self.path();
        let refuse = |reason: String| StoreError::Unusable {
            path: path.clone(),
            reason,
        };
        if path.is_dir() {
            return Err(refuse(
                "it is a directory; --db names the store file itself, e.g. DIR/oslab.db".into(),
            ));
        }
        // A link to nothing: SQLite would create the store where the link points, a place
        // whoever made the link chose (in a shared /tmp, another user).
        if path.is_symlink() && !path.exists() {
            return Err(refuse(format!(
                "it is a symbolic link to {}, which does not exist: name the store itself",
                std::fs::read_link(&path).map_or("?".into(), |t| {
                    oslab_core::text::one_line(&t.display().to_string()).into_owned()
                })
            )));
        }
        if let Some(dir) = self
            .db
            .as_deref()
            .and_then(std::path::Path::parent)
            .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
        {
            return Err(refuse(format!(
                "directory {} does not exist (create it first)",
                dir.display()
            )));
        }
        Ok(path)
    }
}
