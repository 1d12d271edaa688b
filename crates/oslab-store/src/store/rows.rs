//! A run's rows: the record, measurements and timeline written to and read from SQL.

use super::*;
use oslab_core::reason::BadValue;

/// Inserts the run row; `pid` marks a run being written by this process.
pub(crate) fn insert_run(
    tx: &rusqlite::Transaction,
    run: &RunRecord,
    pid: Option<u32>,
) -> Result<i64, StoreError> {
    run.check()
        .map_err(|BadValue(why)| StoreError::Refused(why))?;
    tx.execute(
        "INSERT INTO runs (started, finished, status, oslab_version, git_rev, command, hostname, quick, wall_s, fingerprint, environment, pid, boot_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            run.started,
            run.finished,
            run.status.as_str(),
            run.oslab_version,
            run.git_rev,
            run.command,
            run.hostname,
            run.quick,
            run.wall_s,
            run.fingerprint.to_string(),
            run.environment.to_string(),
            pid,
            pid.and_then(|_| oslab_files::processes::boot_id()),
        ],
    )?;
    let id = tx.last_insert_rowid();
    let mut tag = tx.prepare("INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)")?;
    for (k, v) in &run.tags {
        tag.execute(params![id, k, v])?;
    }
    Ok(id)
}

/// Inserts measurements (and their predictions) with sequence numbers from `first_seq`.
pub(crate) fn insert_measurements(
    tx: &rusqlite::Transaction,
    run_id: i64,
    first_seq: i64,
    measurements: &[Measurement],
) -> Result<(), StoreError> {
    let mut ins = tx.prepare(
        "INSERT INTO measurements (run_id, seq, probe, params, metric, unit, n, min, p25, median, p75, max, mean, stddev,
         ci_low, ci_high, outliers, cycles, batch, overhead, status, note, samples, difference, attempts, repetition, context, no_model, p90, p99, p999)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)",
    )?;
    let mut pred = tx.prepare(
        "INSERT INTO predictions (measurement_id, value, model, inputs, kind, formula, sources, gap)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (seq, m) in measurements.iter().enumerate() {
        let s = m.summary.as_ref();
        ins.execute(params![
            run_id,
            first_seq + seq as i64,
            m.probe,
            serde_json::Value::Object(m.params.clone()).to_string(),
            m.metric,
            m.unit.name(),
            s.map(|s| s.n as i64),
            s.map(|s| s.min),
            s.map(|s| s.p25),
            s.map(|s| s.median),
            s.map(|s| s.p75),
            s.map(|s| s.max),
            s.map(|s| s.mean),
            s.map(|s| s.stddev),
            s.map(|s| s.ci_low),
            s.map(|s| s.ci_high),
            s.map(|s| s.outliers as i64),
            m.cycles,
            m.batch.map(|b| b as i64),
            m.overhead,
            m.status.to_string(),
            m.note,
            m.samples.as_deref().map(encode_samples),
            m.difference,
            m.attempts,
            m.repetition,
            (!m.context.is_empty())
                .then(|| serde_json::Value::Object(m.context.clone()).to_string()),
            m.no_model,
            s.and_then(|s| s.p90),
            s.and_then(|s| s.p99),
            s.and_then(|s| s.p999),
        ])?;
        if let Some(p) = &m.prediction {
            pred.execute(params![
                tx.last_insert_rowid(),
                p.value,
                p.model,
                serde_json::Value::Object(p.inputs.clone()).to_string(),
                p.kind.name(),
                p.formula,
                (!p.sources.is_empty())
                    .then(|| serde_json::Value::Object(p.sources.clone()).to_string()),
                p.gap,
            ])?;
        }
    }
    Ok(())
}

