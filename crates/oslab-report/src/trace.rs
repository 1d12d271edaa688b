//! Timelines as Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one process,
//! one thread row per track, complete events ("ph": "X") in microseconds.

use oslab_core::model::TimelineEvent;
use serde_json::{json, Value};

/// Writes the trace of `events`, titled `name`, to `path` (whole or not at all).
pub fn write(
    path: &std::path::Path,
    name: &str,
    events: &[TimelineEvent],
) -> Result<(), oslab_files::FileError> {
    let bytes = chrome_trace(name, events).to_string();
    oslab_files::write_whole(path, bytes.as_bytes())
}

/// The trace document for `events`, titled `name`.
pub fn chrome_trace(name: &str, events: &[TimelineEvent]) -> Value {
    let mut tracks: Vec<&str> = Vec::new();
    for e in events {
        if !tracks.contains(&e.track.as_str()) {
            tracks.push(&e.track);
        }
    }
    let mut out = vec![json!({
        "ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": name}
    })];
    for (i, t) in tracks.iter().enumerate() {
        out.push(
            json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": i + 1, "args": {"name": t}}),
        );
        out.push(json!({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": i + 1, "args": {"sort_index": i}}));
    }
    for e in events {
        let tid = tracks.iter().position(|t| *t == e.track).unwrap_or(0) + 1;
        out.push(json!({
            "ph": "X",
            "name": e.kind,
            "cat": e.kind,
            "pid": 1,
            "tid": tid,
            "ts": e.start_ns / 1e3,
            "dur": e.dur_ns / 1e3,
            "args": Value::Object(e.args.clone()),
        }));
    }
    json!({"traceEvents": out, "displayTimeUnit": "ns"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::params;

    #[test]
    fn one_row_per_track_and_times_in_microseconds() {
        let ev = |track: &str, kind: &str, start: f64, dur: f64| TimelineEvent {
            track: track.into(),
            kind: kind.into(),
            start_ns: start,
            dur_ns: dur,
            args: params! {},
        };
        let doc = chrome_trace(
            "activity <cpu 1>",
            &[
                ev("cpu 1", "active", 0.0, 4000.0),
                ev("pid 7", "running", 4000.0, 1500.0),
            ],
        );
        let events = doc["traceEvents"].as_array().unwrap();
        let spans: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[1]["ts"], 4.0);
        assert_eq!(spans[1]["dur"], 1.5);
        assert_eq!(spans[1]["tid"], 2);
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cpu 1", "pid 7"]);
        // Text from the machine is carried as JSON strings, escaped by the serializer.
        assert_eq!(events[0]["args"]["name"], "activity <cpu 1>");
    }
}
