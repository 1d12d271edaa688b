//! Shuffling on a simulated machine: a discrete-event model of threads on sockets contending for
//! locks, regrouped every interval by the daemon's own decision code ([`decide`] and
//! [`Pinning`]) fed with the simulated lock-wait fractions.
//!
//! The model. Each thread repeats: work outside the lock, take its lock (FIFO: a waiter blocks
//! and is handed the lock in arrival order), work inside it, release. Inside, the thread first
//! pulls the protected data (`lines` cache lines, the lock word among them) from wherever the
//! previous holder left them: nothing on the same cpu, `line_local` each from a cpu of the same
//! socket, `line_remote` each from another socket, one after another. So a lock whose holders
//! alternate between sockets spends more of its critical path moving data, and every waiter
//! waits for it. Threads sharing a cpu take turns by time slices. Without shuffling threads stay
//! where the native scheduler put them (a seeded random spread, blind to locks); with it, every
//! interval the daemon's [`decide`] regroups them by lock-wait fraction and [`Pinning`] moves
//! those whose domain changed, each move costing `move_cost` of cache refill. Workloads change
//! which lock each thread uses every `phase`, as pipeline stages do, so placement must follow.

use super::locks::ThreadWait;
use super::{decide, decide_by_lock, Grouping, Pinning};
use oslab_core::stats::SplitMix64;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The simulated machine: sockets of cores, each socket one cache domain.
#[derive(Debug, Clone, Copy)]
pub struct SimulatedMachine {
    /// Sockets.
    pub sockets: usize,
    /// Cores per socket.
    pub cores: usize,
}

impl SimulatedMachine {
    /// The cpus of each socket: the daemon's domains.
    pub fn domains(&self) -> Vec<Vec<usize>> {
        (0..self.sockets)
            .map(|s| (s * self.cores..(s + 1) * self.cores).collect())
            .collect()
    }

    fn cpus(&self) -> usize {
        self.sockets * self.cores
    }

    fn socket(&self, cpu: usize) -> usize {
        cpu / self.cores
    }
}

/// What moving data and threads costs, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    /// One cache line from a core of the same socket.
    pub line_local: f64,
    /// One cache line from another socket.
    pub line_remote: f64,
    /// Cache lines a critical section pulls from the previous holder (the lock word included).
    pub lines: u32,
    /// Refilling a thread's cache after it moves to another socket.
    pub move_cost: f64,
    /// A blocked waiter tries the lock this much after the release that woke it (a futex
    /// wake-up across cpus); a running thread may take the lock meanwhile.
    pub wake: f64,
    /// Time slice of threads sharing a cpu.
    pub quantum: f64,
    /// The daemon's cpu time per watched thread per interval (it runs on cpu 0, ahead of
    /// whatever ran there: a lock holder it preempts holds up every waiter).
    pub monitor_cost: f64,
}

impl Default for Costs {
    /// Figures of a two-socket server of the 2020s: a line from another core of the socket
    /// ~80 ns, from the other socket ~200 ns (core-to-core latencies as `oslab c2c` and Intel
    /// MLC measure them on such machines); 32 lines (2 KiB) of protected data, walked by
    /// dependent loads so they arrive one after another; 50 µs to refill
    /// 1 MiB of private cache at ~20 GB/s; 3 µs to wake a blocked waiter (a futex wake-up
    /// across cpus on bare metal; `oslab run switch.thread.futex` measures it); a 3 ms time slice; 10 µs of daemon time per thread
    /// per interval (reading a thread's wait statistics and deciding).
    fn default() -> Costs {
        Costs {
            line_local: 80.0,
            line_remote: 200.0,
            lines: 32,
            move_cost: 50_000.0,
            wake: 3_000.0,
            quantum: 3e6,
            monitor_cost: 10_000.0,
        }
    }
}

/// A lock-bound program.
#[derive(Debug, Clone)]
pub struct LockProgram {
    /// Its name in tables.
    pub name: String,
    /// Threads.
    pub threads: usize,
    /// Locks; thread i starts on lock i mod locks.
    pub locks: usize,
    /// Mean work inside lock 0 per acquisition (ns); lock k's is `1 + spread * k` times longer,
    /// so the threads of different locks wait differently and sorting can tell them apart.
    pub critical: f64,
    /// How much longer each further lock's critical sections are.
    pub spread: f64,
    /// Mean work outside the lock per acquisition (ns).
    pub noncritical: f64,
    /// Acquisitions per thread.
    pub iterations: u64,
    /// Every this many ns the threads are dealt to the locks anew (None: never).
    pub phase: Option<f64>,
    /// Which lock each thread takes and each lock's own work outside it, as recorded from a
    /// live program (None: thread i on lock i mod locks, `noncritical` for all).
    pub recorded: Option<Assignment>,
}

