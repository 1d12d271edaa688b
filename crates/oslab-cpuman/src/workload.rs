//! Workloads for the CPU manager: the paper's mixes W1..W4 at a load, written as SWF, and any
//! SWF trace turned into the jobs a run (live or simulated) starts.
//!
//! Load is offered sequential work per second over the processors: at 100% jobs arrive (with
//! exponential inter-arrival times) as fast as a perfectly efficient machine could finish them.
//! In traces oslab writes, field 5 (processors used) is the request and field 4 (run time) the
//! job's run time on them (its sequential time at the chosen time scale over its kind's
//! speedup); field 8 is the request and field 14 (executable) the kind: 1 swim, 2 bt, 3 hydro2d,
//! 4 apsi. Traces from elsewhere (the Parallel Workloads Archive) are read as they are:
//! cancelled and failed jobs are skipped and counted, kinds come from `--app-map` or from the
//! requested size.

use crate::jobs::{mix, Kind};
use crate::swf::{self, SwfJob};
use oslab_core::reason::BadValue;
use oslab_core::stats::SplitMix64;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One job as a run starts it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job number (from the trace).
    pub id: u64,
    /// Its kind (scaling shape).
    pub kind: Kind,
    /// Arrival, seconds from the start.
    pub submit_s: f64,
    /// Processors requested.
    pub request: usize,
    /// Sequential work in seconds.
    pub seq_s: f64,
    /// An external command run instead of a built-in kernel (non-cooperative).
    pub command: Option<Vec<String>>,
}

/// What to generate.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Generate {
    /// The mix: W1, W2, W3 or W4.
    #[cfg_attr(feature = "clap", arg(long, value_name = "W"))]
    pub mix: String,
    /// Load in percent (60, 80, 100 in the paper).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "PCT", default_value_t = 100.0)
    )]
    pub load: f64,
    /// Jobs.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 8,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10000000)))]
    pub jobs: usize,
    /// Processors of the machine it is for (a command line says it apart, or takes this one's).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub cpus: usize,
    /// Factor on the paper's sequential times (0.01: swim 2.1 s).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.01, value_parser = oslab_core::units::parse_scale))]
    pub time_scale: f64,
    /// Number of the random stream that orders the kinds and times the arrivals (the same number
    /// gives the same workload).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", default_value_t = 1))]
    pub stream: u64,
}

/// Executable number oslab writes for a kind.
pub fn executable_of(kind: Kind) -> u64 {
    Kind::ALL.iter().position(|&k| k == kind).unwrap_or(1) as u64 + 1
}

/// The workload as SWF jobs, or why not.
pub fn generate(g: &Generate) -> Result<Vec<SwfJob>, BadValue> {
    let shares = mix(&g.mix).ok_or_else(|| format!("unknown mix {:?}: W1, W2, W3 or W4", g.mix))?;
    if !(g.load > 0.0 && g.load <= 1000.0) {
        return Err(format!("load {}% must be above 0 and at most 1000", g.load).into());
    }
    if g.jobs == 0 || g.cpus == 0 || g.time_scale.is_nan() || g.time_scale <= 0.0 {
        return Err("jobs, cpus and time scale must be positive".into());
    }
    // Kinds in the mix's proportions (largest remainders), in a seeded random order.
    let mut counts: Vec<(Kind, usize, f64)> = shares
        .iter()
        .map(|&(k, s)| {
            let exact = s * g.jobs as f64;
            (k, exact.floor() as usize, exact.fract())
        })
        .collect();
    let mut left = g.jobs - counts.iter().map(|c| c.1).sum::<usize>();
    let mut by_remainder: Vec<usize> = (0..counts.len()).collect();
    by_remainder.sort_by(|&a, &b| counts[b].2.total_cmp(&counts[a].2));
    for i in by_remainder {
        if left == 0 {
            break;
        }
        if shares[i].1 > 0.0 {
            counts[i].1 += 1;
            left -= 1;
        }
    }
    let mut kinds: Vec<Kind> = counts
        .iter()
        .flat_map(|&(k, n, _)| std::iter::repeat_n(k, n))
        .collect();
    let mut rng = SplitMix64(g.stream ^ 0x0c0f_fee0);
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i + 1));
    }
    let mean_seq: f64 = shares
        .iter()
        .map(|&(k, s)| s * k.sequential_s() * g.time_scale)
        .sum();
    let mean_gap = mean_seq / (g.load / 100.0 * g.cpus as f64);
    let mut t = 0.0;
    let jobs = kinds
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            if i > 0 {
                // Exponential inter-arrival times (inverse transform of a uniform in (0, 1]).
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                t += -mean_gap * (1.0 - u).ln();
            }
            let request = k.request_on(g.cpus);
            let run = k.sequential_s() * g.time_scale / k.speedup(request as f64).max(1e-3);
            let mut f = [-1.0; 18];
            f[0] = (i + 1) as f64;
            f[1] = (t * 1000.0).round() / 1000.0;
            f[3] = (run * 1e6).round() / 1e6;
            f[4] = request as f64;
            f[7] = request as f64;
            f[10] = 1.0;
            f[13] = executable_of(k) as f64;
            SwfJob { fields: f }
        })
        .collect();
    Ok(jobs)
}

