/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads_blocked.c - threads that really block the sampling signal
 * (their /proc SigBlk; the program's blocking through emberprof's
 * wrappers is virtual and does not count: src/sample/sigvirt.h) are
 * never sampled: their CPU time is measured from one scan to the next
 * and reported (threads_internal.h, ember__threads_take_blocked).
 * Also the CPU of every sampled thread that no sample weighs, measured
 * when it leaves or sampling stops (ember__threads_measure_tail).
 */
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

/* CPU time a thread whose mask blocks the sampling signal may use beyond
 * what its signals covered before it counts as blocking it (see
 * ember__threads_check_blocked). */
#define EMBER_BLOCKED_DEBT_NS 2000000000ull

/* Is this the name of one of emberprof's own threads ("emberprof", or
 * "emberprof-" and a role)? Not a program that is itself called
 * emberprof_something (the demo), whose threads take its name. A name
 * read from /proc ends with a newline. */
static int own_name(const char *name)
{
	if (strncmp(name, "emberprof", 9) != 0)
		return 0;
	return name[9] == '\0' || name[9] == '\n' || name[9] == '-';
}

void ember__threads_note_blocked(ember__threads *t, const ember__thread_rec *r, int gone)
{
	if (t->nnotes >= sizeof(t->notes) / sizeof(t->notes[0]))
		return; /* the totals still count it */
	ember__blocked_note *n = &t->notes[t->nnotes++];
	n->tid = r->tid;
	n->gone = gone;
	memcpy(n->comm, r->comm, sizeof(n->comm));
	n->unsampled_ns = r->unsampled_ns;
}

int ember__thread_cpu_read(int32_t tid, uint64_t *ns)
{
	struct timespec ts;
	clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6u); /* as in ember__threads_arm_timer */
	if (clock_gettime(clk, &ts) != 0)
		return -1;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

uint64_t ember__thread_cpu_ns(int32_t tid)
{
	uint64_t ns = 0;
	return ember__thread_cpu_read(tid, &ns) == 0 ? ns : 0;
}

/* Whether thread `tid` really blocks signal `signo` (its SigBlk line in
 * /proc): 1, 0, or -1 if it cannot be read (the thread is gone). */
static int task_blocks(int32_t tid, int signo)
{
	char buf[2048];
	if (ember__read_task_file(tid, "status", buf, sizeof(buf)) < 0)
		return -1;
	const char *p = strstr(buf, "\nSigBlk:");
	if (!p)
		return -1;
	unsigned long long mask = strtoull(p + 8, NULL, 16);
	return signo >= 1 && signo <= 64 && ((mask >> (signo - 1)) & 1) ? 1 : 0;
}

/*
 * A thread that really blocks the sampling signal is never sampled: its
 * CPU time from one scan to the next is counted instead, and the agent
 * warns about it. (Through emberprof's wrappers a program's blocking is
 * virtual and the thread stays sampled: src/sample/sigvirt.h.)
 */
void ember__threads_check_blocked(ember__threads *t, ember__thread_rec *r)
{
	if (t->process_timer)
		return; /* SIGPROF from ITIMER_PROF goes to any thread that takes it */
	if (r->own)
		return;
	int b = task_blocks(r->tid, t->signo);
	if (b < 0)
		return;
	uint64_t cpu = ember__thread_cpu_ns(r->tid);
	ember__thread_ent *e = ember__threadtab_find(t->tab, r->tid);
	uint64_t sig_ns = e ? atomic_load_explicit(&e->cpu_signal_ns, memory_order_relaxed) : 0;
	uint64_t dcpu = r->scan_cpu && cpu > r->scan_cpu ? cpu - r->scan_cpu : 0;
	uint64_t covered = sig_ns - r->scan_signal_ns;
	/* Its CPU time since the last scan against the CPU time the sampling
	 * signals delivered to it since then stand for, as a running balance:
	 * a thread whose mask shows the signal blocked but whose signals keep
	 * covering its CPU blocks it only for moments or stretches (glibc's
	 * raise() blocks every signal around its tgkill, pthread_create
	 * around the clone and while it waits for the loader's lock; a timer
	 * signal that fell due meanwhile is delivered at the unblock,
	 * expirations merged into it counted as overruns), not a thread that
	 * blocks it, which gets no signal and whose balance only grows.
	 * Delivered, not recorded: a sample dropped because the buffer was
	 * full (the agent thread starved on a loaded machine) still shows
	 * the signal got through. A balance, not scan by scan: the kernel
	 * notices a CPU timer's expirations at a tick that finds the thread
	 * running, late and in lumps under heavy contention (a thread
	 * blocking for 30 ms of CPU at a time, 5 busy loops on 2 CPUs: scans
	 * covering 0 %, then 36 %, then 250 % of their CPU, 99 % in all),
	 * and the rule "half of each scan's CPU" warned about it. */
	uint64_t debt = r->scan_debt + dcpu;
	debt = debt > covered ? debt - covered : 0;
	r->scan_debt = b ? debt : 0;
	int sampled = r->scan_cpu && debt < EMBER_BLOCKED_DEBT_NS;
	/* Nor is a thread that used under one period of CPU since: nothing
	 * went unsampled, and a blocked mask seen then proves nothing (the
	 * 30-minute soak's one false warning: "0.00 s of CPU not sampled"). */
	int idle = r->scan_cpu && dcpu < (uint64_t)t->period_ns;
	r->scan_cpu = cpu;
	r->scan_signal_ns = sig_ns;
	if (sampled)
		b = 0;
	/* its CPU clock for the count of unsampled CPU: on the first scan of
	 * a streak, back by the balance, which no signal covered either */
	uint64_t now = !b ? 0 : r->blocks_signal ? cpu : cpu > debt ? cpu - debt : 1;
	/* scans in a row that saw it (an idle one neither counts nor resets) */
	int seen = !b ? 0 : idle ? r->blocks_signal : r->blocks_signal + 1;
	/* Seen on two scans in a row before the agent is told: a thread is
	 * blocked for a moment inside our handler (the kernel blocks the
	 * signal it is delivering) and while the agent starts its own threads
	 * with every signal blocked; neither is a thread that blocks it. */
	if (seen >= 2 && !r->comm[0]) { /* first time: tell the agent */
		if (ember__read_task_file(r->tid, "comm", r->comm, sizeof(r->comm)) < 0)
			r->comm[0] = '\0';
		r->comm[strcspn(r->comm, "\n")] = '\0';
		if (!r->comm[0]) /* gone already: its id, as in profiles */
			snprintf(r->comm, sizeof(r->comm), "thread-%d", (int)r->tid);
		/* Our own helper threads (the uploader "emberprof-up", the
		 * async-profiler driver) block every signal on purpose and
		 * name themselves so: not the program's CPU, nothing to say. */
		if (own_name(r->comm)) {
			r->own = 1;
			r->blocked_cpu_at = 0;
			return;
		}
		ember__threads_note_blocked(t, r, 0);
	}
	if (seen >= 2 && r->blocked_cpu_at && cpu > r->blocked_cpu_at) {
		r->unsampled_ns += cpu - r->blocked_cpu_at;
		atomic_fetch_add_explicit(&t->unsampled_cpu_ns, cpu - r->blocked_cpu_at,
					  memory_order_relaxed);
	}
	r->blocks_signal = seen < 2 ? seen : 2;
	r->blocked_cpu_at = seen >= 2 ? cpu : now;
}

