//! The Slurm side: the batch script, and the client commands (sinfo, scontrol, sbatch, squeue).

use oslab_core::reason::BadValue;
use oslab_core::text::shell_word;
use std::path::Path;
use std::process::Command;

/// What goes into the batch script.
#[derive(Debug, Clone)]
pub struct ScriptOptions<'a> {
    /// Slurm partition (default: the cluster's default).
    pub partition: Option<&'a str>,
    /// The nodes (a hostlist).
    pub nodelist: &'a str,
    /// How many nodes, when known.
    pub node_count: Option<usize>,
    /// Nodes not shared with other jobs.
    pub exclusive: bool,
    /// Slurm time limit.
    pub time: Option<&'a str>,
    /// The results directory every node sees.
    pub results: &'a Path,
    /// The submission's token (see [`crate::JobRef`]).
    pub token: &'a str,
    /// The oslab binary.
    pub binary: &'a Path,
    /// Copy the binary to each node's /tmp with sbcast (else it is used where it is).
    pub sbcast: bool,
    /// srun's --cpu-bind for each node's step.
    pub cpu_bind: Option<&'a str>,
    /// srun's --mem-bind for each node's step.
    pub mem_bind: Option<&'a str>,
    /// Arguments of `oslab run` on every node.
    pub run_args: &'a [String],
}

/// Checks a partition name for an `#SBATCH` line: letters, digits, `_`, `-` and `.`, not
/// starting with `-` (nothing a shell or Slurm's own option parser could read as more).
pub fn check_partition(p: &str) -> Result<(), BadValue> {
    let ok = !p.is_empty()
        && p.len() <= 128
        && !p.starts_with('-')
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    ok.then_some(()).ok_or_else(|| {
        BadValue::from(format!(
            "--partition {p:?}: a partition name is letters, digits, '_', '-' and '.'"
        ))
    })
}

/// Checks an srun binding (`flag` is --cpu-bind or --mem-bind): optional `quiet,`/`verbose,`
/// then one of Slurm's types, a list type taking a `:` and a list of numbers or masks (letters,
/// digits, `,`, `*`). Nothing a shell or srun could read as more.
pub fn check_bind(flag: &str, bind: &str) -> Result<(), BadValue> {
    let types: &[&str] = match flag {
        "--cpu-bind" => &[
            "none",
            "rank",
            "rank_ldom",
            "ldoms",
            "sockets",
            "cores",
            "threads",
            "map_cpu",
            "mask_cpu",
            "map_ldom",
            "mask_ldom",
        ],
        _ => &[
            "none", "rank", "local", "sort", "nosort", "map_mem", "mask_mem", "prefer",
        ],
    };
    let listed = |t: &str| t.starts_with("map_") || t.starts_with("mask_");
    let body = bind
        .strip_prefix("quiet,")
        .or_else(|| bind.strip_prefix("verbose,"))
        .unwrap_or(bind);
    let (kind, list) = body.split_once(':').unwrap_or((body, ""));
    let ok = bind.len() <= 256
        && types.contains(&kind)
        && listed(kind) != list.is_empty()
        && list
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ",*".contains(c));
    ok.then_some(()).ok_or_else(|| {
        BadValue::from(format!(
            "{flag} {bind:?}: srun takes [quiet,|verbose,]TYPE, TYPE one of {} (map_*/mask_* with :LIST)",
            types.join(", ")
        ))
    })
}

/// The longest time limit taken: a suite that has not ended in a year has hung.
pub const MAX_TIME_S: u64 = 366 * 86400;

