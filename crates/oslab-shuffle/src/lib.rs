//! oslab's shuffler: watch a multithreaded process's lock waits; when they pass a threshold, group
//! the threads and pin each group's threads to CPUs of one last-level-cache domain. Two
//! groupings ([`Grouping`]): the threads of one lock together (the lock is the futex word each
//! waits on), or, as the paper does, threads sorted by lock time and cut into as many groups as
//! there are domains (threads with similar lock times together). A thread moves only when its group's domain changes, so a new
//! order inside a domain costs nothing; a shuffle is an interval in which a thread moved. Threads
//! created later are placed at the next interval; threads that exit are dropped. Every affinity
//! changed is restored at the end.

#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod args;
mod daemon;
mod decision;
mod pinning;
mod summary;

pub use daemon::*;
pub use decision::*;
pub use pinning::*;
pub use summary::*;
pub mod eval;
pub mod live;
pub mod lockbench;
pub mod locks;
pub mod profile;
pub mod simulate;
pub mod study;

#[cfg(test)]
mod tests {
    use super::locks::ThreadWait;
    use super::*;

    use oslab_core::{CpuSet, Topology};
    use std::collections::BTreeMap;

    use oslab_os::topology::write_fake_sysfs;

    fn w(tid: i32, waiting: u32) -> ThreadWait {
        ThreadWait {
            tid,
            waited: f64::from(waiting),
            observed: 100.0,
            lock: None,
        }
    }

    fn on(lock: u64, tid: i32, waiting: u32) -> ThreadWait {
        ThreadWait {
            lock: Some(lock),
            ..w(tid, waiting)
        }
    }

    #[test]
    fn the_threads_of_one_lock_share_a_domain_however_alike_their_waits() {
        // Two locks contended alike, their threads interleaved: the time grouping cannot tell
        // them apart, the lock grouping puts each lock's threads on a socket of its own.
        let waits = [
            on(0xa, 1, 30),
            on(0xb, 2, 31),
            on(0xa, 3, 32),
            on(0xb, 4, 29),
        ];
        let d = decide_by_lock(&waits, &[4, 4], 0.1).unwrap();
        assert_eq!(d.groups, [vec![1, 3], vec![2, 4]]);
        // Below the threshold nothing happens.
        assert!(decide_by_lock(&waits, &[4, 4], 0.5).is_none());
        // A lock with more threads than a domain has cpus spills into the next; the most
        // waited-for lock is placed first; a thread of no known lock fills the emptiest domain.
        let waits = [
            on(0xa, 1, 50),
            on(0xa, 2, 50),
            on(0xa, 3, 50),
            on(0xb, 4, 10),
            w(5, 0),
        ];
        let d = decide_by_lock(&waits, &[2, 2, 2], 0.1).unwrap();
        assert_eq!(d.groups, [vec![1, 2], vec![3, 5], vec![4]]);
        // One domain takes everyone.
        let d = decide_by_lock(&waits, &[2], 0.1).unwrap();
        assert_eq!(d.groups.len(), 1);
        assert_eq!(d.groups[0].len(), 5);
    }

