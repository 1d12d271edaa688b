//! The kernel's automatic NUMA balancing switched for a run and put back after it, through the
//! crash-safe record of `pending` (a killed run's next oslab restores it).

const BALANCING: &str = crate::pending::NUMA_BALANCING;

/// Automatic NUMA balancing switched on (cpuman's `--migration kernel`) or off (cpuman's other
/// modes and `oslab migrate`, so that only oslab moves pages: a multi-node kernel often has it on
/// by default); the previous value written back on drop. The previous value is recorded
/// ([`crate::pending`]) before the switch, so the next oslab restores it if this one is killed.
#[derive(Debug)]
pub struct BalancingGuard {
    previous: String,
}

impl BalancingGuard {
    /// Switches automatic NUMA balancing on or off; None when it already was (nothing to
    /// restore), or when the kernel has no balancing and `on` is false.
    pub fn set(on: bool) -> Result<Option<BalancingGuard>, String> {
        let path = std::path::Path::new(BALANCING);
        if !path.exists() {
            return match on {
                true => Err(format!("{BALANCING} does not exist (a kernel without CONFIG_NUMA_BALANCING cannot migrate pages automatically)")),
                false => Ok(None),
            };
        }
        let word = if on { "on" } else { "off" };
        // Any mode but 0 balances (1: normal, 2: memory tiering). Another oslab that holds it
        // where we want it shares it with us; one that holds it the other way is an error.
        let previous = crate::pending::change(
            &crate::pending::default_file(),
            path,
            if on { "1" } else { "0" },
            |v| (v != "0") == on,
        )
        .map_err(|e| {
            // SAFETY: geteuid has no preconditions.
            let hint = if unsafe { libc::geteuid() } == 0 {
                ""
            } else {
                "; needs root"
            };
            format!("cannot switch automatic NUMA balancing {word} ({BALANCING}: {e}{hint})")
        })?;
        Ok(previous.map(|previous| BalancingGuard { previous }))
    }

    /// The value it had before.
    pub fn previous(&self) -> &str {
        &self.previous
    }
}

impl Drop for BalancingGuard {
    fn drop(&mut self) {
        let file = crate::pending::default_file();
        if let Err(e) = crate::pending::restore(&file, std::path::Path::new(BALANCING)) {
            oslab_core::notices::say(&format!(
                "warning: could not restore {BALANCING} to {}: {e}",
                self.previous
            ));
        }
    }
}
