/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handler.c - the sampling signal handler.
 *
 * Runs on whichever application thread the sampling signal hits: a CPU
 * timer's expiry (SI_TIMER), the process timer's (SI_KERNEL), a perf event's
 * overflow (POLL_IN with the event's descriptor), or a queued signal from
 * the agent (SI_QUEUE: a stack-bounds probe or a wall-clock sample). Everything
 * here is async-signal-safe: it reads the interrupted registers from the
 * ucontext, looks up the thread's stack bounds in a lock-free table,
 * claims a slot in a preallocated ring, unwinds into it and publishes it.
 * No allocation, no locks, no stdio; when it cannot do its work it counts
 * why and returns. errno is preserved for the interrupted code.
 */
#include "sample/handler.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "emberprof.h"
#include "sample/kring.h"
#include "sample/labels.h"
#include "sample/polltls.h"
#include "sample/sigvirt.h"
#include "unwind/unwind.h"
#include "util/hotpage.h"

static _Atomic(ember__sigstate *) g_state EMBER_HOT_DATA;
static _Atomic int g_inflight EMBER_HOT_DATA;

__thread int ember__sig_depth __attribute__((tls_model("initial-exec")));

/* The thread's id, cached: gettid() is a real system call (~200 ns here),
 * a third of a frame-pointer sample. Reset in a fork child (threads.c). */
static __thread int32_t tls_tid __attribute__((tls_model("initial-exec")));

static int32_t current_tid(void)
{
	int32_t t = tls_tid;
	if (__builtin_expect(t == 0, 0))
		tls_tid = t = (int32_t)gettid();
	return t;
}

EMBER_HOT_TEXT void ember__sigpath_forget_tid(void)
{
	tls_tid = 0;
}

static void answer_probe(ember__sigstate *st, void *uc)
{
	ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
	ember__thread_ent *e = ember__threadtab_find(tab, current_tid());
	if (!e)
		return;
	ember__regs regs;
	ember__regs_from_ucontext(uc, &regs);
	atomic_store_explicit(&e->probe_self, (uintptr_t)pthread_self(), memory_order_relaxed);
	atomic_store_explicit(&e->probe_sp, regs.sp, memory_order_release);
	atomic_fetch_add_explicit(&st->probes, 1, memory_order_relaxed);
}

/* Not read yet (in_syscall's memo). */
#define SYS_UNREAD (-100)

/* Whether the interrupted thread was in a system call: 1 (blocked, to be
 * restarted), 2 (interrupted, failing with EINTR), 0 (running) or -1
 * (cannot tell). The instruction-set part lives in regs_<arch>.c
 * (ember__regs_in_syscall); read once per signal into *memo, which the
 * handler starts at SYS_UNREAD. */
static int in_syscall(void *uc, uintptr_t pc, int *memo)
{
	if (*memo == SYS_UNREAD)
		*memo = ember__regs_in_syscall(uc, pc);
	return *memo;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__thread volatile int ember__tls_exiting __attribute__((tls_model("initial-exec")));

/*
 * For the wall-clock thread (engine_wall.h): after a wall sample, whether
 * this thread was asleep in it and, if so, which sample (`seq`, nonzero)
 * and the thread's CPU time now, at the end of the handler. While the CPU
 * time stays there the thread has not run, so its stack is unchanged and
 * the wall-clock thread records it again instead of waking it. And the
 * number of the thread's last wall sample whatever its state (`last_seq`,
 * 0: none), which its exit hook repeats (threads.c).
 * clock_gettime is async-signal-safe.
 */
static void note_wall_state(ember__sigstate *st, int32_t tid, uint32_t seq, uint32_t last_seq)
{
	ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
	ember__thread_ent *e = tab ? ember__threadtab_find(tab, tid) : NULL;
	if (!e)
		return;
	if (seq) {
		struct timespec ts;
		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
			seq = 0;
		else
			atomic_store_explicit(&e->wall_cpu_ns,
					      (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
					      memory_order_relaxed);
	}
	atomic_store_explicit(&e->wall_seq, seq, memory_order_release);
	atomic_store_explicit(&e->wall_last_seq, last_seq, memory_order_release);
}

/* A new wall sample number (0 means none). */
static uint32_t next_wall_seq(ember__sigstate *st)
{
	uint32_t seq = atomic_fetch_add_explicit(&st->wall_seq, 1, memory_order_relaxed) + 1;
	if (!seq) /* wrapped: 0 means none */
		seq = atomic_fetch_add_explicit(&st->wall_seq, 1, memory_order_relaxed) + 1;
	return seq;
}

/*
 * The wall time the wall-clock thread found this thread running for,
 * without signalling it (threadtab.h, wall_want_ns): recorded by the
 * handler of the thread's CPU sample `cpu` (claimed, filled, not yet
 * committed: the caller commits it after) as a wall sample of the same
 * stack without its first `nk` (kernel) frames, its state from the
 * interrupted registers as a wall signal's handler would say it. The
 * time was already weighed by the ticks (they swapped wall_last_ns), so
 * wall_last_ns is left alone here. Nothing unless time is wanted; taken
 * whether or not the ring has room (a full ring counts it in
 * dropped_full, as a wall signal's sample). Async-signal-safe.
 */
static void wall_from_cpu(ember__sigstate *st, ember__thread_ent *self, int32_t tid,
			  const ember__sample_rec *cpu, int nk, void *uc, uintptr_t pc, int *sysmemo)
{
	if (ember__tls_exiting || !atomic_load_explicit(&self->wall_want_ns, memory_order_relaxed))
		return;
	int64_t want = atomic_exchange_explicit(&self->wall_want_ns, 0, memory_order_acq_rel);
	if (want <= 0)
		return;
	uint64_t weight = (uint64_t)want;
	note_wall_state(st, tid, 0, 0); /* if no sample is recorded: nothing to repeat */
	ember__sample_rec *r = ember__sampbuf_claim(&st->buf);
	if (!r) {
		atomic_fetch_add_explicit(&st->dropped_full, 1, memory_order_relaxed);
		return;
	}
	int sys = in_syscall(uc, pc, sysmemo);
	unsigned kind = EMBER_SAMPLE_WALL |
			(sys > 0 ? EMBER_SAMPLE_SLEEPING : sys == 0 ? EMBER_SAMPLE_RUNNING : 0);
	uint32_t depth = cpu->depth > (uint32_t)nk ? cpu->depth - (uint32_t)nk : 0;
	for (uint32_t i = 0; i < depth; i++)
		r->pcs[i] = cpu->pcs[nk + (int)i];
	const uint8_t *lab = ember__sample_labels(&st->buf, (ember__sample_rec *)cpu);
	uint8_t *to = ember__sample_labels(&st->buf, r);
	for (uint32_t i = 0; i < cpu->label_len; i++)
		to[i] = lab[i];
	r->label_len = cpu->label_len;
	r->depth = depth;
	r->tid = tid;
	r->weight = weight;
	r->flags = cpu->flags | kind;
	r->time_ns = cpu->time_ns;
	r->poll_start = ember__poll_on_sample(tid);
	uint32_t seq = next_wall_seq(st);
	r->reserved = seq;
	ember__sampbuf_commit(r);
	note_wall_state(st, tid, (kind & EMBER_SAMPLE_SLEEPING) ? seq : 0, seq);
	atomic_fetch_add_explicit(&st->wall_samples, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->wall_at_cpu, 1, memory_order_relaxed);
}

/* Claims a slot, unwinds into it and publishes it. `kind` holds the
 * EMBER_SAMPLE_* bits; `weight` is in nanoseconds; kips[0..nk): kernel
 * frames (perf events), put below the user stack; *sysmemo: in_syscall's. */
static void take_sample(ember__sigstate *st, uint64_t weight, unsigned kind, void *uc,
			const uint64_t *kips, int nk, int *sysmemo)
{
	int32_t tid = current_tid();
	if (kind & EMBER_SAMPLE_WALL) {
		ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
		ember__thread_ent *e = tab ? ember__threadtab_find(tab, tid) : NULL;
		if (ember__tls_exiting)
			return; /* in its exit hook, which records this time itself */
		if (e) { /* the time since the thread's previous wall sample */
			int64_t now = mono_ns(), last = atomic_exchange(&e->wall_last_ns, now);
			weight = last > 0 && now > last ? (uint64_t)(now - last) : weight;
		}
		note_wall_state(st, tid, 0, 0); /* if no sample is recorded: nothing to repeat */
	}
	ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
	ember__thread_ent *self = tab ? ember__threadtab_find(tab, tid) : NULL;
	/* The signal reached this thread, whether or not it is recorded: the
	 * thread does not block it (threads_blocked.c). */
	if (self && !(kind & EMBER_SAMPLE_WALL))
		atomic_fetch_add_explicit(&self->cpu_signal_ns, weight, memory_order_relaxed);
	ember__sample_rec *r = ember__sampbuf_claim(&st->buf);
	if (!r) {
		atomic_fetch_add_explicit(&st->dropped_full, 1, memory_order_relaxed);
		return;
	}
	ember__regs regs;
	ember__regs_from_ucontext(uc, &regs);
	if (kind & EMBER_SAMPLE_WALL) {
		int sys = in_syscall(uc, regs.pc, sysmemo);
		kind |= sys > 0 ? EMBER_SAMPLE_SLEEPING : sys == 0 ? EMBER_SAMPLE_RUNNING : 0;
	}
	ember__stack_bounds bounds = {0, 0};
	if (self)
		ember__threadtab_ent_bounds(self, &bounds);
	unsigned flags = 0;
	const ember__unwind_snapshot *snap =
		st->unwind_mode == EMBER_UNWIND_MODE_FP
			? NULL
			: atomic_load_explicit(&st->unwind_snap, memory_order_seq_cst);
	if (nk >= st->max_depth)
		nk = st->max_depth - 1;
	for (int i = 0; i < nk; i++)
		r->pcs[i] = kips[i];
	int n = nk + ember__unwind(st->unwind_mode, snap, &regs, &bounds, r->pcs + nk,
				   st->max_depth - nk, &flags);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int labels_cut = 0;
	r->label_len = (uint32_t)ember__labels_snapshot(ember__sample_labels(&st->buf, r),
							EMBER__LABEL_BYTES, &labels_cut);
	if (labels_cut)
		atomic_fetch_add_explicit(&st->labels_truncated, 1, memory_order_relaxed);
	r->depth = (uint32_t)n;
	r->tid = tid;
	r->weight = weight;
	r->flags = flags | kind;
	r->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	r->poll_start = ember__poll_on_sample(tid);
	uint32_t wall_seq = (kind & EMBER_SAMPLE_WALL) ? next_wall_seq(st) : 0;
	r->reserved = wall_seq;
	/* A CPU sample of a thread the wall-clock thread saw running: its wall
	 * sample too, sharing this unwind (before this record's commit: the
	 * agent may take and reuse a committed slot). */
	if (self && !(kind & EMBER_SAMPLE_WALL))
		wall_from_cpu(st, self, tid, r, nk, uc, regs.pc, sysmemo);
	ember__sampbuf_commit(r);
	if (wall_seq) /* after the commit: a repeat is claimed after this sample */
		note_wall_state(st, tid, (kind & EMBER_SAMPLE_SLEEPING) ? wall_seq : 0, wall_seq);
	atomic_fetch_add_explicit(kind & EMBER_SAMPLE_WALL ? &st->wall_samples : &st->samples, 1,
				  memory_order_relaxed);
	if (self && !(kind & EMBER_SAMPLE_WALL))
		atomic_fetch_add_explicit(&self->cpu_weight_ns, weight, memory_order_relaxed);
	if (nk > 0)
		atomic_fetch_add_explicit(&st->kernel_samples, 1, memory_order_relaxed);
	if (flags & EMBER_UNWIND_PENDING)
		atomic_fetch_add_explicit(&st->unwind_pending, 1, memory_order_relaxed);
	if (flags & EMBER_UNWIND_NO_BOUNDS)
		atomic_fetch_add_explicit(&st->no_bounds, 1, memory_order_relaxed);
	else if (flags & EMBER_UNWIND_TRUNCATED)
		atomic_fetch_add_explicit(&st->truncated, 1, memory_order_relaxed);
}

/*
 * A perf_events overflow (engine_perf.c): the signal names the descriptor.
 * It is used only if it is the one the agent registered for this thread,
 * so a late signal for a descriptor already closed (and maybe reused by the
 * application) never makes us read someone else's file.
 *
 * Weight: the thread's task-clock count now (read(2) on the event, a plain
 * system call and async-signal-safe) minus the count at the end of this
 * thread's previous sample. The end of a sample is estimated as the count
 * read here plus the (vDSO, syscall-free) monotonic time the rest of this
 * handler takes, so the handler's own CPU time is not charged to the
 * application's next sample; what precedes the read (signal delivery, this
 * function's first lines) still is, a few hundred nanoseconds.
 *
 * With kernel frames on, the thread's ring holds the overflow's kernel
 * callchain (sample/kring.h), read before the stack is unwound.
 */
static void perf_sample(ember__sigstate *st, int fd, void *uc, int *sysmemo)
{
	ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
	ember__thread_ent *e = tab ? ember__threadtab_find(tab, current_tid()) : NULL;
	if (!e || fd < 0 || atomic_load_explicit(&e->perf_fd1, memory_order_acquire) != fd + 1) {
		atomic_fetch_add_explicit(&st->perf_stale, 1, memory_order_relaxed);
		return;
	}
	uint64_t count = 0;
	if (read(fd, &count, sizeof(count)) != (ssize_t)sizeof(count)) {
		atomic_fetch_add_explicit(&st->perf_stale, 1, memory_order_relaxed);
		return;
	}
	int64_t t0 = mono_ns();
	uint64_t kips[EMBER_KRING_MAX_FRAMES];
	int nk = 0;
	uintptr_t ring = atomic_load_explicit(&e->perf_ring, memory_order_acquire);
	if (ring && (nk = ember__kring_take((void *)ring, kips, EMBER_KRING_MAX_FRAMES)) < 0) {
		atomic_fetch_add_explicit(&st->kernel_missing, 1, memory_order_relaxed);
		nk = 0;
	}
	/* Signed: the agent starts `last` half a period below zero (threads.c). */
	int64_t d = (int64_t)(count - atomic_load_explicit(&e->perf_last, memory_order_relaxed));
	take_sample(st, d > 0 ? (uint64_t)d : 0, 0, uc, kips, nk, sysmemo);
	int64_t spent = mono_ns() - t0;
	atomic_store_explicit(&e->perf_last, count + (uint64_t)(spent > 0 ? spent : 0),
			      memory_order_relaxed);
}

/* The CPU sampling period a timer expiry stands for. */
static uint64_t sample_period(ember__sigstate *st)
{
	return (uint64_t)atomic_load_explicit(&st->period_ns, memory_order_relaxed);
}

void ember__sigpath_handler(int sig, siginfo_t *si, void *uc)
{
	ember__regs_note_sigreturn((uintptr_t)__builtin_return_address(0)); /* regs_<arch>.c */
	int saved_errno = errno;
	int foreign = 0, redeliver = 0, sys = SYS_UNREAD;
	ember__sig_depth++;
	/* seq_cst: pairs with the agent's store of a new unwind snapshot and
	 * its fence before reading the count (unwind_tables.c). */
	atomic_fetch_add_explicit(&g_inflight, 1, memory_order_seq_cst);
	ember__sigstate *st = atomic_load_explicit(&g_state, memory_order_acquire);
	if (!st) {
		/* No agent attached: the signal path claimed before its agent
		 * starts (a fork child, a program image started lazily:
		 * src/preload/fork_child.c) or one being removed. A late signal
		 * of ours is dropped; the program's own goes where it asked. */
		uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
		if (si->si_code == SI_TIMER)
			foreign = v != EMBER_TIMER_VALUE;
		else if (si->si_code == SI_QUEUE && si->si_pid == getpid()) {
			redeliver = v == EMBER_REDELIVER_VALUE;
			foreign = !redeliver && (v >> EMBER_WALL_SHIFT) != EMBER_WALL_TAG &&
				  !(si->si_value.sival_int == EMBER_PROBE_MAGIC && (v >> 32) == 0);
		} else
			foreign = !(si->si_code >= POLL_IN && si->si_code <= POLL_HUP);
		goto out;
	}
	if (si->si_code == SI_TIMER) {
		/* A POSIX timer: ours carry EMBER_TIMER_VALUE (threads.c); the
		 * program's own timers may use this signal too. Overruns are
		 * expirations merged into this signal. */
		if ((uintptr_t)si->si_value.sival_ptr == EMBER_TIMER_VALUE) {
			int ov = si->si_overrun;
			uint64_t periods = 1u + (uint64_t)(ov < 0 ? 0 : ov > 100000 ? 100000 : ov);
			take_sample(st, periods * sample_period(st), 0, uc, NULL, 0, &sys);
		} else {
			foreign = 1;
		}
	} else if (si->si_code == SI_KERNEL &&
		   atomic_load_explicit(&st->accept_itimer, memory_order_relaxed)) {
		take_sample(st, sample_period(st), 0, uc, NULL, 0, &sys); /* setitimer(ITIMER_PROF) */
	} else if (si->si_code >= POLL_IN && si->si_code <= POLL_HUP &&
		   atomic_load_explicit(&st->accept_perf, memory_order_relaxed)) {
		perf_sample(st, si->si_fd, uc, &sys); /* F_SETSIG from a perf event */
	} else if (si->si_code == SI_QUEUE && si->si_pid == getpid()) {
		uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
		if (si->si_value.sival_int == EMBER_PROBE_MAGIC && (v >> 32) == 0)
			answer_probe(st, uc);
		else if (v == EMBER_REDELIVER_VALUE)
			redeliver = 1;
		else if ((v >> EMBER_WALL_SHIFT) == EMBER_WALL_TAG)
			take_sample(st, v & ((1ull << EMBER_WALL_SHIFT) - 1), EMBER_SAMPLE_WALL, uc,
				    NULL, 0, &sys);
		else
			foreign = 1;
	} else {
		/* kill(), raise(), another process, the program's own itimer. */
		foreign = 1;
	}
	if (foreign) {
		atomic_fetch_add_explicit(&st->foreign, 1, memory_order_relaxed);
	} else {
		ember__sigvirt_count_ours();
		if (!redeliver) {
			if (sys == SYS_UNREAD) { /* not read by the sample */
				ember__regs r;
				ember__regs_from_ucontext(uc, &r);
				in_syscall(uc, r.pc, &sys);
			}
			if (sys == 2)
				atomic_fetch_add_explicit(&st->interrupted_calls, 1,
							  memory_order_relaxed);
		}
	}
out:
	atomic_fetch_sub_explicit(&g_inflight, 1, memory_order_release);
	ember__sig_depth--;
	errno = saved_errno;
	/* The program's own signal goes where it asked (sigvirt.h), after we
	 * let go of everything: its handler may run long or siglongjmp. */
	if (foreign)
		ember__sigvirt_foreign(sig, si, uc);
	else if (redeliver)
		ember__sigvirt_redeliver(sig, uc);
}

int ember__sigpath_attach(ember__sigstate *st)
{
	ember__sigstate *expect = NULL;
	return atomic_compare_exchange_strong(&g_state, &expect, st) ? 0 : -1;
}

void ember__sigpath_detach(void)
{
	atomic_store_explicit(&g_state, NULL, memory_order_release);
}

EMBER_HOT_TEXT int ember__sigpath_inflight(void)
{
	return atomic_load_explicit(&g_inflight, memory_order_acquire);
}

ember__sigstate *ember__sigpath_enter(void)
{
	atomic_fetch_add_explicit(&g_inflight, 1, memory_order_seq_cst); /* as the handler */
	return atomic_load_explicit(&g_state, memory_order_acquire);
}

void ember__sigpath_leave(void)
{
	atomic_fetch_sub_explicit(&g_inflight, 1, memory_order_release);
}

EMBER_HOT_TEXT void ember__sigpath_forget(void)
{
	atomic_store_explicit(&g_state, NULL, memory_order_release);
	atomic_store_explicit(&g_inflight, 0, memory_order_release);
}
