//! The lists: stored runs, the probes, a run's plan, a fleet's nodes.

use crate::table::*;
use oslab_core::units::{num, scale_for};
use oslab_store::RunSummary;

/// The most of one tag the list of runs shows.
const TAG_SHOWN: usize = 32;

/// One line per stored run: id, start (UTC, to the minute), status, host, how many results,
/// wall time, tags (when any run has them) and the command, the program named without its
/// directory and shortened to what the other columns leave on the line.
pub fn runs(rows: &[RunSummary]) -> String {
    let tagged = rows.iter().any(|r| !r.tags.is_empty());
    let mut header = vec!["run", "started (UTC)", "status", "host", "results", "wall"];
    if tagged {
        header.push("tags");
    }
    header.push("command");
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            // Each tag at most TAG_SHOWN characters here (a 300-character one drew the table's
            // rule across three screens); `oslab show` has them whole.
            let tags: Vec<String> = r
                .tags
                .iter()
                .map(|(k, v)| {
                    let tag = format!("{k}={v}");
                    match tag.char_indices().nth(TAG_SHOWN) {
                        Some((cut, _)) => format!("{}…", &tag[..cut]),
                        None => tag,
                    }
                })
                .collect();
            let mut row = vec![
                r.id.to_string(),
                to_the_minute(&r.started),
                r.status.as_str().to_string(),
                oslab_core::text::one_line(&r.hostname).into_owned(),
                r.measurements.to_string(),
                format!("{:.1} s", r.wall_s),
            ];
            if tagged {
                row.push(oslab_core::text::printable(&tags.join(" ")).into_owned());
            }
            row.push(oslab_core::text::printable(&program_named(&r.command)).into_owned());
            row
        })
        .collect();
    // The command takes what the other columns leave (`oslab show` has it whole); where that
    // is too little to read, it is left out.
    if let Some(w) = width() {
        let used: usize = (0..header.len() - 1)
            .map(|c| {
                let column = cells.iter().map(|r| r[c].as_str());
                widest(std::iter::once(header[c]).chain(column)) + 3
            })
            .sum();
        let room = (w as usize).saturating_sub(used + 2);
        for row in &mut cells {
            let command = row.last_mut().expect("a command column");
            if command.chars().count() > room {
                *command = command
                    .chars()
                    .take(room.saturating_sub(1))
                    .chain(['…'])
                    .collect();
            }
            if room < MIN_COMMAND {
                row.pop();
            }
        }
        if room < MIN_COMMAND {
            header.pop();
        }
    }
    let mut t = new_table(&header);
    for row in cells {
        add(&mut t, row);
    }
    right(&mut t, &[0, 4, 5]);
    // Every column whole but the tags, which wrap to what the line leaves.
    let tags_at = header.iter().position(|h| *h == "tags");
    let kept: Vec<usize> = (0..header.len()).filter(|c| Some(*c) != tags_at).collect();
    whole(&mut t, &kept);
    t.to_string()
}

/// The narrowest command column worth showing.
const MIN_COMMAND: usize = 12;

/// A command line with its program named without its directory (`oslab run ...`).
pub(crate) fn program_named(command: &str) -> String {
    let (program, rest) = command.split_once(' ').unwrap_or((command, ""));
    let name = program.rsplit('/').next().unwrap_or(program);
    format!("{name} {rest}").trim_end().to_string()
}

/// One row per probe: id, unit, needs, whether it can run here, description.
pub fn probes(rows: &[(String, String, String, String, String)]) -> String {
    let mut t = new_table(&["probe", "unit", "needs", "here", "what it measures"]);
    for (id, unit, needs, here, about) in rows {
        add(&mut t, [id, unit, needs, here, about]);
    }
    t.to_string()
}

