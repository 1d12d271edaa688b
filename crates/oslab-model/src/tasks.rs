//! Process and thread creation, context switches and migrations, from the kernel's work counted
//! in cycles: what copy_process, fork's copy of the parent's map, exit and the scheduler do (spec
//! models, the parent's map read from /proc while measuring); exec and the channels' round trips
//! composed from the run's simpler measurements (a consistency check).

use crate::answer::NoModel;
use crate::answer::Source;
use crate::answer::{Figure, Model, Outcome};
use crate::cpu::{null_syscall, VM_EXIT_CYCLES, VM_EXIT_SOURCE};
use crate::hierarchy::{dram_latency, level_latency, level_read_rate};
use crate::run::{measured, number, param, Run};
use crate::spec::Spec;
use oslab_core::catalog::{id, metric, SWITCH_PAIRS};
use oslab_core::model::{Measurement, PARENT_COPIED, PARENT_VMAS};

/// A step of the work: its name, its cycles, what it does (the estimate's source) and whether
/// the kernel does it (a mitigation paid at each kernel return adds to it).
struct Step {
    name: &'static str,
    cycles: f64,
    what: &'static str,
    kernel: bool,
}

/// A step of the kernel's.
const fn step(name: &'static str, cycles: f64, what: &'static str) -> Step {
    Step {
        name,
        cycles,
        what,
        kernel: true,
    }
}

/// A step of a library's, in user space.
const fn user_step(name: &'static str, cycles: f64, what: &'static str) -> Step {
    Step {
        kernel: false,
        ..step(name, cycles, what)
    }
}

const TASK: Step = step("task", 7000.0, "copy_process for a task that shares everything with its creator: the task_struct copied with its FPU state, a kernel stack from the per-cpu cache, credentials, pid, cgroup, scheduler and perf setup, wake_up_new_task");
const FILES_SIGNALS: Step = step("files signals", 5000.0, "what a new process does not share: the file table duplicated (a reference per open file), the signal handlers and the signal struct");
const MM: Step = step("mm", 8000.0, "a new address space: the mm_struct, a page directory with the kernel's half copied, per-cpu counters and the maple tree");
const VMA_FORK: Step = step("vma fork", 2500.0, "each mapping fork duplicates: vm_area_dup (slab and memory-cgroup charge), anon_vma_fork or the file's i_mmap insertion, the maple-tree store, the child's page-table pages");
const PAGE_FORK: Step = step("page fork", 60.0, "each page in a mapping with anonymous memory: its entry copied and write-protected, its reference and map counts raised");
const COW: Step = step(
    "cow",
    1000.0,
    "the child's first write to its stack after fork: a fault, a page allocated and copied",
);
const EXIT: Step = step("exit", 6000.0, "do_exit of a task: signals, file and fs references dropped, exit_notify, cgroup and perf exit, the task freed");
const MM_EXIT: Step = step(
    "mm exit",
    3000.0,
    "an address space torn down: the page directory and the mm freed",
);
const VMA_EXIT: Step = step(
    "vma exit",
    1500.0,
    "each mapping unmapped at exit: page tables freed, anon_vma or i_mmap unlinked, the VMA freed",
);
const PAGE_EXIT: Step = step(
    "page exit",
    60.0,
    "each copied page zapped at exit: the entry cleared, the two counts dropped",
);
const REAP: Step = step(
    "reap",
    3000.0,
    "wait4 reaping a zombie: release_task, the pid freed",
);
const WAKE: Step = step(
    "wake",
    1500.0,
    "try_to_wake_up of a sleeping task: its runqueue locked, the task enqueued, preemption checked",
);
const PTHREAD: Step = user_step("pthread", 2000.0, "glibc's pthread_create around clone3: a stack from its cache, the thread descriptor and TLS set up");
const THREAD_RUN: Step = user_step(
    "thread run",
    1000.0,
    "the new thread's start and exit wrappers in glibc (TLS destructors, the descriptor released)",
);
const STD_SPAWN: Step = user_step("std spawn", 1000.0, "std::thread::spawn around pthread_create: the shared result packet, the thread handle and the boxed closure allocated");
const STD_ALTSTACK: Step = step("std altstack", 8000.0, "std's new thread installs a guard page and alternate signal stack (mmap, mprotect, sigaltstack) and removes them at its exit (sigaltstack, munmap)");
const THREAD_SWITCH: Step = step("thread switch", 1500.0, "the scheduler's share of a switch between two threads: dequeue, pick, enqueue, switch_to, the FPU/vector state saved and restored");
const ADDRESS_SPACE: Step = step(
    "address space",
    200.0,
    "a process switch's address-space change: a CR3 write that keeps the TLB (PCID/ASID)",
);
const VFS: Step = step(
    "vfs",
    crate::cpu::VFS_CYCLES,
    "fd lookup, access checks and notification hooks of read(2)/write(2)",
);
const PIPE: Step = step("pipe", 800.0, "one pipe transfer: its mutex taken twice, a byte copied into and out of its buffer (SMAP), the readers and writers checked, the times updated");
const EVENTFD: Step = step("eventfd", 500.0, "one eventfd transfer: the counter's lock taken twice, 8 bytes copied in and out (SMAP), the waiters checked");
const FUTEX: Step = step("futex", 750.0, "a wake with no waiter and a wait that finds the value changed: two shared-futex keys (a page-table lookup and the page's mapping), the hash bucket locked, the value read from user space");
const IPI: Step = step(
    "ipi",
    1000.0,
    "an inter-processor interrupt sent and taken on the other cpu",
);
/// Exit latency of HLT (C1) where no cpuidle driver says otherwise, µs.
const HLT_EXIT_US: f64 = 1.0;
/// Under a hypervisor, an idle vcpu halted to the host: the host wakes its thread through its
/// scheduler, µs ("a trip through the scheduler, normally on the order of a few micro-seconds":
/// the kernel's KVM halt-polling documentation).
const HOST_WAKE_US: f64 = 3.0;
/// ... and the host core leaves its own idle state, which the guest cannot see, µs.
const HOST_IDLE_EXIT_US: f64 = 30.0;

