//! Several runs taken together, as one side of a comparison or one report: `7`, `latest`,
//! `3,4,5`, `3-5`, or `tag:kernel=6.18` (every run so labelled).

use crate::{RunRecord, RunRef, Store, StoreError};
use oslab_core::model::Measurement;
use oslab_core::reason::BadValue;
use std::fmt;

/// Runs chosen together.
#[derive(Debug, Clone, PartialEq)]
pub enum RunSet {
    /// These runs.
    Runs(Vec<RunRef>),
    /// Every run tagged `key` = `value`.
    Tag(String, String),
}

/// Runs loaded with their measurements.
pub type Loaded = Vec<(RunRecord, Vec<Measurement>)>;

/// Ranges longer than this are refused (a typo like `1-1000000` would load the whole store).
const MAX_RANGE: i64 = 1000;

impl std::str::FromStr for RunSet {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<RunSet, BadValue> {
        if let Some(tag) = s.strip_prefix("tag:") {
            return match tag.split_once('=') {
                Some((k, v)) if !k.is_empty() && !v.is_empty() => {
                    Ok(RunSet::Tag(k.to_string(), v.to_string()))
                }
                _ => Err(format!("{s:?}: a tag selector is tag:KEY=VALUE").into()),
            };
        }
        let mut runs = Vec::new();
        for part in s.split(',') {
            match part.split_once('-') {
                Some((lo, hi)) => {
                    let bound = |b: &str| match b.parse::<RunRef>()? {
                        RunRef::Id(id) => Ok(id),
                        RunRef::Latest => Err(BadValue(format!("{part:?}: a range is of run ids"))),
                    };
                    let (lo, hi) = (bound(lo)?, bound(hi)?);
                    if hi < lo || hi - lo >= MAX_RANGE {
                        return Err(format!(
                            "{part:?}: a range runs from a lower id to a higher one, at most {MAX_RANGE} runs"
                        ).into());
                    }
                    runs.extend((lo..=hi).map(RunRef::Id));
                }
                None => runs.push(part.parse()?),
            }
        }
        Ok(RunSet::Runs(runs))
    }
}

impl fmt::Display for RunSet {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            RunSet::Tag(k, v) => write!(f, "tag {k}={v}"),
            RunSet::Runs(runs) => {
                let ids: Vec<String> = runs
                    .iter()
                    .map(|r| match r {
                        RunRef::Id(id) => id.to_string(),
                        RunRef::Latest => "latest".into(),
                    })
                    .collect();
                let noun = if runs.len() == 1 { "run" } else { "runs" };
                write!(f, "{noun} {}", ids.join(", "))
            }
        }
    }
}

impl Store {
    /// Loads every run of `set` (oldest first for a tag), each once; an empty set is an error
    /// that says so.
    pub fn load_set(&self, set: &RunSet) -> Result<Loaded, StoreError> {
        let refs = match set {
            RunSet::Runs(r) => r.clone(),
            RunSet::Tag(k, v) => self.tagged(k, v)?.into_iter().map(RunRef::Id).collect(),
        };
        let mut ids = Vec::new();
        for r in &refs {
            let id = self.resolve(r)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        if ids.is_empty() {
            return Err(StoreError::NoSuchRun(format!("{set} (no run has it)")));
        }
        ids.iter()
            .map(|id| self.load_run(&RunRef::Id(*id)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_parse_and_print_back() {
        let ids = |v: &[i64]| RunSet::Runs(v.iter().map(|i| RunRef::Id(*i)).collect());
        assert_eq!("7".parse::<RunSet>().unwrap(), ids(&[7]));
        assert_eq!("3,5-7".parse::<RunSet>().unwrap(), ids(&[3, 5, 6, 7]));
        assert_eq!(
            "tag:kernel=6.18".parse::<RunSet>().unwrap(),
            RunSet::Tag("kernel".into(), "6.18".into())
        );
        assert_eq!(
            "3,5-7".parse::<RunSet>().unwrap().to_string(),
            "runs 3, 5, 6, 7"
        );
        assert_eq!(
            "latest".parse::<RunSet>().unwrap().to_string(),
            "run latest"
        );
        for bad in [
            "", "x", "7-3", "1-5000", "tag:", "tag:k", "tag:=v", "0", "3,,4", "latest-4",
        ] {
            assert!(bad.parse::<RunSet>().is_err(), "{bad:?} accepted");
        }
    }
}
