/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads.c - per-thread CPU timers or perf events, and stack bounds
 * (threads.h): the registry's records and the handler's table, probes,
 * scans, start and stop, exec and the hook's side. Arming, checking and
 * closing each thread's timer or perf event is threads_arm.c's
 * (threads_internal.h). Not async-signal-safe.
 */
#include "engine/threads.h"
#include "engine/threads_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "engine/engine_perf.h"
#include "engine/engine_wall.h"
#include "engine/wall_remote.h"
#include "engine/sigsetup.h"
#include "emberprof.h"
#include "sample/sigvirt.h"
#include "symbols/procmaps.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/ownfd.h"
#include "util/hotpage.h"

enum { BOUNDS_UNKNOWN = 0, BOUNDS_PROBED = 1, BOUNDS_KNOWN = 2, BOUNDS_FAILED = 3 };

/* The registry the pthread_create hook and fork handlers reach. Set while
 * sampling runs; the hook runs on arbitrary application threads, which is
 * why this one pointer has to be global. */
static _Atomic(ember__threads *) g_threads EMBER_HOT_DATA;
/* ember__threads_catch_up_from's mark, for the process g_catch_pid. */
static _Atomic pid_t g_catch_pid EMBER_HOT_DATA;
static _Atomic uint64_t g_catch_cpu0 EMBER_HOT_DATA;

/* ---- records ---- */

