//! Context switch cost by ping-pong between two processes or two threads, over pipes, futexes or
//! eventfds.
//!
//! Same CPU: both tasks pinned to one CPU, so every hand-over is a real switch. One switch is
//! (round trip - 2 x transfer) / 2, where the transfer (post + wait on a channel that already holds
//! a token, in one task) is measured interleaved with the round trips, lmbench-style.
//! Different CPUs: the tasks are pinned apart; round trip / 2 is the wake-up latency (transfer
//! included, not subtracted). The one-shot method (the child reads the TSC first thing after
//! fork) is reported beside them, labelled as such.

use crate::child::{wait_pid, Child, SharedPage};
use crate::harness::Timing;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{Measurement, Status, Unit};
use oslab_core::{params, CpuSet};
use oslab_os::affinity::{set_affinity, SchedGuard};
use oslab_os::clock::Ticks;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The context-switch probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::SWITCH_PROCESS_PIPE,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| ping_pong(cx, me.id, Task::Process, Chan::Pipe),
    },
    Probe {
        entry: &catalog::SWITCH_PROCESS_FUTEX,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| ping_pong(cx, me.id, Task::Process, Chan::Futex),
    },
    Probe {
        entry: &catalog::SWITCH_PROCESS_EVENTFD,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| ping_pong(cx, me.id, Task::Process, Chan::Eventfd),
    },
    Probe {
        entry: &catalog::SWITCH_THREAD_PIPE,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| ping_pong(cx, me.id, Task::Thread, Chan::Pipe),
    },
    Probe {
        entry: &catalog::SWITCH_THREAD_FUTEX,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| ping_pong(cx, me.id, Task::Thread, Chan::Futex),
    },
    Probe {
        entry: &catalog::SWITCH_THREAD_EVENTFD,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| ping_pong(cx, me.id, Task::Thread, Chan::Eventfd),
    },
    Probe {
        entry: &catalog::SWITCH_ONESHOT,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: one_shot,
    },
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Task {
    Process,
    Thread,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Chan {
    Pipe,
    Futex,
    Eventfd,
}

/// One direction of a channel: `post` hands a token over, `wait` blocks until one arrives.
struct Link {
    kind: Chan,
    rfd: Cell<i32>,
    wfd: Cell<i32>,
    word: *const AtomicU32,
}

// SAFETY: the word lives in a SharedPage that outlives every user of the link; fds are plain ints.
unsafe impl Send for Link {}
// SAFETY: as above.
unsafe impl Sync for Link {}

fn futex(word: *const AtomicU32, op: i32, val: u32) -> i64 {
    // SAFETY: word points at a live, aligned u32 in shared memory; no timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            op,
            val,
            std::ptr::null::<libc::timespec>(),
            0,
            0,
        ) as i64
    }
}

