//! Workloads for the CPU manager: the paper's mixes W1..W4 at a load, written as SWF, and any
//! SWF trace turned into the jobs a run (live or simulated) starts.
//!
//! Load is offered sequential work per second over the processors: at 100% jobs arrive (with
//! exponential inter-arrival times) as fast as a perfectly efficient machine could finish them.
//! In traces oslab writes, field 4 (run time) is the job's sequential time at the chosen time
//! scale and field 5 (allocated processors) is 1, which is what that run time was on; field 8 is
//! the request and field 14 (executable) the kind: 1 swim, 2 bt, 3 hydro2d, 4 apsi.

use crate::cpuman::jobs::{mix, Kind};
use crate::cpuman::swf::SwfJob;
use oslab_core::stats::SplitMix64;

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
pub struct Generate {
    /// W1..W4.
    pub mix: String,
    /// Load in percent (60, 80, 100 in the paper).
    pub load: f64,
    /// Number of jobs.
    pub jobs: usize,
    /// Processors of the machine it is for.
    pub cpus: usize,
    /// Factor on the paper's sequential times (0.01: swim 2.1 s).
    pub time_scale: f64,
    /// Random seed (kinds order and arrivals).
    pub seed: u64,
}

/// Executable number oslab writes for a kind.
pub fn executable_of(kind: Kind) -> u64 {
    Kind::ALL.iter().position(|&k| k == kind).unwrap_or(1) as u64 + 1
}

/// The workload as SWF jobs, or why not.
pub fn generate(g: &Generate) -> Result<Vec<SwfJob>, String> {
    let shares = mix(&g.mix).ok_or_else(|| format!("unknown mix {:?}: W1, W2, W3 or W4", g.mix))?;
    if !(g.load > 0.0 && g.load <= 1000.0) {
        return Err(format!("load {}% must be above 0 and at most 1000", g.load));
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
    let mut rng = SplitMix64(g.seed ^ 0x0c0f_fee0);
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
            let mut f = [-1.0; 18];
            f[0] = (i + 1) as f64;
            f[1] = (t * 1000.0).round() / 1000.0;
            f[3] = (k.sequential_s() * g.time_scale * 1000.0).round() / 1000.0;
            f[4] = 1.0;
            f[7] = k.request_on(g.cpus) as f64;
            f[10] = 1.0;
            f[13] = executable_of(k) as f64;
            SwfJob { fields: f }
        })
        .collect();
    Ok(jobs)
}

/// The job a trace line describes. Kinds come from the executable number (1..4); any other is
/// modelled as bt-like (near-linear), and the sequential work is the run time times the kind's
/// speedup on the processors it ran on.
pub fn spec(job: &SwfJob) -> Result<JobSpec, String> {
    let kind = match job.executable() {
        Some(e @ 1..=4) => Kind::ALL[e as usize - 1],
        _ => Kind::Bt,
    };
    let run = job.run_time().ok_or_else(|| {
        format!(
            "job {}: field 4 (run time) is unknown; the job's work cannot be sized",
            job.id()
        )
    })?;
    let ran_on = Some(job.fields[4]).filter(|&v| v > 0.0).unwrap_or(1.0);
    Ok(JobSpec {
        id: job.id(),
        kind,
        submit_s: job.submit(),
        request: job.processors().unwrap_or(1),
        seq_s: run * kind.speedup(ran_on).max(1e-3),
        command: None,
    })
}

/// Where a run's jobs come from: a generated mix or an SWF trace, and external commands.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// A mix W1..W4 generated at `load` (with `jobs`, `time_scale`, `seed`).
    pub mix: Option<String>,
    /// Load in percent.
    pub load: f64,
    /// Jobs in a generated workload.
    pub jobs: usize,
    /// Factor on the paper's sequential times.
    pub time_scale: f64,
    /// Random seed.
    pub seed: u64,
    /// An SWF trace to replay instead of a mix.
    pub trace: Option<std::path::PathBuf>,
    /// External commands started at time 0 as non-cooperative jobs.
    pub external: Vec<String>,
    /// Processors an external command requests (default: all).
    pub external_request: Option<usize>,
}

