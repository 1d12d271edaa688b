//! How thoroughly a command measures, decided once from `--quick` and passed down as a type.

use serde::{Deserialize, Serialize};

/// The suite's full budgets, or `--quick`'s shorter ones (fewer samples and points, a shorter
/// clock calibration; a run stores which as `quick`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pace {
    /// The default budgets.
    Full,
    /// `--quick`.
    Quick,
}

impl Pace {
    /// The pace a `--quick` flag asks for.
    pub fn of(quick: bool) -> Pace {
        match quick {
            true => Pace::Quick,
            false => Pace::Full,
        }
    }

    /// Whether it is `--quick`'s.
    pub fn is_quick(self) -> bool {
        self == Pace::Quick
    }
}
