//! Reads that reach the device beneath the page cache, in the directory the user names
//! (`--temp-dir`): left out of the default suite, since they evict the cache that other probes
//! and programs rely on, and run when named (`oslab run fs.cache-size`).
//! - fs.cache-size: a file grown by doubling and re-read at each size, the pages it keeps
//!   resident counted (mincore): the re-read's bandwidth falls where the file outgrows the
//!   cache, and the resident bytes beyond that point are the cache's capacity;
//! - fs.uncached-read: 4 KiB reads of a file evicted from the cache, sequential and random,
//!   through O_DIRECT (else the cache dropped before each batch by `posix_fadvise`, said so);
//! - fs.readers: 1, 2, 4 and 8 processes each reading its own uncached file at once, 4 KiB at
//!   random offsets: the per-read time as the device is shared.
//!
//! A tmpfs directory is refused: its files live in the page cache with no device beneath.

use crate::buffer::{Buffer, Pages};
use crate::child::{Child, SharedPage};
use crate::faults::{check_space, disk_of, temp_dir, TempFile};
use crate::fs::{file_system, mark};
use crate::harness::check_interrupt;
use crate::probe::{Context, Need, Probe, ProbeError};
use oslab_core::catalog::{self, metric, Entry};
use oslab_core::model::{judged, Judge, Measurement, Status, Unit};
use oslab_core::pace::Pace;
use oslab_core::params;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Why these probes run only when named.
const EVICTS: &str = "it evicts the page cache";

/// The device probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::FS_CACHE_SIZE,
        needs: &[Need::Named(EVICTS)],
        cost: 6.0,
        plan: None,
        run: cache_size,
    },
    Probe {
        entry: &catalog::FS_UNCACHED_READ,
        needs: &[Need::Named(EVICTS)],
        cost: 2.0,
        plan: None,
        run: uncached_read,
    },
    Probe {
        entry: &catalog::FS_READERS,
        needs: &[Need::Named(EVICTS)],
        cost: 3.0,
        plan: None,
        run: readers,
    },
];

const MIB: usize = 1 << 20;

/// The block the uncached probes read.
const BLOCK: usize = 4096;

/// The directory these probes write in and its file system, or why not there.
fn device_dir(cx: &Context) -> Result<(PathBuf, String), ProbeError> {
    let (dir, from) = temp_dir(cx.options);
    let (_, tmpfs) = disk_of(&dir).map_err(ProbeError::Failed)?;
    if tmpfs {
        return Err(ProbeError::Unsupported(format!(
            "{from} {} is tmpfs: its files live in the page cache with no device beneath (pass --temp-dir on a disk)",
            dir.display()
        )));
    }
    let fs = file_system(&dir);
    Ok((dir, fs))
}

/// How a file's reads miss the cache: `O_DIRECT` (the cache bypassed), or the file's pages
/// dropped with `posix_fadvise(DONTNEED)` where the file system refuses O_DIRECT.
#[derive(Clone, Copy, PartialEq)]
enum Uncached {
    Direct,
    Dropped,
}

impl Uncached {
    /// Sets O_DIRECT on `file`'s descriptor if its file system allows it.
    fn on(file: &TempFile) -> Uncached {
        // SAFETY: fcntl on our descriptor.
        let flags = unsafe { libc::fcntl(file.fd(), libc::F_GETFL) };
        // SAFETY: as above.
        match flags >= 0
            && unsafe { libc::fcntl(file.fd(), libc::F_SETFL, flags | libc::O_DIRECT) } == 0
        {
            true => Uncached::Direct,
            false => Uncached::Dropped,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Uncached::Direct => "O_DIRECT",
            Uncached::Dropped => "fadvise",
        }
    }
}

/// One 4 KiB read at `offset`, through raw calls only (forked readers use it too).
fn read_block(fd: libc::c_int, buf: *mut libc::c_void, offset: usize) -> bool {
    // SAFETY: our descriptor; `buf` holds a block.
    unsafe { libc::pread(fd, buf, BLOCK, offset as libc::off_t) == BLOCK as isize }
}