/// The jobs of a run on `cpus` processors, the workload's label and its load (generated mixes).
pub fn resolve(src: &Source, cpus: usize) -> Result<(Vec<JobSpec>, String, Option<f64>), String> {
    let (mut specs, label, load) = match (&src.mix, &src.trace) {
        (Some(mix), None) => {
            let g = Generate {
                mix: mix.clone(),
                load: src.load,
                jobs: src.jobs,
                cpus,
                time_scale: src.time_scale,
                seed: src.seed,
            };
            let specs = generate(&g)?.iter().map(spec).collect::<Result<_, _>>()?;
            (specs, mix.clone(), Some(src.load))
        }
        (None, Some(path)) => {
            let file = std::fs::File::open(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mut specs = Vec::new();
            for job in crate::cpuman::swf::read(std::io::BufReader::new(file)) {
                specs.push(spec(&job.map_err(|e| format!("{}: {e}", path.display()))?)?);
            }
            if specs.is_empty() {
                return Err(format!("{} holds no jobs", path.display()));
            }
            let name = path
                .file_name()
                .map_or("trace".into(), |n| n.to_string_lossy().to_string());
            (specs, name, None)
        }
        (None, None) if !src.external.is_empty() => (Vec::new(), "external".to_string(), None),
        _ => {
            return Err(
                "give --workload W1..W4 (with --load), --trace FILE.swf or --external COMMAND"
                    .into(),
            )
        }
    };
    let next_id = specs.iter().map(|s| s.id).max().unwrap_or(0) + 1;
    for (i, cmd) in src.external.iter().enumerate() {
        let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
        if argv.is_empty() {
            return Err("--external needs a command".into());
        }
        specs.push(JobSpec {
            id: next_id + i as u64,
            kind: Kind::Bt,
            submit_s: 0.0,
            request: src.external_request.unwrap_or(cpus),
            seq_s: 0.0,
            command: Some(argv),
        });
    }
    Ok((specs, label, load))
}

/// The comment block of a generated trace: what it is and how its fields read.
pub fn header(g: &Generate) -> String {
    format!(
        "oslab cpuman workload: mix {} at {}% load, {} jobs for {} processors, time scale {}, seed {}\n\
         field 4 (run time) is the sequential time at this scale, on field 5 = 1 processor;\n\
         field 8 the request; field 14 the kind: 1 swim, 2 bt, 3 hydro2d, 4 apsi",
        g.mix, g.load, g.jobs, g.cpus, g.time_scale, g.seed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuman::swf;

    fn w(mix: &str, load: f64, jobs: usize) -> Generate {
        Generate {
            mix: mix.into(),
            load,
            jobs,
            cpus: 64,
            time_scale: 1.0,
            seed: 7,
        }
    }

    #[test]
    fn a_mix_has_its_proportions_and_its_load() {
        let jobs = generate(&w("W3", 100.0, 400)).unwrap();
        let specs: Vec<JobSpec> = jobs.iter().map(|j| spec(j).unwrap()).collect();
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
        // Deterministic for a seed; another seed, other arrivals.
        assert_eq!(generate(&w("W3", 100.0, 400)).unwrap(), jobs);
        let mut other = w("W3", 100.0, 400);
        other.seed = 8;
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
        let kinds: Vec<Kind> = few.iter().map(|j| spec(j).unwrap().kind).collect();
        assert!(kinds.contains(&Kind::Swim) && kinds.contains(&Kind::Bt));
        assert!(generate(&w("W9", 80.0, 3)).is_err());
        assert!(generate(&w("W1", 0.0, 3)).is_err());
    }

    #[test]
    fn written_traces_read_back_as_the_same_jobs() {
        let jobs = generate(&w("W2", 80.0, 20)).unwrap();
        let mut out = Vec::new();
        swf::write(&mut out, "test", &jobs).unwrap();
        let back: Vec<SwfJob> = swf::read(out.as_slice()).collect::<Result<_, _>>().unwrap();
        let a: Vec<JobSpec> = jobs.iter().map(|j| spec(j).unwrap()).collect();
        let b: Vec<JobSpec> = back.iter().map(|j| spec(j).unwrap()).collect();
        assert_eq!(a, b);
        // A foreign job: executable 9 is modelled as bt, its run time on 16 processors scaled up.
        let line = "5 0 0 100 16 -1 -1 16 -1 -1 1 -1 -1 9 -1 -1 -1 -1";
        let s = spec(&swf::parse_line(line, 1).unwrap()).unwrap();
        assert_eq!((s.kind, s.request), (Kind::Bt, 16));
        assert!((s.seq_s - 1200.0).abs() < 1e-6);
        let unknown = "5 0 0 -1 16 -1 -1 16 -1 -1 1 -1 -1 9 -1 -1 -1 -1";
        assert!(spec(&swf::parse_line(unknown, 1).unwrap()).is_err());
    }
}