static size_t rec_lower_bound(const ember__threads *t, int32_t tid)
{
	size_t lo = 0, hi = t->nrecs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->recs[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static ember__thread_rec *rec_find(ember__threads *t, int32_t tid)
{
	size_t i = rec_lower_bound(t, tid);
	return i < t->nrecs && t->recs[i].tid == tid ? &t->recs[i] : NULL;
}

static ember__thread_rec *rec_add(ember__threads *t, int32_t tid)
{
	size_t i = rec_lower_bound(t, tid);
	if (i < t->nrecs && t->recs[i].tid == tid)
		return &t->recs[i];
	if (t->nrecs == t->caprecs) {
		size_t ncap = t->caprecs ? t->caprecs * 2 : 64;
		ember__thread_rec *n = realloc(t->recs, ncap * sizeof(*n));
		if (!n)
			return NULL;
		t->recs = n;
		t->caprecs = ncap;
	}
	memmove(&t->recs[i + 1], &t->recs[i], (t->nrecs - i) * sizeof(*t->recs));
	memset(&t->recs[i], 0, sizeof(t->recs[i]));
	t->recs[i].tid = tid;
	t->nrecs++;
	return &t->recs[i];
}

static void rec_remove(ember__threads *t, ember__thread_rec *r)
{
	size_t i = (size_t)(r - t->recs);
	memmove(&t->recs[i], &t->recs[i + 1], (t->nrecs - i - 1) * sizeof(*t->recs));
	t->nrecs--;
}

/* ---- the handler's table ---- */

/* Doubles the table, copying live entries, and publishes the new one. */
static int grow_table(ember__threads *t)
{
	ember__threadtab *old = t->tab;
	ember__threadtab *n = ember__threadtab_new(old->cap * 2);
	if (!n)
		return EMBER_ERR_NOMEM;
	for (size_t i = 0; i < t->nrecs; i++) {
		ember__thread_ent *oe = ember__threadtab_find(old, t->recs[i].tid);
		ember__thread_ent *ne = ember__threadtab_insert(n, t->recs[i].tid);
		if (oe && ne) {
			ember__threadtab_set_bounds(ne, atomic_load(&oe->lo), atomic_load(&oe->hi));
			atomic_store(&ne->perf_last, atomic_load(&oe->perf_last));
			atomic_store(&ne->perf_ring, atomic_load(&oe->perf_ring));
			atomic_store(&ne->perf_fd1, atomic_load(&oe->perf_fd1));
			atomic_store(&ne->wall_cpu_ns, atomic_load(&oe->wall_cpu_ns));
			atomic_store(&ne->wall_seq, atomic_load(&oe->wall_seq));
			atomic_store(&ne->wall_last_seq, atomic_load(&oe->wall_last_seq));
			atomic_store(&ne->wall_last_ns, atomic_load(&oe->wall_last_ns));
		}
	}
	atomic_store_explicit(&t->sig->tab, n, memory_order_release);
	t->tab = n;
	/* Handlers may still read the old table; free it once none runs. */
	if (t->nretired < sizeof(t->retired) / sizeof(*t->retired))
		t->retired[t->nretired++] = old;
	else if (ember__sigpath_quiesce())
		ember__threadtab_free(old);
	/* else: leak rather than free memory a handler may read */
	return 0;
}

static ember__thread_ent *table_entry(ember__threads *t, int32_t tid)
{
	ember__thread_ent *e = ember__threadtab_insert(t->tab, tid);
	if (!e && grow_table(t) == 0)
		e = ember__threadtab_insert(t->tab, tid);
	if (!e)
		atomic_fetch_add_explicit(&t->table_full, 1, memory_order_relaxed);
	return e;
}

static int64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int bounds_from_sp(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e,
			  uintptr_t sp, uintptr_t self);

int ember__queue_signal(pid_t pid, int32_t tid, int signo, union sigval value)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = signo;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value = value;
	return (int)syscall(SYS_rt_tgsigqueueinfo, pid, tid, signo, &si);
}

static void send_probe(ember__threads *t, ember__thread_rec *r)
{
	if (t->suspended) { /* sent by the next poll if the exec fails */
		r->bounds = BOUNDS_PROBED;
		return;
	}
	/* A thread blocked in a system call is not signalled (its call would
	 * return EINTR): the kernel tells its stack pointer (wall_remote.h),
	 * and the stack's mapping bounds it - up to the mapping's end, which
	 * holds the thread's TCB above the stack, mapped as well. */
	long nr;
	uintptr_t sp, pc;
	ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
	if (e && ember__wall_blocked_in(r->tid, &nr, &sp, &pc) == 1 &&
	    bounds_from_sp(t, r, e, sp, 0) == 0)
		return;
	union sigval v;
	memset(&v, 0, sizeof(v));
	v.sival_int = EMBER_PROBE_MAGIC;
	if (ember__queue_signal(t->pid, r->tid, t->signo, v) == 0)
		r->bounds = BOUNDS_PROBED;
	else
		r->bounds = BOUNDS_FAILED; /* thread gone; the next scan forgets it */
	r->probe_tries++;
}

/* Registers a thread seen from outside (scan/start): timer, then probe. */
static void adopt_thread(ember__threads *t, int32_t tid)
{
	ember__thread_rec *r = rec_add(t, tid);
	if (!r)
		return;
	r->seen_gen = t->gen;
	r->wall_last = mono_now();
	ember__thread_ent *e = table_entry(t, tid);
	if (!e)
		return;
	atomic_store_explicit(&e->wall_seq, 0, memory_order_release); /* a reused entry */
	atomic_store_explicit(&e->wall_last_seq, 0, memory_order_release);
	atomic_store_explicit(&e->wall_want_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&e->probe_self, 0, memory_order_relaxed);
	atomic_store_explicit(&e->wall_last_ns, r->wall_last, memory_order_relaxed);
	ember__threads_arm_thread(t, r, e);
	send_probe(t, r);
}

/*
 * Is tid, not sampled yet, one of emberprof's own threads (named
 * "emberprof" or "emberprof-..." by engine/thread_start.c before it runs
 * anything)? One
 * read of its comm when first seen; the answer is kept while scans see
 * the thread (a tid the kernel reuses later is asked again). With more
 * than the table holds, the comm is read at each scan.
 */
static int is_ours(ember__threads *t, int32_t tid)
{
	size_t n = sizeof(t->ours) / sizeof(t->ours[0]), free_slot = n;
	for (size_t i = 0; i < n; i++) {
		if (t->ours[i].tid == tid && t->ours[i].seen_gen + 1 >= t->gen) {
			t->ours[i].seen_gen = t->gen;
			return 1;
		}
		if (free_slot == n && (t->ours[i].tid == 0 || t->ours[i].seen_gen + 1 < t->gen))
			free_slot = i;
	}
	/* our names: "emberprof" and "emberprof-..." (never a program's
	 * main thread: emberprof_demo's threads are the program's) */
	char comm[32];
	if (tid == t->pid || ember__read_task_file(tid, "comm", comm, sizeof(comm)) < 0)
		return 0;
	comm[strcspn(comm, "\n")] = 0;
	if (strcmp(comm, "emberprof") != 0 && strncmp(comm, "emberprof-", 10) != 0)
		return 0;
	if (free_slot < n) {
		t->ours[free_slot].tid = tid;
		t->ours[free_slot].seen_gen = t->gen;
	}
	return 1;
}

static void forget_thread(ember__threads *t, ember__thread_rec *r)
{
	/* On the exiting thread itself (exit hook) its clock still reads. */
	uint64_t now = r->blocks_signal >= 2 ? ember__thread_cpu_ns(r->tid) : 0;
	if (r->blocked_cpu_at && now > r->blocked_cpu_at) {
		r->unsampled_ns += now - r->blocked_cpu_at;
		atomic_fetch_add_explicit(&t->unsampled_cpu_ns, now - r->blocked_cpu_at,
					  memory_order_relaxed);
	}
	if (r->unsampled_ns && r->comm[0])
		ember__threads_note_blocked(t, r, 1);
	if (r->has_timer)
		timer_delete(r->timer);
	ember__threads_drop_perf(t, r);
	ember__threads_measure_tail(t, r, 0);
	ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
	if (e) {
		ember__threadtab_set_bounds(e, 0, 0);
		/* a thread that reuses the id has no sleeping sample to repeat */
		atomic_store_explicit(&e->wall_seq, 0, memory_order_release);
		atomic_store_explicit(&e->wall_last_seq, 0, memory_order_release);
		/* time left to a CPU sample that never came (engine_wall.h) */
		if (atomic_exchange(&e->wall_want_ns, 0) > 0 && t->sig)
			atomic_fetch_add_explicit(&t->sig->wall_want_lost, 1, memory_order_relaxed);
	}
	rec_remove(t, r);
}

/*
 * Derives bounds from a probe answer. The live stack [sp, top) is mapped,
 * so the mapping holding sp extends at least to the top. For a glibc
 * thread, pthread_self() (the thread's TCB) sits at the top of the same
 * mapping, just above the stack: it bounds the stack exactly. For the main
 * thread it lies elsewhere, and the "[stack]" mapping's end is the top.
 */
/* Sets the bounds of the stack holding sp (self: the thread's TCB if
 * known, else 0). 0, or -1 if no mapping holds sp. */
static int bounds_from_sp(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e,
			  uintptr_t sp, uintptr_t self)
{
	(void)t;
	ember__procmap m;
	char path[32];
	if (ember__procmaps_self_find(sp, &m, path, sizeof(path)) != 0)
		return -1;
	uintptr_t lo = m.start, hi = m.end;
	if (self > sp && self < m.end) {
		hi = self;
	} else if (!strcmp(path, "[stack]")) {
		/* The main stack grows down past the mapping's current start. */
		struct rlimit rl;
		uintptr_t room = 64u << 20;
		if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur < ((uintptr_t)1 << 30))
			room = rl.rlim_cur;
		lo = hi > room ? hi - room : 0;
	}
	ember__threadtab_set_bounds(e, lo, hi);
	r->bounds = BOUNDS_KNOWN;
	return 0;
}

