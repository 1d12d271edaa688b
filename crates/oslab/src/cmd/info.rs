//! `oslab info`.

use super::{print_json, print_text};
use crate::cli::InfoArgs;
use oslab_os::{counters, machine};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    if args.hwloc || args.sysfs_root.is_some() {
        let (t, host, allowed) = machine::described(args.sysfs_root.as_deref())
            .map_err(|e| crate::error::usage(e.to_string()))?;
        if !args.hwloc {
            return print_text(&format!("{host}: {}\n", t.shape())).map(|_| ExitCode::SUCCESS);
        }
        let costs = super::store().measured_costs(&host, &t);
        let xml = oslab_report::hwloc::xml(&t, &host, &costs, &allowed);
        super::to_stdout(&mut std::io::stdout().lock(), xml.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let m = machine::read(Duration::from_millis(200))?;
    // What the predictions of a run would rest on (the core clock measured on this cpu now).
    let cpu = oslab_os::affinity::current_cpu().unwrap_or(0);
    let memory = std::env::var("OSLAB_MEMORY").ok();
    let model = oslab_probes::spec::read(&m.fingerprint, cpu, memory.as_deref()).describe();
    let counters = args
        .counters
        .then(|| counters::availability(&counters::CpuId::read()));
    if args.json {
        print_json(&serde_json::json!({
            "fingerprint": m.fingerprint,
            "environment": m.environment,
            "counters": counters,
            "model": model.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<std::collections::BTreeMap<_, _>>(),
        }))?;
    } else {
        print_text(&oslab_report::machine::info(&m.fingerprint, &m.environment))?;
        print_text(&oslab_report::machine::model(&model))?;
        if let Some(c) = counters {
            print_text(&oslab_report::machine::counters(&c))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