/// How a trace's jobs get their kinds.
#[derive(Debug, Clone, Default)]
pub struct KindMap {
    /// Executable number (field 14) to kind, from `--app-map`.
    pub apps: BTreeMap<u64, Kind>,
    /// The trace was written by `oslab cpuman workload`: field 14 is the kind (1..4).
    pub oslab: bool,
}

/// How kinds follow the requested size when nothing names them.
pub const BY_SIZE: &str =
    "1-2 processors apsi (serial), 3-8 hydro2d (Amdahl), more bt (near-linear)";

/// The kind of a job of `request` processors that nothing names ([`BY_SIZE`]).
pub fn by_size(request: usize) -> Kind {
    match request {
        0..=2 => Kind::Apsi,
        3..=8 => Kind::Hydro2d,
        _ => Kind::Bt,
    }
}

impl KindMap {
    /// oslab's own traces.
    pub fn oslab() -> KindMap {
        KindMap {
            apps: BTreeMap::new(),
            oslab: true,
        }
    }

    /// Reads an application map: lines `EXECUTABLE KIND` (`12 swim`), `#` comments.
    pub fn read(path: &Path) -> Result<KindMap, BadValue> {
        let bytes = oslab_files::read_bounded(path, 1 << 20, oslab_files::Links::Follow)
            .map_err(|e| format!("--app-map {}: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&bytes);
        let mut apps = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            let bad = || {
                format!(
                    "--app-map {} line {}: {t:?} is not EXECUTABLE KIND (e.g. 12 swim; kinds: swim, bt, hydro2d, apsi)",
                    path.display(),
                    i + 1
                )
            };
            let mut words = t.split_whitespace();
            let (Some(exe), Some(kind), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad().into());
            };
            let exe: u64 = exe.parse().map_err(|_| bad())?;
            apps.insert(exe, Kind::parse(kind).ok_or_else(bad)?);
        }
        Ok(KindMap { apps, oslab: false })
    }

    /// A job's kind, and whether it came from its requested size.
    fn kind(&self, job: &SwfJob, request: usize) -> (Kind, bool) {
        let exe = job.executable();
        if self.oslab {
            if let Some(e @ 1..=4) = exe {
                return (Kind::ALL[e as usize - 1], false);
            }
        }
        match exe.and_then(|e| self.apps.get(&e)) {
            Some(&k) => (k, false),
            None => (by_size(request), true),
        }
    }
}

/// Why a trace job is not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// Status 5.
    Cancelled,
    /// Status 0.
    Failed,
    /// Field 4 (run time) unknown.
    NoRunTime,
    /// Neither field 5 nor field 8 (processors) known.
    NoSize,
}

impl Skip {
    fn words(self) -> &'static str {
        match self {
            Skip::Cancelled => "cancelled",
            Skip::Failed => "failed",
            Skip::NoRunTime => "without a run time",
            Skip::NoSize => "without a processor count",
        }
    }
}