fn plain(p: &serde_json::Map<String, serde_json::Value>) -> bool {
    !p.contains_key("touched_mib") && !p.contains_key("fit")
}

/// A cost summed from the kernel's work: terms in cycles at the core clock, and cache lines
/// from memory in ns; each term an input with its source.
struct Work {
    model: Model,
    cycles: f64,
    /// Of `cycles`, the kernel's steps' (entries count their own returns).
    kernel_cycles: f64,
    ns: f64,
    /// The formula's terms in cycles, and those in time.
    cycle_terms: Vec<String>,
    time_terms: Vec<String>,
}

impl Work {
    fn new(name: &'static str) -> Work {
        Work {
            model: Model::spec(name, 0.0, ""),
            cycles: 0.0,
            kernel_cycles: 0.0,
            ns: 0.0,
            cycle_terms: Vec::new(),
            time_terms: Vec::new(),
        }
    }

    /// A kernel entry and exit (the null system call with the active mitigations).
    fn entry(mut self, spec: &Spec, count: f64, what: &str) -> Work {
        let (entry, cycles) = null_syscall(spec, Model::spec("entry", 0.0, ""));
        self.model.merge_inputs(entry);
        self.term(what, count, cycles, None)
    }

    /// `count` times a step.
    fn step(mut self, count: f64, s: &Step) -> Work {
        if s.kernel {
            self.kernel_cycles += count * s.cycles;
        }
        self.term(s.name, count, s.cycles, Some(s.what))
    }

    /// `count` x `each` cycles.
    fn cycles(self, name: &str, count: f64, each: f64, source: &str) -> Work {
        self.term(name, count, each, Some(source))
    }

    fn term(mut self, name: &str, count: f64, each: f64, source: Option<&str>) -> Work {
        if let Some(source) = source {
            let key = format!("{}_cycles", name.replace([' ', '-'], "_"));
            if !self.model.has_input(&key) {
                self.model = self.model.input(&key, each, format!("estimate: {source}"));
            }
        }
        self.cycles += count * each;
        self.cycle_terms.push(if count == 1.0 {
            format!("{each:.0} {name}")
        } else {
            format!("{count:.0} x {each:.0} {name}")
        });
        self
    }

    /// `us` microseconds, an input with its source.
    fn micros(mut self, name: &str, us: f64, source: String) -> Work {
        self.model = self
            .model
            .input(&format!("{}_us", name.replace(' ', "_")), us, source);
        self.ns += us * 1e3;
        self.time_terms.push(format!("{name} {us} µs"));
        self
    }

