//! Manual pages from the command line's own definition (as `--help` is), with the sections a
//! manual page has beyond it: SYNOPSIS with values, EXAMPLES, EXIT STATUS, ENVIRONMENT.

use crate::cli::Cli;
use clap::CommandFactory;
use std::io::Write;

/// Examples per command path (`run`, `cpuman simulate`): the command line and what it does.
const EXAMPLES: &[(&str, &str, &str)] = &[
    ("", "oslab run", "the whole suite on this machine, stored"),
    ("", "oslab show", "the latest run again"),
    ("", "oslab report latest", "an HTML report with charts"),
    (
        "info",
        "oslab info --counters",
        "the machine, and every counter and whether it opens",
    ),
    (
        "list",
        "oslab list",
        "every probe and whether it can run here",
    ),
    ("run", "oslab run --quick", "the suite with short budgets"),
    (
        "run",
        "oslab run --plan",
        "what each probe would measure here, measuring nothing",
    ),
    (
        "run",
        "oslab run 'switch.*' --cpu 1 --peer-cpu 0",
        "context switches, measured on cpu 1",
    ),
    (
        "run",
        "oslab run --quick --repeat 3 --tag build=new",
        "3 interleaved repetitions, tagged",
    ),
    (
        "activity",
        "oslab activity --duration 2s --trace act.json",
        "OS noise on one cpu",
    ),
    (
        "timeslice",
        "oslab timeslice --sweep 5",
        "1..5 busy processes on one cpu",
    ),
    (
        "migrate",
        "oslab migrate --size 1024 --runs 5",
        "matmul pinned vs migrated half way",
    ),
    (
        "shuffle",
        "oslab shuffle -- oslab lockbench --threads 8 --locks 2",
        "regroup lock-bound threads",
    ),
    (
        "shuffle-eval",
        "oslab shuffle-eval --runs 5",
        "with vs without shuffling",
    ),
    (
        "lockbench",
        "oslab lockbench --threads 8 --locks 2",
        "a lock-bound workload",
    ),
    (
        "cpuman",
        "oslab cpuman run --workload W3 --load 100 --policy pdpa",
        "malleable jobs, live",
    ),
    (
        "cpuman simulate",
        "oslab cpuman simulate --cpus 64 --nodes 32 --workload W1 --policy pdpa",
        "the manager on a simulated machine",
    ),
    (
        "fleet",
        "oslab fleet submit --partition batch --results /shared/oslab -- --quick",
        "the suite on every node",
    ),
    (
        "numa",
        "oslab numa --quick",
        "cpu node x memory node bandwidth and latency",
    ),
    (
        "c2c",
        "oslab c2c --sample 200",
        "core-to-core latency of 200 pairs",
    ),
    (
        "report",
        "oslab report 12 15 -o cmp.html",
        "two runs overlaid, with their comparison",
    ),
    (
        "report",
        "oslab report latest -o - > run.html",
        "to standard output",
    ),
    (
        "compare",
        "oslab compare 12 15 --fail-on-regression",
        "a CI gate",
    ),
    (
        "compare",
        "oslab compare 1,3,5 2,4,6",
        "runs taken alternately, as groups",
    ),
    (
        "export",
        "oslab export latest --format csv -o run.csv",
        "one row per measurement",
    ),
    (
        "import",
        "oslab import run.json",
        "a run measured elsewhere",
    ),
    (
        "runs",
        "oslab --db lab.db runs",
        "the runs of another store",
    ),
    (
        "show",
        "oslab show 12 --details",
        "every row, the sweeps and the model's reasons",
    ),
    (
        "completions",
        "oslab completions bash > /etc/bash_completion.d/oslab",
        "shell completion",
    ),
    ("man", "oslab man run | man -l -", "this page"),
];

const EXIT_STATUS: &str =
    "0 success; 1 failure (a probe that failed still exits 0: its row says why); \
2 usage error (a bad flag, an unknown probe or run, a bad cpu list; compare --fail-on-regression \
with too few repetitions to judge); 1 with --fail-on-regression when a measurement regressed; \
130 interrupted by Ctrl-C, 143 by SIGTERM (what completed is stored, marked interrupted).";

