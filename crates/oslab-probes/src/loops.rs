//! Loop overhead: the cost of one iteration of an empty counted loop the compiler cannot delete.
//! This is the loop every batched probe runs, and what the harness subtracts from them.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::model::{Measurement, Unit};
use oslab_core::params;
use std::hint::black_box;

/// The loop probe.
pub const PROBES: &[Probe] = &[Probe {
    id: "loop.empty",
    about: "one iteration of an empty counted loop (what batched probes subtract)",
    unit: Unit::Ns,
    needs: &[],
    run: run_loop,
}];

fn run_loop(cx: &Context) -> Result<Vec<Measurement>, ProbeError> {
    let t = cx.harness.raw(&mut |n| {
        for i in 0..n {
            black_box(i);
        }
    })?;
    let mut m = cx.measurement("loop.empty", params! {"cpu" => cx.cpu}, "per_iteration", &t);
    // black_box(i) is a store of the counter; with the increment, compare and taken branch the
    // loop issues in one cycle on any core that takes one branch per cycle.
    m.prediction = cx.predict_cycles(
        1.0,
        "1 core cycle per iteration (one taken branch per cycle), core clock taken as the TSC rate",
        params! {"cycles_per_iteration" => 1},
    );
    Ok(vec![m])
}
