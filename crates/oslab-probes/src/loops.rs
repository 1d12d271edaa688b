//! Loop overhead: the cost of one iteration of an empty counted loop. The loop is written in
//! assembly (`dec; jnz` on x86-64, `subs; b.ne` on aarch64) so the compiler can neither delete nor
//! unroll it: a Rust loop around `black_box(i)` is unrolled and reads well under one cycle.
//! (The harness subtracts its own empty Rust loop from batched probes; each measurement records
//! that overhead.)

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::Measurement;
use oslab_core::params;

/// The loop probe.
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::LOOP_EMPTY,
    needs: &[],
    cost: 1.0,
    plan: None,
    run: run_loop,
}];

fn run_loop(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let t = cx.harness.raw(&mut counted_loop)?;
    let m = cx.measurement(me.id, params! {"cpu" => cx.cpu}, "per_iteration", &t);
    Ok(vec![m])
}

/// Runs `n` iterations of an empty counted loop.
#[inline(never)]
pub fn counted_loop(n: u64) {
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only decrements a register we own until zero.
    unsafe {
        std::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above.
    unsafe {
        std::arch::asm!("2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    for i in 0..n {
        std::hint::black_box(i);
    }
}
