//! The smallest useful piece of perf_event_open: one counter on the calling thread, opened
//! disabled, enabled around a region and read. Software events (page faults, context switches)
//! work without a hardware PMU; errors say which of "not supported" and "permission" applies.

use std::io;

/// perf_event_attr, the prefix we need (PERF_ATTR_SIZE_VER0 = 64 bytes is accepted by every
/// kernel).
#[repr(C)]
#[derive(Default)]
struct AttrV0 {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// PERF_TYPE_HARDWARE.
pub const TYPE_HARDWARE: u32 = 0;
/// PERF_TYPE_SOFTWARE.
pub const TYPE_SOFTWARE: u32 = 1;
/// PERF_TYPE_TRACEPOINT.
pub const TYPE_TRACEPOINT: u32 = 2;
/// PERF_COUNT_HW_CPU_CYCLES.
pub const HW_CPU_CYCLES: u64 = 0;
/// PERF_COUNT_SW_CPU_MIGRATIONS.
pub const SW_CPU_MIGRATIONS: u64 = 4;
/// PERF_COUNT_SW_PAGE_FAULTS_MIN.
pub const SW_PAGE_FAULTS_MIN: u64 = 5;
/// PERF_COUNT_SW_PAGE_FAULTS_MAJ.
pub const SW_PAGE_FAULTS_MAJ: u64 = 6;

const FLAG_DISABLED: u64 = 1;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;

/// Why a counter could not be opened, in words a user can act on.
pub fn explain(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
            "not supported here (no PMU for hardware events: virtualized?)".to_string()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "permission: perf_event_paranoid={} (run as root, grant CAP_PERFMON, or lower kernel.perf_event_paranoid)",
            std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into())
        ),
        Some(libc::ENOSYS) => "perf_event_open is not available in this kernel".to_string(),
        _ => format!("perf_event_open failed: {err}"),
    }
}

/// One counting event on the calling thread (any CPU), closed on drop.
#[derive(Debug)]
pub struct Counter {
    fd: libc::c_int,
}

impl Counter {
    /// Opens `config` of `kind` for the calling thread, disabled. `kernel` includes events
    /// raised in kernel mode (needs perf_event_paranoid <= 1 or CAP_PERFMON).
    pub fn open(kind: u32, config: u64, kernel: bool) -> io::Result<Counter> {
        Counter::open_on(kind, config, kernel, 0, -1)
    }

    /// Opens `config` of `kind` for every task on `cpu` (needs perf_event_paranoid <= 0 or
    /// CAP_PERFMON), disabled, kernel events included.
    pub fn open_cpu(kind: u32, config: u64, cpu: usize) -> io::Result<Counter> {
        Counter::open_on(kind, config, true, -1, cpu as libc::c_int)
    }

    fn open_on(
        kind: u32,
        config: u64,
        kernel: bool,
        pid: libc::pid_t,
        cpu: libc::c_int,
    ) -> io::Result<Counter> {
        Counter::sys_open(kind, config, kernel, 0, (pid, cpu), None)
    }

    /// Opens `config` of `kind` on process `pid` and every thread or child it creates from now
    /// on (inherit: counts of exited ones are added in), counting at once. For a process we
    /// started: its whole life once opened right after the start.
    pub fn open_inherited(kind: u32, config: u64, pid: libc::pid_t) -> io::Result<Counter> {
        let c = Counter::sys_open_flags(kind, config, true, 0, (pid, -1), None, FLAG_INHERIT)?;
        c.ioctl(PERF_EVENT_IOC_ENABLE)?;
        Ok(c)
    }