/// Threads on locks as a recording found them.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// The lock of each thread.
    pub lock_of: Vec<usize>,
    /// Mean work outside the lock per acquisition, per lock (ns).
    pub outside: Vec<f64>,
}

impl LockProgram {
    /// The lock thread `i` starts on.
    fn first_lock(&self, i: usize) -> usize {
        match &self.recorded {
            Some(a) => a.lock_of.get(i).copied().unwrap_or(0),
            None => i % self.locks.max(1),
        }
    }

    /// Mean work outside the lock before an acquisition of `lock` (ns).
    fn outside(&self, lock: usize) -> f64 {
        match &self.recorded {
            Some(a) => a.outside.get(lock).copied().unwrap_or(self.noncritical),
            None => self.noncritical,
        }
    }
}

/// How the daemon runs in a simulation.
#[derive(Debug, Clone, Copy)]
pub struct DaemonSettings {
    /// Regroup (true) or only watch.
    pub shuffle: bool,
    /// Monitoring interval (ns).
    pub interval: f64,
    /// Lock-wait fraction above which it regroups.
    pub threshold: f64,
    /// How it groups threads.
    pub grouping: Grouping,
}

/// What one simulated run gave.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedRun {
    /// Execution time: the last thread's end (ns).
    pub time: f64,
    /// Time threads spent waiting for locks over their lifetimes.
    pub lock_fraction: f64,
    /// Intervals in which a thread moved.
    pub shuffles: u32,
    /// Threads moved, all intervals together.
    pub moves: u32,
    /// Intervals monitored.
    pub intervals: u32,
    /// Share of lock hand-overs that crossed sockets.
    pub remote_share: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Segment {
    Outside(f64),
    Inside(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Runnable(Segment),
    Waiting,
    Finished,
}

struct Thread {
    cpu: usize,
    /// Pinned by the daemon; otherwise the native scheduler places it at each wake-up.
    pinned: bool,
    lock: usize,
    /// The lock it takes next time (a new phase deals new ones).
    next_lock: usize,
    state: State,
    done: u64,
    waited: f64,
    interval_waited: f64,
    wait_since: f64,
    penalty: f64,
    end: f64,
}

#[derive(Default)]
struct Cpu {
    running: Option<usize>,
    since: f64,
    epoch: u64,
    queue: VecDeque<usize>,
}

#[derive(Default)]
struct Lock {
    held: bool,
    waiters: VecDeque<usize>,
    /// A waiter is being woken (one at a time, as a futex mutex wakes them).
    waking: bool,
    last_cpu: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    SegmentEnd {
        cpu: usize,
        epoch: u64,
    },
    Slice {
        cpu: usize,
        epoch: u64,
    },
    /// A woken waiter tries its lock.
    Woken {
        thread: usize,
    },
    Tick,
    Phase,
}

impl Event {
    /// Packed in one word (kind 3 bits, cpu or thread 21, epoch 40): the event queue stays
    /// small and fast.
    fn pack(self) -> u64 {
        let (kind, who, epoch) = match self {
            Event::SegmentEnd { cpu, epoch } => (0, cpu, epoch),
            Event::Slice { cpu, epoch } => (1, cpu, epoch),
            Event::Woken { thread } => (2, thread, 0),
            Event::Tick => (3, 0, 0),
            Event::Phase => (4, 0, 0),
        };
        (kind << 61) | ((who as u64 & 0x1F_FFFF) << 40) | (epoch & 0xFF_FFFF_FFFF)
    }

    fn unpack(w: u64) -> Event {
        let who = ((w >> 40) & 0x1F_FFFF) as usize;
        let epoch = w & 0xFF_FFFF_FFFF;
        match w >> 61 {
            0 => Event::SegmentEnd { cpu: who, epoch },
            1 => Event::Slice { cpu: who, epoch },
            2 => Event::Woken { thread: who },
            3 => Event::Tick,
            _ => Event::Phase,
        }
    }
}

struct Sim<'a> {
    m: SimulatedMachine,
    c: Costs,
    w: &'a LockProgram,
    d: DaemonSettings,
    rng: SplitMix64,
    now: f64,
    events: BinaryHeap<Reverse<(u64, u64)>>,
    threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    locks: Vec<Lock>,
    pinning: Pinning,
    domains: Vec<Vec<usize>>,
    /// The daemon's index in `threads`.
    daemon: usize,
    interval_start: f64,
    out: SimulatedRun,
    handovers: (u64, u64),
    left: usize,
    /// Threads waiting in run queues, all cpus together (idle cpus look for one to take).
    queued: usize,
}

