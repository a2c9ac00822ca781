/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads_arm.c - each sampled thread's CPU engine (threads_internal.h):
 * arming its CPU timer or its perf event, and checking, dropping and
 * closing perf events (a program may close our descriptors and take their
 * numbers: util/ownfd.h). The registry, its scans and its lifecycle are
 * threads.c's; which engine a start uses, threads_engine.c's.
 *
 * Called with the registry's mutex held, or while no other thread can
 * reach the registry (ember__threads_start before it publishes it, the
 * atfork handler of a fork child); not async-signal-safe.
 */
#include "engine/threads_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_perf.h"
#include "engine/sigsetup.h"
#include "emberprof.h"

static uint64_t next_random(ember__threads *t)
{
	/* xorshift64*: quality is plenty for spreading first expiries. */
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

int ember__threads_arm_timer(ember__threads *t, ember__thread_rec *r)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = t->signo;
	sev._sigev_un._tid = r->tid;
	sev.sigev_value.sival_ptr = (void *)EMBER_TIMER_VALUE; /* ours, not the program's */
	/* The CPU-time clock of any thread of ours: MAKE_THREAD_CPUCLOCK(tid,
	 * CPUCLOCK_SCHED) in the kernel's encoding. */
	clockid_t clk = (clockid_t)((~(unsigned)r->tid << 3) | 6u);
	timer_t timer;
	if (timer_create(clk, &sev, &timer) != 0)
		return -errno;
	/* First expiry uniform in (0, period]: short-lived threads are
	 * sampled without bias, and threads do not fire in lockstep. */
	int64_t first = 1 + (int64_t)(next_random(t) % (uint64_t)t->period_ns);
	struct itimerspec its;
	its.it_interval.tv_sec = t->period_ns / 1000000000;
	its.it_interval.tv_nsec = t->period_ns % 1000000000;
	its.it_value.tv_sec = first / 1000000000;
	its.it_value.tv_nsec = first % 1000000000;
	if (timer_settime(timer, 0, &its, NULL) != 0) {
		int e = errno;
		timer_delete(timer);
		return -e;
	}
	r->timer = timer;
	r->has_timer = 1;
	return 0;
}

/*
 * A thread that could not be armed. A thread the scan listed can leave
 * before its timer or event is made; it is gone, not missed, and not
 * counted. perf_event_open says ESRCH for a thread that is exiting (its
 * events already torn down) while tgkill still finds it (the soak saw
 * three); timer_create says EINVAL for one the kernel has dropped, whose
 * pid went with its signal state, so tgkill no longer finds it either.
 */
void ember__threads_note_timer_failure(ember__threads *t, int32_t tid, int err)
{
	if (tid > 0 && (err == ESRCH || (syscall(SYS_tgkill, (int)t->pid, (int)tid, 0) != 0 &&
					 errno == ESRCH)))
		return;
	atomic_fetch_add_explicit(&t->timer_failures, 1, memory_order_relaxed);
	if (!t->first_error[0])
		snprintf(t->first_error, sizeof(t->first_error), "%s for thread %d: %s",
			 t->perf ? "perf event" : "timer", (int)tid, strerror(err));
}

/*
 * A perf event for the thread: opened disabled, published to the handler
 * (descriptor and starting count) and only then enabled, so its first
 * overflow finds it.
 *
 * The starting count is minus half a period: the CPU time a thread uses
 * after its last overflow (before it exits or sampling stops) is never
 * sampled, half a period on average, so its first sample carries that
 * half period in advance. Totals then match in expectation, as with the
 * timers' random first expiry; without it, 16 threads of 0.3 s at 100 Hz
 * lose 3% of their CPU time.
 *
 * With kernel frames, the event records its kernel callchains into a ring
 * of its own (two pages of locked memory per thread, against
 * perf_event_mlock_kb and RLIMIT_MEMLOCK), published before the
 * descriptor. When the ring cannot be mapped (or the kernel refuses the
 * callchain) the event is opened again without callchains and kernel
 * frames stay off for every later thread (t->ring_error says why, for the
 * log).
 */
int ember__threads_arm_perf(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e)
{
	int chain = t->kernel_frames && !t->perf_exclude_kernel;
	int fd = ember__perf_open(r->tid, t->signo, t->period_ns, t->perf_exclude_kernel, chain);
	if (chain && (fd == -EINVAL || fd == -E2BIG || fd == -EOVERFLOW || fd == -EOPNOTSUPP)) {
		/* a kernel without sample_max_stack (before 4.8), or a lower
		 * kernel.perf_event_max_stack: sampled without kernel frames */
		t->kernel_frames = 0;
		snprintf(t->ring_error, sizeof(t->ring_error),
			 "perf events with kernel callchains were refused for thread %d: %s",
			 (int)r->tid, strerror(-fd));
		chain = 0;
		fd = ember__perf_open(r->tid, t->signo, t->period_ns, t->perf_exclude_kernel, 0);
	}
	if (fd < 0)
		return fd;
	void *ring = NULL;
	if (chain) {
		int err = 0;
		ring = ember__perf_map_ring(fd, &err);
		if (!ring) {
			t->kernel_frames = 0;
			snprintf(t->ring_error, sizeof(t->ring_error),
				 "the perf ring of thread %d (%zu KiB) could not be mapped: %s%s",
				 (int)r->tid, ember__perf_ring_len() / 1024, strerror(err),
				 err == EPERM || err == ENOMEM
					 ? " (kernel.perf_event_mlock_kb or RLIMIT_MEMLOCK is used up)"
					 : "");
			close(fd);
			fd = ember__perf_open(r->tid, t->signo, t->period_ns, t->perf_exclude_kernel, 0);
			if (fd < 0)
				return fd;
		}
	}
	atomic_store_explicit(&e->perf_last, (uint64_t)(-(t->period_ns / 2)), memory_order_relaxed);
	atomic_store_explicit(&e->perf_ring, (uintptr_t)ring, memory_order_relaxed);
	r->perf_ring = ring;
	atomic_store_explicit(&e->perf_fd1, fd + 1, memory_order_release);
	r->perf_fd1 = fd + 1;
	r->perf_id = ember__perf_id(fd);
	int rc = ember__perf_enable(fd);
	if (rc) {
		atomic_store_explicit(&e->perf_fd1, 0, memory_order_release);
		atomic_store_explicit(&e->perf_ring, 0, memory_order_relaxed);
		r->perf_fd1 = 0;
		ember__perf_unmap_ring(r->perf_ring);
		r->perf_ring = NULL;
		close(fd); /* never enabled: no signal can name it */
		return rc;
	}
	atomic_fetch_add_explicit(&t->perf_events, 1, memory_order_relaxed);
	return 0;
}

