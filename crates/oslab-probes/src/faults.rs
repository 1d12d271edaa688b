//! Page-fault service time: first touch of anonymous memory (4 KiB and transparent huge pages),
//! a MAP_POPULATE baseline, and faults on a file mapping, both with the file in the page cache
//! (minor) and after evicting it (major).
//!
//! Time is divided by the faults actually taken, counted by the kernel (the page-fault software
//! counter of perf_event_open, which needs no PMU; getrusage where perf is refused), not by the
//! pages touched: with fault-around one file fault maps up to 16 pages, which is why dividing by
//! pages (as lmbench's lat_pagefault does) under-reports the cost of a fault.
//!
//! The file lives in a temp directory as an unnamed file (O_TMPFILE, or created and unlinked at
//! once), so nothing is left behind whatever happens to us, Ctrl-C and SIGKILL included.

use crate::buffer::{available_memory, Buffer, Pages};
use crate::harness::check_interrupt;
use crate::probe::{Context, Options, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{judged, Judge};
use oslab_core::model::{Measurement, Unit};
use oslab_core::model::{DEVICE, DEVICE_CLASS};
use oslab_core::params;
use oslab_os::perf::{self, Counter};
use serde_json::{Map, Value};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The page-fault probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::FAULTS_ANON,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: anon,
    },
    Probe {
        entry: &catalog::FAULTS_THP,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: thp,
    },
    Probe {
        entry: &catalog::FAULTS_POPULATE,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: populate,
    },
    Probe {
        entry: &catalog::FAULTS_FILE,
        needs: &[],
        cost: 15.0,
        plan: None,
        run: file,
    },
];

const PAGE: usize = 4096;
const MIB: u64 = 1 << 20;
/// Bytes touched without readahead: every page is a disk read, so keep a pass short (256 reads)
/// and take more passes: pass-to-pass I/O varies, and more passes steady the median.
const RANDOM_BYTES: usize = 1 << 20;

/// Counts the faults of the calling thread: perf software counters when permitted, else getrusage.
struct FaultCounter {
    perf: Option<(Counter, Counter)>,
}

impl FaultCounter {
    fn new() -> FaultCounter {
        let open = |c| Counter::open(perf::TYPE_SOFTWARE, c, false);
        FaultCounter {
            perf: open(perf::SW_PAGE_FAULTS_MIN)
                .and_then(|min| Ok((min, open(perf::SW_PAGE_FAULTS_MAJ)?)))
                .ok(),
        }
    }

    fn method(&self) -> &'static str {
        if self.perf.is_some() {
            "perf software counters"
        } else {
            "getrusage(RUSAGE_THREAD)"
        }
    }

    /// Runs `body`; returns its duration in ns and the minor and major faults it took.
    fn measure(&self, body: impl FnOnce()) -> Result<Fault, ProbeError> {
        let failed = |e: std::io::Error| ProbeError::Failed(format!("fault counter: {e}"));
        match &self.perf {
            Some((min, maj)) => {
                min.start().map_err(failed)?;
                maj.start().map_err(failed)?;
                let t = Instant::now();
                body();
                let ns = t.elapsed().as_nanos() as f64;
                Ok(Fault {
                    ns,
                    minor: min.stop().map_err(failed)?,
                    major: maj.stop().map_err(failed)?,
                })
            }
            None => {
                let (min0, maj0) = rusage();
                let t = Instant::now();
                body();
                let ns = t.elapsed().as_nanos() as f64;
                let (min1, maj1) = rusage();
                Ok(Fault {
                    ns,
                    minor: min1 - min0,
                    major: maj1 - maj0,
                })
            }
        }
    }
}

fn rusage() -> (u64, u64) {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    (u.ru_minflt as u64, u.ru_majflt as u64)
}

/// One timed region: its duration and the faults it took.
#[derive(Debug, Clone, Copy)]
struct Fault {
    ns: f64,
    minor: u64,
    major: u64,
}

