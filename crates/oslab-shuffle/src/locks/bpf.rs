//! The eBPF method: `bpf/futex_wait.bpf.c`, compiled by `scripts/build-bpf` and committed as an
//! object, loaded with aya (pure Rust: no clang or libelf needed to build or run oslab). The
//! program keeps, per thread of the target, the total nanoseconds spent in futex wait calls that
//! slept (EAGAIN returns excluded), the same per futex word (the lock), and the start of the
//! wait in progress; an interval's wait is the difference of two reads of (completed + in
//! progress), and a thread's lock the word it waited on longest in the interval.

use super::{proxy, threads, MonitorError, ThreadWait};
use aya::maps::HashMap;
use aya::programs::TracePoint;
use aya::{Ebpf, EbpfLoader};
use oslab_core::reason::Unavailable;
use oslab_os::clock::monotonic_ns;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What this method measures, for every result it produces.
pub const METHOD: &str =
    "eBPF: time in futex wait calls per thread (sys_enter/exit_futex, tgid-filtered, EAGAIN excluded)";

static OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/futex_wait.bpf.o");

/// The `waits` map's value (struct wait_total in the C source).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct WaitTotal {
    wait_ns: u64,
    waits: u64,
    fast_returns: u64,
}

// SAFETY: plain old data, three u64s, any bit pattern valid.
unsafe impl aya::Pod for WaitTotal {}

/// The `started` map's value (struct wait_start).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct WaitStart {
    since_ns: u64,
    uaddr: u64,
}

// SAFETY: plain old data, two u64s.
unsafe impl aya::Pod for WaitStart {}

/// The `lock_waits` map's key (struct lock_key).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct LockKey {
    tid: u32,
    pad: u32,
    uaddr: u64,
}

// SAFETY: plain old data, no padding (u32, u32, u64).
unsafe impl aya::Pod for LockKey {}

/// Nanoseconds waited so far: per thread, and per thread and futex word.
#[derive(Debug, Default)]
struct Totals {
    per_thread: BTreeMap<u32, u64>,
    per_lock: BTreeMap<(u32, u64), u64>,
}

/// The loaded and attached program; dropping it detaches and unloads everything.
pub struct FutexWaits {
    // Always Some until dropped.
    ebpf: Option<Ebpf>,
}

impl Drop for FutexWaits {
    /// Detaching waits for an RCU grace period per tracepoint link (~75 ms each in a VM, six
    /// links): done on a thread of its own so that the caller's summary and store do not wait.
    /// At exit the kernel closes whatever is left.
    fn drop(&mut self) {
        if let Some(e) = self.ebpf.take() {
            std::thread::spawn(move || drop(e));
        }
    }
}

impl FutexWaits {
    /// Loads the program for process `pid` and attaches it to the futex tracepoints.
    pub fn attach(pid: i32) -> Result<FutexWaits, Unavailable> {
        let tgid = pid as u32;
        let mut ebpf = EbpfLoader::new()
            // The program reads no kernel structure (tracepoint records only), so it needs no CO-RE
            // relocation: skip parsing the kernel's BTF (~100 ms of CPU at start).
            .btf(None)
            .override_global("target_tgid", &tgid, true)
            .load(OBJECT)
            .map_err(|e| explain(&e))?;
        // futex(2) is required; the futex2 wait calls exist from Linux 5.16 / 6.7 only.
        for (prog, tracepoints, required) in [
            ("futex_enter", &["sys_enter_futex"][..], true),
            ("futex_exit", &["sys_exit_futex"][..], true),
            (
                "futex2_enter",
                &["sys_enter_futex_wait", "sys_enter_futex_waitv"][..],
                false,
            ),
            (
                "futex_exit",
                &["sys_exit_futex_wait", "sys_exit_futex_waitv"][..],
                false,
            ),
        ] {
            let p: &mut TracePoint = ebpf
                .program_mut(prog)
                .ok_or_else(|| format!("program {prog} missing from the object"))?
                .try_into()
                .map_err(|e| explain(&e))?;
            if p.fd().is_err() {
                p.load().map_err(|e| explain(&e))?;
            }
            for tp in tracepoints {
                match p.attach("syscalls", tp) {
                    Ok(_) => {}
                    Err(e) if required => {
                        return Err(format!("attach to syscalls:{tp}: {}", explain(&e)).into())
                    }
                    Err(_) => {}
                }
            }
        }
        let mut me = FutexWaits { ebpf: Some(ebpf) };
        me.adopt_waits_in_progress(pid);
        Ok(me)
    }

    fn ebpf(&self) -> &Ebpf {
        self.ebpf.as_ref().expect("present until dropped")
    }

    fn ebpf_mut(&mut self) -> &mut Ebpf {
        self.ebpf.as_mut().expect("present until dropped")
    }

