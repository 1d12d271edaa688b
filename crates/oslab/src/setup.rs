//! Resolving what the user typed into a machine description and a placement: topology, clock,
//! fingerprint, environment, and the measuring and peer CPUs.

use crate::error::usage;
use oslab_core::affinity::get_affinity;
use oslab_core::machine::{Environment, Fingerprint};
use oslab_core::{Clock, CpuSet, Topology};
use std::time::Duration;

/// Everything we know about the machine before measuring.
pub struct Machine {
    /// Topology.
    pub topology: Topology,
    /// Fingerprint (includes the calibrated clock).
    pub fingerprint: Fingerprint,
    /// Environment report.
    pub environment: Environment,
}

impl Machine {
    /// Reads the machine, calibrating the clock for `calibration`.
    pub fn read(calibration: Duration) -> anyhow::Result<Machine> {
        let topology = Topology::read()?;
        let clock = Clock::detect(calibration);
        let fingerprint = Fingerprint::read(&topology, &clock);
        let environment = Environment::read(&fingerprint);
        Ok(Machine {
            topology,
            fingerprint,
            environment,
        })
    }

    /// The calibrated clock.
    pub fn clock(&self) -> &Clock {
        &self.fingerprint.clock
    }
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> anyhow::Result<CpuSet> {
    Ok(get_affinity(0)?)
}

fn one_cpu(arg: &str, flag: &str, topo: &Topology, allowed: &CpuSet) -> anyhow::Result<usize> {
    let set = CpuSet::parse(arg, topo).map_err(|e| usage(format!("{flag}: {e}")))?;
    if set.len() != 1 {
        return Err(usage(format!(
            "{flag} {arg:?} names {} cpus ({set}); give exactly one",
            set.len()
        )));
    }
    let cpu = set.first().unwrap_or(0);
    if !allowed.contains(cpu) {
        return Err(usage(format!(
            "{flag}: cpu {cpu} is not in this process's affinity mask ({allowed}); pick one of those, or widen the mask (taskset/cgroup cpuset)"
        )));
    }
    Ok(cpu)
}

/// Chooses the measuring CPU and the peer for cross-CPU probes.
///
/// Defaults: the highest-numbered allowed CPU (CPU 0 usually takes the most interrupts), and as
/// peer the nearest allowed CPU on another core (sharing a cache if possible), else an SMT sibling.
pub fn choose_cpus(
    topo: &Topology,
    allowed: &CpuSet,
    cpu: Option<&str>,
    peer: Option<&str>,
) -> anyhow::Result<(usize, Option<usize>)> {
    let cpu = match cpu {
        Some(a) => one_cpu(a, "--cpu", topo, allowed)?,
        None => allowed
            .iter()
            .filter(|c| topo.cpu(*c).is_some())
            .last()
            .ok_or_else(|| anyhow::anyhow!("no online cpu in our affinity mask ({allowed})"))?,
    };
    let peer = match peer {
        Some(a) => {
            let p = one_cpu(a, "--peer-cpu", topo, allowed)?;
            if p == cpu {
                return Err(usage(format!(
                    "--peer-cpu {p} is the measuring cpu; choose a different one"
                )));
            }
            Some(p)
        }
        None => allowed
            .iter()
            .filter(|&c| c != cpu && topo.cpu(c).is_some())
            .min_by_key(|&c| {
                let rank = topo.distance_rank(cpu, c);
                // Prefer another core (rank >= 2) over an SMT sibling (rank 1).
                (if rank >= 2 { rank } else { 10 }, c)
            }),
    };
    Ok((cpu, peer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::topology::write_fake_sysfs;

    fn fake() -> Topology {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 2, 2, 2, 2).unwrap();
        Topology::read_from(dir.path()).unwrap()
    }

    #[test]
    fn default_peer_is_another_core_nearby() {
        let t = fake(); // cpus 0-3 first threads, 4-7 SMT siblings; packages {0,1,4,5} {2,3,6,7}
        let all = t.online();
        let (cpu, peer) = choose_cpus(&t, &all, Some("0"), None).unwrap();
        assert_eq!((cpu, peer), (0, Some(1)));
        let only_siblings: CpuSet = [0, 4].into_iter().collect();
        assert_eq!(
            choose_cpus(&t, &only_siblings, Some("0"), None).unwrap().1,
            Some(4)
        );
        assert_eq!(
            choose_cpus(&t, &CpuSet::single(3), None, None).unwrap(),
            (3, None)
        );
    }

    #[test]
    fn bad_cpus_are_usage_errors() {
        let t = fake();
        let mask: CpuSet = [0, 1].into_iter().collect();
        for (cpu, peer, expect) in [
            (Some("5"), None, "affinity mask"),
            (Some("0-3"), None, "exactly one"),
            (Some("x"), None, "not a cpu number"),
            (Some("99"), None, "not online"),
            (Some("0"), Some("0"), "is the measuring cpu"),
        ] {
            let e = choose_cpus(&t, &mask, cpu, peer).unwrap_err();
            assert!(e.downcast_ref::<crate::error::UsageError>().is_some());
            assert!(e.to_string().contains(expect), "{e}");
        }
    }
}