impl Fault {
    fn faults(&self) -> u64 {
        self.minor + self.major
    }
}

/// Repeats `rep` for the harness budget (at least `min` times, at most 50).
fn repeat(
    cx: &Context,
    min: usize,
    mut rep: impl FnMut() -> Result<Fault, ProbeError>,
) -> Result<Vec<Fault>, ProbeError> {
    rep()?; // warm-up: allocator, page tables, file metadata
    let start = Instant::now();
    let mut out = Vec::new();
    while out.len() < 50 && (out.len() < min || start.elapsed() < cx.harness.config.budget) {
        check_interrupt()?;
        out.push(rep()?);
    }
    Ok(out)
}

/// Measurements of repeated faulting over `bytes` touched in `unit_bytes` pages: ns per fault
/// taken, per page touched, per byte; the note gives the fault counts.
fn fault_measurements(
    id: &str,
    mut params: Map<String, Value>,
    bytes: usize,
    unit_bytes: usize,
    reps: &[Fault],
    counter: &FaultCounter,
) -> Vec<Measurement> {
    let pages = (bytes / unit_bytes) as f64;
    let faults: Vec<f64> = reps.iter().map(|r| r.faults() as f64).collect();
    let mean_faults = faults.iter().sum::<f64>() / faults.len().max(1) as f64;
    let majors = reps.iter().map(|r| r.major).sum::<u64>() as f64 / reps.len().max(1) as f64;
    params.insert("bytes".into(), bytes.into());
    params.insert("page_bytes".into(), unit_bytes.into());
    let note = if mean_faults > 0.0 {
        format!(
            "{pages:.0} pages touched, {mean_faults:.0} faults taken per pass ({majors:.0} major; {:.1} pages per fault), counted by {}",
            pages / mean_faults,
            counter.method()
        )
    } else {
        format!(
            "{pages:.0} pages, no faults taken (counted by {})",
            counter.method()
        )
    };
    let per = |f: &dyn Fn(&Fault) -> f64| reps.iter().map(f).collect::<Vec<f64>>();
    let mut out = Vec::new();
    if mean_faults > 0.0 {
        let per_fault = per(&|r| r.ns / r.faults().max(1) as f64);
        out.push(judged(
            id,
            params.clone(),
            "per_fault",
            Unit::Ns,
            &per_fault,
            Some(note.clone()),
            Judge::Median,
        ));
    }
    let per_page = per(&|r| r.ns / pages);
    out.push(judged(
        id,
        params.clone(),
        "per_page",
        Unit::Ns,
        &per_page,
        Some(note),
        Judge::Median,
    ));
    let per_byte = per(&|r| r.ns / bytes as f64);
    out.push(judged(
        id,
        params,
        "per_byte",
        Unit::Ns,
        &per_byte,
        None,
        Judge::Median,
    ));
    out
}

/// Size of the anonymous regions: a quarter of the memory budget, 8..256 MiB.
fn anon_bytes(cx: &Context) -> usize {
    (cx.memory_budget() / 4).clamp(8 << 20, 256 << 20)
}

fn touch(ptr: *mut u8, bytes: usize, step: usize) {
    for off in (0..bytes).step_by(step) {
        // SAFETY: callers pass a live mapping of `bytes` bytes.
        unsafe { ptr.add(off).write_volatile(1) };
    }
}

fn anon(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let bytes = anon_bytes(cx);
    let counter = FaultCounter::new();
    let mut used = String::new();
    let reps = repeat(cx, 5, || {
        let buf = Buffer::new(bytes, Pages::Small)?;
        let r = counter.measure(|| touch(buf.ptr(), bytes, PAGE))?;
        used = buf.pages_used();
        Ok(r)
    })?;
    let p = params! {"access" => "write", "pages" => used};
    Ok(fault_measurements(me.id, p, bytes, PAGE, &reps, &counter))
}

