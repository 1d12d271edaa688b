//! Which cpus a measurement uses, chosen one way for every command: the measuring cpu, the peer
//! of cross-cpu probes, the farthest cpu (where a migration goes) and the watcher (where a parent
//! waits without taking the measured cpu). Also the one `cpu_set_t` builder.

use oslab_core::topology::Topology;
use oslab_core::CpuSet;

/// What the user asked for cannot be placed: a usage error (exit status 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Misplaced(pub String);

/// The raw kernel cpu mask of `set` (cpus beyond `CPU_SETSIZE` cannot be named and are left out).
pub fn cpu_set_t(set: &CpuSet) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut raw: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in set.iter().filter(|&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: cpu is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu, &mut raw) };
    }
    raw
}

/// The cpus the kernel keeps other work off (`isolcpus=`, `nohz_full=`): the quiet ones a
/// measurement wants. The default affinity leaves them out; a process may still ask for them.
pub fn isolated() -> CpuSet {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/{f}"))
            .ok()
            .and_then(|t| CpuSet::parse_list(t.trim()).ok())
            .unwrap_or_default()
    };
    read("isolated")
        .iter()
        .chain(read("nohz_full").iter())
        .collect()
}

/// The default measuring cpu: the highest-numbered online allowed cpu among the isolated ones
/// when some are allowed, else among all (cpu 0 usually takes the most interrupts).
pub fn measuring(topo: &Topology, allowed: &CpuSet, isolated: &CpuSet) -> Option<usize> {
    let online = |c: &usize| topo.cpu(*c).is_some();
    allowed
        .iter()
        .filter(|c| online(c) && isolated.contains(*c))
        .last()
        .or_else(|| allowed.iter().filter(online).last())
}

/// The default peer of `cpu`: the nearest allowed cpu on another core (sharing a cache if
/// possible), else an SMT sibling; an isolated one first.
pub fn peer(topo: &Topology, allowed: &CpuSet, cpu: usize, isolated: &CpuSet) -> Option<usize> {
    allowed
        .iter()
        .filter(|&c| c != cpu && topo.cpu(c).is_some())
        .min_by_key(|&c| {
            let rank = topo.distance_rank(cpu, c);
            // Another core (rank >= 2) before an SMT sibling (rank 1).
            (!isolated.contains(c), if rank >= 2 { rank } else { 10 }, c)
        })
}

/// The allowed cpu farthest from `a`: the largest SLIT distance between their nodes (a node 22
/// away before one 16 away), then other package, other L3, other L2, sibling.
pub fn farthest(topo: &Topology, allowed: &CpuSet, a: usize) -> Option<usize> {
    allowed.iter().filter(|&c| c != a).max_by_key(|&c| {
        (
            topo.node_distance(a, c),
            topo.distance_rank(a, c),
            std::cmp::Reverse(c),
        )
    })
}

/// Where a parent waits while its children run on `cpu`: another allowed cpu, when there is one.
pub fn watcher(allowed: &CpuSet, cpu: usize) -> Option<usize> {
    allowed.iter().find(|&c| c != cpu)
}

/// The one cpu `arg` names (a number or a one-cpu list like "core-sibling-of:0"), which must be
/// allowed; `flag` names the option in errors.
pub fn one(arg: &str, flag: &str, topo: &Topology, allowed: &CpuSet) -> Result<usize, Misplaced> {
    let set = CpuSet::parse(arg, topo).map_err(|e| Misplaced(format!("{flag}: {e}")))?;
    if set.len() != 1 {
        return Err(Misplaced(format!(
            "{flag} {arg:?} names {} cpus ({set}); give exactly one",
            set.len()
        )));
    }
    let cpu = set.first().unwrap_or(0);
    if !allowed.contains(cpu) {
        return Err(Misplaced(format!(
            "{flag}: cpu {cpu} is not in this process's affinity mask ({allowed}); pick one of those, or widen the mask (taskset/cgroup cpuset)"
        )));
    }
    Ok(cpu)
}

/// A cpu the user named, with the option that named it (errors name that option).
pub type Named<'a> = (&'a str, &'a str);

