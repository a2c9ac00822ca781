/*
 * handler.c - the sampling signal handler.
 *
 * Runs on whichever application thread the timer signal hits. Everything
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
#include <unistd.h>

#include "emberprof.h"
#include "sample/labels.h"
#include "unwind/unwind.h"

static _Atomic(ember__sigstate *) g_state;
static _Atomic int g_inflight;

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

void ember__sigpath_forget_tid(void)
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

static void take_sample(ember__sigstate *st, uint32_t weight, void *uc)
{
	ember__sample_rec *r = ember__sampbuf_claim(&st->buf);
	if (!r) {
		atomic_fetch_add_explicit(&st->dropped_full, 1, memory_order_relaxed);
		return;
	}
	int32_t tid = current_tid();
	ember__regs regs;
	ember__regs_from_ucontext(uc, &regs);
	ember__stack_bounds bounds = {0, 0};
	ember__threadtab *tab = atomic_load_explicit(&st->tab, memory_order_acquire);
	if (tab)
		ember__threadtab_bounds(tab, tid, &bounds);
	unsigned flags = 0;
	const ember__unwind_snapshot *snap =
		st->unwind_mode == EMBER_UNWIND_MODE_FP
			? NULL
			: atomic_load_explicit(&st->unwind_snap, memory_order_seq_cst);
	int n = ember__unwind(st->unwind_mode, snap, &regs, &bounds, r->pcs, st->max_depth, &flags);
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
	r->flags = flags;
	r->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	ember__sampbuf_commit(r);
	atomic_fetch_add_explicit(&st->samples, 1, memory_order_relaxed);
	if (flags & EMBER_UNWIND_NO_BOUNDS)
		atomic_fetch_add_explicit(&st->no_bounds, 1, memory_order_relaxed);
	else if (flags & EMBER_UNWIND_TRUNCATED)
		atomic_fetch_add_explicit(&st->truncated, 1, memory_order_relaxed);
}

void ember__sigpath_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	int saved_errno = errno;
	ember__sig_depth++;
	/* seq_cst: pairs with the agent's store of a new unwind snapshot and
	 * its fence before reading the count (unwind_tables.c). */
	atomic_fetch_add_explicit(&g_inflight, 1, memory_order_seq_cst);
	ember__sigstate *st = atomic_load_explicit(&g_state, memory_order_acquire);
	if (!st)
		goto out;
	if (si->si_code == SI_TIMER) {
		/* POSIX timer: overruns are expirations merged into this signal. */
		int ov = si->si_overrun;
		uint32_t weight = 1u + (uint32_t)(ov < 0 ? 0 : ov > 100000 ? 100000 : ov);
		take_sample(st, weight, uc);
	} else if (si->si_code == SI_KERNEL && st->accept_itimer) {
		take_sample(st, 1, uc); /* setitimer(ITIMER_PROF) */
	} else if (si->si_code == SI_QUEUE && si->si_pid == getpid() &&
		   si->si_value.sival_int == EMBER_PROBE_MAGIC) {
		answer_probe(st, uc);
	} else {
		/* kill(), another process, or a timer that is not ours. */
		atomic_fetch_add_explicit(&st->foreign, 1, memory_order_relaxed);
	}
out:
	atomic_fetch_sub_explicit(&g_inflight, 1, memory_order_release);
	ember__sig_depth--;
	errno = saved_errno;
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

int ember__sigpath_inflight(void)
{
	return atomic_load_explicit(&g_inflight, memory_order_acquire);
}

void ember__sigpath_forget(void)
{
	atomic_store_explicit(&g_state, NULL, memory_order_release);
	atomic_store_explicit(&g_inflight, 0, memory_order_release);
}