fn thp(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    const HUGE: usize = 2 << 20;
    let bytes = anon_bytes(cx).next_multiple_of(HUGE);
    let counter = FaultCounter::new();
    let mut used = String::new();
    let reps = repeat(cx, 5, || {
        let buf = Buffer::new(bytes, Pages::Transparent)?;
        let r = counter.measure(|| touch(buf.ptr(), bytes, HUGE))?;
        used = buf.pages_used();
        Ok(r)
    })?;
    if !used.starts_with("thp") {
        let setting = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_else(|_| "not readable".into());
        return Err(ProbeError::Unsupported(format!(
            "the kernel gave {used} pages for MADV_HUGEPAGE (transparent_hugepage/enabled: {})",
            setting.trim()
        )));
    }
    let p = params! {"access" => "write", "pages" => used};
    Ok(fault_measurements(me.id, p, bytes, HUGE, &reps, &counter))
}

fn populate(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let bytes = anon_bytes(cx);
    let counter = FaultCounter::new();
    let reps = repeat(cx, 5, || {
        let mut failed = false;
        let r = counter.measure(|| {
            // SAFETY: a fresh anonymous mapping, unmapped at once.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                    -1,
                    0,
                )
            };
            failed = p == libc::MAP_FAILED;
            if !failed {
                // SAFETY: our mapping.
                unsafe { libc::munmap(p, bytes) };
            }
        })?;
        if failed {
            return Err(ProbeError::os("mmap(MAP_POPULATE)"));
        }
        Ok(r)
    })?;
    // MAP_POPULATE takes no trap per page: report the cost per page (munmap included).
    let p = params! {"access" => "populate+unmap", "pages" => "default"};
    let mut out = fault_measurements(me.id, p, bytes, PAGE, &reps, &counter);
    out.retain(|m| m.metric != "per_fault");
    Ok(out)
}

/// Where the fault file goes and who chose it (for messages that blame the right one):
/// `--temp-dir`, else `$TMPDIR` (when set and not empty), else /var/tmp.
pub fn temp_dir(options: &Options) -> (PathBuf, &'static str) {
    if let Some(d) = options.temp_dir.clone() {
        return (d, "--temp-dir");
    }
    match std::env::var_os("TMPDIR").filter(|v| !v.is_empty()) {
        Some(d) => (PathBuf::from(d), "TMPDIR"),
        None => (PathBuf::from("/var/tmp"), "the default temp dir"),
    }
}

/// Default file size: half the memory budget, at most an eighth of available memory, at least
/// 8 MiB.
pub fn default_file_size(memory_max: usize) -> u64 {
    let ram = available_memory().unwrap_or(1 << 30) / 8;
    ((memory_max as u64 / 2).min(ram) / MIB).max(8) * MIB
}

/// Free bytes for an unprivileged writer in `dir`, and whether it is RAM-backed (tmpfs).
pub(crate) fn disk_of(dir: &Path) -> Result<(u64, bool), String> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| format!("temp dir {} contains a NUL byte", dir.display()))?;
    // SAFETY: statfs fills the struct for a valid C path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return Err(format!(
            "temp dir {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let tmpfs = s.f_type as i64 == TMPFS_MAGIC;
    Ok((s.f_bavail as u64 * s.f_bsize as u64, tmpfs))
}

/// The disk holding `dir` and its kind (nvme, ssd, hdd, virtio, xen, mmc, zram, or other), from
/// sysfs: what a major fault waits for. A partition is its disk's; a device-mapper or md volume
/// is its first underlying disk's.
pub fn block_device(dir: &Path) -> Option<(String, &'static str)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut node = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if node.join("partition").exists() {
        node = node.parent()?.to_path_buf();
    }
    for _ in 0..4 {
        let slave = std::fs::read_dir(node.join("slaves"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok());
        match slave {
            Some(e) => {
                node = std::fs::canonicalize(e.path()).ok()?;
                if node.join("partition").exists() {
                    node = node.parent()?.to_path_buf();
                }
            }
            None => break,
        }
    }
    let name = node.file_name()?.to_str()?.to_string();
    let rotational =
        std::fs::read_to_string(node.join("queue/rotational")).is_ok_and(|r| r.trim() == "1");
    let class = device_class(&name, rotational);
    Some((name, class))
}

