//! The Standard Workload Format (SWF, Feitelson's Parallel Workloads Archive): one job per line,
//! 18 whitespace-separated fields, `-1` for unknown, `;` comment lines. Read as a stream (a trace
//! of millions of jobs never sits in memory as text), every field checked, errors with their line
//! number.

use std::io::{BufRead, Write};

/// One job of a trace (the fields oslab uses are named; all 18 are kept in order).
#[derive(Debug, Clone, PartialEq)]
pub struct SwfJob {
    /// The 18 fields, in file order (unknown = -1).
    pub fields: [f64; 18],
}

/// Field names, in order (for messages and writing headers).
pub const FIELDS: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average cpu time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job",
    "think time",
];

impl SwfJob {
    /// Job number (field 1).
    pub fn id(&self) -> u64 {
        self.fields[0] as u64
    }
    /// Submit time in seconds (field 2).
    pub fn submit(&self) -> f64 {
        self.fields[1]
    }
    /// Run time in seconds (field 4), when known.
    pub fn run_time(&self) -> Option<f64> {
        Some(self.fields[3]).filter(|&v| v >= 0.0)
    }
    /// Requested processors (field 8), else allocated (field 5).
    pub fn processors(&self) -> Option<usize> {
        [self.fields[7], self.fields[4]]
            .into_iter()
            .find(|&v| v > 0.0)
            .map(|v| v as usize)
    }
    /// Executable number (field 14): oslab writes the job kind here.
    pub fn executable(&self) -> Option<u64> {
        Some(self.fields[13])
            .filter(|&v| v >= 0.0)
            .map(|v| v as u64)
    }
}

/// A problem at a line of a trace.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("line {line}: {what}")]
pub struct SwfError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// The longest time a trace field may hold (about 31 years; real traces span a few).
pub const MAX_SECONDS: f64 = 1e9;
/// The most processors a job may use or ask for.
pub const MAX_PROCESSORS: f64 = 1e7;

/// The longest line read (a job line is about 100 bytes; a header comment a few hundred): a
/// longer one is an error, not an allocation.
pub const MAX_LINE: usize = 64 << 10;

/// Parses one non-comment line.
pub fn parse_line(text: &str, line: usize) -> Result<SwfJob, SwfError> {
    let err = |what: String| SwfError { line, what };
    let parts: Vec<&str> = text.split_whitespace().collect();
    if parts.len() != 18 {
        return Err(err(format!(
            "{} fields, an SWF job line has 18",
            parts.len()
        )));
    }
    let mut fields = [0.0; 18];
    for (i, p) in parts.iter().enumerate() {
        let v: f64 = p.parse().map_err(|_| {
            err(format!(
                "field {} ({}) is {p:?}, not a number",
                i + 1,
                FIELDS[i]
            ))
        })?;
        if !v.is_finite() || (v < 0.0 && v != -1.0) {
            return Err(err(format!(
                "field {} ({}) is {p}: values are >= 0, or -1 for unknown",
                i + 1,
                FIELDS[i]
            )));
        }
        fields[i] = v;
    }
    if fields[0] < 1.0 {
        return Err(err("field 1 (job number) must be a positive number".into()));
    }
    // Beyond these a trace is corrupt, not large: replaying it would never end.
    for (i, max, what) in [
        (1, MAX_SECONDS, "s"),
        (2, MAX_SECONDS, "s"),
        (3, MAX_SECONDS, "s"),
        (4, MAX_PROCESSORS, "processors"),
        (7, MAX_PROCESSORS, "processors"),
    ] {
        if fields[i] > max {
            return Err(err(format!(
                "field {} ({}) is {} {what}: at most {max:e} {what} is replayed",
                i + 1,
                FIELDS[i],
                parts[i]
            )));
        }
    }
    if fields[1] < 0.0 {
        return Err(err(
            "field 2 (submit time) is unknown; oslab needs it to replay the trace".into(),
        ));
    }
    Ok(SwfJob { fields })
}