    /// Opens an event as a member of `leader`'s group (or as a new group's leader, disabled, that
    /// reads the whole group with its enabled and running times), on `(pid, cpu)`. Kernel-mode
    /// events are included where permitted, else only user mode is counted.
    pub fn open_member(
        kind: u32,
        config: u64,
        target: (libc::pid_t, libc::c_int),
        leader: Option<&Counter>,
    ) -> io::Result<Counter> {
        let format = READ_GROUP | READ_TOTAL_TIME_ENABLED | READ_TOTAL_TIME_RUNNING;
        match Counter::sys_open(kind, config, true, format, target, leader) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
                Counter::sys_open(kind, config, false, format, target, leader)
            }
            other => other,
        }
    }

    /// perf_event_open itself. A counter without a leader starts disabled; members follow
    /// their leader.
    fn sys_open(
        kind: u32,
        config: u64,
        kernel: bool,
        read_format: u64,
        target: (libc::pid_t, libc::c_int),
        leader: Option<&Counter>,
    ) -> io::Result<Counter> {
        Counter::sys_open_flags(kind, config, kernel, read_format, target, leader, 0)
    }

    fn sys_open_flags(
        kind: u32,
        config: u64,
        kernel: bool,
        read_format: u64,
        (pid, cpu): (libc::pid_t, libc::c_int),
        leader: Option<&Counter>,
        extra_flags: u64,
    ) -> io::Result<Counter> {
        let mut flags = FLAG_EXCLUDE_HV | extra_flags;
        if leader.is_none() {
            flags |= FLAG_DISABLED;
        }
        if !kernel {
            flags |= FLAG_EXCLUDE_KERNEL;
        }
        let attr = AttrV0 {
            kind,
            size: std::mem::size_of::<AttrV0>() as u32,
            config,
            read_format,
            flags,
            ..Default::default()
        };
        // SAFETY: attr is a fully initialised perf_event_attr prefix of the size it states.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const AttrV0,
                pid,
                cpu,
                leader.map_or(-1, |l| l.fd),
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Counter {
            fd: fd as libc::c_int,
        })
    }

    /// Resets and enables this leader's whole group.
    pub fn start_group(&self) -> io::Result<()> {
        self.ioctl_arg(PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP)?;
        self.ioctl_arg(PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP)
    }

    /// Disables this leader's group and reads it: the `members` values, time enabled and time
    /// running (ns).
    pub fn stop_group(&self, members: usize) -> io::Result<(Vec<u64>, u64, u64)> {
        self.ioctl_arg(PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP)?;
        let mut buf = vec![0u64; 3 + members];
        let bytes = buf.len() * 8;
        // SAFETY: reading at most `bytes` into our buffer.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, bytes) };
        if n < 24 {
            return Err(io::Error::last_os_error());
        }
        let nr = (buf[0] as usize).min(members);
        Ok((buf[3..3 + nr].to_vec(), buf[1], buf[2]))
    }

    fn ioctl(&self, request: libc::c_ulong) -> io::Result<()> {
        self.ioctl_arg(request, 0)
    }

    fn ioctl_arg(&self, request: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
        // SAFETY: a perf ioctl with an integer argument on our own fd.
        if unsafe { libc::ioctl(self.fd, request as _, arg) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Resets the count to zero and starts counting.
    pub fn start(&self) -> io::Result<()> {
        self.ioctl(PERF_EVENT_IOC_RESET)?;
        self.ioctl(PERF_EVENT_IOC_ENABLE)
    }

    /// Stops counting and returns the count.
    pub fn stop(&self) -> io::Result<u64> {
        self.ioctl(PERF_EVENT_IOC_DISABLE)?;
        self.read()
    }

    /// The current count.
    pub fn read(&self) -> io::Result<u64> {
        let mut v = 0u64;
        // SAFETY: reading 8 bytes into a u64 from our fd.
        let n = unsafe { libc::read(self.fd, &mut v as *mut u64 as *mut libc::c_void, 8) };
        if n != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(v)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: our fd.
        unsafe { libc::close(self.fd) };
    }
}

/// The id of tracepoint `system:name` (e.g. "sched", "sched_switch"), from tracefs. When tracefs
/// is not mounted and we are root, it is mounted for the lookup and unmounted again.
pub fn tracepoint_id(system: &str, name: &str) -> io::Result<u64> {
    let rel = format!("events/{system}/{name}/id");
    for base in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if let Ok(s) = std::fs::read_to_string(format!("{base}/{rel}")) {
            return s
                .trim()
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad tracepoint id"));
        }
    }
    let target = c"/sys/kernel/tracing";
    // SAFETY: mounting tracefs on its standard mount point; all strings are NUL-terminated.
    let mounted = unsafe {
        libc::mount(
            c"tracefs".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    } == 0;
    if !mounted {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing, as root)",
        ));
    }
    let id = std::fs::read_to_string(format!("/sys/kernel/tracing/{rel}"));
    // SAFETY: undoing our own mount.
    unsafe { libc::umount(target.as_ptr()) };
    id?.trim()
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad tracepoint id"))
}

const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_EVENT_IOC_RESET: libc::c_ulong = 0x2403;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_IOC_FLAG_GROUP: libc::c_ulong = 1;
const READ_TOTAL_TIME_ENABLED: u64 = 1;
const READ_TOTAL_TIME_RUNNING: u64 = 2;
const READ_GROUP: u64 = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs perf_event_open for software events (perf_event_paranoid <= 2 or root; CI runs it)"]
    fn page_fault_counter_counts_first_touches() {
        let c = Counter::open(TYPE_SOFTWARE, SW_PAGE_FAULTS_MIN, false)
            .unwrap_or_else(|e| panic!("cannot count page faults here: {}", explain(&e)));
        let pages = 64;
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as *mut u8;
        assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
        // SAFETY: advising our own mapping (4 KiB pages, so one fault per page).
        unsafe { libc::madvise(p as *mut libc::c_void, pages * 4096, libc::MADV_NOHUGEPAGE) };
        c.start().unwrap();
        for i in 0..pages {
            // SAFETY: within the mapping.
            unsafe { p.add(i * 4096).write_volatile(1) };
        }
        let n = c.stop().unwrap();
        // SAFETY: our mapping.
        unsafe { libc::munmap(p as *mut libc::c_void, pages * 4096) };
        assert!(
            (pages as u64..pages as u64 + 8).contains(&n),
            "{n} faults for {pages} pages"
        );
    }

    #[test]
    fn hardware_errors_are_explained() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert!(explain(&e).contains("not supported"));
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert!(explain(&e).contains("permission"));
    }
}
