//! Runs as files: the versioned JSON document (`oslab.run/1`, described by
//! `schema/oslab.run.v1.schema.json`), CSV for spreadsheets, and reading a document back with
//! validation, so results from other machines can be merged into a store.

use crate::run::RunRecord;
use oslab_core::model::{Measurement, TimelineEvent};
use oslab_files::{reader_bounded, FileError, Links};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The schema id written into every document.
pub const SCHEMA_ID: &str = "oslab.run/1";

/// The JSON Schema of the document, as shipped in the repository.
pub const SCHEMA: &str = include_str!("../../../schema/oslab.run.v1.schema.json");

/// Largest document `import` reads.
pub const MAX_BYTES: u64 = 512 << 20;

/// One run as a document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunDocument {
    /// Always [`SCHEMA_ID`].
    pub schema: String,
    /// The run's metadata.
    pub run: RunRecord,
    /// Its measurements (with samples when kept).
    pub measurements: Vec<Measurement>,
    /// Its timeline.
    #[serde(default)]
    pub timeline: Vec<TimelineEvent>,
}

impl RunDocument {
    /// A document for a stored run.
    pub fn new(
        run: RunRecord,
        measurements: Vec<Measurement>,
        timeline: Vec<TimelineEvent>,
    ) -> Self {
        RunDocument {
            schema: SCHEMA_ID.into(),
            run,
            measurements,
            timeline,
        }
    }

    /// Keeps a run the store could not take in `$XDG_STATE_HOME/oslab/unsaved/`, to import
    /// later; returns the file's path, or it and why it could not be written.
    pub fn keep_unsaved(&self) -> Result<std::path::PathBuf, (std::path::PathBuf, String)> {
        let dir = oslab_files::paths::xdg_dir("XDG_STATE_HOME", ".local/state").join("unsaved");
        let file = dir.join(format!(
            "run-{}-{}.json",
            self.run.started.replace(':', ""),
            std::process::id()
        ));
        // The state directory may be the private one in a shared temp dir: made as such.
        let kept = oslab_files::paths::create_dir(&dir)
            .map_err(|e| e.to_string())
            .and_then(|_| serde_json::to_vec_pretty(self).map_err(|e| e.to_string()))
            .and_then(|b| oslab_files::write_whole(&file, &b).map_err(|e| e.to_string()));
        match kept {
            Ok(()) => Ok(file),
            Err(e) => Err((file, e)),
        }
    }
}

/// Why a document was refused.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not an oslab.run/1 document.
    #[error("does not follow the oslab.run/1 schema:\n{0}")]
    Schema(String),
}

/// The most problems a refused document lists.
const PROBLEMS: usize = 10;

/// The shipped schema, parsed once.
fn schema() -> &'static serde_json::Value {
    static PARSED: OnceLock<serde_json::Value> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(SCHEMA).expect("the shipped schema is valid JSON"))
}

/// Checks `value` against the schema; lists up to ten problems with where they are.
pub fn validate(value: &serde_json::Value) -> Result<(), ImportError> {
    let problems = crate::validate::check(schema(), value, PROBLEMS);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(schema_error(&problems))
    }
}