pub(crate) fn insert_timeline(
    tx: &rusqlite::Transaction,
    run_id: i64,
    timeline: &[TimelineEvent],
) -> Result<(), StoreError> {
    let mut ev = tx.prepare(
        "INSERT INTO timeline (run_id, seq, track, kind, start_ns, dur_ns, args) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (seq, e) in timeline.iter().enumerate() {
        ev.execute(params![
            run_id,
            seq as i64,
            e.track,
            e.kind.name(),
            e.start_ns,
            e.dur_ns,
            (!e.args.is_empty()).then(|| serde_json::Value::Object(e.args.clone()).to_string()),
        ])?;
    }
    Ok(())
}

pub(crate) fn parse_json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or(serde_json::Value::Null)
}

pub(crate) fn parse_map(s: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        _ => Err(format!("expected a JSON object, found {s:?}")),
    }
}

/// A measurement from a row of the run's measurements joined to their predictions, its
/// columns read by name (a column added to the query cannot shift the others).
pub(crate) fn read_measurement(r: &Row) -> rusqlite::Result<Result<Measurement, String>> {
    let n: Option<i64> = r.get("n")?;
    let summary = match n {
        Some(n) => Some(Summary {
            n: n as usize,
            min: r.get("min")?,
            p25: r.get("p25")?,
            median: r.get("median")?,
            p75: r.get("p75")?,
            max: r.get("max")?,
            mean: r.get("mean")?,
            stddev: r.get("stddev")?,
            ci_low: r.get("ci_low")?,
            ci_high: r.get("ci_high")?,
            outliers: r.get::<_, i64>("outliers")? as usize,
            p90: r.get("p90")?,
            p99: r.get("p99")?,
            p999: r.get("p999")?,
        }),
        None => None,
    };
    let unit_name: String = r.get("unit")?;
    let params_text: String = r.get("params")?;
    let prediction = match r.get::<_, Option<f64>>(21)? {
        Some(value) => Some((
            value,
            r.get::<_, String>("p_model")?,
            r.get::<_, String>("p_inputs")?,
        )),
        None => None,
    };
    let samples: Option<Vec<u8>> = r.get("samples")?;
    let probe: String = r.get("probe")?;
    let metric: String = r.get("metric")?;
    let cycles = r.get("cycles")?;
    let batch = r.get::<_, Option<i64>>(16)?.map(|b| b as u64);
    let overhead = r.get("overhead")?;
    let status = Status::parse(&r.get::<_, String>("status")?);
    let note = r.get("note")?;
    let difference = r.get("difference")?;
    let attempts = r.get("attempts")?;
    let repetition = r.get("repetition")?;
    let context: Option<String> = r.get("context")?;
    let kind: Option<String> = r.get("p_kind")?;
    let formula: Option<String> = r.get("p_formula")?;
    let sources: Option<String> = r.get("p_sources")?;
    let gap: Option<String> = r.get("p_gap")?;
    let no_model: Option<String> = r.get("no_model")?;
    Ok((|| {
        let unit =
            Unit::from_name(&unit_name).ok_or_else(|| format!("unknown unit {unit_name:?}"))?;
        let prediction = match prediction {
            Some((value, model, inputs)) => Some(Prediction {
                value,
                model,
                inputs: parse_map(&inputs)?,
                kind: ModelKind::from_name(kind.as_deref().unwrap_or_default()),
                formula: formula.unwrap_or_default(),
                sources: match sources {
                    Some(s) => parse_map(&s)?,
                    None => Map::new(),
                },
                gap,
            }),
            None => None,
        };
        Ok(Measurement {
            probe,
            params: parse_map(&params_text)?,
            metric,
            unit,
            summary,
            cycles,
            batch,
            overhead,
            status,
            note,
            prediction,
            no_model,
            samples: samples.map(|b| decode_samples(&b)),
            difference,
            attempts,
            repetition,
            context: match context {
                Some(c) => parse_map(&c)?,
                None => Map::new(),
            },
        })
    })())
}

/// Samples are stored as little-endian f64s: compact, exact, and readable from any language.
fn encode_samples(s: &[f64]) -> Vec<u8> {
    s.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_samples(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}