/// A disk's kind from its kernel name (and whether it says it rotates, which only SCSI/ATA
/// disks report truthfully: virtio disks say 1 whatever backs them).
fn device_class(name: &str, rotational: bool) -> &'static str {
    let starts = |p: &str| name.starts_with(p);
    if starts("nvme") {
        "nvme"
    } else if starts("vd") {
        "virtio"
    } else if starts("xvd") {
        "xen"
    } else if starts("sd") || starts("hd") {
        if rotational {
            "hdd"
        } else {
            "ssd"
        }
    } else if starts("mmcblk") {
        "mmc"
    } else if starts("zram") {
        "zram"
    } else {
        "other"
    }
}

/// Checks, before anything is measured, that the fault file `options` ask for fits in its
/// directory (the default size follows `memory_max`, the suite's memory budget).
pub fn check_request(options: &Options, memory_max: usize) -> Result<(), String> {
    let (dir, from) = temp_dir(options);
    if !dir.is_dir() {
        return Err(format!(
            "{from} {}: not a directory (pass --temp-dir with one)",
            dir.display()
        ));
    }
    let size = options
        .file_size
        .unwrap_or_else(|| default_file_size(memory_max));
    check_space(&dir, size)
}

/// Checks that this user may write `dir` and that `size` bytes fit in it with 10% of its free
/// space to spare.
pub(crate) fn check_space(dir: &Path, size: u64) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a valid C string; access only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(format!(
            "temp dir {} is not writable by this user: pass --temp-dir with a directory you may write",
            dir.display()
        ));
    }
    let (free, _) = disk_of(dir)?;
    if size > free / 10 * 9 {
        return Err(format!(
            "temp dir {} has {} MiB free; a {} MiB fault file would not fit (with 10% to spare): pass a smaller --file-size or another --temp-dir",
            dir.display(),
            free / MIB,
            size / MIB
        ));
    }
    Ok(())
}

/// An unnamed file in a directory: no name is ever left behind.
pub(crate) struct TempFile {
    fd: libc::c_int,
    size: usize,
}

impl TempFile {
    /// Creates an unnamed file of `size` bytes of non-zero data in `dir` and syncs it to disk.
    pub(crate) fn create(dir: &Path, size: usize) -> Result<TempFile, ProbeError> {
        let mut file = TempFile {
            fd: open_unnamed(dir)?,
            size: 0,
        };
        file.grow(dir, size)?;
        Ok(file)
    }

    /// Its descriptor.
    pub(crate) fn fd(&self) -> libc::c_int {
        self.fd
    }

    /// Its size in bytes.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Appends non-zero data up to `size` bytes (in `dir`, for messages) and syncs it to disk,
    /// so the file's pages are clean and the cache may drop them.
    pub(crate) fn grow(&mut self, dir: &Path, size: usize) -> Result<(), ProbeError> {
        let chunk: Vec<u8> = (0..MIB as usize).map(|i| (i % 251) as u8 + 1).collect();
        while self.size < size {
            check_interrupt()?;
            let n = chunk.len().min(size - self.size);
            // SAFETY: writing from a live buffer to our fd.
            let w = unsafe {
                libc::pwrite(
                    self.fd,
                    chunk.as_ptr() as *const libc::c_void,
                    n,
                    self.size as libc::off_t,
                )
            };
            if w <= 0 {
                return Err(ProbeError::Failed(format!(
                    "writing a {} MiB temp file in {}: {}",
                    size as u64 / MIB,
                    dir.display(),
                    std::io::Error::last_os_error()
                )));
            }
            self.size += w as usize;
        }
        // SAFETY: our fd.
        if unsafe { libc::fsync(self.fd) } != 0 {
            return Err(ProbeError::os("fsync of the temp file"));
        }
        Ok(())
    }