static void resolve_probe(ember__threads *t, ember__thread_rec *r, ember__thread_ent *e)
{
	uintptr_t sp = atomic_load_explicit(&e->probe_sp, memory_order_acquire);
	uintptr_t self = atomic_load_explicit(&e->probe_self, memory_order_relaxed);
	if (bounds_from_sp(t, r, e, sp, self) != 0) {
		r->bounds = BOUNDS_FAILED;
		atomic_fetch_add_explicit(&t->probe_failures, 1, memory_order_relaxed);
	}
}

/* ---- scanning ---- */

/*
 * Opens /proc/self/task and moves its descriptor to 256 or above. A
 * program that closes a low descriptor and then dup2()s onto it (shells
 * do, for redirections) can lose it to another thread's open() in
 * between; keeping our long-lived descriptor out of the low range keeps
 * it out of such races.
 */
static DIR *open_tasks(void)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 256);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static void scan_tasks(ember__threads *t)
{
	/* One directory stream for the registry's life, rewound per scan:
	 * no open() per scan, and its descriptor sits high (see open_tasks). */
	DIR *d = t->tasks;
	if (!d)
		return;
	/* A program that closed every descriptor (a daemon) took ours: a scan
	 * would find no thread and forget them all. Reopen, and leave the
	 * number alone: it may be the program's now (util/ownfd.h). */
	if (!ember__ownfd_is_path(dirfd(d), "/proc/self/task")) {
		ember__ownfd_abandon_dir(d);
		t->tasks = d = open_tasks();
		atomic_fetch_add_explicit(&t->fd_reopens, 1, memory_order_relaxed);
		if (!d)
			return;
	}
	rewinddir(d);
	t->gen++;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0 || tid == t->agent_tid || tid == t->excluded_tid)
			continue;
		ember__thread_rec *r = rec_find(t, (int32_t)tid);
		if (r)
			r->seen_gen = t->gen;
		else if (!is_ours(t, (int32_t)tid))
			adopt_thread(t, (int32_t)tid);
	}
	for (size_t i = t->nrecs; i-- > 0;)
		if (t->recs[i].seen_gen != t->gen)
			forget_thread(t, &t->recs[i]);
	for (size_t i = 0; i < t->nrecs; i++)
		ember__threads_check_blocked(t, &t->recs[i]);
}