/// The `i`-th block of a random walk over `blocks` blocks (an LCG: no allocation, no call).
fn random_block(i: u64, blocks: usize) -> usize {
    let x = i
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((x >> 33) % blocks as u64) as usize
}

fn uncached_read(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (dir, fs) = device_dir(cx)?;
    let size = match cx.harness.config.pace {
        Pace::Quick => 64 * MIB,
        _ => 256 * MIB,
    };
    check_space(&dir, size as u64).map_err(ProbeError::Failed)?;
    let file = TempFile::create(&dir, size)?;
    let how = Uncached::on(&file);
    let blocks = size / BLOCK;
    // Page-aligned, as O_DIRECT asks of its buffers.
    let buf = Buffer::new(BLOCK, Pages::Small)?;
    let harness = cx.harness.scaled(0.5);
    let mut out = Vec::new();
    for access in ["sequential", "random"] {
        file.evict()?;
        let (mut next, mut short) = (0u64, false);
        let timing = harness.batched(&mut |n| {
            if how == Uncached::Dropped {
                short |= file.evict().is_err();
            }
            for _ in 0..n {
                next += 1;
                let block = match access {
                    "sequential" => next as usize % blocks,
                    _ => random_block(next, blocks),
                };
                short |= !read_block(file.fd(), buf.ptr().cast(), block * BLOCK);
            }
        })?;
        if short {
            return Err(ProbeError::Failed(format!(
                "a 4 KiB read of the {} MiB file in {} came back short: {}",
                size / MIB,
                dir.display(),
                std::io::Error::last_os_error()
            )));
        }
        let p = params! {"access" => access, "block_bytes" => BLOCK, "method" => how.name(), "file_mib" => size / MIB};
        let mut m = cx.measurement(me.id, p, metric::PER_READ, &timing);
        m.note_before(match how {
            Uncached::Direct => format!("{access} 4 KiB preads of a {} MiB file through O_DIRECT (the page cache bypassed: each read goes to the device)", size / MIB),
            Uncached::Dropped => format!("{access} 4 KiB preads of a {} MiB file whose pages are dropped before each batch (posix_fadvise DONTNEED: the file system refused O_DIRECT, so readahead serves part of a sequential batch)", size / MIB),
        });
        mark(&mut m, &dir, &fs);
        out.push(m);
    }
    Ok(out)
}

/// Free bytes the page cache could grow to now: what the kernel says is available, and under a
/// memory cgroup's limit what its anonymous memory leaves.
fn cache_room() -> (u64, Option<u64>) {
    (
        crate::buffer::mem_available().unwrap_or(0),
        oslab_os::cgroup::page_cache_room(),
    )
}

/// Times whole re-reads of `file` in 1 MiB preads, in eighths: GB/s per eighth, and the file's
/// bytes resident in the cache after each.
fn reread(file: &TempFile, passes: usize) -> Result<(Vec<f64>, Vec<f64>), ProbeError> {
    let mut buf = vec![0u8; MIB];
    let eighth = (file.size() / 8).next_multiple_of(MIB).max(MIB);
    let (mut rates, mut resident) = (Vec::new(), Vec::new());
    for _ in 0..passes {
        for start in (0..file.size()).step_by(eighth) {
            check_interrupt()?;
            let end = (start + eighth).min(file.size());
            let t = std::time::Instant::now();
            for offset in (start..end).step_by(MIB) {
                // SAFETY: our descriptor and a 1 MiB buffer.
                let n = unsafe {
                    libc::pread(
                        file.fd(),
                        buf.as_mut_ptr().cast(),
                        MIB,
                        offset as libc::off_t,
                    )
                };
                if n <= 0 {
                    return Err(ProbeError::os("pread of the growing file"));
                }
            }
            rates.push((end - start) as f64 / t.elapsed().as_nanos().max(1) as f64);
            let share = file.map()?.resident().unwrap_or(f64::NAN);
            resident.push(share * file.size() as f64);
        }
    }
    Ok((rates, resident))
}