/// Checks a Slurm time limit: `MIN`, `MIN:SEC`, `H:MIN:SEC`, `D-H`, `D-H:MIN`, `D-H:MIN:SEC`,
/// or `UNLIMITED` / `INFINITE`; at most [`MAX_TIME_S`], and more than nothing.
pub fn check_time(t: &str) -> Result<(), BadValue> {
    if ["unlimited", "infinite"].contains(&t.to_ascii_lowercase().as_str()) {
        return Ok(());
    }
    let syntax = || {
        format!("--time {t:?}: Slurm takes MIN, MIN:SEC, H:MIN:SEC, D-H, D-H:MIN, D-H:MIN:SEC or UNLIMITED")
    };
    let number = |x: &str| {
        (!x.is_empty() && x.len() <= 9 && x.bytes().all(|b| b.is_ascii_digit()))
            .then(|| x.parse::<u64>().ok())
            .flatten()
    };
    let (days, rest) = match t.split_once('-') {
        Some((d, rest)) => (Some(number(d).ok_or_else(syntax)?), rest),
        None => (None, t),
    };
    let parts = rest
        .split(':')
        .map(number)
        .collect::<Option<Vec<u64>>>()
        .filter(|p| p.len() <= 3)
        .ok_or_else(syntax)?;
    // Slurm's reading: with days, H[:MIN[:SEC]]; without, MIN, MIN:SEC or H:MIN:SEC.
    let seconds = match (days, parts.as_slice()) {
        (Some(d), [h, rest @ ..]) => {
            d * 86400 + h * 3600 + rest.first().unwrap_or(&0) * 60 + rest.get(1).unwrap_or(&0)
        }
        (None, [m]) => m * 60,
        (None, [m, s]) => m * 60 + s,
        (None, [h, m, s]) => h * 3600 + m * 60 + s,
        _ => return Err(syntax().into()),
    };
    if seconds == 0 || seconds > MAX_TIME_S {
        return Err(format!(
            "--time {t:?}: {} (a time limit is more than nothing and at most 366 days; UNLIMITED for none)",
            if seconds == 0 { "no time at all" } else { "longer than a year" }
        ).into());
    }
    Ok(())
}

/// Checks a hostlist (`n[01-16,20],gpu3`): host names of letters, digits, `_`, `-` and `.`, with
/// bracketed ranges of digits, `-` and `,`, separated by commas.
pub fn check_hostlist(list: &str) -> Result<(), BadValue> {
    let mut depth = 0;
    let mut ok = !list.is_empty() && list.len() <= 65536 && !list.starts_with(['-', ',']);
    for c in list.chars() {
        ok &= match c {
            '[' => {
                depth += 1;
                depth == 1
            }
            ']' => {
                depth -= 1;
                depth == 0
            }
            c if depth == 1 => c.is_ascii_digit() || c == '-' || c == ',',
            c => c.is_ascii_alphanumeric() || "_-.,".contains(c),
        };
        if !ok {
            break;
        }
    }
    (ok && depth == 0).then_some(()).ok_or_else(|| {
        let shown: String = list.chars().take(60).collect();
        BadValue::from(format!(
            "--nodes {shown:?}{}: a Slurm hostlist is node names (letters, digits, '_', '-', '.') with ranges in brackets, e.g. n[01-16],gpu3",
            if list.chars().count() > 60 { "..." } else { "" }
        ))
    })
}