/// The job a trace line describes, or why it is not replayed. The sequential work is the run
/// time times the kind's speedup on the processors it ran on (field 5; else its request).
pub fn spec(job: &SwfJob, kinds: &KindMap) -> Result<(JobSpec, bool), Skip> {
    let status = job.fields[10];
    if status == 5.0 {
        return Err(Skip::Cancelled);
    }
    if status == 0.0 {
        return Err(Skip::Failed);
    }
    let run = job.run_time().ok_or(Skip::NoRunTime)?;
    let request = job.processors().ok_or(Skip::NoSize)?;
    let (kind, by_size) = kinds.kind(job, request);
    let ran_on = Some(job.fields[4])
        .filter(|&v| v > 0.0)
        .unwrap_or(request as f64);
    let spec = JobSpec {
        id: job.id(),
        kind,
        submit_s: job.submit(),
        request,
        seq_s: run * kind.speedup(ran_on).max(1e-3),
        command: None,
    };
    Ok((spec, by_size))
}

/// The machine size a trace's header gives: `MaxProcs`, else `MaxNodes` (one processor per
/// node), with where it came from; None for a generated mix or a header that says neither.
pub fn trace_machine(src: &Source) -> Result<Option<(usize, &'static str)>, BadValue> {
    let Some(path) = &src.trace else {
        return Ok(None);
    };
    let file =
        oslab_files::open_regular(path, oslab_files::Links::Follow).map_err(|e| e.to_string())?;
    let h = swf::header(std::io::BufReader::new(file));
    Ok(match (h.max_procs, h.max_nodes) {
        (Some(p), _) => Some((p as usize, "the trace's MaxProcs")),
        (None, Some(n)) => Some((n as usize, "the trace's MaxNodes, one processor each")),
        _ => None,
    })
}

/// Where a run's jobs come from: a generated mix or an SWF trace, and external commands.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Source {
    /// A job mix: W1 (swim+bt), W2 (bt+hydro2d), W3 (all four), W4 (bt).
    #[cfg_attr(
        feature = "clap",
        arg(long = "workload", value_name = "W", conflicts_with = "trace")
    )]
    pub mix: Option<String>,
    /// Load in percent: offered sequential work per second over the processors.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "PCT", default_value_t = 100.0)
    )]
    pub load: f64,
    /// Jobs in a generated workload.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100000)))]
    pub jobs: usize,
    /// Factor on the paper's sequential times (swim 212 s, bt 1066 s, hydro2d 223 s, apsi 99 s).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.01, value_parser = oslab_core::units::parse_scale))]
    pub time_scale: f64,
    /// Number of the random stream that orders the kinds and times the arrivals (the same number
    /// gives the same workload).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", default_value_t = 1))]
    pub stream: u64,
    /// An SWF trace to replay instead of a mix (oslab's own, or the Parallel Workloads
    /// Archive's: cancelled and failed jobs are skipped and counted).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE.swf"))]
    pub trace: Option<PathBuf>,
    /// Job kinds of a trace's executables (field 14): lines `EXECUTABLE KIND`, e.g. `12 swim`
    /// (default: kinds by requested size, said in the output).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE", requires = "trace"))]
    pub app_map: Option<PathBuf>,
    /// External commands started at time 0 as non-cooperative jobs (live runs only).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub external: Vec<String>,
    /// Processors an external command requests (default: all).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub external_request: Option<usize>,
}

/// Jobs in submit order, produced as a run reaches them: a trace is read line by line while
/// the run goes on, so its memory holds the jobs alive, not the file.
pub struct Jobs {
    next: Box<dyn Iterator<Item = JobSpec>>,
    left: usize,
    /// The largest job number among them (0 for none).
    pub max_id: u64,
}

impl Jobs {
    /// `count` jobs from `next`, already in submit order, numbered up to `max_id`.
    pub fn new(next: impl Iterator<Item = JobSpec> + 'static, count: usize, max_id: u64) -> Jobs {
        Jobs {
            next: Box::new(next),
            left: count,
            max_id,
        }
    }
}

