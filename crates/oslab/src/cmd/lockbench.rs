//! `oslab lockbench`: a contended-lock workload with a fixed amount of work, for the shuffler to
//! act on (threads that share a lock benefit from sharing a cache).

use crate::cli::LockbenchArgs;
use std::process::ExitCode;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// Spins for about `d`, touching `data` so the lock's cache line and its data move with it.
fn work(d: Duration, data: &mut u64) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        *data = data.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
}

pub fn run(args: LockbenchArgs) -> anyhow::Result<ExitCode> {
    if !(args.critical_us.is_finite()
        && args.critical_us >= 0.0
        && args.noncritical_us.is_finite()
        && args.noncritical_us >= 0.0)
    {
        return Err(crate::error::usage(
            "--critical-us and --noncritical-us must be non-negative numbers",
        ));
    }
    let locks: Arc<Vec<Mutex<u64>>> = Arc::new((0..args.locks).map(|_| Mutex::new(0)).collect());
    let start = Arc::new(Barrier::new(args.threads as usize + 1));
    let (crit, non) = (
        Duration::from_secs_f64(args.critical_us / 1e6),
        Duration::from_secs_f64(args.noncritical_us / 1e6),
    );
    let handles: Vec<_> = (0..args.threads)
        .map(|i| {
            let (locks, start) = (Arc::clone(&locks), Arc::clone(&start));
            let n = args.iterations;
            std::thread::spawn(move || {
                let lock = &locks[(i % locks.len() as u64) as usize];
                let mut own = i;
                start.wait();
                for _ in 0..n {
                    {
                        let mut shared = lock.lock().unwrap_or_else(|p| p.into_inner());
                        work(crit, &mut shared);
                    }
                    work(non, &mut own);
                }
            })
        })
        .collect();
    start.wait();
    let t = Instant::now();
    for h in handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("a benchmark thread panicked"))?;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{{\"elapsed_s\": {secs:.6}, \"threads\": {}, \"locks\": {}, \"acquisitions\": {}}}",
        args.threads,
        args.locks,
        args.threads * args.iterations
    );
    Ok(ExitCode::SUCCESS)
}