/// The sbatch script: one job step per node, each running `oslab fleet task`. Steps apart, a
/// node that cannot start or is lost costs its own result only; the job is never requeued
/// (a rerun would leave two executions in one directory) nor ended by a node's failure; a node
/// whose task ended with no word gets a `.crashed` note from the job, with Slurm's state of it.
pub fn script(o: &ScriptOptions) -> String {
    let mut s = format!(
        "#!/bin/bash\n# Written by `oslab fleet submit` (oslab {}).\n#SBATCH --job-name=oslab-fleet\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(n) = o.node_count {
        s += &format!("#SBATCH --nodes={n}\n");
    }
    s += &format!(
        "#SBATCH --nodelist={}\n#SBATCH --ntasks-per-node=1\n#SBATCH --no-requeue\n#SBATCH --no-kill\n",
        o.nodelist
    );
    if o.exclusive {
        s += "#SBATCH --exclusive\n";
    }
    if let Some(p) = o.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    if let Some(t) = o.time {
        s += &format!("#SBATCH --time={t}\n");
    }
    // Each node starts in the results directory, which every node mounts: the submitter's own
    // directory may exist on no node ("couldn't chdir" in every job's output).
    s += &format!(
        "#SBATCH --output={}/slurm-%j.{}.out\n#SBATCH --chdir={}\nset -u\nresults={}\nbin={}\ntoken={}\n\
         dir=\"$results/$SLURM_JOB_ID.$token\"\nfirst=$(hostname)\n",
        o.results.display(),
        o.token,
        o.results.display(),
        shell_word(&o.results.to_string_lossy()),
        shell_word(&o.binary.to_string_lossy()),
        o.token,
    );
    s += "mkdir -p \"$dir\" || { echo \"oslab fleet: cannot create $dir on $first, the job's first node\" >&2; exit 1; }\n";
    if o.sbcast {
        // srun --bcast copies the binary from this node to the step's node before starting it,
        // into a directory a step made first with mkdir, which fails rather than accept one
        // another user made (the name is in the results directory for anyone to read); each try
        // has its own, and the task removes the copy and its directory when it ends.
        s += "[ -r \"$bin\" ] || { echo \"oslab fleet: $bin cannot be read on $first, the job's first node, which copies it to the others: put it where that node sees it\" >&2; exit 1; }\n\
              stage=/tmp/oslab-fleet-$SLURM_JOB_ID.$token\n";
    }
    let staging = match o.sbcast {
        true => "\x20   local staged=\"$stage.$2\"\n\
                 \x20   srun --nodes=1 --ntasks=1 --nodelist=\"$n\" mkdir -m 0700 -- \"$staged\" ||\n\
                 \x20       { echo \"oslab fleet: node $n: cannot make $staged, the private directory of the binary's copy (the node unreachable, or someone made it first)\" >&2; return 1; }\n\
                 \x20   launch=(--bcast=\"$staged/oslab\" \"$bin\") once=--staged\n",
        false => "",
    };
    // A try whose task never started leaves no copy behind.
    let clean = match o.sbcast {
        true => {
            "srun --nodes=1 --ntasks=1 --nodelist=\"$n\" rm -rf -- \"$stage.$try\" 2>/dev/null\n"
        }
        false => "",
    };
    let args: Vec<String> = o.run_args.iter().map(|a| shell_word(a)).collect();
    let binds: String = [("--cpu-bind", o.cpu_bind), ("--mem-bind", o.mem_bind)]
        .iter()
        .filter_map(|(flag, b)| b.map(|b| format!(" {flag}={}", shell_word(b))))
        .collect();
    s += &format!(
        "run_on() {{\n\
         \x20   local n=$1 launch=(\"$bin\") once=\n\
         {staging}\
         \x20   srun --nodes=1 --ntasks=1 --nodelist=\"$n\" --whole{binds} \"${{launch[@]}}\" fleet task --results \"$results\" --submission \"$token\" $once -- {}\n\
         }}\n\
         nodes=($(scontrol show hostnames \"$SLURM_JOB_NODELIST\"))\npids=()\n\
         for n in \"${{nodes[@]}}\"; do\n\
         \x20   {{ for try in 1 2; do\n\
         \x20       run_on \"$n\" \"$try\"; rc=$?\n\
         \x20       {{ [ \"$rc\" = 0 ] || [ -e \"$dir/node-$n.started\" ]; }} && exit \"$rc\"\n\
         \x20       {clean}\
         \x20       [ \"$try\" = 2 ] || echo \"oslab fleet: node $n: its task did not start (status $rc); trying once more\" >&2\n\
         \x20   done; exit \"$rc\"; }} &\n\
         \x20   pids+=($!)\n\
         done\n",
        args.join(" ")
    );
    // Every node speaks for itself with its run or its task's word; for one that did not, the
    // job says what it saw: a task that started and handed in nothing crashed or lost its node
    // (srun can end 0 then), with Slurm's state and reason of the node; one that never started
    // (its binary not staged, its step not launched, twice) on a node Slurm still has up was not
    // run, no fault of the node's; on one Slurm has down or not responding, the node was lost.
    s += "status=0\n\
          for i in \"${!nodes[@]}\"; do\n\
          \x20   n=${nodes[$i]}\n\
          \x20   wait \"${pids[$i]}\"; rc=$?\n\
          \x20   [ \"$rc\" = 0 ] || { status=1; echo \"oslab fleet: node $n: its task ended with status $rc\" >&2; }\n\
          \x20   { [ -e \"$dir/node-$n.json\" ] || [ -e \"$dir/node-$n.failed\" ]; } && continue\n\
          \x20   status=1\n\
          \x20   slurm=$(scontrol show node \"$n\" | grep -o -e 'State=[^ ]*' -e 'Reason=[^[]*' | tr '\\n' ' ')\n\
          \x20   if [ -e \"$dir/node-$n.started\" ]; then\n\
          \x20       echo \"its task ended with status $rc and handed in nothing; Slurm has the node $slurm\" >\"$dir/node-$n.crashed\"\n\
          \x20   else\n\
          \x20       case \"$slurm\" in\n\
          \x20       *DOWN*|*NOT_RESPONDING*|*FAIL*) echo \"its task never started and Slurm has the node $slurm\" >\"$dir/node-$n.crashed\" ;;\n\
          \x20       *) echo \"its task never started (status $rc, twice): the binary was not staged or its step not launched; the node was not measured (Slurm has it $slurm)\" >\"$dir/node-$n.notrun\" ;;\n\
          \x20       esac\n\
          \x20   fi\n\
          done\n\
          exit $status\n";
    s
}