/// `oslab run --plan`: the probes whose work grows with the machine (or that will not run),
/// each with its expected seconds and what it will measure here; the others, which measure
/// the same points on any machine, in one line.
pub fn plan(rows: &[(String, f64, String)]) -> String {
    let mut t = new_table(&["probe", "time", "what it measures on this machine"]);
    right(&mut t, &[1]);
    let (shown, fixed): (Vec<_>, Vec<_>) = rows.iter().partition(|r| !r.2.is_empty());
    for (id, share, what) in &shown {
        add(&mut t, [id.clone(), format!("{share:.1} s"), what.clone()]);
    }
    if !fixed.is_empty() {
        let share: f64 = fixed.iter().map(|r| r.1).sum();
        add(
            &mut t,
            [
                format!("{} others", fixed.len()),
                format!("{share:.0} s"),
                "the same points on any machine".to_string(),
            ],
        );
    }
    t.to_string()
}

/// How often a healthy node is called an outlier, as measured on healthy fleets.
pub const FALSE_OUTLIERS: &str = "false outliers on healthy fleets: none in 1,000 synthetic fleets of 3-64 nodes (2% noise, or steady and 30%-noisy probes mixed; 100 fleets of each size and kind), none among 24 healthy nodes in 8 jobs on a Slurm cluster of QEMU guests, 4 of them with a node 20% slower (found in 3; scripts/cluster)";

/// The fleet view of job `job`: what the columns mean, one line per node (its outliers and
/// largest deviation), then the node x measurement matrix of deviations from the fleet median
/// ("!" marks an outlier), and every node not healthy with why. With more than 12 nodes, only measurements
/// with an outlier are listed unless `all`.
pub fn fleet(job: &str, s: &oslab_fleet::FleetSummary, all: bool) -> String {
    // Several shapes: each one's view, judged among its own nodes, then every verdict.
    if s.groups.is_empty() {
        return one_fleet(job, s, all, &format!("{FALSE_OUTLIERS}\n"));
    }
    let mut text = format!(
        "fleet job {job}: nodes of {} shapes, each judged among its own (a machine of another shape differs by design)\n{FALSE_OUTLIERS}\n",
        s.groups.len()
    );
    for g in &s.groups {
        text += &format!(
            "\n== {}: {} ==\n{}\n",
            g.shape,
            g.summary.nodes.join(", "),
            one_fleet(job, &g.summary, all, "")
        );
    }
    text + "\nin all: " + &verdict_lines(s)
}

/// [`fleet`] of nodes of one shape, `said` (how often it cries wolf, a line) under its first.
fn one_fleet(job: &str, s: &oslab_fleet::FleetSummary, all: bool, said: &str) -> String {
    let mut text = format!(
        "fleet job {job}: {}, {} measurements; deviation from the fleet median, ! = outlier: at least {} off, beyond the node's own interval and the noise between nodes (|z| > {:.2}, corrected for {} values judged); a node is also apart when its probes, of a family or of all, deviate one way by at least as much (sign test, p <= {:.1e}: corrected for the families that could pass) and beyond the other nodes' typical deviations\n{said}",
        oslab_core::units::counted(s.nodes.len() - s.references.len(), "node"),
        s.rows.len(),
        oslab_core::units::percent(s.rule.min_effect),
        s.rule.z,
        s.rule.comparisons,
        s.rule.sign_level,
    );
    if !s.references.is_empty() {
        text += &format!(
            "judged with {} of an earlier job as references, each healthy there (no verdict of their own): {}\n",
            oslab_core::units::counted(s.references.len(), "node"),
            s.references.join(", ")
        );
    }
    if s.nodes.len() < 3 {
        text += "note: outliers need at least 3 nodes; none can be flagged here\n";
    }
    if !s.shapes.is_empty() {
        text += "note: the nodes are not one kind of machine, so their values differ by design:\n";
        for (shape, nodes) in &s.shapes {
            text += &format!("  {shape}: {}\n", nodes.join(", "));
        }
    }
    for v in s
        .verdicts
        .iter()
        .filter(|v| v.state != oslab_fleet::NodeState::Ok && v.run_id.is_some())
    {
        text += &format!(
            "note: {}'s run is {} ({} measured): what it holds is judged, the rest is missing\n",
            oslab_core::text::one_line(&v.node),
            v.state.as_str(),
            v.measured
        );
    }
    let mut end = verdict_lines(s);
    let apart: Vec<String> = s
        .verdicts
        .iter()
        .filter(|v| v.outliers > 0 && v.verdict == oslab_fleet::summary::Health::Healthy)
        .map(|v| {
            format!(
                "{} {} of {}",
                oslab_core::text::one_line(&v.node),
                v.outliers,
                v.measured
            )
        })
        .collect();
    if !apart.is_empty() {
        end += &format!(
            "\nsingle values apart (marked !; a node is an outlier when a whole probe family, or a quarter of its values, is): {}",
            apart.join(", ")
        );
    }
    // A node apart across a whole family says so in a line: the finding a person acts on.
    for v in &s.verdicts {
        for f in &v.shifts {
            end += &format!(
                "\n  {}: {} {} from the fleet median, {} of {} probes that way, {} the other, {} within {} (sign test p={:.1e}; {} measurements)",
                oslab_core::text::one_line(&v.node),
                f.family,
                deviation(f.deviation),
                f.same_way,
                f.probes,
                f.against,
                f.probes - f.same_way - f.against,
                oslab_core::units::percent(s.rule.min_effect),
                f.p,
                f.measurements
            );
        }
    }
    format!("{text}{}\n{end}", fleet_tables(s, all))
}

