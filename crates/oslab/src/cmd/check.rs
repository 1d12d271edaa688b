//! `oslab check --reference NAME`: this node alone, judged in seconds against a fleet's saved
//! reference. The check's probes are measured by a child `oslab run --quick` into a private
//! scratch store (removed after: the reference's store is only read, so one store on a shared
//! file system serves every node), then judged as `fleet summary` judges a node; exit 0
//! healthy, 1 sick, 2 unusable (Slurm's HealthCheckProgram reads the code).

use crate::cli::CheckArgs;
use crate::cmd::{print_json, print_text, say};
use oslab_fleet::reference::{check, check_code, check_line, CHECK_PROBES};
use std::process::{Command, ExitCode};

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let unusable = |why: &str| {
        say(&format!("unusable: {why}"));
        Ok(ExitCode::from(2))
    };
    let Some(node) = oslab_fleet::task::this_node() else {
        return unusable("cannot tell this node's name (SLURMD_NODENAME, the host name)");
    };
    // The reference first: without it nothing is worth measuring.
    let store = crate::cmd::store().open_to_read()?;
    let reference = match oslab_fleet::reference::runs(&store, &args.reference) {
        Ok(r) => r,
        Err(e) => return unusable(&e.to_string()),
    };
    let scratch = oslab_files::private::PrivateDir::new("oslab-check")?;
    let db = scratch.path().join("check.db");
    let measured = Command::new(std::env::current_exe()?)
        .args(["run", "--quick", "--no-pager"])
        .args(CHECK_PROBES)
        .arg("--db")
        .arg(&db)
        .output()?;
    let mine = oslab_store::Store::open_read_only(&db).ok().and_then(|s| {
        let id = s.runs().ok()?.last()?.id;
        oslab_fleet::node_run(&s, node.clone(), id).ok()
    });
    let Some(mine) = mine else {
        let said = String::from_utf8_lossy(&measured.stderr);
        let last = said.lines().rev().find(|l| !l.trim().is_empty());
        return unusable(&format!(
            "the check's run was not stored ({}): {}",
            measured.status,
            last.unwrap_or("it said nothing")
        ));
    };
    let v = match check(reference, mine, args.effect.min_effect) {
        Ok(v) => v,
        Err(e) => return unusable(&e.to_string()),
    };
    let code = check_code(v.verdict);
    let source = format!("oslab check, reference {}", args.reference);
    if args.out.json {
        print_json(&v)?;
    } else if args.drain || args.resume {
        // Whole lines for a shell, and only where asked: drain when sick, resume when healthy.
        let line = match code {
            1 if args.drain => oslab_fleet::drain_line(&source, &node, v.verdict.as_str(), &v.why),
            0 if args.resume => oslab_fleet::resume_line(&node),
            _ => String::new(),
        };
        if !line.is_empty() {
            crate::cmd::to_stdout(
                &mut std::io::stdout().lock(),
                format!("{line}\n").as_bytes(),
            )?;
        }
    } else {
        print_text(&check_line(&node, &args.reference, &v))?;
    }
    Ok(ExitCode::from(code))
}