    /// `lines` cache lines of page metadata from memory, one per page touched: the memory's
    /// latency over the misses the core keeps in flight (the pages are walked in order).
    fn page_lines(mut self, spec: &Spec, lines: f64) -> Result<Work, NoModel> {
        if lines == 0.0 {
            return Ok(self);
        }
        let u = spec.uarch()?;
        let lat = dram_latency(spec)?;
        let each = lat.value / u.fill_buffers as f64;
        if !self.model.has_input("dram_ns") {
            self.model = self.model.figure("dram_ns", &lat).input(
                "fill_buffers",
                u.fill_buffers,
                format!("table: {}", u.name),
            );
        }
        self.ns += lines * each;
        self.time_terms
            .push(format!("{lines:.0} page lines x {each:.1} ns"));
        Ok(self)
    }

    fn done(mut self, spec: &Spec) -> Outcome {
        let (model, returns) = spec.return_tax(self.model, self.kernel_cycles);
        self.model = model;
        if let Some((n, each)) = returns {
            self.cycles += n * each;
            self.cycle_terms
                .push(format!("{n:.0} x {each:.0} kernel returns"));
        }
        let mut model = spec.at_clock(self.model, self.cycles)?;
        model.formula = format!(
            "({}) cycles{}{}",
            self.cycle_terms.join(" + "),
            model.formula,
            self.time_terms
                .iter()
                .map(|t| format!(" + {t}"))
                .collect::<String>()
        );
        model.value += self.ns;
        Ok(model)
    }
}

/// The parent fork copies, from the measurement's context: its mappings and the pages whose
/// entries are copied.
struct ParentMap {
    vmas: f64,
    pages: f64,
}

impl ParentMap {
    fn of(m: &Measurement) -> Result<ParentMap, NoModel> {
        let get = |k: &str| m.context.get(k).and_then(serde_json::Value::as_f64);
        match (get(PARENT_VMAS), get(PARENT_COPIED)) {
            (Some(vmas), Some(bytes)) => Ok(ParentMap {
                vmas,
                pages: (bytes / 4096.0).round(),
            }),
            _ => Err("the parent's map was not recorded (a run from before oslab 0.1 recorded it, or /proc/self/smaps was unreadable)".into()),
        }
    }
}

/// fork until it returns in the parent: a kernel entry, a new task and process, each mapping
/// and each copied entry.
fn fork_work(spec: &Spec, name: &'static str, parent: &ParentMap) -> Result<Work, NoModel> {
    Work::new(name)
        .entry(spec, 1.0, "entry")
        .step(1.0, &TASK)
        .step(1.0, &FILES_SIGNALS)
        .step(1.0, &MM)
        .step(parent.vmas, &VMA_FORK)
        .step(parent.pages, &PAGE_FORK)
        .page_lines(spec, parent.pages)
}

/// After fork returned: the switch to the child, its first write, its exit and teardown of what
/// fork copied, the parent woken and the zombie reaped.
fn exit_and_reap(spec: &Spec, work: Work, parent: &ParentMap) -> Result<Work, NoModel> {
    work.step(2.0, &THREAD_SWITCH)
        .step(2.0, &ADDRESS_SPACE)
        .step(1.0, &COW)
        .step(1.0, &EXIT)
        .step(1.0, &MM_EXIT)
        .step(parent.vmas, &VMA_EXIT)
        .step(parent.pages, &PAGE_EXIT)
        .step(1.0, &WAKE)
        .entry(spec, 1.0, "wait entry")
        .step(1.0, &REAP)
        .page_lines(spec, parent.pages)
}

/// A thread created by pthread_create until it returns.
fn pthread_work(spec: &Spec, name: &'static str) -> Work {
    Work::new(name)
        .entry(spec, 1.0, "entry")
        .step(1.0, &PTHREAD)
        .step(1.0, &TASK)
}

/// After pthread_create returned: the thread runs and exits, its joiner is woken.
fn thread_exit_and_join(spec: &Spec, work: Work) -> Work {
    work.step(2.0, &THREAD_SWITCH)
        .step(1.0, &THREAD_RUN)
        .step(1.0, &EXIT)
        .entry(spec, 2.0, "futex entry")
        .step(1.0, &WAKE)
}