impl From<Vec<JobSpec>> for Jobs {
    /// Jobs held in memory, put in submit order.
    fn from(mut specs: Vec<JobSpec>) -> Jobs {
        specs.sort_by(|a, b| a.submit_s.total_cmp(&b.submit_s));
        let (n, max_id) = (specs.len(), specs.iter().map(|s| s.id).max().unwrap_or(0));
        Jobs::new(specs.into_iter(), n, max_id)
    }
}

impl Iterator for Jobs {
    type Item = JobSpec;
    fn next(&mut self) -> Option<JobSpec> {
        let j = self.next.next();
        self.left = if j.is_some() {
            self.left.saturating_sub(1)
        } else {
            0
        };
        j
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Jobs {}

/// A run's jobs, resolved.
pub struct Resolved {
    /// The jobs, in submit order.
    pub jobs: Jobs,
    /// The workload's name: the mix or the trace's file name.
    pub label: String,
    /// Load, for generated mixes.
    pub load: Option<f64>,
    /// What to know about how the jobs were read (skipped jobs, kinds, oversized jobs).
    pub notes: Vec<String>,
}

/// The jobs of a run on `cpus` processors. External commands start at time 0, before the rest.
pub fn resolve(src: &Source, cpus: usize) -> Result<Resolved, BadValue> {
    let mut externals = Vec::new();
    for cmd in &src.external {
        let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
        if argv.is_empty() {
            return Err("--external needs a command".into());
        }
        externals.push(JobSpec {
            id: 0, // numbered after the other jobs, below
            kind: Kind::Bt,
            submit_s: 0.0,
            request: src.external_request.unwrap_or(cpus),
            seq_s: 0.0,
            command: Some(argv),
        });
    }
    let mut notes = Vec::new();
    let (jobs, label, load) = match (&src.mix, &src.trace) {
        (Some(mix), None) => {
            let g = Generate {
                mix: mix.clone(),
                load: src.load,
                jobs: src.jobs,
                cpus,
                time_scale: src.time_scale,
                stream: src.stream,
            };
            let specs: Vec<JobSpec> = generate(&g)?
                .iter()
                .filter_map(|j| spec(j, &KindMap::oslab()).ok().map(|s| s.0))
                .collect();
            (Jobs::from(specs), mix.clone(), Some(src.load))
        }
        (None, Some(path)) => {
            let (jobs, read) = read_trace(path, src.app_map.as_deref(), cpus)?;
            notes = read;
            let name = path
                .file_name()
                .map_or("trace".into(), |n| n.to_string_lossy().to_string());
            (jobs, name, None)
        }
        (None, None) if !src.external.is_empty() => {
            (Jobs::from(Vec::new()), "external".to_string(), None)
        }
        _ => {
            return Err(
                "give --workload W1..W4 (with --load), --trace FILE.swf or --external COMMAND"
                    .into(),
            )
        }
    };
    let count = jobs.len() + externals.len();
    let first_id = jobs.max_id + 1;
    for (i, e) in externals.iter_mut().enumerate() {
        e.id = first_id + i as u64;
    }
    let max_id = jobs.max_id + externals.len() as u64;
    Ok(Resolved {
        jobs: Jobs::new(externals.into_iter().chain(jobs), count, max_id),
        label,
        load,
        notes,
    })
}
/// A trace's jobs for a machine of `cpus` processors and what to say about them. The file is
/// read twice: once now, to find every error and count what is skipped before anything runs,
/// then line by line as the run reaches each job.
fn read_trace(
    path: &Path,
    app_map: Option<&Path>,
    cpus: usize,
) -> Result<(Jobs, Vec<String>), BadValue> {
    let open = |path: &Path| {
        oslab_files::open_regular(path, oslab_files::Links::Follow)
            .map(std::io::BufReader::new)
            .map_err(|e| e.to_string())
    };
    let mut kinds = match app_map {
        Some(m) => KindMap::read(m)?,
        None => KindMap::default(),
    };
    kinds.oslab = swf::header(open(path)?).oslab;
    let mut skipped: BTreeMap<Skip, usize> = BTreeMap::new();
    let (mut count, mut max_id, mut sized, mut oversized) = (0usize, 0u64, 0usize, 0usize);
    for job in swf::read(open(path)?) {
        if oslab_os::signals::interrupted() {
            return Err(format!("interrupted while reading {}", path.display()).into());
        }
        let job = job.map_err(|e| format!("{}: {e}", path.display()))?;
        match replayed(&job, &kinds, cpus) {
            Ok((s, by_size, capped)) => {
                count += 1;
                max_id = max_id.max(s.id);
                sized += usize::from(by_size);
                oversized += usize::from(capped);
            }
            Err(why) => *skipped.entry(why).or_default() += 1,
        }
    }
    let mut notes = Vec::new();
    if !skipped.is_empty() {
        let n: usize = skipped.values().sum();
        let parts: Vec<String> = skipped
            .iter()
            .map(|(why, k)| format!("{k} {}", why.words()))
            .collect();
        notes.push(format!(
            "{n} of {} trace jobs skipped: {}",
            n + count,
            parts.join(", ")
        ));
    }
    if count == 0 {
        return Err(format!("{} holds no jobs to replay", path.display()).into());
    }
    if sized > 0 {
        let why = if kinds.apps.is_empty() {
            "no --app-map"
        } else {
            "executables the --app-map does not name"
        };
        notes.push(format!(
            "{sized} jobs given a kind by their requested size ({why}): {BY_SIZE}"
        ));
    }
    if oversized > 0 {
        notes.push(format!(
            "{oversized} jobs ask for more than the machine's {cpus} processors: they ask for {cpus}"
        ));
    }
    let shown = path.display().to_string();
    let stream = swf::read(open(path)?)
        .map_while(move |job| {
            // Every line was checked above: an error now means the file changed under us.
            job.map_err(|e| {
                oslab_core::notices::say(&format!(
                    "warning: {shown} changed while replayed: {e}; later jobs are not replayed"
                ))
            })
            .ok()
        })
        .filter_map(move |job| replayed(&job, &kinds, cpus).ok().map(|(s, ..)| s));
    Ok((Jobs::new(stream, count, max_id), notes))
}

/// The job a trace line replays on `cpus` processors: its spec, whether its kind came from its
/// size, and whether it asked for more than the machine (it then asks for all of it).
fn replayed(job: &SwfJob, kinds: &KindMap, cpus: usize) -> Result<(JobSpec, bool, bool), Skip> {
    let (mut s, by_size) = spec(job, kinds)?;
    let capped = s.request > cpus;
    s.request = s.request.min(cpus);
    Ok((s, by_size, capped))
}

/// The note of a generated trace: what it is and how its fields read.
pub fn note(g: &Generate) -> String {
    format!(
        "{} mix {} at {}% load, {} jobs for {} processors, time scale {}, random stream {}\n\
         field 4 (run time) is the time on field 5 (processors used = the request) at this scale;\n\
         field 14 the kind: 1 swim, 2 bt, 3 hydro2d, 4 apsi",
        swf::OSLAB_MARK,
        g.mix,
        g.load,
        g.jobs,
        g.cpus,
        g.time_scale,
        g.stream
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf;

    fn w(mix: &str, load: f64, jobs: usize) -> Generate {
        Generate {
            mix: mix.into(),
            load,
            jobs,
            cpus: 64,
            time_scale: 1.0,
            stream: 7,
        }
    }

    #[test]
    fn a_mix_has_its_proportions_and_its_load() {
        let jobs = generate(&w("W3", 100.0, 400)).unwrap();
        let specs: Vec<JobSpec> = jobs
            .iter()
            .map(|j| spec(j, &KindMap::oslab()).unwrap().0)
            .collect();
        for k in Kind::ALL {
            assert_eq!(specs.iter().filter(|s| s.kind == k).count(), 100);
        }
        assert_eq!(specs[0].submit_s, 0.0);
        // Offered work per second over the processors is the load (within sampling error).
        let span = specs.last().unwrap().submit_s;
        let work: f64 = specs.iter().map(|s| s.seq_s).sum();
        let load = work / span / 64.0;
        assert!((0.8..1.25).contains(&load), "{load}");
        // Requests are the paper's on 64 cpus.
        assert!(specs.iter().all(|s| s.request == s.kind.request()));
        // Deterministic for a stream; another stream, other arrivals.
        assert_eq!(generate(&w("W3", 100.0, 400)).unwrap(), jobs);
        let mut other = w("W3", 100.0, 400);
        other.stream = 8;
        assert_ne!(generate(&other).unwrap(), jobs);
    }

    #[test]
    fn a_higher_load_arrives_faster_and_small_workloads_keep_the_mix() {
        let span = |load| {
            let j = generate(&w("W1", load, 200)).unwrap();
            j.last().unwrap().submit()
        };
        assert!(span(60.0) > span(100.0));
        let few = generate(&w("W1", 80.0, 3)).unwrap();
        let kinds: Vec<Kind> = few
            .iter()
            .map(|j| spec(j, &KindMap::oslab()).unwrap().0.kind)
            .collect();
        assert!(kinds.contains(&Kind::Swim) && kinds.contains(&Kind::Bt));
        assert!(generate(&w("W9", 80.0, 3)).is_err());
        assert!(generate(&w("W1", 0.0, 3)).is_err());
    }

    #[test]
    fn written_traces_read_back_as_the_same_jobs() {
        let jobs = generate(&w("W2", 80.0, 20)).unwrap();
        let mut out = Vec::new();
        swf::write(&mut out, 64, "test", &jobs).unwrap();
        let back: Vec<SwfJob> = swf::read(out.as_slice()).collect::<Result<_, _>>().unwrap();
        let a: Vec<JobSpec> = jobs
            .iter()
            .map(|j| spec(j, &KindMap::oslab()).unwrap().0)
            .collect();
        let b: Vec<JobSpec> = back
            .iter()
            .map(|j| spec(j, &KindMap::oslab()).unwrap().0)
            .collect();
        assert_eq!(a, b);
        // A foreign job: executable 9 is modelled as bt, its run time on 16 processors scaled up.
        let line = "5 0 0 100 16 -1 -1 16 -1 -1 1 -1 -1 9 -1 -1 -1 -1";
        let foreign = KindMap::default();
        let (s, by_size) = spec(&swf::parse_line(line, 1).unwrap(), &foreign).unwrap();
        assert_eq!((s.kind, s.request, by_size), (Kind::Bt, 16, true));
        assert!((s.seq_s - 1200.0).abs() < 1e-6);
        let unknown = "5 0 0 -1 16 -1 -1 16 -1 -1 1 -1 -1 9 -1 -1 -1 -1";
        let job = swf::parse_line(unknown, 1).unwrap();
        assert_eq!(spec(&job, &foreign).unwrap_err(), Skip::NoRunTime);
    }
}

#[cfg(test)]
mod archive {
    use super::*;

    /// An archive-style trace: header, a cancelled job (status 5, run time -1, size -1), a failed
    /// one (status 0), jobs of three executables, one larger than the machine.
    const TRACE: &str = "; Version: 2.2
; Computer: a cluster
; MaxJobs: 6
;   MaxProcs: 16
1 0 10 100 16 -1 -1 16 -1 -1 1 3 1 12 1 -1 -1 -1
2 5 -1 -1 -1 -1 -1 8 -1 -1 5 3 1 12 1 -1 -1 -1
3 9 4 30 2 -1 -1 2 -1 -1 0 4 1 7 1 -1 -1 -1
4 12 0 50 4 -1 -1 4 -1 -1 1 4 1 7 1 -1 -1 -1
5 20 0 20 1 -1 -1 1 -1 -1 1 5 1 99 1 -1 -1 -1
6 30 0 60 64 -1 -1 64 -1 -1 1 5 1 12 1 -1 -1 -1
";

    fn trace(dir: &tempfile::TempDir) -> PathBuf {
        let p = dir.path().join("archive.swf");
        std::fs::write(&p, TRACE).unwrap();
        p
    }

    fn source(trace: PathBuf, app_map: Option<PathBuf>) -> Source {
        Source {
            trace: Some(trace),
            app_map,
            ..Source::default()
        }
    }

    #[test]
    fn a_trace_that_is_a_device_or_one_huge_line_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let e = resolve(&source("/dev/zero".into(), None), 16)
            .err()
            .unwrap();
        assert!(e.0.contains("not a regular file"), "{e}");
        assert!(trace_machine(&source("/dev/zero".into(), None)).is_err());
        // 4 GiB of NULs with no line end: refused at the first line, in a moment.
        let sparse = dir.path().join("sparse.swf");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(4 << 30)
            .unwrap();
        let e = resolve(&source(sparse, None), 16).err().unwrap();
        assert!(e.0.contains("line 1") && e.0.contains("longer than"), "{e}");
    }

    #[test]
    fn cancelled_and_failed_jobs_are_counted_not_errors_and_the_header_sizes_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let src = source(trace(&dir), None);
        assert_eq!(
            trace_machine(&src).unwrap(),
            Some((16, "the trace's MaxProcs"))
        );
        let r = resolve(&src, 16).unwrap();
        assert_eq!(r.jobs.len(), 4);
        let notes = r.notes.join("\n");
        let specs: Vec<JobSpec> = r.jobs.collect();
        let ids: Vec<u64> = specs.iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![1, 4, 5, 6]);
        assert!(
            notes.contains("2 of 6 trace jobs skipped: 1 cancelled, 1 failed"),
            "{notes}"
        );
        // Without a map, kinds follow the requested size, and the output says so.
        let kinds: Vec<Kind> = specs.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, vec![Kind::Bt, Kind::Hydro2d, Kind::Apsi, Kind::Bt]);
        assert!(
            notes.contains("4 jobs given a kind by their requested size (no --app-map)"),
            "{notes}"
        );
        // The 64-processor job on a 16-processor machine is reported and asks for 16.
        assert!(
            notes.contains("1 jobs ask for more than the machine's 16 processors"),
            "{notes}"
        );
        assert_eq!(specs[3].request, 16);
    }

    #[test]
    fn an_application_map_names_kinds_by_executable() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("apps");
        std::fs::write(&map, "# executable kind\n12 swim\n7 apsi # the small one\n").unwrap();
        let r = resolve(&source(trace(&dir), Some(map.clone())), 16).unwrap();
        let notes = r.notes.join("\n");
        let kinds: Vec<Kind> = r.jobs.map(|s| s.kind).collect();
        assert_eq!(kinds, vec![Kind::Swim, Kind::Apsi, Kind::Apsi, Kind::Swim]);
        assert!(
            notes.contains("1 jobs given a kind by their requested size (executables the --app-map does not name)"),
            "{notes}"
        );
        std::fs::write(&map, "12 swim\n7 quicksort\n").unwrap();
        let e = resolve(&source(trace(&dir), Some(map)), 16).err().unwrap();
        assert!(e.0.contains("line 2") && e.0.contains("quicksort"), "{e}");
    }

    #[test]
    fn a_trace_of_only_cancelled_jobs_has_nothing_to_replay() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("none.swf");
        std::fs::write(&p, "2 5 -1 -1 -1 -1 -1 8 -1 -1 5 3 1 12 1 -1 -1 -1\n").unwrap();
        let e = resolve(&source(p, None), 16).err().unwrap();
        assert!(e.0.contains("no jobs to replay"), "{e}");
    }

    #[test]
    fn a_trace_is_replayed_as_it_is_read_after_externals_numbered_beyond_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = source(trace(&dir), None);
        src.external = vec!["sleep 1".into()];
        let mut r = resolve(&src, 16).unwrap();
        assert_eq!(r.jobs.len(), 5);
        // The external command comes first (time 0), numbered after the trace's last job.
        let first = r.jobs.next().unwrap();
        assert_eq!((first.id, first.command.is_some()), (7, true));
        // The file is read as the run reaches its jobs: a line broken after the check ends the
        // replay there (held in memory, every job would still come).
        let text = std::fs::read_to_string(trace(&dir)).unwrap();
        let cut = text.lines().position(|l| l.starts_with("4 ")).unwrap();
        let broken: Vec<&str> = text
            .lines()
            .enumerate()
            .map(|(i, l)| if i == cut { "4 x" } else { l })
            .collect();
        std::fs::write(trace(&dir), broken.join("\n")).unwrap();
        let ids: Vec<u64> = r.jobs.map(|s| s.id).collect();
        assert_eq!(ids, vec![1]);
    }
}