void ember__threads_poll(ember__threads *t, int scan)
{
	pthread_mutex_lock(&t->mu);
	/* After stop, a scan would adopt every thread again: new timers and
	 * probes whose signals could land after the disposition is restored. */
	if (t->stopped || t->suspended) {
		pthread_mutex_unlock(&t->mu);
		return;
	}
	if (scan)
		scan_tasks(t);
	if (t->perf)
		ember__threads_check_perf(t, scan);
	for (size_t i = 0; i < t->nrecs; i++) {
		ember__thread_rec *r = &t->recs[i];
		if (r->bounds != BOUNDS_PROBED)
			continue;
		ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
		if (e && atomic_load_explicit(&e->probe_sp, memory_order_acquire))
			resolve_probe(t, r, e);
		else if (r->probe_tries < 50)
			send_probe(t, r); /* lost or blocked; ask again */
		else
			r->bounds = BOUNDS_FAILED;
	}
	pthread_mutex_unlock(&t->mu);
}

static int probes_pending(ember__threads *t)
{
	int n = 0;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->nrecs; i++)
		n += t->recs[i].bounds == BOUNDS_PROBED;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* ---- lifecycle ---- */

static int arm_process_timer(ember__threads *t)
{
	struct itimerval it;
	it.it_interval.tv_sec = t->period_ns / 1000000000;
	it.it_interval.tv_usec = (t->period_ns % 1000000000) / 1000;
	if (it.it_interval.tv_sec == 0 && it.it_interval.tv_usec == 0)
		it.it_interval.tv_usec = 1;
	it.it_value = it.it_interval;
	return setitimer(ITIMER_PROF, &it, NULL);
}

static void disarm_process_timer(void)
{
	struct itimerval off;
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_PROF, &off, NULL);
}

EMBER_HOT_TEXT static void atfork_prepare(void)
{
	ember__threads *t = atomic_load(&g_threads);
	if (t)
		pthread_mutex_lock(&t->mu);
}

EMBER_HOT_TEXT static void atfork_parent(void)
{
	ember__threads *t = atomic_load(&g_threads);
	if (t)
		pthread_mutex_unlock(&t->mu);
}

EMBER_HOT_TEXT static void atfork_child(void)
{
	/* First, a plain store: the handler asks the kernel for this thread's
	 * id again, the child's, which no entry of the thread table has. A
	 * signal handled in the child before this (ThreadSanitizer delivers
	 * signals it deferred in the parent at the child's first atomic
	 * operation, below) found the parent thread's entry, read the perf
	 * ring it names, which is not mapped here (VM_DONTCOPY), and crashed
	 * the child (it_lifecycle beside two CPU hogs: SIGSEGV in
	 * ember__kring_take under atfork_child). */
	ember__sigpath_forget_tid();
	/* The child has no timers and no agent thread: sampling is off there.
	 * Unlock the copy of the mutex so nothing in the child can deadlock. */
	ember__threads *t = atomic_exchange(&g_threads, NULL);
	if (t) {
		pthread_mutex_unlock(&t->mu);
		/* The child's copies of the perf descriptors: closing them only
		 * drops references; the parent's events are untouched. */
		for (size_t i = 0; i < t->nrecs; i++) {
			t->recs[i].perf_ring = NULL; /* not mapped here: VM_DONTCOPY */
			if (t->recs[i].perf_fd1)
				ember__threads_close_perf(t, &t->recs[i]);
		}
	}
	ember__sigpath_forget();
}

static pthread_once_t atfork_once EMBER_HOT_DATA = PTHREAD_ONCE_INIT;
EMBER_HOT_TEXT static void install_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

EMBER_HOT_TEXT void ember__threads_atfork_init(void)
{
	pthread_once(&atfork_once, install_atfork);
}

int ember__threads_ring_error(ember__threads *t, char *why, size_t n)
{
	pthread_mutex_lock(&t->mu);
	int any = t->ring_error[0] != 0;
	if (any)
		snprintf(why, n, "%s", t->ring_error);
	pthread_mutex_unlock(&t->mu);
	return any;
}