/* The start of a lazily started process (t->catch_up): records the CPU
 * thread tid used in this image before now, which no sample covers
 * (threads.h, early[]). The image's first thread counts from the clock it
 * read when the image began; a thread created since, from its creation. */
static void note_early(ember__threads *t, int32_t tid)
{
	if (!t->catch_up)
		return;
	uint64_t cpu = ember__thread_cpu_ns(tid);
	uint64_t base = tid == (int32_t)t->pid ? t->catch_cpu0_ns : 0;
	if (cpu <= base)
		return;
	ember__early_cpu *x = NULL;
	if (t->nearly < EMBER__EARLY_MAX) {
		x = &t->early[t->nearly++];
		*x = (ember__early_cpu){tid, 0};
	} else {
		x = &t->early[0];
		for (unsigned i = 0; i < t->nearly; i++)
			if (t->early[i].tid == (int32_t)t->pid)
				x = &t->early[i];
	}
	x->ns += cpu - base;
}

/* Arms the thread's engine (nothing to do in setitimer mode). */
void ember__threads_arm_thread(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e)
{
	if (r->armed)
		return;
	r->armed = 1;
	atomic_fetch_add_explicit(&t->threads_seen, 1, memory_order_relaxed);
	if (t->process_timer) {
		note_early(t, r->tid);
		return;
	}
	if (t->suspended) { /* armed when the exec fails */
		r->parked = 1;
		return;
	}
	int rc = t->perf ? ember__threads_arm_perf(t, r, e) : ember__threads_arm_timer(t, r);
	if (rc) {
		ember__threads_note_timer_failure(t, r->tid, -rc);
		return;
	}
	ember__threads_measure_tail(t, r, 1);
	note_early(t, r->tid);
}

/* Closes r's perf descriptor unless the program closed it and took its
 * number (util/ownfd.h's rule for every descriptor we keep), and unmaps
 * its ring: the caller made sure no handler reads it any more. */
void ember__threads_close_perf(ember__threads *t, ember__thread_rec *r)
{
	if (ember__perf_is_ours(r->perf_fd1 - 1, t->signo, r->perf_id))
		close(r->perf_fd1 - 1);
	r->perf_fd1 = 0;
	ember__perf_unmap_ring(r->perf_ring);
	r->perf_ring = NULL;
}

/*
 * A program that closes every descriptor (a daemon at start) frees our
 * perf events: their threads would go unsampled. Each scan finds such
 * events, unpublishes them without touching the number (the program's
 * now), and arms the thread again; counted in fd_reopens.
 */
void ember__threads_check_perf(ember__threads *t, int full)
{
	for (size_t i = 0; i < t->nrecs; i++) {
		ember__thread_rec *r = &t->recs[i];
		if (!r->perf_fd1)
			continue;
		/* Every poll: one fcntl (our event answers our signal); every
		 * scan: the event's id too. */
		if (full ? ember__perf_is_ours(r->perf_fd1 - 1, t->signo, r->perf_id)
			 : fcntl(r->perf_fd1 - 1, F_GETSIG) == t->signo)
			continue;
		ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
		if (e)
			atomic_store_explicit(&e->perf_fd1, 0, memory_order_seq_cst);
		r->perf_fd1 = 0;
		if (r->perf_ring) {
			/* the mapping keeps the old event alive: unmapped once no
			 * handler that saw the descriptor can still read it */
			ember__sigpath_quiesce();
			ember__perf_unmap_ring(r->perf_ring);
			r->perf_ring = NULL;
		}
		atomic_fetch_add_explicit(&t->fd_reopens, 1, memory_order_relaxed);
		int rc = e ? ember__threads_arm_perf(t, r, e) : 0;
		if (rc)
			ember__threads_note_timer_failure(t, r->tid, -rc);
	}
}

/*
 * Stops and closes a thread's perf event. The caller is the thread itself
 * (exit hook) or the thread is gone (scan), so no handler can be using the
 * descriptor: its signals go to that thread only.
 */
void ember__threads_drop_perf(ember__threads *t, ember__thread_rec *r)
{
	if (!r->perf_fd1)
		return;
	ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
	if (e)
		atomic_store_explicit(&e->perf_fd1, 0, memory_order_release);
	ember__threads_close_perf(t, r);
}
