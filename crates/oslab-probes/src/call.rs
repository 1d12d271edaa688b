//! Procedure call overhead for 0 to 7 integer arguments. The callees are out of line
//! (`#[inline(never)]`, C ABI), use every argument, and are called through a function pointer the
//! optimizer cannot see through (`black_box`), so it can neither inline, hoist nor drop a call or
//! an argument. The call is therefore indirect; the pointer never changes, so it is predicted. All eight variants are measured interleaved, so the increment per argument is a
//! paired difference of samples taken in the same round.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{Judge, Measurement};
use oslab_core::params;
use oslab_core::stats;
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
    for k in 1..timings.len() {
        let mut inc = timings[k].clone();
        inc.samples = paired_differences(&timings[k].samples, &timings[k - 1].samples);
        inc.overhead_ns = 0.0;
        // Judged against the cost of the call itself: the increment may truly be about zero.
        let judge = timings[k - 1]
            .median()
            .map_or(Judge::Median, |m| Judge::Scale(m.abs()));
        let mut m = cx.measurement_judged(me.id, params! {"args" => k}, "increment", &inc, judge);
        m.difference = true;
        let what = format!(
            "paired difference: {k} minus {} arguments, same round",
            k - 1
        );
        let said = if m.difference_spans_zero() {
            // A median of -0.02 ns is not a negative cost: say there is nothing to measure.
            m.cycles = None;
            format!("no measurable cost per argument: the CI95 of the difference spans 0 ({what})")
        } else {
            what
        };
        m.note_before(said);
        if m.cycles.is_some_and(|c| c < 0.0) {
            m.cycles = None; // fewer cycles for more arguments is noise or reordering, not a cost
        }
        out.push(m);
    }
    Ok(out)
}

/// Element-wise differences of two equally long series of paired samples.
pub fn paired_differences(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// Median of a paired difference (for tests and reports).
pub fn median_difference(a: &[f64], b: &[f64]) -> Option<f64> {
    stats::median(&paired_differences(a, b))
}