impl Link {
    fn new(kind: Chan, word: &AtomicU32) -> Result<Link, ProbeError> {
        let (rfd, wfd) = match kind {
            Chan::Pipe => {
                let mut fds = [0; 2];
                // SAFETY: fds is a valid out-array of two ints.
                if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                    return Err(ProbeError::os("pipe2"));
                }
                (fds[0], fds[1])
            }
            Chan::Eventfd => {
                // SAFETY: plain syscall.
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if fd < 0 {
                    return Err(ProbeError::os("eventfd"));
                }
                (fd, fd)
            }
            Chan::Futex => (-1, -1),
        };
        word.store(0, Ordering::SeqCst);
        Ok(Link {
            kind,
            rfd: Cell::new(rfd),
            wfd: Cell::new(wfd),
            word,
        })
    }

    #[inline(always)]
    fn post(&self) -> bool {
        match self.kind {
            // SAFETY (all arms): valid fds and buffers of the given sizes.
            Chan::Pipe => unsafe {
                libc::write(self.wfd.get(), b"x".as_ptr() as *const libc::c_void, 1) == 1
            },
            Chan::Eventfd => {
                let one = 1u64;
                unsafe {
                    libc::write(self.wfd.get(), &one as *const u64 as *const libc::c_void, 8) == 8
                }
            }
            Chan::Futex => {
                // SAFETY: word is live (see Send impl).
                unsafe { &*self.word }.store(1, Ordering::Release);
                futex(self.word, libc::FUTEX_WAKE, 1) >= 0
            }
        }
    }

    #[inline(always)]
    fn wait(&self) -> bool {
        match self.kind {
            Chan::Pipe => {
                let mut b = 0u8;
                // SAFETY: one writable byte.
                unsafe {
                    libc::read(self.rfd.get(), &mut b as *mut u8 as *mut libc::c_void, 1) == 1
                }
            }
            Chan::Eventfd => {
                let mut v = 0u64;
                // SAFETY: eight writable bytes.
                unsafe {
                    libc::read(self.rfd.get(), &mut v as *mut u64 as *mut libc::c_void, 8) == 8
                }
            }
            Chan::Futex => {
                // SAFETY: word is live.
                let w = unsafe { &*self.word };
                loop {
                    if w.swap(0, Ordering::Acquire) == 1 {
                        return true;
                    }
                    let r = futex(self.word, libc::FUTEX_WAIT, 0);
                    if r < 0 {
                        let e = std::io::Error::last_os_error().raw_os_error();
                        if e != Some(libc::EAGAIN) && e != Some(libc::EINTR) {
                            return false;
                        }
                    }
                }
            }
        }
    }

    /// The channel work of one hand-over without blocking: post, then a wait that finds the token
    /// (for futexes the wait syscall is made anyway, returning EAGAIN, as a blocked waiter pays it).
    #[inline(always)]
    fn transfer(&self) {
        self.post();
        if self.kind == Chan::Futex {
            // SAFETY: word is live.
            let w = unsafe { &*self.word };
            futex(self.word, libc::FUTEX_WAIT, 0);
            w.store(0, Ordering::Relaxed);
        } else {
            self.wait();
        }
    }

    /// Closes the end a task does not use (the read end, in the task that only posts here).
    fn close_read(&self) {
        if self.kind == Chan::Pipe {
            close_fd(&self.rfd);
        }
    }

    fn close_write(&self) {
        if self.kind == Chan::Pipe {
            close_fd(&self.wfd);
        }
    }
}

/// Closes an fd once; the cell then holds -1 so nothing closes a recycled number later.
fn close_fd(fd: &Cell<i32>) {
    let v = fd.replace(-1);
    if v >= 0 {
        // SAFETY: an fd we own and have not closed.
        unsafe { libc::close(v) };
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.rfd.get() == self.wfd.get() {
            self.wfd.set(-1); // eventfd: one fd for both ends
        }
        close_fd(&self.rfd);
        close_fd(&self.wfd);
    }
}

/// The peer side: wait for a token, pass one back, until told to quit or the channel breaks.
fn echo(ab: &Link, ba: &Link, quit: &AtomicU32) {
    while ab.wait() && quit.load(Ordering::Acquire) == 0 {
        if !ba.post() {
            break;
        }
    }
}

