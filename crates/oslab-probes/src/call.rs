//! Procedure call overhead for 0 to 7 integer arguments. The callees are out of line
//! (`#[inline(never)]`, C ABI), use every argument, and are called through a function pointer the
//! optimizer cannot see through (`black_box`), so it can neither inline, hoist nor drop a call or
//! an argument. The call is therefore indirect; the pointer never changes, so it is predicted.
//! All eight variants are measured interleaved, so the cost of one more argument is, per round,
//! the slope of the line through the eight.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{Judge, Measurement};
use oslab_core::params;
use std::hint::black_box;

/// The call probe.
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::CALL_ARGS,
    needs: &[],
    cost: 10.0,
    plan: None,
    run: run_calls,
}];

macro_rules! callee {
    ($name:ident $(, $a:ident)*) => {
        /// A callee that combines its arguments.
        #[inline(never)]
        pub extern "C" fn $name($($a: u64),*) -> u64 {
            0 $(^ $a)*
        }
    };
}

callee!(f0);
callee!(f1, a);
callee!(f2, a, b);
callee!(f3, a, b, c);
callee!(f4, a, b, c, d);
callee!(f5, a, b, c, d, e);
callee!(f6, a, b, c, d, e, f);
callee!(f7, a, b, c, d, e, f, g);

macro_rules! call_body {
    (@ty $k:expr) => { u64 };
    ($f:ident $(, $k:expr)*) => {
        |n: u64| {
            let f = black_box($f as extern "C" fn($(call_body!(@ty $k)),*) -> u64);
            let mut acc = 0u64;
            #[allow(unused_variables)]
            for i in 0..n {
                acc = acc.wrapping_add(f($(i + $k),*));
            }
            black_box(acc);
        }
    };
}

fn run_calls(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let mut b0 = call_body!(f0);
    let mut b1 = call_body!(f1, 1);
    let mut b2 = call_body!(f2, 1, 2);
    let mut b3 = call_body!(f3, 1, 2, 3);
    let mut b4 = call_body!(f4, 1, 2, 3, 4);
    let mut b5 = call_body!(f5, 1, 2, 3, 4, 5);
    let mut b6 = call_body!(f6, 1, 2, 3, 4, 5, 6);
    let mut b7 = call_body!(f7, 1, 2, 3, 4, 5, 6, 7);
    let timings = cx.harness.interleaved(&mut [
        &mut b0, &mut b1, &mut b2, &mut b3, &mut b4, &mut b5, &mut b6, &mut b7,
    ])?;
    let mut out = Vec::new();
    for (k, t) in timings.iter().enumerate() {
        let mut m = cx.measurement(me.id, params! {"args" => k}, "per_call", t);
        if k == 7 {
            m.note_before("SysV x86-64 passes the 7th integer argument on the stack");
        }
        out.push(m);
    }
    // The cost of one more argument: in each round, the slope of the line through the eight
    // variants. Consecutive differences (k minus k-1) were each a code-alignment step of a
    // fraction of a cycle, up or down, never an argument's cost; the slope spreads them out.
    let mut inc = timings[0].clone();
    inc.samples = slopes(
        &timings
            .iter()
            .map(|t| t.samples.as_slice())
            .collect::<Vec<_>>(),
    );
    inc.overhead_ns = 0.0;
    // Judged against the cost of the call itself: the increment may truly be about zero.
    let judge = timings[0]
        .median()
        .map_or(Judge::Median, |m| Judge::Scale(m.abs()));
    let mut m = cx.measurement_judged(me.id, params! {"args" => "0-7"}, "increment", &inc, judge);
    m.difference = true;
    let what = "per extra argument: in each round the slope of the line through 0 to 7 arguments, same round";
    let said = if m.difference_spans_zero() {
        // A median of -0.02 ns is not a negative cost: say there is nothing to measure.
        m.cycles = None;
        format!("no measurable cost per argument: the CI95 of the slope spans 0 ({what})")
    } else {
        what.to_string()
    };
    m.note_before(said);
    if m.cycles.is_some_and(|c| c < 0.0) {
        m.cycles = None; // fewer cycles for more arguments is noise or reordering, not a cost
    }
    out.push(m);
    Ok(out)
}

/// Per round, the least-squares slope of the time against the argument count, from `series[k]`
/// (the samples of k arguments, paired by round).
pub fn slopes(series: &[&[f64]]) -> Vec<f64> {
    let n = series.len() as f64;
    let mean_k = (n - 1.0) / 2.0;
    let sxx: f64 = (0..series.len()).map(|k| (k as f64 - mean_k).powi(2)).sum();
    let rounds = series.iter().map(|s| s.len()).min().unwrap_or(0);
    (0..rounds)
        .map(|i| {
            let mean_t = series.iter().map(|s| s[i]).sum::<f64>() / n;
            let sxy: f64 = series
                .iter()
                .enumerate()
                .map(|(k, s)| (k as f64 - mean_k) * (s[i] - mean_t))
                .sum();
            sxy / sxx
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_of_each_round_is_the_cost_of_one_more_argument() {
        // Round 0: 1 ns + 0.5 ns per argument; round 1: flat with an alignment step at 3.
        let r0: Vec<f64> = (0..8).map(|k| 1.0 + 0.5 * k as f64).collect();
        let r1 = [1.0, 1.0, 1.0, 1.25, 1.25, 1.25, 1.25, 1.0];
        let series: Vec<Vec<f64>> = (0..8).map(|k| vec![r0[k], r1[k]]).collect();
        let refs: Vec<&[f64]> = series.iter().map(Vec::as_slice).collect();
        let s = slopes(&refs);
        assert!((s[0] - 0.5).abs() < 1e-12, "{s:?}");
        assert!(
            s[1].abs() < 0.03,
            "a step is not a cost per argument: {s:?}"
        );
    }
}