size_t ember__threads_take_blocked(ember__threads *t, ember__blocked_note *out, size_t max,
				   int live)
{
	pthread_mutex_lock(&t->mu);
	if (live)
		for (size_t i = 0; i < t->nrecs; i++)
			if (t->recs[i].unsampled_ns && t->recs[i].comm[0])
				ember__threads_note_blocked(t, &t->recs[i], 1);
	size_t n = t->nnotes < max ? t->nnotes : max;
	memcpy(out, t->notes, n * sizeof(*out));
	t->nnotes = 0;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* Is thread r one of emberprof's own (named "emberprof*"), which block
 * every signal on purpose? On the thread itself its name is at hand. */
static int is_own_thread(ember__thread_rec *r)
{
	if (r->own)
		return 1;
	char name[16] = "";
	if (r->tid == (int32_t)syscall(SYS_gettid)) {
		if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
			name[0] = '\0';
	} else if (ember__read_task_file(r->tid, "comm", name, sizeof(name)) < 0) {
		name[0] = '\0';
	}
	return own_name(name);
}

void ember__threads_measure_tail(ember__threads *t, ember__thread_rec *r, int arm)
{
	ember__thread_ent *e = t->tab ? ember__threadtab_find(t->tab, r->tid) : NULL;
	if (!e)
		return;
	uint64_t cpu = 0;
	int read = ember__thread_cpu_read(r->tid, &cpu) == 0;
	if (arm) {
		/* a clock of 0 is a thread that has not run yet (a scan found
		 * it first, on a loaded machine): measurable from 0 */
		atomic_store_explicit(&e->cpu_weight_ns, 0, memory_order_relaxed);
		r->cpu_base_ns = read ? cpu + 1 : 0;
		return;
	}
	uint64_t base = r->cpu_base_ns;
	r->cpu_base_ns = 0;
	/* Not measurable (armed before it could be read, or gone before this
	 * reads it), or out of the count: blocking threads (seen so on two
	 * scans) are reported on their own (above), and ours never take a
	 * sample. One sighting is not blocking: a thread that has not run yet
	 * has every signal blocked (glibc's pthread_create), and a scan on a
	 * loaded machine finds it so (it_tail under four CPU hogs: one of its
	 * twenty 5 ms threads left out in a third of the runs). */
	if (!base || !read || cpu + 1 < base || r->blocks_signal >= 2 || r->unsampled_ns ||
	    is_own_thread(r))
		return;
	uint64_t used = cpu + 1 - base;
	uint64_t weight = atomic_load_explicit(&e->cpu_weight_ns, memory_order_relaxed);
	/* Summed, not per thread: a short thread's one sample weighs a whole
	 * period, which stands for the short threads no sample caught (the
	 * first expiry is uniform within the first period). The soak's 149 k
	 * short threads showed 53 % "unsampled" counted per thread. */
	atomic_fetch_add_explicit(&t->tail_cpu_ns, used, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->tail_weight_ns, weight, memory_order_relaxed);
}