fn schema_error(problems: &[String]) -> ImportError {
    ImportError::Schema(
        problems
            .iter()
            .map(|p| format!("  {p}"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// What [`Streamed`] reads: the document's other members, its measurements and its events.
type Parts = (
    serde_json::Map<String, serde_json::Value>,
    Vec<Measurement>,
    Vec<TimelineEvent>,
);

/// A document read as it is parsed: the top-level members but the two arrays as values, the
/// arrays' elements checked one at a time against their definition (problems go to the cell,
/// at most [`PROBLEMS`]) and kept typed.
struct Streamed<'a>(&'a std::cell::RefCell<Vec<String>>);

impl<'de> serde::de::DeserializeSeed<'de> for Streamed<'_> {
    type Value = Parts;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Parts, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Streamed<'_> {
    type Value = Parts;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an oslab.run/1 document (a JSON object)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
        let (mut rest, mut measurements, mut timeline) = (serde_json::Map::new(), None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "measurements" | "timeline" if rest.contains_key(&key) => {
                    return Err(duplicate(&key));
                }
                "measurements" => {
                    measurements = Some(map.next_value_seed(Elements::new(
                        self.0,
                        "measurements",
                        "measurement",
                    ))?);
                    rest.insert(key, serde_json::Value::Array(Vec::new()));
                }
                "timeline" => {
                    timeline =
                        Some(map.next_value_seed(Elements::new(self.0, "timeline", "event"))?);
                    rest.insert(key, serde_json::Value::Array(Vec::new()));
                }
                _ => {
                    let v = map.next_value_seed(Strict)?;
                    if rest.insert(key.clone(), v).is_some() {
                        return Err(duplicate(&key));
                    }
                }
            }
        }
        Ok((
            rest,
            measurements.unwrap_or_default(),
            timeline.unwrap_or_default(),
        ))
    }
}

/// A JSON value read as `serde_json::Value` is, but an object that names a key twice is an
/// error (a Value keeps the last silently, and oslab never writes one: a duplicate is a file
/// edited or made by hand, which says so).
struct Strict;

impl<'de> serde::de::DeserializeSeed<'de> for Strict {
    type Value = serde_json::Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict)? {
            out.push(v);
        }
        Ok(out.into())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(Strict)?;
            if out.insert(key.clone(), v).is_some() {
                return Err(duplicate(&key));
            }
        }
        Ok(out.into())
    }
}

/// The error of a key named twice in one object.
fn duplicate<E: serde::de::Error>(key: &str) -> E {
    E::custom(format!(
        "the key {:?} appears twice in one object (oslab never writes that: the file was edited)",
        oslab_core::text::shortened(key, 40)
    ))
}

/// One of the document's arrays, read element by element.
struct Elements<'a, T> {
    problems: &'a std::cell::RefCell<Vec<String>>,
    /// The array's member name, and its elements' definition in the schema.
    name: &'static str,
    def: &'static str,
    kind: std::marker::PhantomData<T>,
}