size_t ember__threads_count(ember__threads *t)
{
	pthread_mutex_lock(&t->mu);
	size_t n = t->nrecs;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void ember__threads_catch_up_from(pid_t pid, uint64_t cpu0_ns)
{
	atomic_store(&g_catch_cpu0, cpu0_ns);
	atomic_store(&g_catch_pid, pid);
}

size_t ember__threads_take_early(ember__threads *t, ember__early_cpu *out)
{
	pthread_mutex_lock(&t->mu);
	size_t n = t->nearly;
	memcpy(out, t->early, n * sizeof(*out));
	t->nearly = 0;
	pthread_mutex_unlock(&t->mu);
	return n;
}

int ember__threads_start(ember__threads *t, ember__sigstate *sig, int signo, int64_t period_ns,
			 int engine, int perf_refuse, int kernel, int32_t agent_tid)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	pthread_mutex_init(&t->gate, NULL);
	t->sig = sig;
	t->signo = signo;
	t->period_ns = period_ns;
	t->agent_tid = agent_tid;
	t->pid = getpid();
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	t->rng = ((uint64_t)now.tv_nsec << 20) ^ (uint64_t)now.tv_sec ^ ((uint64_t)t->pid << 40) ^ 1;
	t->tab = ember__threadtab_new(1024);
	if (!t->tab)
		return ember__error_oom("thread table");
	atomic_store_explicit(&sig->tab, t->tab, memory_order_release);

	int erc = ember__threads_choose_engine(t, engine, perf_refuse);
	if (erc)
		return erc;
	t->kernel_frames = kernel && t->perf && !t->perf_exclude_kernel;
	if (t->process_timer && signo != SIGPROF)
		return ember__error(EMBER_ERR_INVALID,
				    "the process-wide timer engine can only use SIGPROF, not signal %d",
				    signo);
	atomic_store_explicit(&sig->accept_itimer, t->process_timer, memory_order_release);
	atomic_store_explicit(&sig->accept_perf, t->perf, memory_order_release);
	atomic_store_explicit(&sig->period_ns, period_ns, memory_order_release);

	t->tasks = open_tasks();
	if (!t->tasks)
		return ember__error_errno(EMBER_ERR_SYS, errno, "cannot open /proc/self/task");

	pthread_once(&atfork_once, install_atfork);
	pid_t mark = t->pid;
	if (atomic_compare_exchange_strong(&g_catch_pid, &mark, 0)) { /* this start only */
		t->catch_up = 1;
		t->catch_cpu0_ns = atomic_load(&g_catch_cpu0);
	}
	pthread_mutex_lock(&t->mu);
	atomic_store(&g_threads, t);
	scan_tasks(t);
	t->catch_up = 0; /* threads created from now on are armed as they start */
	pthread_mutex_unlock(&t->mu);

	if (!t->process_timer && t->timer_failures && t->threads_seen == t->timer_failures) {
		ember__threads_stop(t);
		return ember__error(EMBER_ERR_SYS, "cannot create per-thread %s: %s",
				    t->perf ? "perf events" : "CPU timers", t->first_error);
	}
	if (t->process_timer) {
		if (arm_process_timer(t) != 0) {
			int e = errno;
			ember__threads_stop(t);
			return ember__error_errno(EMBER_ERR_SYS, e, "setitimer(ITIMER_PROF)");
		}
	}
	t->hook_active = ember__threads_hooked(t);
	/* Threads that run answer the probe within microseconds; give them a
	 * moment so their first samples already have full stacks. */
	for (int i = 0; i < 20 && probes_pending(t); i++) {
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
		ember__threads_poll(t, 0);
	}
	return 0;
}

void ember__threads_stop(ember__threads *t)
{
	if (atomic_load(&g_threads) == t)
		atomic_store(&g_threads, NULL);
	if (t->process_timer)
		disarm_process_timer();
	pthread_mutex_lock(&t->mu);
	t->stopped = 1;
	int own = t->pid == getpid();
	for (size_t i = 0; i < t->nrecs; i++)
		if (t->recs[i].has_timer && own)
			timer_delete(t->recs[i].timer);
	/* perf events: unpublish every descriptor (a handler that starts now
	 * ignores its signal), stop the events, wait for handlers that may
	 * have read a descriptor before, and only then close: the number may
	 * be reused by the application at once. Closing also waits for the
	 * kernel's pending signal work, so no signal can follow. */
	int any_perf = 0;
	for (size_t i = 0; i < t->nrecs; i++) {
		ember__thread_rec *r = &t->recs[i];
		if (!r->perf_fd1)
			continue;
		any_perf = 1;
		ember__thread_ent *e = t->tab ? ember__threadtab_find(t->tab, r->tid) : NULL;
		if (e)
			atomic_store_explicit(&e->perf_fd1, 0, memory_order_seq_cst);
		if (own && ember__perf_is_ours(r->perf_fd1 - 1, t->signo, r->perf_id))
			ember__perf_disable(r->perf_fd1 - 1);
	}
	if (any_perf && own)
		ember__sigpath_quiesce();
	for (size_t i = 0; i < t->nrecs; i++)
		if (t->recs[i].perf_fd1)
			ember__threads_close_perf(t, &t->recs[i]);
	for (size_t i = 0; i < t->nrecs && own; i++)
		ember__threads_measure_tail(t, &t->recs[i], 0);
	t->nrecs = 0;
	pthread_mutex_unlock(&t->mu);
}