/// Every node's verdict, the unhealthy ones with why: what a scheduler drains.
fn verdict_lines(s: &oslab_fleet::FleetSummary) -> String {
    let sick: Vec<&oslab_fleet::summary::NodeVerdict> = s
        .verdicts
        .iter()
        .filter(|v| v.verdict != oslab_fleet::summary::Health::Healthy)
        .collect();
    let mut end = match sick.len() {
        0 => format!("every node healthy ({})", s.verdicts.len()),
        n => format!("{} of {} nodes not healthy:", n, s.verdicts.len()),
    };
    for v in &sick {
        end += &format!(
            "\n  {} {}: {}",
            oslab_core::text::one_line(&v.node),
            v.verdict.as_str(),
            oslab_core::text::one_line(&v.why.join("; "))
        );
    }
    end
}

/// An RFC 3339 time to the minute: `2026-11-28 04:21`.
fn to_the_minute(t: &str) -> String {
    t.replacen('T', " ", 1).chars().take(16).collect()
}

/// `oslab fleet reference save`: what was kept and what was left out, and why.
pub fn reference_saved(saved: &oslab_fleet::reference::Saved) -> String {
    let mut out = format!(
        "reference {}: {} of job {} ({})\n",
        saved.name,
        oslab_core::units::counted(saved.nodes.len(), "healthy node"),
        saved.job,
        saved.nodes.join(", ")
    );
    for (node, health, why) in &saved.left_out {
        out += &format!(
            "  left out {node}: {}{}\n",
            health.as_str(),
            match why.is_empty() {
                true => String::new(),
                false => format!(" ({})", why.join("; ")),
            }
        );
    }
    out += &format!(
        "Judge a job against it with `oslab fleet summary JOB --reference {0}`, a node alone with `oslab check --reference {0}`.\n",
        saved.name
    );
    out
}