impl<'a, T> Elements<'a, T> {
    fn new(
        problems: &'a std::cell::RefCell<Vec<String>>,
        name: &'static str,
        def: &'static str,
    ) -> Self {
        Elements {
            problems,
            name,
            def,
            kind: std::marker::PhantomData,
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> serde::de::DeserializeSeed<'de> for Elements<'_, T> {
    type Value = Vec<T>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: serde::de::DeserializeOwned> serde::de::Visitor<'de> for Elements<'_, T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "an array of {}s", self.def)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        use serde::de::Error;
        let most = schema()["properties"][self.name]["maxItems"]
            .as_u64()
            .unwrap_or(u64::MAX);
        let mut out = Vec::new();
        let mut i = 0u64;
        while let Some(v) = seq.next_element_seed(Strict)? {
            if i >= most {
                let at = format!("at /{}: more than {most} items", self.name);
                self.problems.borrow_mut().push(at);
                return Err(A::Error::custom("refused"));
            }
            let left = PROBLEMS - self.problems.borrow().len();
            let at = format!("/{}/{i}", self.name);
            i += 1;
            let found = crate::validate::check_def(schema(), self.def, &v, &at, left);
            if !found.is_empty() {
                let mut problems = self.problems.borrow_mut();
                problems.extend(found);
                if problems.len() >= PROBLEMS {
                    return Err(A::Error::custom("refused"));
                }
                continue;
            }
            out.push(serde_json::from_value(v).map_err(A::Error::custom)?);
        }
        Ok(out)
    }
}

/// Parses and validates a document: the schema, then the rules a schema cannot say (the same
/// a run keeps when `oslab run` stores it: [`RunRecord::check`], summaries that describe a
/// sample set).
///
/// The document is read element by element ([`Streamed`]): each measurement and timeline event
/// is checked against its definition as it is read and kept typed, so the parsed tree of the
/// whole file is never built (it took 4-15x the file's size).
pub fn parse(bytes: &[u8]) -> Result<RunDocument, ImportError> {
    parse_from(serde_json::Deserializer::from_slice(bytes))
}

/// [`parse`] of a document read as it is parsed (a file is never held whole: with the parsed
/// document beside it, a large import once took 8x the file's size).
pub fn parse_reader(reader: impl std::io::Read) -> Result<RunDocument, ImportError> {
    parse_from(serde_json::Deserializer::from_reader(reader))
}

fn parse_from<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<RunDocument, ImportError> {
    let problems = std::cell::RefCell::new(Vec::new());
    let read = serde::de::DeserializeSeed::deserialize(Streamed(&problems), &mut de)
        .and_then(|doc| de.end().map(|_| doc));
    let problems = problems.into_inner();
    if !problems.is_empty() {
        return Err(schema_error(&problems));
    }
    // JSON of the wrong shape (an array, a string where the measurements go) is JSON that
    // does not follow the schema, not "not JSON".
    let (rest, measurements, timeline) = read.map_err(|e| match e.is_data() {
        true => ImportError::Schema(format!("  {e}")),
        false => e.into(),
    })?;
    // The rest of the document (schema, run, unknown keys) against the whole schema, its
    // arrays empty: they were checked element by element.
    let rest = serde_json::Value::Object(rest);
    validate(&rest)?;
    let doc = RunDocument {
        schema: serde_json::from_value(rest["schema"].clone())?,
        run: serde_json::from_value(rest["run"].clone())?,
        measurements,
        timeline,
    };
    doc.run
        .check()
        .map_err(|e| ImportError::Schema(format!("  /run: {e}")))?;
    for (i, m) in doc.measurements.iter().enumerate() {
        if let Some(Err(e)) = m.summary.as_ref().map(|s| s.check()) {
            return Err(ImportError::Schema(format!(
                "  /measurements/{i}/summary: {e}"
            )));
        }
    }
    Ok(doc)
}

/// A document stored by [`import`].
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    /// The file it came from.
    pub file: std::path::PathBuf,
    /// Its id in this store.
    pub run: i64,
    /// It was in the store already (imported before, or exported from it): not stored again.
    pub already: bool,
    /// It completed a partial copy of itself the store kept (the run began there, then the store
    /// could not take its end, a full disk, and it was kept in a file): that run, now whole.
    pub completed: bool,
    /// Its id in the store it was exported from.
    pub from_run: Option<i64>,
    /// The machine it was measured on.
    pub host: String,
    /// Measurements it holds.
    pub measurements: usize,
    /// Timeline events it holds.
    pub timeline_events: usize,
    /// Probe ids it holds that this oslab's catalog does not know (a newer oslab's, or made
    /// up): stored as they are, and said.
    pub unknown_probes: Vec<String>,
}

impl std::fmt::Display for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let there = self.from_run.map_or("?".into(), |i| i.to_string());
        // The host name is the file's to say: on one line, nothing that acts on a terminal.
        let host = oslab_core::text::one_line(&self.host);
        let file = self.file.display().to_string();
        let file = oslab_core::text::one_line(&file);
        if self.already {
            return write!(
                f,
                "{file}: already in the store as run {} (host {host}, run {there} there): not imported again",
                self.run,
            );
        }
        write!(
            f,
            "imported {file} as run {} ({}, {}; host {host}, run {there} there){}",
            self.run,
            oslab_core::units::counted(self.measurements, "measurement"),
            oslab_core::units::counted(self.timeline_events, "timeline event"),
            if self.completed {
                ": the partial copy the store kept of it, now whole (not stored twice)"
            } else {
                ""
            }
        )?;
        if !self.unknown_probes.is_empty() {
            let ids: Vec<String> = self
                .unknown_probes
                .iter()
                .take(5)
                .map(|p| oslab_core::text::one_line(p).into_owned())
                .collect();
            write!(
                f,
                "; {} probe ids this oslab does not know ({}{}): stored as they are, without a model or a chart",
                self.unknown_probes.len(),
                ids.join(", "),
                if self.unknown_probes.len() > 5 { ", ..." } else { "" }
            )?;
        }
        Ok(())
    }
}

