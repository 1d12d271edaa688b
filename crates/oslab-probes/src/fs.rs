//! Files and the file cache, in the directory the user names (`--temp-dir`, else `$TMPDIR`, else
//! /var/tmp), its file system and device named on every row:
//! - create and delete of a file of 0 B, 1 KiB, 4 KiB and 10 KiB (lmbench's lat_fs sizes), each
//!   file created (open O_CREAT|O_EXCL, its bytes written, closed) and deleted in turn, timed
//!   apart, in a private directory of the run's;
//! - a cached file read by read(2) and through mmap (a copy out of the mapping, populated
//!   first), by block size: the page cache's bandwidth (lmbench's bw_file_rd and bw_mmap_rd).
//!
//! The file cache's size, uncached reads and readers in contention evict the page cache and
//! are left for commands that say so.

use crate::faults::{block_device, disk_of, open_unnamed, temp_dir};
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, metric, Entry};
use oslab_core::model::{judged, Judge, Measurement, Unit};
use oslab_core::model::{DEVICE, DEVICE_CLASS};
use oslab_core::params;
use oslab_os::clock::Ticks;
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The file sizes created and deleted.
pub const FILE_SIZES: [usize; 4] = [0, 1 << 10, 4 << 10, 10 << 10];

/// The block sizes the cached file is read in.
pub const BLOCKS: [usize; 3] = [4 << 10, 64 << 10, 1 << 20];

/// The file probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::FS_CREATE,
        needs: &[],
        cost: 1.5,
        plan: None,
        run: create,
    },
    Probe {
        entry: &catalog::FS_CACHED_READ,
        needs: &[],
        cost: 1.5,
        plan: None,
        run: cached_read,
    },
];

/// The file system `dir` is on, by name where it is a common one.
pub(crate) fn file_system(dir: &Path) -> String {
    let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return "unknown".into();
    };
    // SAFETY: plain data; statfs fills it for a valid path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return "unknown".into();
    }
    match s.f_type as u64 {
        0x0102_1994 => "tmpfs".into(),
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlay".into(),
        0x6969 => "nfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        0x0102_1997 => "9p".into(),
        0x6573_5546 => "fuse".into(),
        other => format!("0x{other:x}"),
    }
}

/// Every row says where it was measured: the directory, its file system and device.
pub(crate) fn mark(m: &mut Measurement, dir: &Path, fs: &str) {
    m.params
        .insert("temp_dir".into(), dir.display().to_string().into());
    m.params.insert("fs".into(), fs.into());
    if let Some((name, class)) = block_device(dir) {
        m.context.insert(DEVICE.into(), name.into());
        m.context.insert(DEVICE_CLASS.into(), class.into());
    }
}

fn create(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (dir, from) = temp_dir(cx.options);
    disk_of(&dir).map_err(ProbeError::Failed)?;
    let scratch = oslab_files::private::PrivateDir::new_in(&dir, "oslab-fs").map_err(|e| {
        ProbeError::Failed(format!(
            "a private directory in {from} {}: {e}",
            dir.display()
        ))
    })?;
    let fs = file_system(scratch.path());
    let at = scratch.fd().as_raw_fd();
    let mut out = Vec::new();
    let harness = cx.harness.scaled(0.5);
    for size in FILE_SIZES {
        let bytes = vec![b'x'; size];
        let mut i = 0u64;
        let [made, gone] = harness.each::<2>(&mut |clock, times| {
            i += 1;
            let name = CString::new(format!("f{i}")).expect("no NUL");
            let t0 = clock.start();
            // SAFETY: our directory's descriptor, a valid name and buffer.
            let ok = unsafe {
                let fd = libc::openat(
                    at,
                    name.as_ptr(),
                    libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o600,
                );
                fd >= 0
                    && (size == 0 || libc::write(fd, bytes.as_ptr().cast(), size) == size as isize)
                    && libc::close(fd) == 0
            };
            let t1 = clock.stop();
            if !ok {
                return Err(ProbeError::Failed(format!(
                    "creating a {size}-byte file in {}: {}",
                    scratch.path().display(),
                    std::io::Error::last_os_error()
                )));
            }
            // SAFETY: our directory's descriptor and a name made in it.
            let removed = unsafe { libc::unlinkat(at, name.as_ptr(), 0) } == 0;
            let t2 = clock.stop();
            if !removed {
                return Err(ProbeError::os("unlinkat"));
            }
            *times = [t1.wrapping_sub(t0), t2.wrapping_sub(t1)];
            Ok(true)
        })?;
        for (metric, t, what) in [
            (metric::CREATE, made, "open(O_CREAT|O_EXCL), write, close"),
            (metric::DELETE, gone, "unlink"),
        ] {
            let mut m = cx.measurement(me.id, params! {"bytes" => size}, metric, &t);
            m.note_before(format!(
                "{what} of a {size}-byte file, one file at a time, in a private directory"
            ));
            mark(&mut m, &dir, &fs);
            out.push(m);
        }
    }
    Ok(out)
}