    /// Maps the file read-only.
    pub(crate) fn map(&self) -> Result<FileMap, ProbeError> {
        // SAFETY: a shared read-only mapping of our fd.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                self.size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                self.fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(ProbeError::os("mmap of the fault file"));
        }
        Ok(FileMap {
            ptr: p as *mut u8,
            len: self.size,
        })
    }

    /// Drops the file's pages from the page cache (they are clean: the file was synced).
    pub(crate) fn evict(&self) -> Result<(), ProbeError> {
        // SAFETY: advice on our fd.
        let r = unsafe { libc::posix_fadvise(self.fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(ProbeError::Failed(format!(
                "posix_fadvise(DONTNEED): {}",
                std::io::Error::from_raw_os_error(r)
            )));
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // SAFETY: our fd; the file has no name, so closing it frees its blocks.
        unsafe { libc::close(self.fd) };
    }
}

pub(crate) fn open_unnamed(dir: &Path) -> Result<libc::c_int, ProbeError> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| ProbeError::Failed("temp dir path contains a NUL byte".into()))?;
    let cannot = || {
        ProbeError::Failed(format!(
            "cannot create a file in temp dir {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ))
    };
    // The directory is looked up once: the file is made (and, unnamed below, unlinked) through
    // its descriptor, never by a path another user could redirect in between.
    // SAFETY: a valid C path.
    let dfd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dfd < 0 {
        return Err(cannot());
    }
    // SAFETY: a descriptor we own, closed once when this drops.
    let dfd = unsafe { std::os::fd::OwnedFd::from_raw_fd(dfd) };
    let at = |name: &std::ffi::CStr, flags: libc::c_int| {
        // SAFETY: a valid descriptor and C string.
        unsafe {
            libc::openat(
                dfd.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_RDWR | libc::O_CLOEXEC,
                0o600,
            )
        }
    };
    // O_TMPFILE creates an unnamed inode in that directory.
    let fd = at(c".", libc::O_TMPFILE);
    if fd >= 0 {
        return Ok(fd);
    }
    // Filesystems without O_TMPFILE: a new random name (O_EXCL), unlinked at once.
    let token = oslab_files::private::random_token()
        .map_err(|e| ProbeError::Failed(format!("no random name for a temp file: {e}")))?;
    let cn = CString::new(format!(".oslab-faults-{token}"))
        .map_err(|_| ProbeError::Failed("temp file name contains a NUL byte".into()))?;
    let fd = at(&cn, libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW);
    if fd < 0 {
        return Err(cannot());
    }
    // SAFETY: valid descriptor and name.
    unsafe { libc::unlinkat(dfd.as_raw_fd(), cn.as_ptr(), 0) };
    Ok(fd)
}

/// A mapping of the fault file, unmapped on drop.
pub(crate) struct FileMap {
    ptr: *mut u8,
    len: usize,
}

impl FileMap {
    /// Reads one byte per page of the first `bytes`.
    fn read_pages(&self, bytes: usize) -> u64 {
        let mut sum = 0u64;
        for off in (0..bytes.min(self.len)).step_by(PAGE) {
            // SAFETY: inside the mapping.
            sum += u64::from(unsafe { self.ptr.add(off).read_volatile() });
        }
        sum
    }

    /// madvise on the whole mapping.
    fn advise(&self, advice: libc::c_int) -> Result<(), ProbeError> {
        // SAFETY: our mapping.
        if unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.len, advice) } != 0 {
            return Err(ProbeError::os("madvise on the fault file"));
        }
        Ok(())
    }

    /// Fraction of the pages resident in the page cache (mincore).
    pub(crate) fn resident(&self) -> Option<f64> {
        let pages = self.len.div_ceil(PAGE);
        let mut vec = vec![0u8; pages];
        // SAFETY: our mapping; vec has one byte per page.
        let r = unsafe { libc::mincore(self.ptr as *mut libc::c_void, self.len, vec.as_mut_ptr()) };
        (r == 0).then(|| vec.iter().filter(|&&b| b & 1 == 1).count() as f64 / pages as f64)
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

fn file(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (dir, _) = temp_dir(cx.options);
    let size = cx
        .options
        .file_size
        .unwrap_or_else(|| default_file_size(cx.memory_budget()));
    check_space(&dir, size).map_err(ProbeError::Failed)?;
    let (_, tmpfs) = disk_of(&dir).map_err(ProbeError::Failed)?;
    let size = (size as usize).next_multiple_of(PAGE);
    let file = TempFile::create(&dir, size)?;
    let counter = FaultCounter::new();
    let base = params! {"access" => "read", "temp_dir" => dir.display().to_string()};

    // Minor: the file is in the page cache (it was just written); each fault maps a batch of
    // cached pages around the faulting one.
    let minor = repeat(cx, 5, || {
        let map = file.map()?;
        counter.measure(|| {
            std::hint::black_box(map.read_pages(size));
        })
    })?;
    let mut p = base.clone();
    p.insert("cache".into(), "page cache (minor)".into());
    let mut out = fault_measurements(me.id, p, size, PAGE, &minor, &counter);

    if tmpfs {
        let mut m = Measurement::not_taken(
            me.id,
            params! {"cache" => "evicted (major)"},
            "per_fault",
            Unit::Ns,
            oslab_core::Status::Skipped(format!(
                "temp dir {} is tmpfs (RAM): nothing to read back from disk; pass --temp-dir on a disk",
                dir.display()
            )),
        );
        m.note = None;
        out.push(m);
        return Ok(out);
    }
    let device = block_device(&dir);
    // Major: evicted first, so touching a page reads it from the disk. With the default
    // readahead one major fault starts reading ahead and later faults wait on that I/O as minor
    // faults; with MADV_RANDOM (no readahead) every fault reads its own page.
    for (advice, label, touched) in [
        (libc::MADV_NORMAL, "evicted (major, readahead)", size),
        (
            libc::MADV_RANDOM,
            "evicted (major, no readahead)",
            size.min(RANDOM_BYTES),
        ),
    ] {
        let mut residency = Vec::new();
        let major = repeat(cx, 5, || {
            file.evict()?;
            let map = file.map()?;
            map.advise(advice)?;
            residency.push(map.resident().unwrap_or(f64::NAN));
            counter.measure(|| {
                std::hint::black_box(map.read_pages(touched));
            })
        })?;
        let worst = residency.iter().cloned().fold(0.0, f64::max);
        let mut p = base.clone();
        p.insert("cache".into(), label.into());
        let mut ms = fault_measurements(me.id, p, touched, PAGE, &major, &counter);
        if let Some((name, class)) = &device {
            for m in &mut ms {
                m.context.insert(DEVICE.into(), name.clone().into());
                m.context.insert(DEVICE_CLASS.into(), (*class).into());
            }
        }
        for m in &mut ms {
            if let Some(n) = &mut m.note {
                n.push_str(&format!(
                    "; at most {:.1}% of the file was still cached after eviction",
                    worst * 100.0
                ));
            }
        }
        if major.iter().all(|r| r.major == 0) {
            for m in &mut ms {
                m.status = oslab_core::Status::Failed(
                    "no major faults were taken: the page cache kept the file (eviction refused?)"
                        .into(),
                );
            }
        }
        out.extend(ms);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_files_leave_no_name_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        {
            let f = TempFile::create(&dir, 3 << 20).unwrap();
            let map = f.map().unwrap();
            assert!(map.read_pages(3 << 20) > 0);
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        }
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn space_check_refuses_what_does_not_fit() {
        let dir = std::env::temp_dir();
        assert!(check_space(&dir, 1 << 20).is_ok());
        let e = check_space(&dir, u64::MAX / 2).unwrap_err();
        assert!(
            e.contains("would not fit") && e.contains("--file-size"),
            "{e}"
        );
        assert!(check_space(Path::new("/no/such/dir"), 1).is_err());
    }
}