/// Reads and validates every file, one at a time (a document is parsed, checked and dropped):
/// all are documents, or the first that is not says why.
pub fn check_all(files: &[std::path::PathBuf]) -> Result<(), ImportFailed> {
    for f in files {
        read_file(f, Links::Follow).map_err(ImportFailed::Invalid)?;
    }
    Ok(())
}

/// Stores each file ([`check_all`] first, for all or nothing) as a new run, one transaction
/// each, reading it again: one document in memory at a time, not every file's at once (a legal
/// 452 MB file took 6-8 GB when all were held). A run the store holds already
/// ([`crate::Store::same_run`]) is not stored twice.
pub fn import(
    store: &mut crate::Store,
    files: &[std::path::PathBuf],
) -> Result<Vec<Imported>, ImportFailed> {
    let mut imported = Vec::new();
    for file in files {
        let doc = read_file(file, Links::Follow).map_err(ImportFailed::Invalid)?;
        let record = RunRecord {
            id: None,
            ..doc.run
        };
        let same = store.same_run(&record, &doc.measurements)?;
        let partial = match same {
            Some(_) => None,
            None => store.partial_copy(&record)?,
        };
        imported.push(Imported {
            file: file.clone(),
            already: same.is_some(),
            completed: partial.is_some(),
            run: match (same, partial) {
                (Some(id), _) => id,
                (None, Some(id)) => {
                    store.finish_run(id, &record, &doc.measurements, &doc.timeline)?;
                    id
                }
                (None, None) => store.save_run(&record, &doc.measurements, &doc.timeline)?,
            },
            from_run: doc.run.id,
            host: record.hostname,
            measurements: doc.measurements.len(),
            timeline_events: doc.timeline.len(),
            unknown_probes: doc
                .measurements
                .iter()
                .map(|m| m.probe.as_str())
                .filter(|p| oslab_core::catalog::entry(p).is_none())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(str::to_string)
                .collect(),
        });
    }
    Ok(imported)
}

/// Why [`check_all`] or [`import`] stored nothing, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportFailed {
    /// A file is not a valid document: nothing was stored.
    #[error("{0}\nNothing was imported.")]
    Invalid(FileError),
    /// The store refused a run (those before it are stored).
    #[error(transparent)]
    Store(#[from] crate::StoreError),
}

/// Reads and validates one oslab.run/1 document from a file: a regular file of at most
/// [`MAX_BYTES`], read without ever reading more.
pub fn read_file(path: &std::path::Path, links: Links) -> Result<RunDocument, FileError> {
    let reader = reader_bounded(path, MAX_BYTES, links).map_err(|e| {
        FileError(format!(
            "{e} (an oslab export is a regular file of at most {} MiB)",
            MAX_BYTES >> 20
        ))
    })?;
    parse_reader(reader).map_err(|e| FileError(format!("{}: {e}", path.display())))
}

/// Columns every row has, before the parameters: the run, then what was measured.
const RUN_COLUMNS: [&str; 6] = ["run", "host", "started", "repetition", "probe", "metric"];

/// One value of a parameter or finding, as a data frame should read it: a number (a share like
/// "100%" as the fraction 1), a text, or a text with a share ("thp 100%": "thp" and 1).
enum Cell {
    Empty,
    Number(String),
    Text(String),
    Labelled(String, String),
}

/// "100%" as "1", "37.5%" as "0.375".
fn share(s: &str) -> Option<String> {
    let p: f64 = s.strip_suffix('%')?.parse().ok()?;
    Some((p / 100.0).to_string())
}