/// The measuring cpu and the peer: what the user named (option, value), checked, or the
/// defaults of [`measuring`] and [`peer`].
pub fn choose(
    topo: &Topology,
    allowed: &CpuSet,
    isolated: &CpuSet,
    cpu: Option<Named>,
    peer_arg: Option<Named>,
) -> Result<(usize, Option<usize>), Misplaced> {
    let cpu_flag = cpu.map_or("--cpu", |(flag, _)| flag);
    let cpu = match cpu {
        Some((flag, a)) => one(a, flag, topo, allowed)?,
        None => measuring(topo, allowed, isolated)
            .ok_or_else(|| Misplaced(format!("no online cpu in our affinity mask ({allowed})")))?,
    };
    let peer_cpu = match peer_arg {
        Some((flag, a)) => {
            let p = one(a, flag, topo, allowed)?;
            if p == cpu {
                return Err(Misplaced(format!(
                    "{flag} {p} is the measuring cpu ({cpu_flag}); choose a different one"
                )));
            }
            Some(p)
        }
        None => peer(topo, allowed, cpu, isolated),
    };
    Ok((cpu, peer_cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::write_fake_sysfs;

    fn fake() -> Topology {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 2, 2, 2, 2).unwrap();
        crate::topology::read_from(dir.path()).unwrap()
    }

    #[test]
    fn default_peer_is_another_core_nearby() {
        let t = fake(); // cpus 0-3 first threads, 4-7 SMT siblings; packages {0,1,4,5} {2,3,6,7}
        let all = t.online();
        assert_eq!(
            choose(&t, &all, &CpuSet::default(), Some(("--cpu", "0")), None).unwrap(),
            (0, Some(1))
        );
        let only_siblings: CpuSet = [0, 4].into_iter().collect();
        assert_eq!(
            choose(
                &t,
                &only_siblings,
                &CpuSet::default(),
                Some(("--cpu", "0")),
                None
            )
            .unwrap()
            .1,
            Some(4)
        );
        assert_eq!(
            choose(&t, &CpuSet::single(3), &CpuSet::default(), None, None).unwrap(),
            (3, None)
        );
    }

    #[test]
    fn isolated_cpus_are_measured_on_first() {
        let t = fake(); // cpus 0-3 first threads, 4-7 SMT siblings
        let all = t.online();
        let isolated: CpuSet = [2, 3].into_iter().collect();
        assert_eq!(
            choose(&t, &all, &isolated, None, None).unwrap(),
            (3, Some(2))
        );
        // None of them allowed (a cpuset): the highest allowed, as without any.
        let mask: CpuSet = [0, 1].into_iter().collect();
        assert_eq!(choose(&t, &mask, &isolated, None, None).unwrap().0, 1);
    }

    #[test]
    fn farthest_leaves_the_package_and_watcher_avoids_the_cpu() {
        let t = fake();
        let all = t.online();
        let f = farthest(&t, &all, 0).unwrap();
        assert_ne!(t.cpu(f).unwrap().package, t.cpu(0).unwrap().package);
        assert_eq!(farthest(&t, &CpuSet::single(0), 0), None);
        assert_eq!(watcher(&all, 0), Some(1));
        assert_eq!(watcher(&CpuSet::single(2), 2), None);
    }

    #[test]
    fn farthest_is_by_slit_distance_first() {
        // 2 packages x 4 cores, 4 nodes of 2 cpus; node 1 (same package as cpu 0) is 22 away,
        // nodes 2 and 3 (the other package) 16: the SLIT says node 1 is the far one.
        let dir = tempfile::tempdir().unwrap();
        crate::topology::write_fake_sysfs(dir.path(), 2, 4, 1, 4).unwrap();
        let mut t = crate::topology::read_from(dir.path()).unwrap();
        t.nodes[0].distances = vec![10, 22, 16, 16];
        let f = farthest(&t, &t.online(), 0).unwrap();
        assert_eq!(t.cpu(f).unwrap().node, 1, "cpu {f}");
        assert_eq!(t.node_distance(0, f), 22);
    }

    #[test]
    fn bad_cpus_are_refused_with_why() {
        let t = fake();
        let mask: CpuSet = [0, 1].into_iter().collect();
        for (cpu, peer, expect) in [
            (Some(("--cpu", "5")), None, "affinity mask"),
            (Some(("--cpu", "0-3")), None, "exactly one"),
            (Some(("--cpu", "x")), None, "not a cpu number"),
            (Some(("--cpu", "99")), None, "not online"),
            (
                Some(("--cpu", "0")),
                Some(("--peer-cpu", "0")),
                "--peer-cpu 0 is the measuring cpu (--cpu)",
            ),
            (
                Some(("--from", "1")),
                Some(("--to", "1")),
                "--to 1 is the measuring cpu (--from)",
            ),
        ] {
            let e = choose(&t, &mask, &CpuSet::default(), cpu, peer).unwrap_err();
            assert!(e.to_string().contains(expect), "{e}");
        }
    }

    #[test]
    fn the_mask_holds_exactly_the_set() {
        let set: CpuSet = [0, 3, 5].into_iter().collect();
        let raw = cpu_set_t(&set);
        // SAFETY: reading a plain-data set.
        let has = |c| unsafe { libc::CPU_ISSET(c, &raw) };
        assert!(has(0) && has(3) && has(5) && !has(1) && !has(4));
    }
}