/// A Slurm client command that failed, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SlurmError(pub String);

/// Runs a Slurm client command and returns its standard output, or a clear error.
fn client(program: &str, args: &[&str]) -> Result<String, SlurmError> {
    let out = Command::new(program).args(args).output().map_err(|e| {
        SlurmError(if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "{program} not found: oslab fleet needs Slurm's client commands (Debian: slurm-client); --dry-run prints the script without them"
            )
        } else {
            format!("cannot run {program}: {e}")
        })
    })?;
    if !out.status.success() {
        return Err(SlurmError(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Node states a job can be given (sinfo's short names, without the '*' of unreachable nodes).
const USABLE: &[&str] = &["idle", "mix", "alloc", "comp", "resv", "plnd"];

/// A partition's nodes: those a job can have, and the others with their state.
pub type Nodes = (Vec<String>, Vec<(String, String)>);

/// The nodes of `partition` (or of the default partition).
pub fn partition_nodes(partition: Option<&str>) -> Result<Nodes, SlurmError> {
    let text = client("sinfo", &["-h", "-N", "-o", "%N %P %t"])?;
    Ok(pick_nodes(&text, partition))
}

/// `sinfo -h -N -o "%N %P %t"` lines -> the partition's nodes, usable and not.
fn pick_nodes(text: &str, partition: Option<&str>) -> Nodes {
    let (mut ok, mut skipped) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [node, part, state] = f[..] else { continue };
        let wanted = match partition {
            Some(p) => part.trim_end_matches('*') == p,
            None => part.ends_with('*'),
        };
        if !wanted || ok.iter().any(|n| n == node) || skipped.iter().any(|(n, _)| n == node) {
            continue;
        }
        if USABLE.contains(&state) {
            ok.push(node.to_string());
        } else {
            skipped.push((node.to_string(), state.to_string()));
        }
    }
    (ok, skipped)
}

/// The node names of a hostlist expression, when scontrol is here to expand it.
pub fn hostnames(list: &str) -> Option<Vec<String>> {
    client("scontrol", &["show", "hostnames", list])
        .ok()
        .map(|t| t.lines().map(str::to_string).collect())
}

/// Submits a script; returns the job id.
pub fn submit(script: &Path) -> Result<String, SlurmError> {
    let out = client("sbatch", &["--parsable", &script.to_string_lossy()])?;
    // "JOBID" or "JOBID;CLUSTER".
    let id = out.trim().split(';').next().unwrap_or("").to_string();
    if !crate::is_job_id(&id) {
        return Err(SlurmError(format!("sbatch answered {out:?}, not a job id")));
    }
    Ok(id)
}

/// How Slurm says a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    /// Its state: COMPLETED, FAILED, NODE_FAIL, CANCELLED, TIMEOUT, OUT_OF_MEMORY, ...
    pub state: String,
    /// Its exit code and signal ("1:0").
    pub exit: String,
    /// Slurm's reason, when it gives one.
    pub reason: Option<String>,
}

impl JobEnd {
    /// Whether the job ended well.
    pub fn completed(&self) -> bool {
        self.state == "COMPLETED"
    }
}

/// How a job that left the queue ended, from scontrol (which keeps a job for MinJobAge after
/// it ends) or else from accounting; none when neither knows it any more.
pub fn job_end(job: &str) -> Option<JobEnd> {
    if let Ok(text) = client("scontrol", &["show", "job", "-o", job]) {
        if let Some(end) = parse_job_end(&text) {
            return Some(end);
        }
    }
    let text = client(
        "sacct",
        &["-n", "-X", "-P", "-j", job, "-o", "State,ExitCode,Reason"],
    )
    .ok()?;
    let line = text.lines().next()?;
    let mut f = line.split('|');
    let state = f.next()?.split_whitespace().next()?.to_string();
    Some(JobEnd {
        state,
        exit: f.next().unwrap_or("").to_string(),
        reason: f
            .next()
            .filter(|r| !r.is_empty() && *r != "None")
            .map(str::to_string),
    })
}

/// `scontrol show job -o` -> its end.
fn parse_job_end(text: &str) -> Option<JobEnd> {
    let field = |k: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    Some(JobEnd {
        state: field("JobState")?,
        exit: field("ExitCode").unwrap_or_default(),
        reason: field("Reason").filter(|r| r != "None"),
    })
}

/// Whether the job is still pending or running.
pub fn in_queue(job: &str) -> bool {
    client("squeue", &["-h", "-j", job, "-o", "%T"]).is_ok_and(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_values_follow_slurms_syntax_and_nothing_else() {
        for p in ["batch", "gpu-a100", "debug_2", "p.x"] {
            assert!(check_partition(p).is_ok(), "{p}");
        }
        for p in [
            "x\ntouch /tmp/pwned\n",
            "p --uid=0",
            "-p",
            "",
            "a;b",
            "$(id)",
        ] {
            assert!(check_partition(p).is_err(), "{p:?}");
        }
        for t in [
            "30",
            "30:00",
            "1:30:00",
            "2-12",
            "2-12:30",
            "2-12:30:15",
            "366-0",
            "527040",
            "UNLIMITED",
            "infinite",
        ] {
            assert!(check_time(t).is_ok(), "{t}");
        }
        for t in [
            "",
            "1:2:3:4",
            "30:00\n#SBATCH --uid=0",
            "1 -",
            "-5",
            "1-",
            "x",
            "0",
            "0:00",
            "999999999",
            "400-0",
            "527041",
        ] {
            assert!(check_time(t).is_err(), "{t:?}");
        }
        for l in ["n1", "n[1-2]", "n[01-16,20],gpu3", "node-1.cluster"] {
            assert!(check_hostlist(l).is_ok(), "{l}");
        }
        for l in [
            "",
            "n1\ntouch x",
            "n1 n2",
            "n[1-2",
            "n]1",
            "n[[1]]",
            "n[a-b]",
            "-n1",
            "n1;id",
            "n$(id)",
        ] {
            assert!(check_hostlist(l).is_err(), "{l:?}");
        }
    }

    #[test]
    fn the_script_runs_one_task_per_node_with_every_argument_intact() {
        let args = vec!["--quick".to_string(), "it's *".to_string()];
        let o = ScriptOptions {
            partition: Some("batch"),
            nodelist: "n[01-04]",
            node_count: Some(4),
            exclusive: true,
            time: Some("30:00"),
            results: Path::new("/shared/res"),
            token: "0a1b2c3d",
            binary: Path::new("/home/u/oslab"),
            sbcast: true,
            cpu_bind: Some("cores"),
            mem_bind: Some("local"),
            run_args: &args,
        };
        let s = script(&o);
        for line in [
            "#SBATCH --nodes=4",
            "#SBATCH --nodelist=n[01-04]",
            "#SBATCH --ntasks-per-node=1",
            "#SBATCH --exclusive",
            "#SBATCH --partition=batch",
            "#SBATCH --time=30:00",
            "#SBATCH --no-requeue",
            "#SBATCH --no-kill",
            "#SBATCH --output=/shared/res/slurm-%j.0a1b2c3d.out",
            "#SBATCH --chdir=/shared/res",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing:\n{s}");
        }
        // Directives come before the first command, or sbatch ignores them.
        let first_cmd = s.lines().position(|l| !l.starts_with('#')).unwrap();
        assert!(s.lines().skip(first_cmd).all(|l| !l.starts_with("#SBATCH")));
        assert!(s.contains(r"-- --quick 'it'\''s *'"), "{s}");
        assert!(s.contains("--bcast=\"$staged/oslab\""), "{s}");
        assert!(s.contains("mkdir -m 0700 -- \"$staged\""), "{s}");
        assert!(s.contains("local staged=\"$stage.$2\""), "{s}");
        assert!(
            s.contains("--whole --cpu-bind=cores --mem-bind=local "),
            "{s}"
        );
        // bash parses it.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.sh");
        std::fs::write(&f, &s).unwrap();
        assert!(Command::new("bash")
            .arg("-n")
            .arg(&f)
            .status()
            .unwrap()
            .success());
        let shared = script(&ScriptOptions {
            sbcast: false,
            exclusive: false,
            partition: None,
            ..o
        });
        assert!(!shared.contains("bcast") && !shared.contains("--exclusive"));
        assert!(!shared.contains("--partition"));
    }

    #[test]
    fn bindings_follow_sruns_syntax_and_nothing_else() {
        for ok in [
            "cores",
            "verbose,sockets",
            "map_cpu:0,2",
            "mask_cpu:0x3,0xc",
            "ldoms",
        ] {
            assert!(check_bind("--cpu-bind", ok).is_ok(), "{ok}");
        }
        for ok in ["local", "quiet,map_mem:0,1", "none"] {
            assert!(check_bind("--mem-bind", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "core",
            "map_cpu",
            "cores:1",
            "cores; rm -rf /",
            "map_cpu:0 1",
            "-x",
        ] {
            assert!(check_bind("--cpu-bind", bad).is_err(), "{bad:?}");
        }
        assert!(check_bind("--mem-bind", "cores").is_err());
    }

    #[test]
    fn a_jobs_end_is_read_from_scontrol() {
        let t = "JobId=7 JobName=oslab-fleet UserId=root(0) JobState=NODE_FAIL Reason=NodeDown Dependency=(null) Requeue=0 ExitCode=0:0 RunTime=00:01:02";
        let e = parse_job_end(t).unwrap();
        assert_eq!((e.state.as_str(), e.exit.as_str()), ("NODE_FAIL", "0:0"));
        assert_eq!(e.reason.as_deref(), Some("NodeDown"));
        assert!(!e.completed());
        let ok = parse_job_end("JobId=8 JobState=COMPLETED Reason=None ExitCode=0:0").unwrap();
        assert!(ok.completed() && ok.reason.is_none());
        assert!(parse_job_end("slurm_load_jobs error: Invalid job id specified").is_none());
    }

    #[test]
    fn all_means_the_usable_nodes_of_the_partition() {
        let sinfo = "n1 batch* idle\nn2 batch* mix\nn3 batch* down*\nn4 batch* drain\nn1 debug idle\ng1 gpu alloc\n";
        let (ok, skipped) = pick_nodes(sinfo, None);
        assert_eq!(ok, vec!["n1", "n2"]);
        assert_eq!(skipped.len(), 2);
        assert_eq!(pick_nodes(sinfo, Some("gpu")).0, vec!["g1"]);
        assert_eq!(pick_nodes(sinfo, Some("debug")).0, vec!["n1"]);
        assert_eq!(shell_word("a'b"), r"'a'\''b'");
    }
}