/// `v` as a cell; a string that reads as a number is one where `numeric_strings` (a key whose
/// texts are no lists: `pause` "2000", not `cpus` "1" beside "1,0").
fn classify(v: Option<&serde_json::Value>, numeric_strings: bool) -> Cell {
    match v {
        None | Some(serde_json::Value::Null) => Cell::Empty,
        Some(serde_json::Value::Number(n)) => Cell::Number(n.to_string()),
        Some(serde_json::Value::String(s)) => match (share(s), s.rsplit_once(' ')) {
            (Some(f), _) => Cell::Number(f),
            _ if numeric_strings && s.parse::<f64>().is_ok_and(f64::is_finite) => {
                Cell::Number(s.clone())
            }
            (None, Some((word, p))) if share(p).is_some() => {
                Cell::Labelled(word.to_string(), share(p).unwrap_or_default())
            }
            _ => Cell::Text(s.clone()),
        },
        Some(v) => Cell::Text(v.to_string()),
    }
}

/// A key's columns: `name` (its numbers; its texts where it has no numbers), `name_text` (the
/// texts of a key that also has numbers: `args` 0..7 and "0-7", `pause` 2000 and "idle"), and
/// `name_share` (the share of a labelled text: `found_pages` "thp 100%" is "thp" and 1), so a
/// data frame reads every column of numbers as numbers (the README's export paragraph).
struct Column {
    key: String,
    name: String,
    found: bool,
    numeric_strings: bool,
    split_text: bool,
    share: bool,
}

impl Column {
    fn of(ms: &[Measurement], key: &str, name: String, found: bool) -> Column {
        let value = |m: &'_ Measurement| -> Option<serde_json::Value> {
            match found {
                true => m.context.get(key).cloned(),
                false => m.params.get(key).cloned(),
            }
        };
        let numeric_strings = !ms
            .iter()
            .any(|m| value(m).is_some_and(|v| v.as_str().is_some_and(|s| s.contains(','))));
        let (mut numbers, mut texts, mut labelled) = (false, false, false);
        for m in ms {
            match classify(value(m).as_ref(), numeric_strings) {
                Cell::Number(_) => numbers = true,
                Cell::Text(_) => texts = true,
                Cell::Labelled(..) => labelled = true,
                Cell::Empty => {}
            }
        }
        Column {
            key: key.to_string(),
            name,
            found,
            numeric_strings,
            split_text: numbers && (texts || labelled),
            share: labelled,
        }
    }

    fn names(&self) -> Vec<String> {
        let mut out = vec![self.name.clone()];
        if self.split_text {
            out.push(format!("{}_text", self.name));
        }
        if self.share {
            out.push(format!("{}_share", self.name));
        }
        out
    }

    fn cells(&self, m: &Measurement) -> Vec<String> {
        let v = match self.found {
            true => m.context.get(&self.key),
            false => m.params.get(&self.key),
        };
        let (main, text, share) = match classify(v, self.numeric_strings) {
            Cell::Empty => (String::new(), String::new(), String::new()),
            Cell::Number(n) => (n, String::new(), String::new()),
            Cell::Text(t) if self.split_text => (String::new(), t, String::new()),
            Cell::Text(t) => (t, String::new(), String::new()),
            Cell::Labelled(w, f) if self.split_text => (String::new(), w, f),
            Cell::Labelled(w, f) => (w, String::new(), f),
        };
        let mut out = vec![main];
        if self.split_text {
            out.push(text);
        }
        if self.share {
            out.push(share);
        }
        out
    }
}

/// A measurement's columns beside the run's: its parameters (what was asked: a join on them
/// matches what was measured alike), then what was found while measuring (the context: pages
/// placed, a parent's resident size), each named `found_KEY`. A parameter key that is also a
/// fixed column gets a `param_` prefix.
struct KeyColumns {
    columns: Vec<Column>,
}

impl KeyColumns {
    fn of(ms: &[Measurement], fixed: &[&str]) -> KeyColumns {
        let params: std::collections::BTreeSet<&String> =
            ms.iter().flat_map(|m| m.params.keys()).collect();
        let found: std::collections::BTreeSet<&String> =
            ms.iter().flat_map(|m| m.context.keys()).collect();
        let params = params.into_iter().map(|k| {
            let name = match fixed.contains(&k.as_str()) {
                true => format!("param_{k}"),
                false => k.clone(),
            };
            Column::of(ms, k, name, false)
        });
        let found = found
            .into_iter()
            .map(|k| Column::of(ms, k, format!("found_{k}"), true));
        KeyColumns {
            columns: params.chain(found).collect(),
        }
    }

    fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.columns.iter().flat_map(Column::names)
    }

    fn cells<'a>(&'a self, m: &'a Measurement) -> impl Iterator<Item = String> + 'a {
        self.columns.iter().flat_map(move |c| c.cells(m))
    }
}

fn row(fields: impl IntoIterator<Item = String>) -> String {
    let cells: Vec<String> = fields.into_iter().map(|f| csv_field(&f)).collect();
    cells.join(",") + "\n"
}

/// The measurements as tidy CSV: one row per measurement; the run, host and start time; one
/// column per parameter (numbers as numbers; empty where a measurement lacks it); status and
/// its reason apart; the summary, prediction and note.
pub fn csv(run: &RunRecord, ms: &[Measurement]) -> String {
    const MEASURED: [&str; 21] = [
        "unit",
        "status",
        "reason",
        "n",
        "min",
        "p25",
        "median",
        "p75",
        "max",
        "mean",
        "stddev",
        "ci_low",
        "ci_high",
        "p90",
        "p99",
        "p999",
        // TSC ticks, not core cycles (the JSON document's `cycles` field, which oslab.run/1
        // keeps): the core clock is measured apart.
        "tsc_ticks",
        "predicted",
        "model",
        "no_model",
        "note",
    ];
    let fixed: Vec<&str> = RUN_COLUMNS.iter().chain(&MEASURED).copied().collect();
    let keys = KeyColumns::of(ms, &fixed);
    let mut out = row(RUN_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(keys.names())
        .chain(MEASURED.iter().map(|c| c.to_string())));
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for m in ms {
        let s = m.summary.as_ref();
        let measured = [
            csv_unit(m.unit).to_string(),
            m.status.word().to_string(),
            // Why it was skipped or failed, or the cause of its noise.
            match &m.status {
                oslab_core::Status::Noisy(cause) => cause.word().to_string(),
                s => s.reason().unwrap_or_default().to_string(),
            },
            s.map(|s| s.n.to_string()).unwrap_or_default(),
            num(s.map(|s| s.min)),
            num(s.map(|s| s.p25)),
            num(s.map(|s| s.median)),
            num(s.map(|s| s.p75)),
            num(s.map(|s| s.max)),
            num(s.map(|s| s.mean)),
            num(s.map(|s| s.stddev)),
            num(s.map(|s| s.ci_low)),
            num(s.map(|s| s.ci_high)),
            num(s.and_then(|s| s.p90)),
            num(s.and_then(|s| s.p99)),
            num(s.and_then(|s| s.p999)),
            num(m.cycles),
            num(m.prediction.as_ref().map(|p| p.value)),
            m.prediction
                .as_ref()
                .map(|p| format!("{} ({}): {}", p.model, p.kind.name(), p.formula))
                .unwrap_or_default(),
            m.no_model.clone().unwrap_or_default(),
            m.note.clone().unwrap_or_default(),
        ];
        out.push_str(&row(run_cells(run, m)
            .into_iter()
            .chain(keys.cells(m))
            .chain(measured)));
    }
    out
}

fn run_cells(run: &RunRecord, m: &Measurement) -> [String; 6] {
    [
        run.id.map(|i| i.to_string()).unwrap_or_default(),
        run.hostname.clone(),
        run.started.clone(),
        m.repetition.to_string(),
        m.probe.clone(),
        m.metric.clone(),
    ]
}