/// What a trace's header comments say: the Parallel Workloads Archive's standard fields oslab
/// uses, and whether `oslab cpuman workload` wrote it (then field 14 is the job kind).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    /// `; MaxProcs:` the machine's processors.
    pub max_procs: Option<u64>,
    /// `; MaxNodes:` the machine's nodes.
    pub max_nodes: Option<u64>,
    /// Written by `oslab cpuman workload`.
    pub oslab: bool,
}

/// The text oslab's traces carry in their header, by which they are recognised.
pub const OSLAB_MARK: &str = "oslab cpuman workload";

/// Reads the header: the comment lines before the first job.
pub fn header(input: impl BufRead) -> Header {
    let mut h = Header::default();
    for line in oslab_files::lines(input, MAX_LINE).map_while(Result::ok) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let Some(comment) = t.strip_prefix(';') else {
            break;
        };
        h.oslab |= comment.contains(OSLAB_MARK);
        let Some((key, value)) = comment.split_once(':') else {
            continue;
        };
        let number = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&v| v > 0);
        match key.trim() {
            "MaxProcs" => h.max_procs = number,
            "MaxNodes" => h.max_nodes = number,
            _ => {}
        }
    }
    h
}

/// Streams the jobs of a trace; stops at the first error. Submit times must not go backwards.
pub fn read(input: impl BufRead) -> impl Iterator<Item = Result<SwfJob, SwfError>> {
    let mut last_submit = 0.0f64;
    let mut failed = false;
    oslab_files::lines(input, MAX_LINE)
        .enumerate()
        .filter_map(move |(i, l)| {
            if failed {
                return None;
            }
            let line = i + 1;
            let result = match l {
                Err(e) => Err(SwfError {
                    line,
                    what: format!("cannot read: {e}"),
                }),
                Ok(text) => {
                    let t = text.trim();
                    if t.is_empty() || t.starts_with(';') {
                        return None;
                    }
                    parse_line(t, line).and_then(|j| {
                        if j.submit() < last_submit {
                            Err(SwfError {
                                line,
                                what: format!(
                                    "submit time {} is before the previous job's ({last_submit})",
                                    j.submit()
                                ),
                            })
                        } else {
                            last_submit = j.submit();
                            Ok(j)
                        }
                    })
                }
            };
            failed = result.is_err();
            Some(result)
        })
}