pub(crate) fn creation(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let rt = |probe: &str| measured(run, m, probe, "round_trip", plain);
    match (m.probe.as_str(), m.metric.as_str()) {
        (id::TASK_FORK, metric::COST_PER_MIB) => {
            let work = Work::new("page-table copy and teardown")
                .step(256.0, &PAGE_FORK)
                .step(256.0, &PAGE_EXIT)
                .page_lines(spec, 2.0 * 256.0)?;
            work.done(spec)
        }
        (id::TASK_FORK, metric::CREATE) => fork_work(spec, "fork", &ParentMap::of(m)?)?.done(spec),
        (id::TASK_FORK, metric::ROUND_TRIP) => {
            let parent = ParentMap::of(m)?;
            exit_and_reap(
                spec,
                fork_work(spec, "fork, exit and wait", &parent)?,
                &parent,
            )?
            .done(spec)
        }
        (id::TASK_FORK, metric::FIXED_COST) => {
            // The fitted line's intercept: a round trip from the sweep's parent before it
            // touched anything (the minimal parent's map, and the sweep's buffer mapping).
            let minimal = run
                .all(id::TASK_FORK, metric::ROUND_TRIP, plain)
                .next()
                .ok_or(
                    "needs task.fork round_trip from the minimal parent (oslab run task.fork)",
                )?;
            let parent = ParentMap::of(minimal)?;
            let parent = ParentMap {
                vmas: parent.vmas + 1.0,
                ..parent
            };
            exit_and_reap(
                spec,
                fork_work(spec, "fork, exit and wait", &parent)?,
                &parent,
            )?
            .done(spec)
        }
        (id::TASK_VFORK, metric) => {
            // The parent sleeps until the child, sharing its address space, has exited.
            let work = Work::new("vfork")
                .entry(spec, 1.0, "entry")
                .step(1.0, &TASK)
                .step(1.0, &FILES_SIGNALS)
                .step(2.0, &THREAD_SWITCH)
                .step(1.0, &EXIT)
                .step(1.0, &WAKE);
            let work = if metric == metric::ROUND_TRIP {
                work.entry(spec, 1.0, "wait entry").step(1.0, &REAP)
            } else {
                work
            };
            work.done(spec)
        }
        (id::TASK_PTHREAD, metric::CREATE) => pthread_work(spec, "pthread_create").done(spec),
        (id::TASK_PTHREAD, _) => {
            thread_exit_and_join(spec, pthread_work(spec, "pthread_create and join")).done(spec)
        }
        (id::TASK_STD_THREAD, metric) => {
            let work = pthread_work(spec, "std::thread::spawn").step(1.0, &STD_SPAWN);
            if metric == metric::CREATE {
                work.done(spec)
            } else {
                thread_exit_and_join(spec, work)
                    .step(1.0, &STD_ALTSTACK)
                    .done(spec)
            }
        }
        (id::TASK_POSIX_SPAWN, _) | (id::TASK_FORK_EXEC, metric::ROUND_TRIP) => {
            let exec = |a: Figure, b: Figure| {
                Figure::new(
                    a.value - b.value,
                    Source::both(&a.source, "minus", &b.source),
                )
            };
            let create = |probe: &str| measured(run, m, probe, "create", plain);
            let (base, exec) = if m.probe == id::TASK_POSIX_SPAWN {
                let base = if m.metric == "create" {
                    create(id::TASK_VFORK)?
                } else {
                    rt(id::TASK_VFORK)?
                };
                (base, exec(rt(id::TASK_FORK_EXEC)?, rt(id::TASK_FORK)?))
            } else {
                (
                    rt(id::TASK_FORK)?,
                    exec(rt(id::TASK_POSIX_SPAWN)?, rt(id::TASK_VFORK)?),
                )
            };
            Ok(Model::composed(
                "creation + exec",
                base.value + exec.value,
                format!("{:.0} ns + exec {:.0} ns", base.value, exec.value),
            )
            .figure("creation_ns", &base)
            .figure("exec_ns", &exec))
        }
        (id::TASK_FORK_EXEC, metric::CREATE) => {
            let f = measured(run, m, id::TASK_FORK, "create", plain)?;
            Ok(Model::composed(
                "fork",
                f.value,
                format!(
                    "fork create {:.0} ns: the parent returns from fork before the child execs",
                    f.value
                ),
            )
            .figure("fork_create_ns", &f))
        }
        _ => Err(crate::answer::unmodelled(m)),
    }
}