/// The samples as long CSV: one row per sample, with the run, the measurement's parameters,
/// metric and unit, the sample's index and value (measurements stored without samples have none).
pub fn csv_samples(run: &RunRecord, ms: &[Measurement]) -> String {
    const SAMPLE: [&str; 3] = ["unit", "sample", "value"];
    let fixed: Vec<&str> = RUN_COLUMNS.iter().chain(&SAMPLE).copied().collect();
    let keys = KeyColumns::of(ms, &fixed);
    let mut out = row(RUN_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(keys.names())
        .chain(SAMPLE.iter().map(|c| c.to_string())));
    for m in ms {
        for (i, v) in m.samples.iter().flatten().enumerate() {
            out.push_str(&row(run_cells(run, m)
                .into_iter()
                .chain(keys.cells(m))
                .chain([csv_unit(m.unit).to_string(), i.to_string(), v.to_string()])));
        }
    }
    out
}

/// A unit as a CSV column spells it for a person or pandas: `GB/s`, not the stored `gbps` (read
/// as gigabits); a share is a fraction of 1, as its values are.
fn csv_unit(u: oslab_core::model::Unit) -> &'static str {
    use oslab_core::model::Unit;
    match u {
        Unit::Ns => "ns",
        Unit::Cycles => "cycles",
        Unit::GBps => "GB/s",
        Unit::Bytes => "bytes",
        Unit::Count => "count",
        Unit::Hz => "Hz",
        Unit::Ratio => "ratio",
        Unit::Share => "fraction",
    }
}

