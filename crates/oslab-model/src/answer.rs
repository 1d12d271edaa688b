//! One model's answer for one measurement (a [`Model`] with its inputs and their sources, or
//! [`NoModel`] saying why not), and what every family's models share to make one.

use oslab_core::model::{Measurement, ModelKind, Prediction};
use serde_json::{Map, Value};

/// Where a figure came from: the machine's specifications ("table: ...", "kernel: ...",
/// "--memory ...", the core clock measured for the purpose), or this run's own measurements of
/// something else, which make a model that uses it a consistency check ([`ModelKind::Composed`]),
/// not a prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// What a person reads.
    pub text: String,
    /// Measured in this run.
    pub from_run: bool,
}

impl Source {
    /// A figure this run measured: `what` names it.
    pub fn run(what: impl std::fmt::Display) -> Source {
        Source {
            text: format!("measured in this run: {what}"),
            from_run: true,
        }
    }

    /// A figure derived from `a` and `b`: from the run if either is.
    pub fn both(a: &Source, how: &str, b: &Source) -> Source {
        Source {
            text: format!("{} {how} {}", a.text, b.text),
            from_run: a.from_run || b.from_run,
        }
    }
}

impl From<&str> for Source {
    fn from(text: &str) -> Source {
        Source {
            text: text.to_string(),
            from_run: false,
        }
    }
}

impl From<String> for Source {
    fn from(text: String) -> Source {
        Source {
            text,
            from_run: false,
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A number and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The value.
    pub value: f64,
    /// Where it came from.
    pub source: Source,
}

impl Figure {
    /// A figure from `source`.
    pub fn new(value: f64, source: impl Into<Source>) -> Figure {
        Figure {
            value,
            source: source.into(),
        }
    }
}

/// One model's answer for one measurement.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) name: &'static str,
    pub(crate) kind: ModelKind,
    pub(crate) value: f64,
    pub(crate) formula: String,
    pub(crate) inputs: Vec<(String, Value, String)>,
}

impl Model {
    /// A prediction from the specifications.
    pub(crate) fn spec(name: &'static str, value: f64, formula: impl Into<String>) -> Model {
        Model {
            name,
            kind: ModelKind::Spec,
            value,
            formula: formula.into(),
            inputs: Vec::new(),
        }
    }

    /// A consistency check composed from other measurements of the run.
    pub(crate) fn composed(name: &'static str, value: f64, formula: impl Into<String>) -> Model {
        Model {
            kind: ModelKind::Composed,
            ..Model::spec(name, value, formula)
        }
    }

    /// Records an input, its value and where it came from. An input measured in this run makes
    /// a spec model a composed one.
    pub(crate) fn input(
        mut self,
        name: &str,
        value: impl Into<Value>,
        source: impl Into<Source>,
    ) -> Model {
        let source = source.into();
        if source.from_run && self.kind == ModelKind::Spec {
            self.kind = ModelKind::Composed;
        }
        self.inputs
            .push((name.to_string(), value.into(), source.text));
        self
    }

    /// Whether an input of that name is recorded.
    pub(crate) fn has_input(&self, name: &str) -> bool {
        self.inputs.iter().any(|(n, _, _)| n == name)
    }

    /// Takes `other`'s inputs that this model does not have yet.
    pub(crate) fn merge_inputs(&mut self, other: Model) {
        for (n, v, s) in other.inputs {
            if !self.has_input(&n) {
                self.inputs.push((n, v, s));
            }
        }
    }

    /// Records a figure as an input.
    pub(crate) fn figure(self, name: &str, f: &Figure) -> Model {
        self.input(name, round(f.value), f.source.clone())
    }

    /// The same model with its value scaled (per fault to per byte, ...).
    pub(crate) fn scaled(mut self, by: f64, how: &str) -> Model {
        self.value *= by;
        self.formula = format!("({}) {how}", self.formula);
        self
    }

    pub(crate) fn into_prediction(self) -> Prediction {
        let mut inputs = Map::new();
        let mut sources = Map::new();
        for (name, value, source) in self.inputs {
            inputs.insert(name.clone(), value);
            sources.insert(name, Value::String(source));
        }
        Prediction {
            kind: self.kind,
            formula: self.formula,
            sources,
            ..Prediction::new(self.value, self.name, inputs)
        }
    }
}

/// A model, or why there is none: which input is missing and how to supply it.
pub(crate) type Outcome = Result<Model, NoModel>;

oslab_core::reason! {
    /// Why a measurement has no prediction, or an input of one is unknown: a sentence for a
    /// person, stored with the run (`Measurement::no_model`) and shown beside the row.
    NoModel
}

/// Four significant digits, so inputs read as figures rather than float noise.
pub(crate) fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Starts what a model module answers for a metric it has no arm for, which the catalog says it
/// predicts: a bug, that the test walking the catalog finds.
pub(crate) const UNMODELLED: &str = "no model arm for";

/// What a model module answers for a metric it has no arm for.
pub(crate) fn unmodelled(m: &Measurement) -> NoModel {
    NoModel(format!("{UNMODELLED} {} {}", m.probe, m.metric))
}