fn cache_size(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (dir, fs) = device_dir(cx)?;
    let (available, cgroup) = cache_room();
    let room = cgroup.map_or(available, |c| c.min(available));
    let (free, _) = disk_of(&dir).map_err(ProbeError::Failed)?;
    // Doubling to twice the room, so the file surely outgrows the cache, within 4 GiB and half
    // the disk's free space, unless --file-size says otherwise.
    let budget = cx
        .options
        .file_size
        .unwrap_or_else(|| (2 * room).next_power_of_two().min(4 << 30).min(free / 2))
        .max(64 * MIB as u64) as usize;
    check_space(&dir, budget as u64).map_err(ProbeError::Failed)?;
    let start = match cx.harness.config.pace {
        Pace::Quick => 16 * MIB,
        _ => 32 * MIB,
    };
    let mut file = TempFile::create(&dir, 0)?;
    let mut out = Vec::new();
    let mut beyond: Vec<f64> = Vec::new();
    let mut sizes_beyond = 0;
    let mut size = start;
    while size <= budget && sizes_beyond < 2 {
        file.grow(&dir, size)?;
        // A first read brings in what the cache can keep; the timed ones find it there or not.
        reread(&file, 1)?;
        let (rates, resident) = reread(&file, 2)?;
        let kept = resident.iter().cloned().fold(f64::NAN, f64::min) / size as f64;
        let mut m = judged(
            me.id,
            params! {"file_bytes" => size},
            metric::BANDWIDTH,
            Unit::GBps,
            &rates,
            None,
            Judge::Median,
        );
        m.note_before(format!(
            "a {} file re-read in 1 MiB preads after a first read, timed by eighths; {:.0}% of its pages resident after (mincore)",
            oslab_core::units::bytes(size as u64),
            100.0 * kept
        ));
        m.context
            .insert("resident_share".into(), ((kept * 1e3).round() / 1e3).into());
        mark(&mut m, &dir, &fs);
        out.push(m);
        // Beyond the cache: the file keeps what the cache can hold, and no more.
        if kept < 0.9 {
            beyond.extend(resident);
            sizes_beyond += 1;
        }
        size *= 2;
    }
    let p = params! {};
    let mut m = match beyond.is_empty() {
        true => Measurement::not_taken(
            me.id,
            p,
            metric::CAPACITY,
            Unit::Bytes,
            Status::Skipped(format!(
                "the cache kept every size up to {}, the budget: it holds at least that (a larger --file-size tries further)",
                oslab_core::units::bytes((size / 2) as u64)
            )),
        ),
        false => judged(
            me.id,
            p,
            metric::CAPACITY,
            Unit::Bytes,
            &beyond,
            Some("the bytes of the file resident in the page cache (mincore) after re-reading files larger than the cache".into()),
            Judge::Median,
        ),
    };
    m.context
        .insert("mem_available_bytes".into(), available.into());
    if let Some(c) = cgroup {
        m.context.insert("cgroup_cache_room_bytes".into(), c.into());
    }
    mark(&mut m, &dir, &fs);
    out.push(m);
    Ok(out)
}

/// The reader counts, and the slices each reader's time is cut in (the first is a warm-up).
const READERS: [usize; 4] = [1, 2, 4, 8];
const SLICES: usize = 6;

/// Shared words: word 0 starts the readers; then per reader and slice, reads and their ns.
fn slot(reader: usize, slice: usize) -> usize {
    1 + 2 * (reader * SLICES + slice)
}