    /// Threads already asleep in a futex wait when the program was attached have no start
    /// entry, so their wait would be missed until it ends and then ignored. Their /proc syscall
    /// line shows them: record "waiting since now". A thread that wakes between our read and the
    /// insert is taken out again by the re-read (a smaller window remains; its next wait
    /// overwrites the entry).
    fn adopt_waits_in_progress(&mut self, pid: i32) {
        let Some(Ok(mut started)) = self
            .ebpf_mut()
            .map_mut("started")
            .map(HashMap::<_, u32, WaitStart>::try_from)
        else {
            return;
        };
        let blocked_on = |tid: i32| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall"))
                .ok()
                .and_then(|l| proxy::futex_wait_address(&l))
        };
        const BPF_NOEXIST: u64 = 1;
        for tid in threads(pid).unwrap_or_default() {
            let Some(uaddr) = blocked_on(tid) else {
                continue;
            };
            let start = WaitStart {
                since_ns: monotonic_ns(),
                uaddr,
            };
            if started.insert(tid as u32, start, BPF_NOEXIST).is_ok() && blocked_on(tid).is_none() {
                let _ = started.remove(&(tid as u32));
            }
        }
    }

    /// Nanoseconds waited since loading by threads `tids`, per thread and per thread and lock,
    /// including the waits in progress. A thread's totals are looked up by its id: walking a map
    /// that the program changes meanwhile (every futex wait of the other threads) skips entries,
    /// and a skipped wait in progress read a joined main thread's 200 ms interval as 0 waited
    /// (three intervals in 158 of a steady lockbench, each one a regrouping).
    fn totals(&self, now_ns: u64, tids: &[u32]) -> Result<Totals, MonitorError> {
        let map_err = |e: aya::maps::MapError| MonitorError::Bpf(explain(&e));
        let map = |name: &str| self.ebpf().map(name).expect("map in object");
        let waits: HashMap<_, u32, WaitTotal> = HashMap::try_from(map("waits")).map_err(map_err)?;
        let per_lock: HashMap<_, LockKey, u64> =
            HashMap::try_from(map("lock_waits")).map_err(map_err)?;
        let started: HashMap<_, u32, WaitStart> =
            HashMap::try_from(map("started")).map_err(map_err)?;
        // Completed waits first, then those in progress: a wait ending between the two reads is
        // missed now and counted in the next interval's read (totals only grow).
        let mut out = Totals::default();
        for &tid in tids {
            let done = waits.get(&tid, 0).map_or(0, |w| w.wait_ns);
            *out.per_thread.entry(tid).or_default() += done;
            if let Ok(s) = started.get(&tid, 0) {
                let ns = now_ns.saturating_sub(s.since_ns);
                *out.per_thread.entry(tid).or_default() += ns;
                *out.per_lock.entry((tid, s.uaddr)).or_default() += ns;
            }
        }
        // Which word a thread waited on longest: a skipped entry here only costs this
        // interval's choice of its lock.
        for (k, ns) in per_lock.iter().flatten() {
            if tids.contains(&k.tid) {
                *out.per_lock.entry((k.tid, k.uaddr)).or_default() += ns;
            }
        }
        Ok(out)
    }

    /// Forgets threads that no longer exist (a thread killed inside a wait leaves an entry).
    fn forget_except(&mut self, alive: &[i32]) {
        let gone = |tid: u32| !alive.contains(&(tid as i32));
        forget::<u32, WaitTotal>(self.ebpf_mut(), "waits", |t| gone(*t));
        forget::<u32, WaitStart>(self.ebpf_mut(), "started", |t| gone(*t));
        forget::<LockKey, u64>(self.ebpf_mut(), "lock_waits", |k| gone(k.tid));
    }

    /// Each thread's wait over the next `interval`; returns early with [`MonitorError::Gone`]
    /// when the process exits.
    pub fn measure(
        &mut self,
        pid: i32,
        interval: Duration,
    ) -> Result<Vec<ThreadWait>, MonitorError> {
        let mut tids: Vec<u32> = threads(pid)?.into_iter().map(|t| t as u32).collect();
        let t0 = monotonic_ns();
        let before = self.totals(t0, &tids)?;
        let end = Instant::now() + interval;
        while let Some(left) = end
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        {
            if oslab_os::signals::sleep_unless_stopped(left.min(Duration::from_millis(20))) {
                return Err(MonitorError::Stopped);
            }
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(MonitorError::Gone(pid));
            }
        }
        // The threads at either end: one that exited meanwhile keeps its entries until
        // forgotten below, one started meanwhile had none before.
        let alive = threads(pid)?;
        tids.extend(alive.iter().map(|t| *t as u32));
        tids.sort_unstable();
        tids.dedup();
        let t1 = monotonic_ns();
        let after = self.totals(t1, &tids)?;
        let observed = t1.saturating_sub(t0) as f64;
        let (b, a) = (&before.per_thread, &after.per_thread);
        // Each thread's lock: the word it waited on longest in the interval.
        let mut lock: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for (&(tid, uaddr), &ns) in &after.per_lock {
            let waited = ns.saturating_sub(*before.per_lock.get(&(tid, uaddr)).unwrap_or(&0));
            let best = lock.entry(tid).or_insert((0, 0));
            if waited > best.0 {
                *best = (waited, uaddr);
            }
        }
        let out = tids
            .into_iter()
            .map(|tid| ThreadWait {
                tid: tid as i32,
                waited: a
                    .get(&tid)
                    .unwrap_or(&0)
                    .saturating_sub(*b.get(&tid).unwrap_or(&0)) as f64,
                observed,
                lock: lock.get(&tid).filter(|l| l.0 > 0).map(|l| l.1),
            })
            .collect();
        self.forget_except(&alive);
        Ok(out)
    }
}

/// Removes the entries of `map` whose key is `gone` (a thread that exited).
fn forget<K: aya::Pod, V: aya::Pod>(ebpf: &mut Ebpf, map: &str, gone: impl Fn(&K) -> bool) {
    let Some(Ok(mut m)) = ebpf.map_mut(map).map(HashMap::<_, K, V>::try_from) else {
        return;
    };
    let keys: Vec<K> = m.keys().flatten().filter(|k| gone(k)).collect();
    for k in keys {
        let _ = m.remove(&k);
    }
}

/// An error with its causes, and what to do about a permission error.
fn explain(e: &dyn std::error::Error) -> Unavailable {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        // aya repeats a cause in its own message: keep each once.
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(&format!(": {s_text}"));
        }
        source = s.source();
    }
    if text.contains("Operation not permitted") || text.contains("EPERM") {
        text.push_str(" (loading BPF needs CAP_BPF and CAP_PERFMON, or root)");
    }
    Unavailable(text)
}
