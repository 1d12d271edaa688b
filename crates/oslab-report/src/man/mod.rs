//! Manual pages from the command line's own definition (as `--help` is), with the sections a
//! manual page has beyond it: SYNOPSIS with values, EXAMPLES, EXIT STATUS, ENVIRONMENT.

use std::io::Write;

/// Examples per command path (`run`, `cpuman simulate`; empty: oslab's own page): the command
/// line and what it does, one per line, separated by tabs.
const EXAMPLES: &str = include_str!("examples.tsv");

/// ENVIRONMENT: a variable and what it sets, separated by a tab.
const ENVIRONMENT: &str = include_str!("environment.tsv");

/// Every example: (command path, the command line, what it does).
pub fn examples() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    records(EXAMPLES)
}

/// The records of a tab-separated table of up to three fields: its lines but comments.
fn records(
    table: &'static str,
) -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            let mut next = || f.next().unwrap_or_default();
            (next(), next(), next())
        })
}

const EXIT_STATUS: &str =
    "0 success; 1 failure (a probe that failed still exits 0: its row says why); \
2 usage error (a bad flag, an unknown probe or run, a bad cpu list; compare --fail-on-regression \
with too few repetitions to judge); 1 with --fail-on-regression when a measurement regressed; \
128 + the signal that interrupted it: 130 Ctrl-C, 143 SIGTERM, 129 a hang-up; every signal that \
ends a process is handled as SIGTERM (what completed is stored, marked interrupted).";

/// The page of `oslab PATH...` among `pages`, or why there is none.
pub fn page<'a>(pages: &'a [(String, Vec<u8>)], path: &[String]) -> Result<&'a [u8], String> {
    let wanted = std::iter::once("oslab".to_string())
        .chain(path.iter().cloned())
        .collect::<Vec<_>>()
        .join("-")
        + ".1";
    pages
        .iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, page)| page.as_slice())
        .ok_or_else(|| {
            format!(
                "no manual page for `oslab {}`: `oslab --help` lists the subcommands",
                path.join(" ")
            )
        })
}

/// Why `dir` cannot take the pages, if it cannot: it is no directory.
pub fn check_dir(dir: &std::path::Path) -> Result<(), String> {
    match (dir.is_dir(), dir.exists()) {
        (true, _) => Ok(()),
        (false, true) => Err(format!("--dir {}: not a directory", dir.display())),
        (false, false) => Err(format!(
            "--dir {}: no such directory (create it first)",
            dir.display()
        )),
    }
}

/// Writes every page into the directory `dir` (all or none, as every output file); how many.
pub fn write_all(
    pages: &[(String, Vec<u8>)],
    dir: &std::path::Path,
) -> Result<usize, oslab_files::FileError> {
    let named: Vec<(std::path::PathBuf, &[u8])> = pages
        .iter()
        .map(|(name, page)| (dir.join(name), page.as_slice()))
        .collect();
    let set: Vec<(&std::path::Path, &[u8])> =
        named.iter().map(|(p, b)| (p.as_path(), *b)).collect();
    oslab_files::write_set(&set)?;
    Ok(pages.len())
}

/// Every manual page of `cli` (oslab's command line), each command's with its subcommands' after
/// it: (file name, roff).
pub fn pages(cli: clap::Command) -> std::io::Result<Vec<(String, Vec<u8>)>> {
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
    let mut cmd = cli.disable_help_subcommand(true);
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
    let examples: Vec<_> = records(EXAMPLES).filter(|(p, _, _)| *p == path).collect();
    if !examples.is_empty() {
        writeln!(w, ".SH EXAMPLES")?;
        for (_, line, what) in examples {
            writeln!(w, ".TP\n\\fB{}\\fR\n{}", roff(line), roff(what))?;
        }
    }
    writeln!(w, ".SH \"EXIT STATUS\"\n{}", roff(EXIT_STATUS))?;
    writeln!(w, ".SH ENVIRONMENT")?;
    for (name, what, _) in records(ENVIRONMENT) {
        writeln!(w, ".TP\n\\fB{name}\\fR\n{}", roff(what))?;
    }
    writeln!(w, ".SH VERSION\n{}", env!("CARGO_PKG_VERSION"))
}