fn readers(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (dir, fs) = device_dir(cx)?;
    let (size, slice_ns) = match cx.harness.config.pace {
        Pace::Quick => (16 * MIB, 30_000_000u64),
        _ => (64 * MIB, 70_000_000u64),
    };
    let most = READERS[READERS.len() - 1];
    check_space(&dir, (most * size) as u64).map_err(ProbeError::Failed)?;
    let files = (0..most)
        .map(|_| TempFile::create(&dir, size))
        .collect::<Result<Vec<_>, _>>()?;
    let how = files
        .iter()
        .map(Uncached::on)
        .fold(Uncached::Direct, |a, b| match b {
            Uncached::Dropped => b,
            _ => a,
        });
    let blocks = size / BLOCK;
    let mut out = Vec::new();
    for n in READERS {
        check_interrupt()?;
        for f in &files {
            f.evict()?;
        }
        let shared = SharedPage::with_len(8 * (1 + 2 * most * SLICES))?;
        let buffers = (0..n)
            .map(|_| Buffer::new(BLOCK, Pages::Small))
            .collect::<Result<Vec<_>, _>>()?;
        let mut children = Vec::new();
        for (r, buf) in buffers.iter().enumerate() {
            let (fd, buf, shared) = (files[r].fd(), buf.ptr().cast(), &shared);
            children.push(Child::fork(move || {
                read_for(fd, buf, blocks, how, shared, r, slice_ns)
            })?);
        }
        shared.word64(0).store(1, Ordering::Release);
        for c in children {
            c.wait()?;
        }
        let mut per_read = Vec::new();
        let mut reads = 0u64;
        for r in 0..n {
            for s in 1..SLICES {
                let count = shared.word64(slot(r, s)).load(Ordering::Acquire);
                let ns = shared.word64(slot(r, s) + 1).load(Ordering::Acquire);
                reads += count;
                if count > 0 {
                    per_read.push(ns as f64 / count as f64);
                }
            }
        }
        if per_read.is_empty() {
            return Err(ProbeError::Failed(format!(
                "{n} readers of uncached files in {} completed no read",
                dir.display()
            )));
        }
        let seconds = (SLICES - 1) as f64 * slice_ns as f64 / 1e9;
        let gbps = reads as f64 * BLOCK as f64 / seconds / 1e9;
        let p = params! {"readers" => n, "access" => "random", "block_bytes" => BLOCK, "method" => how.name()};
        let mut m = judged(
            me.id,
            p,
            metric::PER_READ,
            Unit::Ns,
            &per_read,
            None,
            Judge::Median,
        );
        m.note_before(format!(
            "{n} forked processes, each reading its own {} MiB file at random 4 KiB offsets ({}) for {:.2} s; a sample is one reader's mean over {:.0} ms; {:.3} GB/s in all",
            size / MIB,
            how.name(),
            seconds,
            slice_ns as f64 / 1e6,
            gbps
        ));
        m.context.insert("aggregate_gbps".into(), gbps.into());
        mark(&mut m, &dir, &fs);
        out.push(m);
    }
    Ok(out)
}

/// A forked reader: waits for the start, then reads random blocks of its file for `SLICES`
/// slices, counting reads and their time per slice. Raw calls and atomics only.
fn read_for(
    fd: libc::c_int,
    buf: *mut libc::c_void,
    blocks: usize,
    how: Uncached,
    shared: &SharedPage,
    reader: usize,
    slice_ns: u64,
) {
    let now = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out-pointer; clock_gettime is async-signal-safe.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    };
    while shared.word64(0).load(Ordering::Acquire) == 0 {
        // SAFETY: a plain system call.
        unsafe { libc::sched_yield() };
    }
    let begin = now();
    let mut i = reader as u64 * 0x9E37_79B9;
    loop {
        let t0 = now();
        let slice = ((t0 - begin) / slice_ns) as usize;
        if slice >= SLICES {
            return;
        }
        i += 1;
        if how == Uncached::Dropped && i.is_multiple_of(64) {
            // SAFETY: advice on our descriptor.
            unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        if !read_block(fd, buf, random_block(i, blocks) * BLOCK) {
            return;
        }
        let t1 = now();
        shared
            .word64(slot(reader, slice))
            .fetch_add(1, Ordering::Relaxed);
        shared
            .word64(slot(reader, slice) + 1)
            .fetch_add(t1 - t0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_blocks_stay_in_the_file_and_spread_over_it() {
        let blocks = 4096;
        let seen: std::collections::HashSet<usize> =
            (0..20_000).map(|i| random_block(i, blocks)).collect();
        assert!(seen.iter().all(|&b| b < blocks));
        assert!(seen.len() > blocks * 9 / 10, "{}", seen.len());
    }
}