pub(crate) fn switch(spec: &Spec, m: &Measurement) -> Outcome {
    let Some(&(ipc, thread, _)) = SWITCH_PAIRS
        .iter()
        .find(|(_, t, p)| m.probe == *t || m.probe == *p)
    else {
        return Err(crate::answer::unmodelled(m));
    };
    let process = m.probe != thread;
    let switch = |work: Work| {
        let work = work.step(1.0, &THREAD_SWITCH);
        if process {
            work.step(1.0, &ADDRESS_SPACE)
        } else {
            work
        }
    };
    // Post to a channel and take from it: two system calls and the channel's own work.
    let transfer = |name: &'static str| {
        let work = Work::new(name).entry(spec, 2.0, "entry");
        match ipc {
            "futex" => work.step(1.0, &FUTEX),
            "pipe" => work.step(2.0, &VFS).step(1.0, &PIPE),
            _ => work.step(2.0, &VFS).step(1.0, &EVENTFD),
        }
    };
    match m.metric.as_str() {
        "switch" => switch(Work::new(if process {
            "process switch"
        } else {
            "thread switch"
        }))
        .done(spec),
        "transfer" => transfer("transfer").done(spec),
        "wakeup" => {
            // Half a round trip across cpus: a transfer, the partner woken on the other cpu by
            // an IPI out of its idle state, and a switch to it there.
            let idle = match &spec.idle_exit_us {
                Ok(f) => f.clone(),
                Err(why) => Figure::new(
                    HLT_EXIT_US,
                    format!("estimate: HLT (C1) exit about 1 µs ({why})"),
                ),
            };
            let work = switch(transfer("cross-cpu wake-up"))
                .step(1.0, &WAKE)
                .step(1.0, &IPI)
                .micros("idle exit", idle.value, idle.source.text.clone());
            let work = match &spec.hypervisor {
                Some(h) => work
                    .cycles("vm exit", 2.0, VM_EXIT_CYCLES, &format!("{}; the IPI's send and the idle vcpu's halt exit to the hypervisor ({h})", VM_EXIT_SOURCE.trim_start_matches("estimate: ")))
                    .micros("host wake", HOST_WAKE_US, format!("estimate: the halted vcpu's thread woken through the host's scheduler, 'on the order of a few micro-seconds' (the kernel's KVM halt-polling documentation; {h})"))
                    .micros("host idle exit", HOST_IDLE_EXIT_US, "estimate, the least certain input: the host core leaves its own idle state, which a guest cannot see; taken as a server core's C6 (intel_idle declares 128-290 µs for Xeon C6 as worst cases measured with Intel's wult; typical exits are shorter); a host that polls or keeps its cores shallow answers in a few µs".into()),
                None => work,
            };
            work.done(spec)
        }
        _ => Err(crate::answer::unmodelled(m)),
    }
}

pub(crate) fn migration(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let size = number(&m.params, "size").ok_or("no size parameter")?;
    match m.metric.as_str() {
        "retouch_local" => {
            let rate = level_read_rate(spec, size)?;
            Ok(Model::spec(
                "re-read in place",
                size / rate.value,
                format!("{size} B / {:.1} GB/s", rate.value),
            )
            .figure("read_rate_gbps", &rate))
        }
        "per_migration" => {
            let u = spec.uarch()?;
            let class = param(&m.params, "class").unwrap_or_default();
            let from = if class.contains("SMT") {
                return Err(
                    "an SMT sibling shares the caches: nothing to refill, no cost to predict"
                        .into(),
                );
            } else if class.contains("L2") {
                level_latency(spec, 2)?
            } else if class.contains("L3") {
                level_latency(spec, 3)?
            } else {
                dram_latency(spec)?
            };
            let lines = size / 64.0;
            let mlp = u.fill_buffers as f64;
            Ok(Model::spec(
                "cache refill",
                lines * from.value / mlp,
                format!("{lines} lines x {:.1} ns / {mlp} fill buffers", from.value),
            )
            .figure("refill_latency_ns", &from)
            .input("fill_buffers", u.fill_buffers, format!("table: {}", u.name)))
        }
        "move" => {
            let wake = measured(run, m, id::SWITCH_THREAD_FUTEX, metric::WAKEUP, |_| true)?;
            let (model, entry) = null_syscall(spec, Model::composed("affinity change", 0.0, ""));
            let model = spec.at_clock(model, entry)?;
            Ok(Model {
                value: model.value + wake.value,
                formula: format!("sched_setaffinity entry {:.0} ns + cross-cpu wake-up {:.0} ns (the migration thread moves us, the target cpu wakes)", model.value, wake.value),
                ..model
            }
            .figure("wakeup_ns", &wake))
        }
        _ => Err(crate::answer::unmodelled(m)),
    }
}