/// A file of `size` bytes just written (so in the page cache), unnamed in `dir`.
struct Cached {
    fd: libc::c_int,
    size: usize,
}

impl Drop for Cached {
    fn drop(&mut self) {
        // SAFETY: our descriptor.
        unsafe { libc::close(self.fd) };
    }
}

fn cached_read(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (dir, _) = temp_dir(cx.options);
    let size: usize = match cx.harness.config.pace {
        oslab_core::pace::Pace::Quick => 32 << 20,
        _ => 64 << 20,
    };
    crate::faults::check_space(&dir, size as u64).map_err(ProbeError::Failed)?;
    let fs = file_system(&dir);
    let file = Cached {
        fd: open_unnamed(&dir)?,
        size,
    };
    let chunk: Vec<u8> = (0..1usize << 20).map(|i| (i % 251) as u8).collect();
    for _ in 0..size >> 20 {
        crate::harness::check_interrupt()?;
        // SAFETY: our descriptor and buffer.
        if unsafe { libc::write(file.fd, chunk.as_ptr().cast(), chunk.len()) }
            != chunk.len() as isize
        {
            return Err(ProbeError::Failed(format!(
                "writing the {} MiB file in {}: {}",
                size >> 20,
                dir.display(),
                std::io::Error::last_os_error()
            )));
        }
    }
    // SAFETY: a shared read-only mapping of our file, populated now so no fault is timed.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            file.size,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            file.fd,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return Err(ProbeError::os("mmap of the cached file"));
    }
    struct Unmap(*mut libc::c_void, usize);
    impl Drop for Unmap {
        fn drop(&mut self) {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.0, self.1) };
        }
    }
    let _unmap = Unmap(map, file.size);
    let mut out = Vec::new();
    // A curve of points: half the budget each.
    let harness = cx.harness.scaled(0.5);
    let mut buf = vec![0u8; *BLOCKS.iter().max().unwrap_or(&(1 << 20))];
    for block in BLOCKS {
        for method in ["read", "mmap"] {
            let mut offset = 0usize;
            let mut short = false;
            let timing = harness.batched(&mut |n| {
                for _ in 0..n {
                    match method {
                        // SAFETY: our descriptor; the buffer holds a block.
                        "read" => unsafe {
                            short |=
                                libc::pread(file.fd, buf.as_mut_ptr().cast(), block, offset as i64)
                                    != block as isize;
                        },
                        // SAFETY: within the mapping (offsets wrap at its size, a multiple of
                        // every block) and the buffer.
                        _ => unsafe {
                            std::ptr::copy_nonoverlapping(
                                (map as *const u8).add(offset),
                                buf.as_mut_ptr(),
                                block,
                            );
                        },
                    }
                    std::hint::black_box(&buf);
                    offset = (offset + block) % file.size;
                }
            })?;
            if short {
                return Err(ProbeError::Failed(
                    "a read of the cached file came back short".into(),
                ));
            }
            // ns per block -> bytes per ns = GB/s.
            let rate: Vec<f64> = timing.samples.iter().map(|&ns| block as f64 / ns).collect();
            let mut m = judged(
                me.id,
                params! {"method" => method, "block_bytes" => block, "file_mib" => size >> 20},
                metric::BANDWIDTH,
                Unit::GBps,
                &rate,
                timing.note.clone(),
                Judge::Median,
            );
            m.batch = Some(timing.batch);
            m.note_before(match method {
                "read" => format!(
                    "pread of {} blocks through a {} MiB file just written (in the page cache)",
                    oslab_core::units::bytes(block as u64),
                    size >> 20
                ),
                _ => format!(
                    "{} blocks copied out of a populated shared mapping of the same file",
                    oslab_core::units::bytes(block as u64)
                ),
            });
            mark(&mut m, &dir, &fs);
            out.push(m);
        }
    }
    Ok(out)
}