/// A CSV field: on one line with nothing in it that acts on a terminal (control characters and
/// line breaks escaped, [`oslab_core::text::one_line`]: a host name or tag from an imported run
/// cannot forge a row or move the cursor), quoted when it holds a comma or quote (RFC 4180). A
/// text that a spreadsheet would take for a formula (a leading `=`, `+`, `-`, `@`) gets a leading
/// apostrophe, the common convention; numbers stay numbers.
fn csv_field(s: &str) -> String {
    let s = oslab_core::text::one_line(s);
    let formula = s.starts_with(['=', '+', '-', '@']) && s.parse::<f64>().is_err();
    let s = if formula {
        format!("'{s}")
    } else {
        s.into_owned()
    };
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_imported_host_name_is_said_on_one_line_and_never_obeyed() {
        let mut i = Imported {
            file: "run\n.json".into(),
            run: 1,
            already: false,
            completed: false,
            from_run: None,
            host: "evil\nrun 99 stored: all good\u{1b}[2J".into(),
            measurements: 3,
            timeline_events: 0,
            unknown_probes: vec!["probe\nline\u{1b}[2J".into()],
        };
        for already in [false, true] {
            i.already = already;
            let said = i.to_string();
            assert_eq!(said.lines().count(), 1, "{said}");
            assert!(!said.contains('\u{1b}'), "{said}");
        }
    }
    use crate::run::RunStatus;
    use oslab_core::model::{Status, Unit};
    use oslab_core::{params, Summary};

    #[test]
    fn a_field_a_spreadsheet_would_run_is_neutralised_and_numbers_stay() {
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("+cmd"), "'+cmd");
        assert_eq!(csv_field("-0.25"), "-0.25");
        assert_eq!(csv_field("1e-9"), "1e-9");
        assert_eq!(csv_field("plain, text"), "\"plain, text\"");
    }

    fn doc() -> RunDocument {
        let mut m = Measurement::not_taken(
            "x.y",
            params! {"cpu" => 1},
            "per_call",
            Unit::Ns,
            Status::Ok,
        );
        m.summary = Summary::new(&[1.0, 2.0, 3.0]);
        m.samples = Some(vec![1.0, 2.0, 3.0]);
        m.note = Some("a, \"quoted\" note".into());
        let skipped = Measurement::not_taken(
            "x.z",
            params! {},
            "per_call",
            Unit::Ns,
            Status::Skipped("needs 2 cpus".into()),
        );
        let run = RunRecord {
            id: Some(4),
            started: "2026-01-01T00:00:00Z".into(),
            finished: "2026-01-01T00:00:01Z".into(),
            status: RunStatus::Complete,
            oslab_version: "0.1.0".into(),
            git_rev: None,
            command: "oslab run".into(),
            hostname: "elsewhere".into(),
            quick: true,
            wall_s: 1.0,
            fingerprint: serde_json::json!({"cpu_model": "x"}),
            environment: serde_json::json!({"warnings": []}),
            tags: Default::default(),
        };
        RunDocument::new(run, vec![m, skipped], vec![])
    }

    #[test]
    fn a_document_round_trips_through_the_schema() {
        let bytes = serde_json::to_vec(&doc()).unwrap();
        let back = parse(&bytes).unwrap();
        assert_eq!(back.measurements, doc().measurements);
        assert_eq!(back.run.hostname, "elsewhere");
    }

    #[test]
    fn malformed_documents_say_what_is_wrong_and_where() {
        assert!(matches!(parse(b"{not json"), Err(ImportError::Json(_))));
        // JSON of another shape is refused by the schema, not called "not JSON".
        assert!(matches!(parse(b"[1, 2]"), Err(ImportError::Schema(_))));
        assert!(matches!(
            parse(br#"{"schema": "oslab.run/1", "measurements": 5}"#),
            Err(ImportError::Schema(_))
        ));
        let mut v = serde_json::to_value(doc()).unwrap();
        v["measurements"][0]["unit"] = "furlongs".into();
        v["run"]["status"] = "maybe".into();
        let e = validate(&v).unwrap_err().to_string();
        assert!(
            e.contains("/measurements/0/unit") && e.contains("/run/status"),
            "{e}"
        );
        let mut v = serde_json::to_value(doc()).unwrap();
        v["schema"] = "oslab.run/2".into();
        assert!(validate(&v).is_err());
        // A skipped measurement must say why.
        let mut v = serde_json::to_value(doc()).unwrap();
        v["measurements"][1]
            .as_object_mut()
            .unwrap()
            .remove("reason");
        assert!(validate(&v).is_err());
    }

    #[test]
    fn csv_is_tidy_and_quotes_what_needs_quoting() {
        let d = doc();
        let text = csv(&d.run, &d.measurements);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0]
                .starts_with("run,host,started,repetition,probe,metric,cpu,unit,status,reason,n,"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("4,elsewhere,2026-01-01T00:00:00Z,1,x.y,per_call,1,ns,ok,,3,1,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].ends_with("\"a, \"\"quoted\"\" note\""),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains(",skipped,needs 2 cpus,"), "{}", lines[2]);
        // What was found while measuring is apart from what was asked: a join on the
        // parameters matches measurements asked alike.
        let mut f = doc();
        f.measurements[0] = f.measurements[0].clone().found("pages", "thp 91%");
        let text = csv(&f.run, &f.measurements);
        let header = text.lines().next().unwrap();
        // A labelled share is its label and the fraction, so a data frame reads a number.
        assert!(
            header.contains(",metric,cpu,found_pages,found_pages_share,unit,")
                && !header.contains(",pages,"),
            "{header}"
        );
        assert!(
            text.lines().nth(1).unwrap().contains(",1,thp,0.91,ns,"),
            "{text}"
        );
        // One row per sample in the long form.
        let long = csv_samples(&d.run, &d.measurements);
        let n = d.measurements[0].samples.as_ref().map_or(0, Vec::len);
        assert_eq!(long.lines().count(), 1 + n, "{long}");
        assert!(long
            .lines()
            .next()
            .unwrap()
            .ends_with("cpu,unit,sample,value"));
    }

    #[test]
    fn a_hostile_host_name_stays_in_its_field_of_one_row() {
        let mut d = doc();
        d.run.hostname = "evil\n9,forged,row\u{1b}[2J\r=cmd".into();
        d.measurements[0].note = Some("-2+3 \u{202e}txt".into());
        let text = csv(&d.run, &d.measurements);
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(!text.contains('\u{202e}'), "{text:?}");
        let row = text.lines().nth(1).unwrap();
        assert!(
            row.contains(r#""evil\n9,forged,row\u{1b}[2J\r=cmd""#),
            "{row}"
        );
        assert!(row.ends_with(r"'-2+3 \u{202e}txt"), "{row}");
    }
}