void ember__threads_set_tcb(ember__threads *t, int32_t tid, uintptr_t self)
{
	pthread_mutex_lock(&t->mu);
	ember__thread_ent *e = t->tab ? ember__threadtab_find(t->tab, tid) : NULL;
	if (e && !atomic_load_explicit(&e->probe_self, memory_order_relaxed))
		atomic_store_explicit(&e->probe_self, self, memory_order_relaxed);
	pthread_mutex_unlock(&t->mu);
}

void ember__threads_exclude(ember__threads *t, int32_t tid)
{
	pthread_mutex_lock(&t->mu);
	t->excluded_tid = tid;
	ember__thread_rec *r = rec_find(t, tid);
	if (r)
		forget_thread(t, r);
	pthread_mutex_unlock(&t->mu);
}

/*
 * The sequence number of thread `tid`'s last wall sample if it was asleep
 * then and has not run since - its CPU time (the kernel's, read through
 * the thread's CPU clock, a system call) has moved by at most
 * EMBER__WALL_IDLE_CPU_NS since the end of that sample - else 0.
 */
static uint32_t still_asleep(ember__threads *t, int32_t tid)
{
	ember__thread_ent *e = ember__threadtab_find(t->tab, tid);
	if (!e)
		return 0;
	uint32_t seq = atomic_load_explicit(&e->wall_seq, memory_order_acquire);
	if (!seq)
		return 0;
	uint64_t then = atomic_load_explicit(&e->wall_cpu_ns, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->wall_seq, memory_order_relaxed) != seq)
		return 0; /* a new sample is being noted: sample again */
	uint64_t now = ember__thread_cpu_ns(tid);
	if (!now)
		return 0;
	return now >= then && now - then <= EMBER__WALL_IDLE_CPU_NS ? seq : 0;
}

/* Whether thread r gets CPU sampling signals of its own: a per-thread
 * timer or perf event armed, and the signal not really blocked by it
 * (threads_blocked.c). Not with the process timer, whose signals go to
 * whichever thread the kernel picks. `mu` held. */
static int gets_cpu_signals(const ember__threads *t, const ember__thread_rec *r)
{
	return !t->process_timer && !t->stopped && !atomic_load(&t->suspended) && r->armed &&
	       !r->parked && (r->has_timer || r->perf_fd1) && r->blocks_signal < 2 && !r->own;
}