const ENVIRONMENT: &[(&str, &str)] = &[
    ("OSLAB_DB", "the store, as --db"),
    (
        "OSLAB_DB_TIMEOUT",
        "how long to wait for a locked store, as --db-timeout",
    ),
    (
        "OSLAB_MEMORY",
        "the memory's type, rate and channels (DDR5-4800x8), as --memory",
    ),
    (
        "COLUMNS",
        "the width tables and text fit (default: the terminal's; 120 in a pipe)",
    ),
    ("NO_COLOR", "set and not empty: no colour on a terminal"),
    (
        "XDG_DATA_HOME",
        "where the default store lives (oslab/oslab.db)",
    ),
];

/// Every manual page, each command's with its subcommands' after it: (file name, roff).
pub fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn walk(
        cmd: clap::Command,
        path: &str,
        out: &mut Vec<(String, Vec<u8>)>,
    ) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone())
            .source(format!("oslab {}", env!("CARGO_PKG_VERSION")))
            .manual("oslab manual");
        let mut page = Vec::new();
        man.render_title(&mut page)?;
        man.render_name_section(&mut page)?;
        synopsis(&mut page, &cmd, path)?;
        man.render_description_section(&mut page)?;
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut page)?;
        }
        if cmd.has_subcommands() {
            man.render_subcommands_section(&mut page)?;
        }
        sections(&mut page, path)?;
        out.push((man.get_filename(), page));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name().to_string();
            let sub_path = if path.is_empty() {
                name
            } else {
                format!("{path} {name}")
            };
            walk(sub.clone(), &sub_path, out)?;
        }
        Ok(())
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(cmd, "", &mut out)?;
    Ok(out)
}

/// Text made safe for roff: a backslash and a hyphen escaped, no line starting with a dot.
fn roff(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    match s.starts_with(['.', '\'']) {
        true => format!("\\&{s}"),
        false => s,
    }
}

/// SYNOPSIS: the command, its options as one word and its operands with their value names.
fn synopsis(w: &mut dyn Write, cmd: &clap::Command, path: &str) -> std::io::Result<()> {
    let name = if path.is_empty() {
        "oslab".to_string()
    } else {
        format!("oslab {path}")
    };
    let mut line = format!("\\fB{}\\fR [\\fIOPTIONS\\fR]", roff(&name));
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .map_or_else(|| arg.get_id().to_string(), |v| v.join(" "));
        let many = matches!(arg.get_num_args(), Some(r) if r.max_values() > 1);
        let shown = format!("\\fI{}\\fR{}", roff(&value), if many { "..." } else { "" });
        match arg.is_required_set() {
            true => line.push_str(&format!(" {shown}")),
            false => line.push_str(&format!(" [{shown}]")),
        }
    }
    if cmd.has_subcommands() {
        line.push_str(" \\fISUBCOMMAND\\fR");
    }
    writeln!(w, ".SH SYNOPSIS\n{line}")
}

/// EXAMPLES of this command, EXIT STATUS and ENVIRONMENT.
fn sections(w: &mut dyn Write, path: &str) -> std::io::Result<()> {
    let examples: Vec<_> = EXAMPLES.iter().filter(|(p, _, _)| *p == path).collect();
    if !examples.is_empty() {
        writeln!(w, ".SH EXAMPLES")?;
        for (_, line, what) in examples {
            writeln!(w, ".TP\n\\fB{}\\fR\n{}", roff(line), roff(what))?;
        }
    }
    writeln!(w, ".SH \"EXIT STATUS\"\n{}", roff(EXIT_STATUS))?;
    writeln!(w, ".SH ENVIRONMENT")?;
    for (name, what) in ENVIRONMENT {
        writeln!(w, ".TP\n\\fB{name}\\fR\n{}", roff(what))?;
    }
    writeln!(w, ".SH VERSION\n{}", env!("CARGO_PKG_VERSION"))
}