/// Simulates `w` on `m`; `seed` fixes the native placement, the jitter and the phases, so a run
/// with and one without shuffling given the same seed differ only by the daemon. None when
/// `stop` said so part way.
pub fn simulate(
    m: SimulatedMachine,
    c: Costs,
    w: &LockProgram,
    d: DaemonSettings,
    seed: u64,
    stop: &dyn Fn() -> bool,
) -> Option<SimulatedRun> {
    let mut rng = SplitMix64(seed);
    // The native scheduler spreads threads over the cpus, blind to their locks.
    let mut order: Vec<usize> = (0..m.cpus()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    // The workload's threads, then the daemon (idle between intervals).
    let threads = (0..=w.threads)
        .map(|i| Thread {
            cpu: order[i % order.len()],
            pinned: false,
            lock: w.first_lock(i),
            next_lock: w.first_lock(i),
            state: State::Finished,
            done: 0,
            waited: 0.0,
            interval_waited: 0.0,
            wait_since: 0.0,
            penalty: 0.0,
            end: 0.0,
        })
        .collect();
    let mut s = Sim {
        m,
        c,
        w,
        d,
        rng,
        now: 0.0,
        events: BinaryHeap::new(),
        threads,
        cpus: (0..m.cpus()).map(|_| Cpu::default()).collect(),
        locks: (0..w.locks.max(1)).map(|_| Lock::default()).collect(),
        pinning: Pinning::default(),
        domains: m.domains(),
        daemon: w.threads,
        interval_start: 0.0,
        out: SimulatedRun {
            time: 0.0,
            lock_fraction: 0.0,
            shuffles: 0,
            moves: 0,
            intervals: 0,
            remote_share: 0.0,
        },
        handovers: (0, 0),
        left: w.threads,
        queued: 0,
    };
    s.run(stop).then_some(s.out)
}

impl Sim<'_> {
    fn at(&mut self, t: f64, e: Event) {
        self.events
            .push(Reverse((t.max(self.now) as u64, e.pack())));
    }

    /// Uniform in [0.5, 1.5) x mean: enough jitter that threads do not march in step.
    fn jitter(&mut self, mean: f64) -> f64 {
        mean * (0.5 + (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// Runs to the end (true) or until `stop` (false).
    fn run(&mut self, stop: &dyn Fn() -> bool) -> bool {
        self.threads[self.daemon].cpu = 0;
        self.threads[self.daemon].pinned = true;
        for t in 0..self.daemon {
            let first = self.jitter(self.w.outside(self.threads[t].lock));
            self.threads[t].state = State::Runnable(Segment::Outside(first));
            self.enqueue(t);
        }
        if self.daemon == 0 {
            return true;
        }
        self.at(self.d.interval, Event::Tick);
        if let Some(p) = self.w.phase {
            self.at(p, Event::Phase);
        }
        let mut handled = 0u32;
        while self.left > 0 {
            handled = handled.wrapping_add(1);
            if handled.is_multiple_of(65_536) && stop() {
                return false;
            }
            let Some(Reverse((t, e))) = self.events.pop() else {
                break;
            };
            self.now = t as f64;
            match Event::unpack(e) {
                Event::SegmentEnd { cpu, epoch } if self.cpus[cpu].epoch == epoch => {
                    self.segment_end(cpu)
                }
                Event::Slice { cpu, epoch } if self.cpus[cpu].epoch == epoch => self.slice(cpu),
                Event::Woken { thread } => self.woken(thread),
                Event::Tick => self.tick(),
                Event::Phase => self.phase(),
                _ => {}
            }
        }
        let workers = &self.threads[..self.daemon];
        let lived: f64 = workers.iter().map(|t| t.end).sum();
        let waited: f64 = workers.iter().map(|t| t.waited).sum();
        self.out.time = workers.iter().map(|t| t.end).fold(0.0, f64::max);
        self.out.lock_fraction = if lived > 0.0 { waited / lived } else { 0.0 };
        let (remote, all) = self.handovers;
        self.out.remote_share = if all > 0 {
            remote as f64 / all as f64
        } else {
            0.0
        };
        true
    }

    fn idle(&self, cpu: usize) -> bool {
        self.cpus[cpu].running.is_none() && self.cpus[cpu].queue.is_empty()
    }

    /// Puts thread `t` on `cpu`; landing on another socket costs it a cache refill.
    fn land(&mut self, t: usize, cpu: usize) {
        let th = &mut self.threads[t];
        if self.m.socket(th.cpu) != self.m.socket(cpu) {
            th.penalty += self.c.move_cost;
        }
        th.cpu = cpu;
    }

    /// Where the native scheduler wakes an unpinned thread: its last cpu if idle, else an idle
    /// cpu of its socket, else any idle cpu, else its last cpu's queue.
    fn wake_cpu(&self, t: usize) -> usize {
        let last = self.threads[t].cpu;
        let socket = self.m.socket(last) * self.m.cores..(self.m.socket(last) + 1) * self.m.cores;
        if self.idle(last) {
            return last;
        }
        socket
            .clone()
            .chain(0..self.cpus.len())
            .find(|&c| self.idle(c))
            .unwrap_or(last)
    }

    /// An idle cpu takes an unpinned thread waiting in another cpu's queue, its own socket's
    /// first (the native scheduler's idle balancing).
    fn steal(&mut self, cpu: usize) -> Option<usize> {
        if self.queued == 0 {
            return None;
        }
        let socket = self.m.socket(cpu) * self.m.cores..(self.m.socket(cpu) + 1) * self.m.cores;
        let (from, k) = socket.chain(0..self.cpus.len()).find_map(|c| {
            let k = self.cpus[c]
                .queue
                .iter()
                .position(|&q| !self.threads[q].pinned)?;
            Some((c, k))
        })?;
        let t = self.cpus[from].queue.remove(k)?;
        self.queued -= 1;
        self.land(t, cpu);
        Some(t)
    }

    /// Makes `t` runnable where it belongs: an unpinned thread where the native scheduler
    /// wakes it.
    fn enqueue(&mut self, t: usize) {
        self.wake(t);
        self.queue(t);
    }

    fn wake(&mut self, t: usize) {
        if !self.threads[t].pinned {
            let cpu = self.wake_cpu(t);
            self.land(t, cpu);
        }
    }

    fn queue(&mut self, t: usize) {
        let cpu = self.threads[t].cpu;
        self.cpus[cpu].queue.push_back(t);
        self.queued += 1;
        if self.cpus[cpu].running.is_none() {
            self.dispatch(cpu);
        } else if self.cpus[cpu].queue.len() == 1 {
            let e = self.cpus[cpu].epoch;
            self.at(self.now + self.c.quantum, Event::Slice { cpu, epoch: e });
        }
    }

    fn dispatch(&mut self, cpu: usize) {
        if self.cpus[cpu].running.is_some() {
            return;
        }
        let own = self.cpus[cpu].queue.pop_front();
        if own.is_some() {
            self.queued -= 1;
        }
        let Some(t) = own.or_else(|| self.steal(cpu)) else {
            return;
        };
        let c = &mut self.cpus[cpu];
        c.running = Some(t);
        c.since = self.now;
        c.epoch += 1;
        let epoch = c.epoch;
        let contended = !c.queue.is_empty();
        let th = &mut self.threads[t];
        if let State::Runnable(Segment::Outside(r) | Segment::Inside(r)) = &mut th.state {
            *r += std::mem::take(&mut th.penalty);
        }
        let left = match th.state {
            State::Runnable(Segment::Outside(r) | Segment::Inside(r)) => r,
            _ => 0.0,
        };
        self.at(self.now + left, Event::SegmentEnd { cpu, epoch });
        if contended {
            self.at(self.now + self.c.quantum, Event::Slice { cpu, epoch });
        }
    }

    /// Takes the running thread off `cpu`, keeping what is left of its segment.
    fn preempt(&mut self, cpu: usize) -> Option<usize> {
        let c = &mut self.cpus[cpu];
        let t = c.running.take()?;
        c.epoch += 1;
        let ran = self.now - c.since;
        if let State::Runnable(Segment::Outside(r) | Segment::Inside(r)) =
            &mut self.threads[t].state
        {
            *r = (*r - ran).max(0.0);
        }
        Some(t)
    }

    fn slice(&mut self, cpu: usize) {
        if self.cpus[cpu].queue.is_empty() {
            return;
        }
        if let Some(t) = self.preempt(cpu) {
            self.cpus[cpu].queue.push_back(t);
            self.queued += 1;
        }
        self.dispatch(cpu);
    }

    /// The data a new holder on `cpu` pulls from where the last holder left it.
    fn pull(&mut self, lock: usize, cpu: usize) -> f64 {
        let from = self.locks[lock].last_cpu;
        let lines = f64::from(self.c.lines);
        match from {
            Some(f) if f == cpu => 0.0,
            Some(f) if self.m.socket(f) == self.m.socket(cpu) => {
                self.handovers.1 += 1;
                lines * self.c.line_local
            }
            Some(_) => {
                self.handovers = (self.handovers.0 + 1, self.handovers.1 + 1);
                lines * self.c.line_remote
            }
            None => lines * self.c.line_local,
        }
    }

    fn critical(&mut self, t: usize) -> Segment {
        let lock = self.threads[t].lock;
        let mean = self.w.critical * (1.0 + self.w.spread * lock as f64);
        let work = self.jitter(mean);
        Segment::Inside(work + self.pull(lock, self.threads[t].cpu))
    }

    fn segment_end(&mut self, cpu: usize) {
        let t = self.cpus[cpu].running.take().expect("a running thread");
        self.cpus[cpu].epoch += 1;
        if t == self.daemon {
            self.threads[t].state = State::Finished;
            self.dispatch(cpu);
            return;
        }
        match self.threads[t].state {
            State::Runnable(Segment::Outside(_)) => {
                let lock = self.threads[t].next_lock;
                self.threads[t].lock = lock;
                if self.locks[lock].held {
                    self.locks[lock].waiters.push_back(t);
                    let th = &mut self.threads[t];
                    th.state = State::Waiting;
                    th.wait_since = self.now;
                } else {
                    self.locks[lock].held = true;
                    let seg = self.critical(t);
                    self.threads[t].state = State::Runnable(seg);
                    self.cpus[cpu].queue.push_front(t);
                    self.queued += 1;
                }
            }
            State::Runnable(Segment::Inside(_)) => {
                // The releaser's next step is queued first, so a waiter woken by the release
                // does not take this cpu for idle.
                let th = &mut self.threads[t];
                th.done += 1;
                if th.done >= self.w.iterations {
                    th.state = State::Finished;
                    th.end = self.now;
                    self.left -= 1;
                } else {
                    let seg =
                        Segment::Outside(self.jitter(self.w.outside(self.threads[t].next_lock)));
                    self.threads[t].state = State::Runnable(seg);
                    self.cpus[cpu].queue.push_front(t);
                    self.queued += 1;
                }
                self.release(t, cpu);
            }
            _ => {}
        }
        self.dispatch(cpu);
    }

    /// Frees the lock (a running thread may take it before the waiter woken now gets there).
    fn release(&mut self, t: usize, cpu: usize) {
        let lock = self.threads[t].lock;
        let l = &mut self.locks[lock];
        debug_assert!(l.held);
        l.held = false;
        l.last_cpu = Some(cpu);
        if !l.waking {
            if let Some(next) = l.waiters.pop_front() {
                l.waking = true;
                self.at(self.now + self.c.wake, Event::Woken { thread: next });
            }
        }
    }

    /// A woken waiter takes its lock if still free, or waits again at the head of the line.
    fn woken(&mut self, t: usize) {
        let lock = self.threads[t].lock;
        let l = &mut self.locks[lock];
        l.waking = false;
        if l.held {
            l.waiters.push_front(t);
            return;
        }
        l.held = true;
        let th = &mut self.threads[t];
        let w = self.now - th.wait_since;
        th.waited += w;
        th.interval_waited += w;
        self.wake(t);
        let seg = self.critical(t);
        self.threads[t].state = State::Runnable(seg);
        self.queue(t);
    }

    fn tick(&mut self) {
        self.out.intervals += 1;
        let since = self.interval_start;
        self.interval_start = self.now;
        let mut waits = Vec::new();
        for (i, th) in self.threads[..self.daemon].iter_mut().enumerate() {
            if th.state == State::Finished {
                continue;
            }
            let mut waited = std::mem::take(&mut th.interval_waited);
            if th.state == State::Waiting {
                waited += self.now - th.wait_since.max(since);
            }
            waits.push(ThreadWait {
                tid: i as i32,
                waited,
                observed: self.now - since,
                lock: Some(th.lock as u64),
            });
        }
        // A wait under way is counted up to now in this interval, the rest in the next.
        for th in &mut self.threads {
            if th.state == State::Waiting {
                th.interval_waited -= self.now - th.wait_since.max(since);
            }
        }
        self.run_daemon(self.c.monitor_cost * waits.len() as f64);
        if self.d.shuffle {
            let sizes: Vec<usize> = self.domains.iter().map(Vec::len).collect();
            let decided = match self.d.grouping {
                Grouping::Lock => decide_by_lock(&waits, &sizes, self.d.threshold),
                Grouping::LockTime => decide(&waits, self.domains.len(), self.d.threshold),
            };
            if let Some(dec) = decided {
                let moves = self.pinning.plan(&dec, &self.domains);
                for mv in &moves {
                    self.pin(mv.tid as usize, mv.cpu);
                    self.pinning.moved(*mv);
                }
                self.out.moves += moves.len() as u32;
                self.out.shuffles += u32::from(!moves.is_empty());
            }
        }
        if self.left > 0 {
            self.at(self.now + self.d.interval, Event::Tick);
        }
    }

    /// The daemon takes cpu 0 for `cost` ns, ahead of what ran there.
    fn run_daemon(&mut self, cost: f64) {
        let d = self.daemon;
        if cost <= 0.0 || self.threads[d].state != State::Finished {
            return;
        }
        if let Some(t) = self.preempt(0) {
            self.cpus[0].queue.push_front(t);
            self.queued += 1;
        }
        self.threads[d].state = State::Runnable(Segment::Outside(cost));
        self.cpus[0].queue.push_front(d);
        self.queued += 1;
        self.dispatch(0);
    }

    /// Pins thread `t` to `cpu`, taking it off the cpu it ran or waited on.
    fn pin(&mut self, t: usize, cpu: usize) {
        self.threads[t].pinned = true;
        let old = self.threads[t].cpu;
        if old == cpu {
            return;
        }
        let was_running = self.cpus[old].running == Some(t);
        let queued = self.cpus[old].queue.iter().position(|&q| q == t);
        if was_running {
            self.preempt(old);
        } else if let Some(k) = queued {
            self.cpus[old].queue.remove(k);
            self.queued -= 1;
        }
        self.land(t, cpu);
        if was_running || queued.is_some() {
            self.enqueue(t);
        }
        if was_running {
            self.dispatch(old);
        }
    }

    fn phase(&mut self) {
        let k = self.locks.len();
        let mut deal: Vec<usize> = (0..self.daemon).map(|i| i % k).collect();
        for i in (1..deal.len()).rev() {
            deal.swap(i, self.rng.below(i + 1));
        }
        // Each thread takes its new lock at its next acquisition.
        for (th, lock) in self.threads.iter_mut().zip(deal) {
            th.next_lock = lock;
        }
        if let Some(p) = self.w.phase {
            if self.left > 0 {
                self.at(self.now + p, Event::Phase);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never() -> bool {
        false
    }

    fn shape(threads: usize, locks: usize, inside: f64, outside: f64, n: u64) -> LockProgram {
        LockProgram {
            name: "test".into(),
            threads,
            locks,
            critical: inside,
            spread: 0.0,
            noncritical: outside,
            iterations: n,
            phase: None,
            recorded: None,
        }
    }

    /// No data to pull, no daemon cost: only the work.
    fn bare() -> Costs {
        Costs {
            lines: 0,
            monitor_cost: 0.0,
            ..Costs::default()
        }
    }

    fn watch(shuffle: bool) -> DaemonSettings {
        DaemonSettings {
            shuffle,
            interval: 2e8,
            threshold: 0.1,
            grouping: Grouping::LockTime,
        }
    }

    fn run(
        m: SimulatedMachine,
        c: Costs,
        w: &LockProgram,
        shuffle: bool,
        seed: u64,
    ) -> SimulatedRun {
        simulate(m, c, w, watch(shuffle), seed, &never).unwrap()
    }

    const ONE: SimulatedMachine = SimulatedMachine {
        sockets: 1,
        cores: 1,
    };

    #[test]
    fn one_thread_takes_its_work_and_never_waits() {
        let o = run(
            ONE,
            bare(),
            &shape(1, 1, 2_000.0, 3_000.0, 10_000),
            false,
            1,
        );
        assert!((o.time / 50e6 - 1.0).abs() < 0.02, "{o:?}");
        assert_eq!(o.lock_fraction, 0.0);
    }

    #[test]
    fn threads_sharing_a_cpu_take_turns() {
        let alone = run(ONE, bare(), &shape(1, 1, 2_000.0, 3_000.0, 5_000), false, 1);
        let four = run(ONE, bare(), &shape(4, 4, 2_000.0, 3_000.0, 5_000), false, 1);
        assert!(
            (four.time / alone.time / 4.0 - 1.0).abs() < 0.03,
            "{alone:?} {four:?}"
        );
    }

    #[test]
    fn a_saturated_lock_serialises_its_critical_sections() {
        let m = SimulatedMachine {
            sockets: 1,
            cores: 4,
        };
        let o = run(m, bare(), &shape(4, 1, 5_000.0, 500.0, 2_000), false, 1);
        // 8,000 critical sections of 5 µs one after another, at least.
        assert!(o.time >= 8_000.0 * 5_000.0 * 0.98, "{o:?}");
        assert!(o.lock_fraction > 0.5, "{o:?}");
    }

    #[test]
    fn a_seed_fixes_the_run() {
        let m = SimulatedMachine {
            sockets: 2,
            cores: 2,
        };
        let w = shape(4, 2, 5_000.0, 10_000.0, 2_000);
        assert_eq!(
            run(m, Costs::default(), &w, true, 3),
            run(m, Costs::default(), &w, true, 3)
        );
        assert_ne!(
            run(m, Costs::default(), &w, true, 3),
            run(m, Costs::default(), &w, true, 4)
        );
    }

    #[test]
    fn without_contention_the_daemon_never_acts() {
        let m = SimulatedMachine {
            sockets: 4,
            cores: 8,
        };
        let w = shape(32, 4, 5_000.0, 750_000.0, 300);
        let (a, b) = (
            run(m, Costs::default(), &w, false, 1),
            run(m, Costs::default(), &w, true, 1),
        );
        assert!(a.lock_fraction < 0.1, "{a:?}");
        assert_eq!((b.shuffles, b.moves), (0, 0));
        assert_eq!(a.time, b.time);
    }

    #[test]
    fn on_one_socket_every_hand_off_is_local_either_way() {
        let m = SimulatedMachine {
            sockets: 1,
            cores: 8,
        };
        let w = shape(8, 2, 5_000.0, 10_000.0, 3_000);
        let (a, b) = (
            run(m, Costs::default(), &w, false, 1),
            run(m, Costs::default(), &w, true, 1),
        );
        assert!(a.lock_fraction > 0.1, "{a:?}");
        assert_eq!((a.remote_share, b.remote_share), (0.0, 0.0));
        assert!((b.time / a.time - 1.0).abs() < 0.02, "{a:?} {b:?}");
    }

    #[test]
    fn on_four_sockets_regrouping_by_lock_time_keeps_hand_offs_local() {
        let m = SimulatedMachine {
            sockets: 4,
            cores: 8,
        };
        let w = LockProgram {
            spread: 0.5,
            ..shape(32, 4, 5_000.0, 30_000.0, 4_000)
        };
        for seed in 1..=3 {
            let a = run(m, Costs::default(), &w, false, seed);
            let b = run(m, Costs::default(), &w, true, seed);
            assert!(a.remote_share > 0.5, "{a:?}");
            assert!(b.remote_share < a.remote_share / 2.0, "{a:?} {b:?}");
            assert!(b.shuffles >= 1 && b.time < a.time, "{a:?} {b:?}");
        }
    }

    #[test]
    fn stopping_cuts_a_run_short() {
        let w = shape(2, 1, 5_000.0, 5_000.0, 1_000_000);
        assert!(simulate(ONE, bare(), &w, watch(true), 1, &|| true).is_none());
    }
}
