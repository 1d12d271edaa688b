//! The other measurements of a run, for composed models: found by probe, metric and parameters,
//! the same repetition preferred.

use crate::answer::NoModel;
use oslab_core::model::Measurement;
use serde_json::{Map, Value};

/// The run's measurements, as they were before any prediction was added.
pub(crate) struct Run {
    ms: Vec<Measurement>,
}

/// A measured value and its description as a model's source.
pub(crate) struct Measured {
    pub value: f64,
    pub source: crate::answer::Source,
}

impl Run {
    pub fn new(ms: Vec<Measurement>) -> Run {
        Run { ms }
    }

    /// Every measured `probe`/`metric` whose parameters satisfy `keep`.
    pub fn all<'a>(
        &'a self,
        probe: &'a str,
        metric: &'a str,
        keep: impl Fn(&Map<String, Value>) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.ms.iter().filter(move |m| {
            m.probe == probe
                && m.metric == metric
                && m.status.has_value()
                && m.summary.is_some()
                && keep(&m.params)
        })
    }

    /// The median of `probe`/`metric` with parameters satisfying `keep`, from the repetition of
    /// `like` when it has one, or why it is missing.
    pub fn median(
        &self,
        like: &Measurement,
        probe: &str,
        metric: &str,
        keep: impl Fn(&Map<String, Value>) -> bool,
    ) -> Result<Measured, NoModel> {
        let found: Vec<&Measurement> = self.all(probe, metric, keep).collect();
        let m = found
            .iter()
            .find(|m| m.repetition == like.repetition)
            .or(found.first())
            .ok_or_else(|| {
                format!("needs {probe} {metric} measured in the same run (oslab run {probe})")
            })?;
        let median = m.summary.as_ref().map(|s| s.median).unwrap_or(f64::NAN);
        Ok(Measured {
            value: median,
            source: crate::answer::Source::run(
                format!("{probe} {metric} {}", m.params_text()).trim_end(),
            ),
        })
    }
}

/// The median of `probe`/`metric` (parameters satisfying `keep`) from the repetition of `like`,
/// as a figure with its source, or why it is missing.
pub(crate) fn measured(
    run: &Run,
    like: &Measurement,
    probe: &str,
    metric: &str,
    keep: impl Fn(&Map<String, Value>) -> bool,
) -> Result<crate::Figure, NoModel> {
    let m = run.median(like, probe, metric, keep)?;
    Ok(crate::Figure::new(m.value, m.source))
}

/// A parameter as text, numbers included.
pub(crate) fn param(params: &Map<String, Value>, key: &str) -> Option<String> {
    params.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// A numeric parameter.
pub(crate) fn number(params: &Map<String, Value>, key: &str) -> Option<f64> {
    params.get(key).and_then(Value::as_f64)
}