size_t ember__threads_wall_pick(ember__threads *t, int64_t now_ns, int skip_idle, int32_t *tids,
				int64_t *weights_ns, uint32_t *repeat_seq, uint8_t *cpu_signals,
				size_t max, size_t *nthreads)
{
	size_t idx[EMBER__WALL_MAX_PER_TICK];
	if (max > EMBER__WALL_MAX_PER_TICK)
		max = EMBER__WALL_MAX_PER_TICK;
	pthread_mutex_lock(&t->mu);
	size_t n = ember__wall_pick(t->recs, sizeof(*t->recs), t->nrecs, &t->wall_cursor, max, idx);
	for (size_t i = 0; i < n; i++) {
		ember__thread_rec *r = &t->recs[idx[i]];
		tids[i] = r->tid;
		/* For a signal, what the handler uses if it cannot find the
		 * thread's entry (it weighs its own time since the last sample). */
		weights_ns[i] = now_ns > r->wall_last ? now_ns - r->wall_last : 0;
		r->wall_last = now_ns;
		repeat_seq[i] = skip_idle ? still_asleep(t, r->tid) : 0;
		cpu_signals[i] = (uint8_t)gets_cpu_signals(t, r);
		if (repeat_seq[i]) {
			/* no handler runs: the repeat takes the time since the
			 * thread's last wall sample, as a handler would */
			ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
			int64_t last = e ? atomic_exchange(&e->wall_last_ns, now_ns) : r->wall_last;
			weights_ns[i] = last > 0 && now_ns > last ? now_ns - last : 0;
		}
	}
	*nthreads = t->nrecs;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void ember__threads_release(ember__threads *t)
{
	for (unsigned i = 0; i < t->nretired; i++)
		ember__threadtab_free(t->retired[i]);
	t->nretired = 0;
	ember__threadtab_free(t->tab);
	t->tab = NULL;
	free(t->recs);
	t->recs = NULL;
	pthread_mutex_destroy(&t->gate);
	if (t->tasks && ember__ownfd_is_path(dirfd(t->tasks), "/proc/self/task"))
		closedir(t->tasks);
	else
		ember__ownfd_abandon_dir(t->tasks);
	t->tasks = NULL;
	t->nrecs = t->caprecs = 0;
	pthread_mutex_destroy(&t->mu);
}

/* ---- exec ---- */

/* pthread_mutex_lock with a bounded wait (~200 ms): an exec from a signal
 * handler that interrupted the holder must not hang. */
static int lock_bounded(pthread_mutex_t *m)
{
	for (int i = 0; i < 200; i++) {
		if (pthread_mutex_trylock(m) == 0)
			return 1;
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
	}
	return 0;
}

enum { EXEC_SUSPENDED = 1, EXEC_GATE = 2, EXEC_SIG_SHIFT = 8 };

EMBER_HOT_TEXT int ember__threads_exec_begin(void)
{
	ember__threads *t = atomic_load(&g_threads);
	/* A vfork child shares our memory but not our timers: touch nothing. */
	if (!t || t->pid != (pid_t)syscall(SYS_getpid))
		return 0;
	int gate = lock_bounded(&t->gate);
	if (!lock_bounded(&t->mu)) {
		if (gate)
			pthread_mutex_unlock(&t->gate);
		return 0;
	}
	if (t->stopped || t->suspended) {
		pthread_mutex_unlock(&t->mu);
		if (gate)
			pthread_mutex_unlock(&t->gate);
		return 0;
	}
	t->suspended = 1;
	if (t->process_timer)
		disarm_process_timer();
	int any_perf = 0;
	for (size_t i = 0; i < t->nrecs; i++) {
		ember__thread_rec *r = &t->recs[i];
		if (r->has_timer) {
			timer_delete(r->timer);
			r->has_timer = 0;
			r->parked = 1;
		}
		if (r->perf_fd1) {
			ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
			if (e)
				atomic_store_explicit(&e->perf_fd1, 0, memory_order_seq_cst);
			if (ember__perf_is_ours(r->perf_fd1 - 1, t->signo, r->perf_id))
				ember__perf_disable(r->perf_fd1 - 1);
			any_perf = 1;
			r->parked = 1;
		}
	}
	/* As at stop: no handler may still use a descriptor we close, and the
	 * close waits for the kernel's pending signal work. */
	if (any_perf)
		ember__sigpath_quiesce();
	for (size_t i = 0; i < t->nrecs; i++)
		if (t->recs[i].perf_fd1)
			ember__threads_close_perf(t, &t->recs[i]);
	pthread_mutex_unlock(&t->mu);
	int sig = ember__sigvirt_exec_prepare();
	return EXEC_SUSPENDED | (gate ? EXEC_GATE : 0) | (sig << EXEC_SIG_SHIFT);
}

EMBER_HOT_TEXT void ember__threads_exec_end(int state)
{
	ember__threads *t = atomic_load(&g_threads);
	if (!(state & EXEC_SUSPENDED) || !t)
		return;
	struct sigaction ours;
	ember__sigpath_our_action(&ours);
	ember__sigvirt_exec_undo(state >> EXEC_SIG_SHIFT, &ours);
	pthread_mutex_lock(&t->mu);
	t->suspended = 0;
	for (size_t i = 0; i < t->nrecs; i++) {
		ember__thread_rec *r = &t->recs[i];
		if (!r->parked)
			continue;
		r->parked = 0;
		ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
		int rc = t->perf ? (e ? ember__threads_arm_perf(t, r, e) : -ENOENT)
				 : ember__threads_arm_timer(t, r);
		if (rc)
			ember__threads_note_timer_failure(t, r->tid, -rc);
	}
	if (t->process_timer && arm_process_timer(t) != 0)
		ember__threads_note_timer_failure(t, 0, errno);
	pthread_mutex_unlock(&t->mu);
	if (state & EXEC_GATE)
		pthread_mutex_unlock(&t->gate);
}

int ember__threads_gate_enter(ember__threads *t)
{
	pthread_mutex_lock(&t->gate);
	if (t->suspended) {
		pthread_mutex_unlock(&t->gate);
		return 0;
	}
	return 1;
}

void ember__threads_gate_leave(ember__threads *t)
{
	pthread_mutex_unlock(&t->gate);
}

/* ---- hook side: a new thread registers itself ---- */

void ember__threads_on_start(void)
{
	ember__threads *t = atomic_load(&g_threads);
	if (!t)
		return;
	int32_t tid = (int32_t)gettid();
	uintptr_t lo = 0, hi = 0;
	pthread_attr_t attr;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		void *addr;
		size_t size;
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			lo = (uintptr_t)addr;
			hi = lo + size;
		}
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_lock(&t->mu);
	if (atomic_load(&g_threads) == t) {
		ember__thread_rec *r = rec_add(t, tid);
		ember__thread_ent *e = r ? table_entry(t, tid) : NULL;
		if (r && e) {
			atomic_store_explicit(&e->wall_seq, 0, memory_order_release);
			atomic_store_explicit(&e->wall_last_seq, 0, memory_order_release);
			atomic_store_explicit(&e->wall_want_ns, 0, memory_order_relaxed);
			/* its TCB, where wall_remote.c finds its labels and poll */
			atomic_store_explicit(&e->probe_self, (uintptr_t)pthread_self(),
					      memory_order_relaxed);
			r->seen_gen = t->gen;
			if (!r->wall_last)
				r->wall_last = mono_now();
			atomic_store_explicit(&e->wall_last_ns, r->wall_last, memory_order_relaxed);
			if (hi) {
				ember__threadtab_set_bounds(e, lo, hi);
				r->bounds = BOUNDS_KNOWN;
			}
			ember__threads_arm_thread(t, r, e);
			if (!hi)
				send_probe(t, r);
		}
	}
	pthread_mutex_unlock(&t->mu);
}