/// Writes jobs as SWF: the standard header (version, job count, start time, the machine's
/// processors), then `note` as `; Note:` lines, then one line per job.
pub fn write(
    mut out: impl Write,
    max_procs: usize,
    note: &str,
    jobs: &[SwfJob],
) -> std::io::Result<()> {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    writeln!(out, "; Version: 2.2")?;
    writeln!(out, "; MaxJobs: {}", jobs.len())?;
    writeln!(out, "; MaxRecords: {}", jobs.len())?;
    writeln!(out, "; UnixStartTime: {start}")?;
    writeln!(out, "; MaxProcs: {max_procs}")?;
    for l in note.lines() {
        writeln!(out, "; Note: {l}")?;
    }
    for j in jobs {
        let fields: Vec<String> = j
            .fields
            .iter()
            .map(|v| {
                if v.fract() == 0.0 {
                    format!("{}", *v as i64)
                } else {
                    // The shortest text that reads back as the same number.
                    format!("{v}")
                }
            })
            .collect();
        writeln!(out, "{}", fields.join(" "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes_beyond_sane_bounds_are_refused_with_the_line() {
        let ok = "1 0 -1 5 1 -1 -1 2 -1 -1 1 -1 -1 2 -1 -1 -1 -1";
        assert!(parse_line(ok, 1).is_ok());
        for (bad, field) in [
            (
                "1 1e300 -1 5 1 -1 -1 2 -1 -1 1 -1 -1 2 -1 -1 -1 -1",
                "field 2",
            ),
            (
                "1 0 -1 1e12 1 -1 -1 2 -1 -1 1 -1 -1 2 -1 -1 -1 -1",
                "field 4",
            ),
            (
                "1 0 -1 5 1 -1 -1 1e9 -1 -1 1 -1 -1 2 -1 -1 -1 -1",
                "field 8",
            ),
        ] {
            let e = parse_line(bad, 7).unwrap_err().to_string();
            assert!(
                e.contains(field) && e.contains('7') && e.contains("at most"),
                "{e}"
            );
        }
    }

    const TRACE: &str = "; a comment\n\n1 0 5 100 32 -1 -1 32 200 -1 1 1 1 1 1 -1 -1 -1\n2 10.5 0 50 -1 -1 -1 2 60 -1 1 1 1 4 1 -1 -1 -1\n";

    #[test]
    fn a_trace_streams_jobs_and_round_trips() {
        let jobs: Vec<SwfJob> = read(TRACE.as_bytes()).collect::<Result<_, _>>().unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            (jobs[0].id(), jobs[0].processors(), jobs[0].run_time()),
            (1, Some(32), Some(100.0))
        );
        assert_eq!(
            (jobs[1].submit(), jobs[1].processors(), jobs[1].executable()),
            (10.5, Some(2), Some(4))
        );
        let mut out = Vec::new();
        write(&mut out, 64, "written by a test", &jobs).unwrap();
        let back: Vec<SwfJob> = read(out.as_slice()).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, jobs);
        let text = String::from_utf8(out.clone()).unwrap();
        for said in [
            "; Version: 2.2\n",
            "; MaxJobs: 2\n",
            "; UnixStartTime: ",
            "; MaxProcs: 64\n",
        ] {
            assert!(text.contains(said), "{said:?} in {text}");
        }
        let h = header(out.as_slice());
        assert_eq!((h.max_procs, h.max_nodes, h.oslab), (Some(64), None, false));
    }

    #[test]
    fn an_archive_header_gives_the_machine() {
        let text = "; Version: 2\n;  Computer: IBM SP2\n;     MaxNodes: 128\n;     MaxProcs: 430 (plus 2 spares)\n; Note: oslab cpuman workload: mix W1\n1 0 5 100 32 -1 -1 32 200 -1 1 1 1 1 1 -1 -1 -1\n; MaxProcs: 9\n";
        let h = header(text.as_bytes());
        assert_eq!(
            (h.max_procs, h.max_nodes, h.oslab),
            (Some(430), Some(128), true)
        );
        assert_eq!(
            header("1 0 5 100 32 -1 -1 32 200 -1 1 1 1 1 1 -1 -1 -1\n".as_bytes()),
            Header::default()
        );
    }

    #[test]
    fn malformed_lines_are_reported_with_their_number() {
        let bad = |text: &str| read(text.as_bytes()).find_map(Result::err).unwrap();
        assert_eq!(bad("; x\n1 0 5\n").line, 2);
        assert!(bad("; x\n1 0 5\n").what.contains("3 fields"));
        let e = bad("1 0 5 100 32 -1 -1 32 two -1 1 1 1 1 1 -1 -1 -1\n");
        assert!(e.what.contains("field 9 (requested time)"), "{e}");
        // A job of unknown size parses (cancelled jobs look like that); the workload skips it.
        assert!(parse_line("1 0 5 -1 -1 -1 -1 -1 200 -1 5 1 1 1 1 -1 -1 -1", 1).is_ok());
        let e = bad("1 9 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1\n2 3 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1\n");
        assert_eq!(e.line, 2);
        assert!(e.what.contains("before the previous"), "{e}");
        let e = bad("1 0 5 -7 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1\n");
        assert!(e.what.contains("-1 for unknown"), "{e}");
        // Reading stops at the first error.
        assert_eq!(
            read("x\n1 0 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1\n".as_bytes()).count(),
            1
        );
    }
}
