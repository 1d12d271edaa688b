//! The cost of moving a thread to another CPU.
//!
//! Two views: an experiment (a matrix multiply pinned on one CPU versus migrated half way to
//! another, with counters per phase; [`experiment`]) and a direct probe, `migration.cost`: write
//! a working set on CPU A, then re-touch it on A, or move to B and re-touch it there. The
//! difference is what the move cost in lost cache state, per distance class (SMT sibling, shared
//! L2, shared L3, same package, other package / node). Writing, not reading, is what warms it:
//! a read leaves B the copies its last re-touch made, and B then re-touched from its own cache
//! (1 MiB read 1.5-4 us after a move where its transfer from A takes about 34 us here).

pub mod experiment;
pub mod matmul;

use crate::harness::check_interrupt;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::Measurement;
use oslab_core::{params, CpuSet, Topology};
use oslab_os::affinity::{current_cpu, set_affinity, AffinityGuard};
use oslab_os::clock::Ticks;

/// The probe.
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::MIGRATION_COST,
    needs: &[crate::probe::Need::PeerCpu],
    cost: 1.0,
    plan: None,
    run: cost,
}];

/// One target CPU per distance class present among `allowed`, nearest class first.
pub fn targets(topology: &Topology, from: usize, allowed: &CpuSet) -> Vec<(usize, &'static str)> {
    let mut out: Vec<(u8, bool, usize, &'static str)> = Vec::new();
    for b in allowed.iter().filter(|&b| b != from) {
        let class = topology.distance_class(from, b);
        if !out.iter().any(|o| o.3 == class) {
            let node = class == "other NUMA node";
            out.push((topology.distance_rank(from, b), node, b, class));
        }
    }
    out.sort_by_key(|o| (o.1, o.0));
    out.into_iter().map(|o| (o.2, o.3)).collect()
}

/// Writes one word per cache line of `buf`: the lines are A's alone (every other cache's copy
/// invalidated), as a thread's own working set is.
#[inline(never)]
fn dirty(buf: &mut [u64]) {
    for i in (0..buf.len()).step_by(8) {
        // SAFETY: in bounds.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), i as u64) };
    }
}

/// Reads one word per cache line of `buf`.
#[inline(never)]
fn touch(buf: &[u64]) -> u64 {
    let mut s = 0u64;
    for i in (0..buf.len()).step_by(8) {
        // SAFETY: in bounds.
        s = s.wrapping_add(unsafe { std::ptr::read_volatile(buf.as_ptr().add(i)) });
    }
    s
}

fn cost(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let from = cx.cpu;
    let sizes: Vec<usize> = {
        let mut s: Vec<usize> = cx
            .cache_sizes()
            .iter()
            .map(|&c| (c as usize / 2).max(4096))
            .collect();
        s.push(16 << 10);
        s.sort_unstable();
        s.dedup();
        s.retain(|&x| x <= cx.memory_budget() / 4);
        s
    };
    let harness = cx.harness.scaled(0.25);
    let _restore = AffinityGuard::pin_current(&CpuSet::single(from))
        .map_err(|e| ProbeError::Failed(e.to_string()))?;
    let mut out = Vec::new();
    for (to, class) in targets(cx.topology, from, &cx.allowed) {
        for &size in &sizes {
            let mut buf: Vec<u64> = (0..size / 8).map(|i| i as u64).collect();
            let mut moved_ok = true;
            let [local, remote, moving] = harness.each::<3>(&mut |clock, ticks| {
                let pin = |c: usize| {
                    set_affinity(0, &CpuSet::single(c))
                        .map_err(|e| ProbeError::Failed(format!("cannot move to cpu {c}: {e}")))
                };
                // Warm on A, re-touch on A.
                pin(from)?;
                dirty(&mut buf);
                let a = clock.start();
                std::hint::black_box(touch(&buf));
                ticks[0] = clock.stop().wrapping_sub(a);
                // Warm on A again, move to B (timed on its own), re-touch on B.
                dirty(&mut buf);
                let m = clock.start();
                pin(to)?;
                ticks[2] = clock.stop().wrapping_sub(m);
                let ok = current_cpu() == Some(to);
                moved_ok &= ok;
                let b = clock.start();
                std::hint::black_box(touch(&buf));
                ticks[1] = clock.stop().wrapping_sub(b);
                Ok(ok)
            })?;
            check_interrupt()?;
            set_affinity(0, &CpuSet::single(from)).ok();
            let base = params! {"from" => from, "to" => to, "class" => class, "size" => size};
            let extra = local.median().unwrap_or(0.0);
            let diff = remote.map(|r| r - extra);
            let mut m = cx.measurement(me.id, base.clone(), "per_migration", &diff);
            // A difference: below zero only where its whole interval is (a working set as large
            // as memory re-touched after a move costs what it costs in place, within the noise).
            m.difference = true;
            m.note_before(format!(
                "re-touch after the move minus re-touch in place ({:.0} ns); the move itself is `move`{}",
                extra,
                if moved_ok { "" } else { "; some moves did not land on the target (dropped)" }
            ));
            out.push(m);
            out.push(cx.measurement(me.id, base.clone(), "retouch_local", &local));
            out.push(cx.measurement(me.id, base, "move", &moving));
        }
    }
    Ok(out)
}
