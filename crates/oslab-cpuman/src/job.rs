//! The inside of a cooperative job process (`oslab cpuman job`): run the kernel's outer
//! iterations, reading the manager's thread count at each boundary and its cpus as each thread
//! starts, and reporting each time.

use super::channel::Channel;
use super::work::Work;
use crate::jobs::Kind;
use std::time::Instant;

/// Runs up to `iterations` iterations of `kind` as the manager directs; returns how many ran
/// (fewer when the manager asked the job to stop).
pub fn run(kind: Kind, iterations: u64, l2_bytes: u64, channel: &Channel) -> u64 {
    let mut work = Work::new(kind, l2_bytes);
    channel.set_total(iterations);
    for i in 0..iterations {
        if channel.stop_requested() {
            return i;
        }
        let (mut threads, _) = channel.assignment();
        if (1..=channel.baseline_iterations()).contains(&i) && channel.baseline() > 0 {
            threads = channel.baseline();
        }
        let t = Instant::now();
        work.iteration(threads, &|| channel.assignment().1);
        channel.report(t.elapsed().as_nanos() as u64, threads);
    }
    iterations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_follows_the_assignment_and_reports_every_iteration() {
        let manager = Channel::create().unwrap();
        // SAFETY: dup of our own fd.
        let job = Channel::open_fd(unsafe { libc::dup(manager.fd()) }).unwrap();
        manager.publish(2, &[]);
        manager.set_baseline(1, 2);
        assert_eq!(run(Kind::Hydro2d, 4, 64 << 10, &job), 4);
        let (reports, seen) = manager.reports_since(0);
        assert_eq!(seen, 4);
        // Warm-up at the assignment, the two baseline iterations alone, then the assignment.
        let threads: Vec<usize> = reports.iter().map(|r| r.threads).collect();
        assert_eq!(threads, [2, 1, 1, 2]);
        assert!(reports.iter().all(|r| r.ns > 0));
        manager.request_stop();
        assert_eq!(run(Kind::Bt, 5, 64 << 10, &job), 0);
    }
}