/// A running peer and the links to it.
struct Peer {
    ab: Link,
    ba: Link,
    page: SharedPage,
    child: Option<Child>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peer {
    fn start(task: Task, chan: Chan, cpu: usize) -> Result<Peer, ProbeError> {
        let page = SharedPage::new()?;
        let ab = Link::new(chan, page.word(0))?;
        let ba = Link::new(chan, page.word(1))?;
        let mut peer = Peer {
            ab,
            ba,
            page,
            child: None,
            thread: None,
        };
        match task {
            Task::Process => {
                let (ab, ba, quit) = (&peer.ab, &peer.ba, peer.page.word(2));
                let child = Child::fork(|| {
                    // SAFETY: async-signal-safe. Ctrl-C is the parent's to handle; we die with it.
                    unsafe {
                        libc::signal(libc::SIGINT, libc::SIG_IGN);
                        libc::signal(libc::SIGTERM, libc::SIG_IGN);
                    }
                    if set_affinity(0, &CpuSet::single(cpu)).is_ok() {
                        ab.close_write();
                        ba.close_read();
                        echo(ab, ba, quit);
                    }
                })?;
                peer.ab.close_read();
                peer.ba.close_write();
                peer.child = Some(child);
            }
            Task::Thread => {
                let ab = peer.ab.clone_handle();
                let ba = peer.ba.clone_handle();
                let quit = peer.page.word(2) as *const AtomicU32 as usize;
                let handle = std::thread::Builder::new()
                    .name("oslab-peer".into())
                    .spawn(move || {
                        // SAFETY: the page outlives the thread (joined in Drop before unmapping).
                        let quit = unsafe { &*(quit as *const AtomicU32) };
                        if set_affinity(0, &CpuSet::single(cpu)).is_ok() {
                            echo(&ab, &ba, quit);
                        }
                        std::mem::forget(ab);
                        std::mem::forget(ba);
                    })
                    .map_err(|e| ProbeError::Failed(format!("spawning peer thread: {e}")))?;
                peer.thread = Some(handle);
            }
        }
        // One round trip proves the peer is up and pinned.
        if !(peer.ab.post() && peer.ba.wait()) {
            return Err(ProbeError::Failed("peer did not answer".into()));
        }
        Ok(peer)
    }

    fn round_trips(&self, n: u64) {
        for _ in 0..n {
            self.ab.post();
            self.ba.wait();
        }
    }
}

impl Link {
    /// The same fds and word without ownership (the owner closes them).
    fn clone_handle(&self) -> Link {
        Link {
            kind: self.kind,
            rfd: self.rfd.clone(),
            wfd: self.wfd.clone(),
            word: self.word,
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.page.word(2).store(1, Ordering::Release);
        self.ab.post();
        self.ab.close_write();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The child (if any) exits on quit or EOF; Child's own Drop kills it if it did not.
        if let Some(c) = self.child.take() {
            let _ = c.wait();
        }
    }
}

/// Puts the measuring thread (and so every peer it creates) in the normal class for the probe.
fn normal_class() -> Result<SchedGuard, ProbeError> {
    SchedGuard::normal().map_err(|e| ProbeError::Failed(e.to_string()))
}

fn ping_pong(
    cx: &Context,
    id: &str,
    task: Task,
    chan: Chan,
) -> Result<Vec<Measurement>, ProbeError> {
    let _class = normal_class()?;
    let mut out = Vec::new();
    // Same CPU: round trips interleaved with single-task transfers.
    {
        let peer = Peer::start(task, chan, cx.cpu)?;
        let page = SharedPage::new()?;
        let solo = Link::new(chan, page.word(0))?;
        let t = cx
            .harness
            .interleaved(&mut [&mut |n| peer.round_trips(n), &mut |n| {
                for _ in 0..n {
                    solo.transfer();
                }
            }])?;
        let (rtt, transfer) = (&t[0], &t[1]);
        let xfer = transfer.median().unwrap_or(0.0);
        let mut switch: Timing = rtt.map(|r| (r - 2.0 * xfer) / 2.0);
        switch.overhead_ns = rtt.overhead_ns / 2.0 + xfer;
        switch.note_before(format!(
            "(round trip - 2 x transfer) / 2; round trip median {:.0} ns, transfer {:.0} ns",
            rtt.median().unwrap_or(f64::NAN),
            xfer
        ));
        let p = || params! {"placement" => "same-cpu", "cpus" => cx.cpu.to_string(), "sched" => "other"};
        out.push(cx.measurement(id, p(), "switch", &switch));
        out.push(cx.measurement(id, p(), "transfer", transfer));
    }
    // Different CPUs.
    let cross = match cx.peer_cpu {
        None => Measurement::not_taken(
            id,
            params! {"placement" => "cross-cpu"},
            "wakeup",
            Unit::Ns,
            Status::Skipped(cx.unmet(crate::probe::Need::PeerCpu).unwrap_or_default()),
        ),
        Some(peer_cpu) => {
            let peer = Peer::start(task, chan, peer_cpu)?;
            let rtt = cx.harness.batched(&mut |n| peer.round_trips(n))?;
            let mut wake = rtt.map(|r| r / 2.0);
            wake.overhead_ns = rtt.overhead_ns / 2.0;
            wake.note_before("round trip / 2 (transfer included)");
            cx.measurement(
                id,
                params! {"placement" => "cross-cpu", "cpus" => format!("{},{}", cx.cpu, peer_cpu), "sched" => "other"},
                "wakeup",
                &wake,
            )
        }
    };
    out.push(cross);
    Ok(out)
}

/// Where a new thread writes the time it first ran, read on the creator's clock: both ends of
/// an interval come from one clock (a raw TSC stamp against a nanosecond one read 313 s).
struct Stamp<'a> {
    slot: &'a AtomicU64,
    clock: &'a oslab_core::Clock,
}

extern "C" fn stamp_thread(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: arg points at the Stamp the creator keeps alive until join.
    let stamp = unsafe { &*(arg as *const Stamp) };
    stamp.slot.store(stamp.clock.start(), Ordering::SeqCst);
    std::ptr::null_mut()
}

/// The one-shot method: after fork (or pthread_create) returns, the parent reads the clock and
/// blocks in wait (join); the child's first act is reading the same clock. Samples where the
/// child ran first (negative interval) are dropped and counted.
fn one_shot(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let _class = normal_class()?;
    let page = SharedPage::new()?;
    let slot = page.word64(0);
    let [process] = cx.harness.each::<1>(&mut |clock, out| {
        slot.store(0, Ordering::SeqCst);
        // SAFETY: the child only reads the counter, stores to shared memory and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            slot.store(clock.start(), Ordering::SeqCst);
            // SAFETY: async-signal-safe.
            unsafe { libc::_exit(0) };
        }
        let t0 = clock.start();
        if pid < 0 {
            return Err(ProbeError::os("fork"));
        }
        wait_pid(pid)?;
        let t1 = slot.load(Ordering::SeqCst);
        *out = [t1.wrapping_sub(t0)];
        Ok(t1 > t0)
    })?;
    let thread_slot = AtomicU64::new(0);
    let [thread] = cx.harness.each::<1>(&mut |clock, out| {
        thread_slot.store(0, Ordering::SeqCst);
        // SAFETY: pthread_t is plain data.
        let mut tid: libc::pthread_t = unsafe { std::mem::zeroed() };
        let stamp = Stamp {
            slot: &thread_slot,
            clock,
        };
        let arg = &stamp as *const Stamp as *mut libc::c_void;
        // SAFETY: the stamp outlives the thread (joined below).
        let rc = unsafe { libc::pthread_create(&mut tid, std::ptr::null(), stamp_thread, arg) };
        let t0 = clock.start();
        if rc != 0 {
            return Err(ProbeError::Failed(format!(
                "pthread_create: {}",
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        // SAFETY: joinable thread we created.
        unsafe { libc::pthread_join(tid, std::ptr::null_mut()) };
        let t1 = thread_slot.load(Ordering::SeqCst);
        *out = [t1.wrapping_sub(t0)];
        Ok(t1 > t0)
    })?;
    let label =
        "one-shot method: includes the wait/join entry and the child's return from fork/clone; a sample where the child ran first is invalid";
    let mut out = Vec::new();
    for (kind, t) in [("process", process), ("thread", thread)] {
        let mut m = cx.measurement(
            me.id,
            params! {"task" => kind, "placement" => "same-cpu", "sched" => "other"},
            "switch",
            &t,
        );
        m.note_before(label);
        out.push(m);
    }
    Ok(out)
}
