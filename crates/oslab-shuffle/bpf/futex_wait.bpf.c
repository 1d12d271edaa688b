// SPDX-License-Identifier: GPL-2.0 OR MIT
// Per-thread time spent waiting in futex wait operations, for one process.
//
// Built into futex_wait.bpf.o by scripts/build-bpf (clang -target bpf) and committed, so that
// building oslab needs no clang; oslab loads the object with aya (crates/oslab-sched/src/locks/bpf.rs).
//
// A thread of the target (tgid == target_tgid) entering a futex *wait* records the time and the
// futex word's address (the lock) in `started`; at the syscall's exit the elapsed time is added
// to its `waits` entry and to its `lock_waits` entry for that address. Returns with EAGAIN (the
// futex word had already changed: the thread never slept) are counted apart as fast returns and
// add no wait time. User space adds the waits still in progress from `started`.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13
#define FUTEX_CMD_MASK (~(128 | 256)) /* FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME */
#define EAGAIN 11

/* The tracepoints' records (/sys/kernel/tracing/events/syscalls/sys_{enter,exit}_futex/format).
 * futex_wait(2) and futex_waitv(2) have their first argument at the same place: the futex word,
 * and the array of words waited on. */
struct futex_enter_args {
	__u64 common;
	__s32 syscall_nr;
	__u32 pad;
	__u64 uaddr;
	__u64 op;
	__u64 val;
	__u64 utime;
	__u64 uaddr2;
	__u64 val3;
};

struct syscall_exit_args {
	__u64 common;
	__s32 syscall_nr;
	__u32 pad;
	__s64 ret;
};

/* Per thread, since the program was loaded. */
struct wait_total {
	__u64 wait_ns;
	__u64 waits;
	__u64 fast_returns;
};

/* A wait in progress. */
struct wait_start {
	__u64 since_ns;
	__u64 uaddr;
};

/* A thread's waits on one futex word. */
struct lock_key {
	__u32 tid;
	__u32 pad;
	__u64 uaddr;
};

const volatile __u32 target_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct wait_start);
} started SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct lock_key);
	__type(value, __u64);
} lock_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct wait_total);
} waits SEC(".maps");

static __always_inline int start_wait(__u64 uaddr)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) != target_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct wait_start s = { .since_ns = bpf_ktime_get_ns(), .uaddr = uaddr };
	bpf_map_update_elem(&started, &tid, &s, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_futex")
int futex_enter(struct futex_enter_args *ctx)
{
	__u64 cmd = ctx->op & FUTEX_CMD_MASK;
	if (cmd != FUTEX_WAIT && cmd != FUTEX_LOCK_PI && cmd != FUTEX_WAIT_BITSET &&
	    cmd != FUTEX_WAIT_REQUEUE_PI && cmd != FUTEX_LOCK_PI2)
		return 0;
	return start_wait(ctx->uaddr);
}

/* futex_wait(2) and futex_waitv(2) (Linux 5.16+, 6.7+) only wait. */
SEC("tracepoint/syscalls/sys_enter_futex_wait")
int futex2_enter(struct futex_enter_args *ctx)
{
	return start_wait(ctx->uaddr);
}

SEC("tracepoint/syscalls/sys_exit_futex")
int futex_exit(struct syscall_exit_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) != target_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct wait_start *start = bpf_map_lookup_elem(&started, &tid);
	if (!start)
		return 0;
	__u64 elapsed = bpf_ktime_get_ns() - start->since_ns;
	struct lock_key key = { .tid = tid, .uaddr = start->uaddr };
	bpf_map_delete_elem(&started, &tid);
	struct wait_total *w = bpf_map_lookup_elem(&waits, &tid);
	if (!w) {
		struct wait_total zero = {};
		bpf_map_update_elem(&waits, &tid, &zero, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&waits, &tid);
		if (!w)
			return 0;
	}
	if (ctx->ret == -EAGAIN) {
		__sync_fetch_and_add(&w->fast_returns, 1);
		return 0;
	}
	__sync_fetch_and_add(&w->wait_ns, elapsed);
	__sync_fetch_and_add(&w->waits, 1);
	__u64 *on_lock = bpf_map_lookup_elem(&lock_waits, &key);
	if (on_lock) {
		__sync_fetch_and_add(on_lock, elapsed);
	} else {
		bpf_map_update_elem(&lock_waits, &key, &elapsed, BPF_NOEXIST);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