    fn topo(packages: usize, cores: usize, threads: usize) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), packages, cores, threads, packages).unwrap();
        oslab_os::topology::read_from(dir.path()).unwrap()
    }

    #[test]
    fn four_l3_domains_with_smt() {
        let t = topo(4, 4, 2);
        let d = domains(&t, &t.online());
        assert_eq!(d.len(), 4);
        assert!(d.iter().all(|x| x.len() == 8));
    }

    #[test]
    fn grouping_follows_smoothed_waits_without_threads_blocked_all_interval() {
        let mut s = BTreeMap::new();
        let first = smooth(&[w(1, 100), w(2, 60), w(3, 20)], &mut s);
        assert_eq!(first.iter().map(|t| t.tid).collect::<Vec<_>>(), vec![2, 3]);
        let second = smooth(&[w(1, 100), w(2, 20), w(3, 60)], &mut s);
        let f: Vec<f64> = second.iter().map(ThreadWait::fraction).collect();
        assert!(
            (f[0] - 0.4).abs() < 1e-9 && (f[1] - 0.4).abs() < 1e-9,
            "{f:?}"
        );
        // Starved for one interval (smoothed 0.7): still counted.
        assert_eq!(smooth(&[w(1, 100), w(2, 100), w(3, 60)], &mut s).len(), 2);
        // A thread that is gone is forgotten.
        smooth(&[w(2, 10)], &mut s);
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn noise_is_what_a_threads_share_moves_between_intervals() {
        let mut s = BTreeMap::new();
        let mut last = Vec::new();
        for k in 0..12 {
            // Two threads alternating 30% and 50%: their smoothed shares hover near 40%.
            let (a, b) = if k % 2 == 0 { (30, 50) } else { (50, 30) };
            last = smooth(&[w(1, a), w(2, b)], &mut s);
        }
        let noise = super::daemon::smoothed_noise(&last, &s);
        assert!((0.05..0.2).contains(&noise), "{noise}");
        // Steady shares: no noise.
        let mut s = BTreeMap::new();
        for _ in 0..5 {
            last = smooth(&[w(1, 40), w(2, 40)], &mut s);
        }
        assert_eq!(super::daemon::smoothed_noise(&last, &s), 0.0);
    }

    #[test]
    fn a_thread_waiting_all_along_stays_out_through_an_interval_of_noise() {
        let mut s = BTreeMap::new();
        let tids = |v: Vec<ThreadWait>| v.iter().map(|t| t.tid).collect::<Vec<_>>();
        // The main thread (1) joins; one interval it reads 97% (sampling noise): still out.
        assert_eq!(tids(smooth(&[w(1, 100), w(2, 50)], &mut s)), vec![2]);
        assert_eq!(tids(smooth(&[w(1, 97), w(2, 50)], &mut s)), vec![2]);
        assert_eq!(tids(smooth(&[w(1, 99), w(2, 50)], &mut s)), vec![2]);
        // Running again for real: back in.
        smooth(&[w(1, 60), w(2, 50)], &mut s);
        assert_eq!(tids(smooth(&[w(1, 60), w(2, 50)], &mut s)), vec![1, 2]);
    }

    #[test]
    fn threads_stay_grouped_until_a_new_grouping_is_clearly_better() {
        let d = vec![vec![0, 1], vec![2, 3]];
        let mut p = Pinning::default();
        let first = decide(&[w(1, 42), w(2, 40), w(3, 38), w(4, 36)], 2, 0.1).unwrap();
        for m in p.plan(&first, &d) {
            p.moved(m);
        }
        // Noise reorders alike threads: nothing moves.
        let noisy = [w(1, 36), w(2, 41), w(3, 43), w(4, 39)];
        let kept = p.keep_unless_better(decide(&noisy, 2, 0.1).unwrap(), &noisy, 0.0);
        assert!(p.plan(&kept, &d).is_empty(), "{kept:?}");
        // A new grouping better by more than the margin, but within what this noise makes
        // (shares that jump 0.2 from one interval to the next): kept.
        let wide = [w(1, 45), w(2, 30), w(3, 30), w(4, 45)];
        let kept = p.keep_unless_better(decide(&wide, 2, 0.1).unwrap(), &wide, 0.1);
        assert!(p.plan(&kept, &d).is_empty(), "{kept:?}");
        // Without that noise the same lock times regroup; far apart they regroup through it.
        assert!(!p
            .plan(
                &p.keep_unless_better(decide(&wide, 2, 0.1).unwrap(), &wide, 0.0),
                &d
            )
            .is_empty());
        let far = [w(1, 90), w(2, 5), w(3, 90), w(4, 5)];
        assert!(!p
            .plan(
                &p.keep_unless_better(decide(&far, 2, 0.1).unwrap(), &far, 0.1),
                &d
            )
            .is_empty());
        // Two clearly different lock times: regrouped.
        let apart = [w(1, 80), w(2, 10), w(3, 78), w(4, 12)];
        let new = p.keep_unless_better(decide(&apart, 2, 0.1).unwrap(), &apart, 0.0);
        assert_eq!(new.groups, vec![vec![1, 3], vec![4, 2]]);
        assert!(!p.plan(&new, &d).is_empty());
        // A thread not placed yet is placed.
        let newcomer = [w(1, 40), w(2, 40), w(3, 40), w(4, 40), w(5, 40)];
        let d5 = decide(&newcomer, 2, 0.1).unwrap();
        assert_eq!(p.keep_unless_better(d5.clone(), &newcomer, 0.0), d5);
    }

    #[test]
    fn a_groups_threads_take_one_cpu_per_core_before_any_sibling() {
        // QEMU's numbering: a core's two threads next to each other (0,1), (2,3), ... under one
        // L3. Four threads of one lock went to cpus 0-3, two cores, with two cores idle.
        let cpus: Vec<oslab_core::topology::Cpu> = (0..8)
            .map(|id| oslab_core::topology::Cpu {
                id,
                package: 0,
                die: 0,
                core: id / 2,
                node: 0,
                smt_siblings: [id / 2 * 2, id / 2 * 2 + 1].into_iter().collect(),
                kind: 0,
            })
            .collect();
        let t = Topology {
            cpus,
            caches: vec![oslab_core::topology::Cache {
                level: 3,
                kind: oslab_core::topology::CacheKind::Unified,
                size: 32 << 20,
                line: Some(64),
                ways: None,
                cpus: (0..8).collect(),
            }],
            nodes: Vec::new(),
        };
        let d = domains(&t, &t.online());
        assert_eq!(d, vec![vec![0, 2, 4, 6, 1, 3, 5, 7]]);
        let group = Decision {
            groups: vec![vec![11, 12, 13, 14]],
            lock_fraction: 0.5,
        };
        let cpus: Vec<usize> = Pinning::default()
            .plan(&group, &d)
            .iter()
            .map(|m| m.cpu)
            .collect();
        let cores: std::collections::BTreeSet<usize> = cpus.iter().map(|c| c / 2).collect();
        assert_eq!(cores.len(), 4, "{cpus:?}");
    }

    #[test]
    fn domains_follow_the_last_level_cache() {
        // 2 sockets x 8 cores x SMT: one L3 per socket, 16 cpus each.
        let t = topo(2, 8, 2);
        let d = domains(&t, &t.online());
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|x| x.len() == 16));
        // Only part of the machine allowed: only its domains count.
        let some = CpuSet::parse("0-3", &t).unwrap();
        assert_eq!(domains(&t, &some).len(), 1);
    }

    #[test]
    fn below_the_threshold_nothing_moves() {
        assert!(decide(&[w(1, 2), w(2, 3)], 2, 0.10).is_none());
        assert!(decide(&[], 2, 0.0).is_none());
    }

    fn place(p: &mut Pinning, d: &Decision, domains: &[Vec<usize>]) -> Vec<Move> {
        let moves = p.plan(d, domains);
        moves.iter().for_each(|m| p.moved(*m));
        moves
    }

    #[test]
    fn similar_lock_times_share_a_domain_most_bound_first() {
        // Four domains of two cpus (e.g. 4 L3 domains), eight threads.
        let d: Vec<Vec<usize>> = (0..4).map(|k| vec![2 * k, 2 * k + 1]).collect();
        let waits: Vec<ThreadWait> = [5, 80, 10, 75, 40, 45, 0, 2]
            .iter()
            .enumerate()
            .map(|(i, &x)| w(100 + i as i32, x))
            .collect();
        let dec = decide(&waits, d.len(), 0.10).unwrap();
        assert_eq!(
            dec.groups,
            vec![
                vec![101, 103],
                vec![105, 104],
                vec![102, 100],
                vec![107, 106]
            ]
        );
        assert!((dec.lock_fraction - 257.0 / 800.0).abs() < 1e-12);
        let mut p = Pinning::default();
        let moves = place(&mut p, &dec, &d);
        assert_eq!(moves.len(), 8);
        let cpu_of = |tid| moves.iter().find(|m| m.tid == tid).unwrap().cpu;
        assert_eq!((cpu_of(101), cpu_of(103)), (0, 1));
        assert_eq!((cpu_of(107), cpu_of(106)), (7, 6));
    }

    #[test]
    fn a_new_order_inside_a_domain_moves_nothing() {
        let d: Vec<Vec<usize>> = vec![vec![0, 1], vec![2, 3]];
        let mut p = Pinning::default();
        let first = decide(&[w(1, 80), w(2, 70), w(3, 20), w(4, 10)], 2, 0.1).unwrap();
        assert_eq!(place(&mut p, &first, &d).len(), 4);
        // 2 now waits more than 1, and 4 more than 3: same groups, nothing moves.
        let swapped = decide(&[w(1, 70), w(2, 80), w(3, 10), w(4, 20)], 2, 0.1).unwrap();
        assert!(p.plan(&swapped, &d).is_empty());
        // The groups trade places in the order: each keeps its domain, nothing moves.
        let flipped = decide(&[w(1, 10), w(2, 20), w(3, 80), w(4, 70)], 2, 0.1).unwrap();
        assert_eq!(flipped.groups[0], vec![3, 4]);
        assert!(p.plan(&flipped, &d).is_empty());
        // 2 and 3 trade groups: only they move, each to the cpu the other left.
        let traded = decide(&[w(1, 80), w(3, 70), w(2, 20), w(4, 10)], 2, 0.1).unwrap();
        let moves = place(&mut p, &traded, &d);
        let mut moved: Vec<(i32, usize)> = moves.iter().map(|m| (m.tid, m.cpu)).collect();
        moved.sort();
        assert_eq!(moved, vec![(2, 2), (3, 1)]);
        // A thread that is gone is forgotten; a newcomer is placed on the least-used cpu.
        p.retain(|t| t != 4);
        let again = decide(&[w(1, 80), w(3, 70), w(2, 20), w(5, 10)], 2, 0.1).unwrap();
        let moves = p.plan(&again, &d);
        assert_eq!(
            moves,
            vec![Move {
                tid: 5,
                domain: 1,
                cpu: 3
            }]
        );
    }

    #[test]
    fn a_newcomer_group_takes_a_free_domain_not_one_a_placed_group_holds() {
        let d: Vec<Vec<usize>> = vec![vec![0, 1], vec![2, 3], vec![4, 5]];
        let mut p = Pinning::default();
        let first = decide_by_lock(
            &[
                on(0xa, 1, 40),
                on(0xa, 3, 40),
                on(0xb, 2, 40),
                on(0xb, 4, 40),
            ],
            &[2, 2, 2],
            0.1,
        )
        .unwrap();
        assert_eq!(place(&mut p, &first, &d).len(), 4);
        // Thread 9 comes first in the new decision (its lock is the most waited for): it alone
        // moves, to the free domain.
        let later = Decision {
            groups: vec![vec![9], vec![1, 3], vec![2, 4]],
            lock_fraction: 0.5,
        };
        let moves = p.plan(&later, &d);
        assert_eq!(
            moves.iter().map(|m| (m.tid, m.domain)).collect::<Vec<_>>(),
            vec![(9, 2)]
        );
    }

    #[test]
    fn a_thread_alone_on_its_lock_word_is_no_contender_of_the_others() {
        let mut locks = BTreeMap::new();
        locks.extend([(1, 0xa), (3, 0xa), (2, 0xb), (4, 0xb), (9, 0xf)]);
        let waits = [
            on(0xa, 1, 40),
            on(0xa, 3, 40),
            on(0xb, 2, 40),
            on(0xf, 9, 80),
            w(5, 30),
        ];
        let kept: Vec<i32> = daemon::sharing_a_lock(&waits, &locks)
            .iter()
            .map(|w| w.tid)
            .collect();
        // 9 waits alone on its word (a main thread joining a child); 4 waits on 2's lock though
        // not this interval; 5's lock is unknown: it stays.
        assert_eq!(kept, vec![1, 3, 2, 5]);
    }

    #[test]
    fn more_domains_than_threads_uses_as_many_as_needed_and_wraps_cpus() {
        let d: Vec<Vec<usize>> = vec![vec![0], vec![1], vec![2]];
        let dec = decide(&[w(1, 50), w(2, 40)], d.len(), 0.1).unwrap();
        assert_eq!(dec.groups.len(), 2);
        let one = vec![vec![4, 5]];
        let dec = decide(&[w(1, 50), w(2, 40), w(3, 30)], 1, 0.1).unwrap();
        let moves = Pinning::default().plan(&dec, &one);
        let cpus: Vec<(i32, usize)> = moves.iter().map(|m| (m.tid, m.cpu)).collect();
        assert_eq!(cpus, vec![(1, 4), (2, 5), (3, 4)]);
    }

    #[test]
    fn our_own_cpu_time_is_readable() {
        let s = process_cpu_seconds(std::process::id() as i32).unwrap();
        assert!(s >= 0.0);
        assert!(process_cpu_seconds(i32::MAX).is_none());
    }
}