/// `oslab fleet history NODE`: one line per job the node ran in or was listed for, oldest first,
/// with its verdict there and why.
pub fn fleet_history(node: &str, jobs: &[oslab_fleet::NodeInJob]) -> String {
    if jobs.is_empty() {
        return format!("no collected fleet job ran or listed node {node}\n");
    }
    let mut t = new_table(&["job", "started (UTC)", "run", "nodes", "verdict", "why"]);
    for j in jobs {
        add(
            &mut t,
            [
                j.job.clone(),
                to_the_minute(&j.started),
                j.run_id.map_or("-".into(), |id| id.to_string()),
                j.nodes.to_string(),
                j.verdict.as_str().to_string(),
                oslab_core::text::one_line(&j.why.join("; ")).into_owned(),
            ],
        );
    }
    whole(&mut t, &[0, 1, 2, 3, 4]);
    let healthy = jobs
        .iter()
        .filter(|j| j.verdict == oslab_fleet::summary::Health::Healthy)
        .count();
    format!(
        "node {node} in {}, each judged among that job's nodes: healthy in {healthy}\n{t}\n",
        oslab_core::units::counted(jobs.len(), "collected job")
    )
}

/// A deviation from the fleet median as a signed percentage, one decimal; a deviation that
/// rounds to nothing reads `+0.0%`, never `-0.0%`.
fn deviation(share: f64) -> String {
    let p = (share * 1000.0).round() / 10.0;
    format!("{:+.1}%", if p == 0.0 { 0.0 } else { p })
}

fn fleet_tables(s: &oslab_fleet::FleetSummary, all: bool) -> String {
    let mut nodes = new_table(&[
        "node",
        "run",
        "verdict",
        "measured",
        "outliers",
        "largest deviation",
    ]);
    for v in &s.verdicts {
        let worst = v.worst.as_ref().map_or(String::new(), |(label, dev, z)| {
            format!("{label}: {} (z {z:+.1})", deviation(*dev))
        });
        add(
            &mut nodes,
            [
                v.node.clone(),
                v.run_id.map_or("-".into(), |id| id.to_string()),
                v.verdict.as_str().to_string(),
                v.measured.to_string(),
                if v.outliers > 0 {
                    format!("{} !", v.outliers)
                } else {
                    "0".into()
                },
                worst,
            ],
        );
    }
    right(&mut nodes, &[1, 3, 4]);
    let mut header = vec!["measurement", "unit", "fleet median"];
    header.extend(s.nodes.iter().map(String::as_str));
    let mut matrix = new_table(&header);
    let few = s.nodes.len() <= 12;
    let shown: Vec<&oslab_fleet::summary::FleetRow> = s
        .rows
        .iter()
        .filter(|row| all || few || row.cells.iter().flatten().any(|c| c.outlier))
        .collect();
    // Where one line per measurement does not fit the terminal, its name goes on several (the
    // probe, then its metric and parameters indented), as the run's own table does.
    let numbers: usize = 6 + 14 + s.nodes.iter().map(|n| n.len().max(8) + 2).sum::<usize>();
    let longest = shown.iter().map(|r| r.label().len() + 2).max().unwrap_or(0);
    let stacked = width().is_some_and(|w| longest + numbers > w as usize);
    for row in &shown {
        let (div, sym) = scale_for(row.unit, row.median);
        let name = if stacked {
            super::measurements::stacked_name(&row.probe, &row.metric, &row.params)
        } else {
            row.label()
        };
        let mut cells = vec![name, sym.to_string(), num(row.median / div)];
        cells.extend(row.cells.iter().map(|c| match c {
            // The mark joined to its number: a narrow table wrapped "+58.4% !" at the space.
            Some(c) => format!(
                "{}{}",
                deviation(c.deviation),
                if c.outlier { "!" } else { "" }
            ),
            None => "-".into(),
        }));
        add(&mut matrix, cells);
    }
    if stacked {
        let names = shown.iter().map(|r| (r.probe.as_str(), r.metric.as_str()));
        super::measurements::stacked_column(&mut matrix, names);
    }
    right(&mut matrix, &(2..3 + s.nodes.len()).collect::<Vec<_>>());
    // The unit and the numbers stay whole; the measurement's name wraps into what they leave.
    whole(&mut matrix, &(1..3 + s.nodes.len()).collect::<Vec<_>>());
    format!("{nodes}\n\n{matrix}")
}