/*
 * An exiting thread's wall time since its last wall sample, which no tick
 * will weigh any more (lock held, on the thread itself, before its bounds
 * are cleared): that sample again, in its state (under one wall interval
 * ago: the best estimate of where the thread spent it). A thread that has
 * no wall sample yet gets a one-frame sample of its start routine
 * (`start_pc`, from the pthread_create hook), or if that is not known (0)
 * one of its own through the handler (a signal to itself, delivered before
 * this call returns unless it blocks the signal; its stack shows this hook).
 */
static void wall_final_sample(ember__threads *t, int32_t tid, uintptr_t start_pc)
{
	ember__thread_ent *e = ember__threadtab_find(t->tab, tid);
	if (!e)
		return;
	/* The time since its last wall sample goes to that sample's stack
	 * (asleep, or running where it was last seen): a sample taken now
	 * would show this hook, which the program did not run. Only a thread
	 * never sampled yet is sampled here. */
	if (ember__wall_record_last(t->sig, e, tid, start_pc))
		return;
	union sigval v = {.sival_ptr = (void *)(uintptr_t)EMBER_WALL_VALUE(0)};
	ember__queue_signal(t->pid, tid, t->signo, v);
}

void ember__threads_on_exit(uintptr_t start_pc)
{
	ember__threads *t = atomic_load(&g_threads);
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	if (atomic_load(&g_threads) == t) {
		ember__thread_rec *r = rec_find(t, (int32_t)gettid());
		if (r && t->wall_final)
			wall_final_sample(t, r->tid, start_pc);
		if (r)
			forget_thread(t, r);
		/* Its name, for samples the agent drains after it is gone. */
		unsigned k = t->ngone++ % (sizeof(t->gone) / sizeof(t->gone[0]));
		char name[16] = "";
		if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && name[0]) {
			t->gone[k].tid = (int32_t)gettid();
			memcpy(t->gone[k].name, name, sizeof(name));
			t->gone[k].name[sizeof(name) - 1] = '\0';
		} else {
			t->gone[k].tid = 0;
		}
	}
	pthread_mutex_unlock(&t->mu);
}

int ember__threads_gone_name(ember__threads *t, int32_t tid, char *buf, size_t len)
{
	int found = 0;
	buf[0] = '\0';
	pthread_mutex_lock(&t->mu);
	unsigned cap = sizeof(t->gone) / sizeof(t->gone[0]);
	for (unsigned i = 0; i < cap && !found; i++) {
		unsigned k = (t->ngone + cap - 1 - i) % cap; /* newest first: a reused tid */
		if (t->gone[k].tid == tid && tid != 0) {
			snprintf(buf, len, "%s", t->gone[k].name);
			found = 1;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}
