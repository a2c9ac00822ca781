/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_engine.c - a process tree's CPU profiles from outside it: records
 * to processes, samples to windows, windows to reporters (tree_engine.h).
 */
#include "tree/tree_engine.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile/aggregate.h"
#include "profile/window.h"
#include "encode/pprof.h"
#include "report/otlp.h"
#include "symbols/symbolizer.h"
#include "tree/perf_tree.h"
#include "tree/tree_kernel.h"
#include "tree/tree_names.h"
#include "tree/tree_profile.h"
#include "tree/tree_space.h"
#include "util/error.h"
#include "util/hashmap.h"

#define COMM_LEN 16

typedef struct tproc {
	int32_t pid;
	char comm[COMM_LEN];
	char *exe;         /* the file it exec'd: its first executable mapping after */
	int want_exe;
	char *exe_alias;   /* the symlink it ran exe by, or NULL (tree_profile.h) */
	int alias_done;    /* exe_alias looked for since the exec */
	ember__tspace space;
	ember__agg agg;
	int64_t win_start; /* ns since the epoch: this process's window */
	uint32_t seq;
	int exited;        /* EXIT seen: reported at the end of the drain */
	int64_t exit_ns;   /* when (epoch ns): its last window's end */
	int64_t fork_mono; /* its FORK record's time (CLOCK_MONOTONIC ns), 0: none seen */
	int profiled;
	ember__symbolizer *sym;
	uint64_t sym_answered; /* names.answered() when sym was made */
	int64_t start_ns;     /* epoch ns: its fork, or when it was first seen */
	uint64_t sampled_ns;  /* CPU time its samples weigh, over its life */
	uint64_t counted_ns;  /* CPU time its exited threads used (READ records) */
} tproc;

struct ember__tree {
	ember__config *cfg;
	ember__ptree *pt;
	ember__tmods *mods;
	ember__u64map procs;   /* pid -> tproc * (0: none) */
	ember__u64map names;   /* tid -> 1 + index in tnames */
	char (*tnames)[COMM_LEN];
	size_t ntnames, captnames;
	tproc **exited;        /* processes to report and free at the end of the drain */
	size_t nexited, capexited;
	int64_t mono_to_epoch; /* add to a record's CLOCK_MONOTONIC time */
	int64_t win_start;     /* the current window (epoch ns) */
	int64_t win_end;       /* its end: a whole multiple of the interval */
	int64_t interval_ns;
	ember__tshared shared; /* the window's short-lived processes */
	uint64_t waited_ns;    /* the tree's CPU by rusage (ember__tree_set_waited) */
	uint64_t uncounted_ns; /* of it, what no event counted: the command's
				  process's last profile holds it */
	uint32_t shared_seq;
	uint64_t *pcs;
	int err;               /* the first reporter error of this step */
	int32_t top;           /* the attached process */
	int kernel;            /* kernel frames asked for (ember__tree_set_kernel) */
	int top_counted;       /* the events' total is the top's tree's (ember__tree_attach:
				  the top's own count follows from it; not with attach_task) */
	ember__tkern *kern;    /* their names, when samples carry them */
	int only_top;          /* --no-follow-children: the others' records are ignored */
	ember__tnames held;    /* profiles held for names on their way (tree_names.h) */
	ember__tree_stats st;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ember__tree_new(ember__tree **out, ember__config *cfg)
{
	ember__tree *t = calloc(1, sizeof(*t));
	if (!t)
		return ember__error_oom("tree engine");
	t->cfg = cfg;
	t->pcs = malloc((cfg->max_depth ? cfg->max_depth : 1) * sizeof(uint64_t));
	if (!t->pcs || ember__tmods_new(&t->mods)) {
		ember__tree_free(t);
		return ember__error_oom("tree engine");
	}
	t->mono_to_epoch = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	t->win_start = clock_ns(CLOCK_MONOTONIC) + t->mono_to_epoch;
	t->interval_ns = (int64_t)(cfg->interval_ms ? cfg->interval_ms : 1) * 1000000;
	/* windows end on whole multiples of the interval since the epoch, as
	 * the library's do (src/agent/agent.c): the first one is shorter */
	t->win_end = (t->win_start / t->interval_ns + 1) * t->interval_ns;
	t->shared = (ember__tshared)EMBER_TSHARED_INIT;
	t->kernel = 1;
	*out = t;
	return 0;
}

/* The kernel frames' names, when the samples carry kernel frames. */
static void kern_init(ember__tree *t)
{
	ember__ptree_stats ps;
	ember__ptree_get_stats(t->pt, &ps);
	if (ps.kernel_frames && ember__tkern_new(&t->kern) != 0)
		t->kern = NULL; /* out of memory: user frames only */
}

int ember__tree_attach(ember__tree *t, pid_t pid)
{
	ember__ptree_opts o = {t->cfg->hz, 0, 0, 0, t->kernel};
	t->top = (int32_t)pid;
	t->top_counted = 1;
	int rc = ember__ptree_open(&t->pt, pid, &o);
	if (rc == 0 && t->kernel)
		kern_init(t);
	return rc;
}

void ember__tree_set_kernel(ember__tree *t, int kernel)
{
	t->kernel = kernel;
}

int ember__tree_attach_task(ember__tree *t, pid_t tid, int threads_only)
{
	ember__ptree_opts o = {t->cfg->hz, 0, 0, 0, t->kernel};
	t->top = (int32_t)tid;
	int rc = ember__ptree_open_rings(&t->pt, &o, threads_only);
	if (rc == 0 && (rc = ember__ptree_add_task(t->pt, tid)) != 0) {
		ember__ptree_free(t->pt);
		t->pt = NULL;
	}
	if (rc == 0 && t->kernel)
		kern_init(t);
	return rc;
}

int ember__tree_add_task(ember__tree *t, pid_t tid)
{
	if (!t->pt)
		return ember__error(EMBER_ERR_INVALID, "tree engine: not attached");
	return ember__ptree_add_task(t->pt, tid);
}

void ember__tree_set_follow(ember__tree *t, int follow)
{
	t->only_top = !follow;
}

static tproc *proc_get(ember__tree *t, int32_t pid, int create)
{
	uint64_t *v = create ? ember__u64map_put(&t->procs, (uint64_t)pid, NULL)
			     : ember__u64map_get(&t->procs, (uint64_t)pid);
	if (!v)
		return NULL;
	if (*v || !create)
		return (tproc *)(uintptr_t)*v;
	tproc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->space = (ember__tspace)EMBER_TSPACE_INIT;
	ember__agg_init(&p->agg);
	p->win_start = t->win_start;
	p->start_ns = t->win_start;
	*v = (uint64_t)(uintptr_t)p;
	t->st.processes++;
	return p;
}

static void proc_free(tproc *p)
{
	free(p->exe);
	free(p->exe_alias);
	ember__tspace_release(&p->space);
	ember__agg_release(&p->agg);
	ember__symbolizer_free(p->sym);
	free(p);
}

static const char *thread_name(ember__tree *t, int32_t tid)
{
	uint64_t *v = ember__u64map_get(&t->names, (uint64_t)tid);
	return v && *v ? t->tnames[*v - 1] : NULL;
}

static void set_thread_name(ember__tree *t, int32_t tid, const char *comm)
{
	uint64_t *v = ember__u64map_put(&t->names, (uint64_t)tid, NULL);
	if (!v)
		return;
	if (!*v) {
		if (t->ntnames == t->captnames) {
			size_t cap = t->captnames ? 2 * t->captnames : 64;
			char(*n)[COMM_LEN] = realloc(t->tnames, cap * sizeof(*n));
			if (!n)
				return;
			t->tnames = n;
			t->captnames = cap;
		}
		*v = ++t->ntnames;
	}
	snprintf(t->tnames[*v - 1], COMM_LEN, "%s", comm);
}

/* Names p's frames: its symbolizer, given its layout now. */
static void symbolizer_for(ember__tree *t, tproc *p)
{
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	/* a debug file it lacked may have arrived: made anew, it looks again */
	uint64_t answered = t->held.h.answered ? t->held.h.answered(t->held.h.arg) : 0;
	if (p->sym && answered != p->sym_answered) {
		ember__symbolizer_free(p->sym);
		p->sym = NULL;
	}
	p->sym_answered = answered;
	int rc = ember__tspace_procmaps(&p->space, t->mods, &maps);
	if (rc == 0)
		rc = p->sym ? ember__symbolizer_set_maps(p->sym, &maps)
			    : ember__symbolizer_new_remote_opts(&p->sym, p->pid, &maps,
							       ember__config_symbolizer_flags(t->cfg));
	if (rc == 0)
		rc = ember__symbolizer_set_main(p->sym, p->exe);
	if (rc == 0) /* --lines, as the library's agent sets it */
		ember__symbolizer_set_lines(p->sym, ember__config_lines_policy(t->cfg));
	ember__procmaps_free(&maps);
	if (rc)
		ember__log(t->cfg, EMBER_LOG_WARN,
			   "process %d (%s): its frames stay unnamed: %s", (int)p->pid, p->comm,
			   ember_last_error());
}

/* Encodes a profile and hands it to the reporters as [start, end) of
 * its pid (0: the shared profile, named after this process); frees it. */
static void send_profile(void *ctx, ember__theld *e)
{
	ember__tree *t = ctx;
	ember__profile *prof = e->prof;
	uint8_t *pb = NULL;
	size_t pblen = 0;
	int rc = ember__pprof_encode(prof, &pb, &pblen);
	if (rc) {
		ember__log(t->cfg, EMBER_LOG_ERROR,
			   "process %d: window %" PRIu32 " could not be encoded, %" PRIu64
			   " samples lost: %s",
			   (int)e->pid, e->seq, e->samples, ember_last_error());
		t->st.report_failures++;
		if (!t->err)
			t->err = rc;
		ember__profile_free(prof);
		return;
	}
	ember_report rep = {
		.app_name = t->cfg->app_name,
		.profile_type = "cpu",
		.start_ns = e->start,
		.end_ns = e->end,
		.samples = e->samples,
		.pprof = pb,
		.pprof_len = pblen,
		.seq = e->seq,
		.final = e->final,
		.format = EMBER_FORMAT_PPROF,
		.interval_ms = t->cfg->interval_ms,
		.pid = e->pid,
	};
	ember__otlp_window_profile(prof); /* the model, for the OTLP reporter */
	if (ember__config_call_reporters(t->cfg, &rep, &t->st.report_failures) != 0 && !t->err)
		t->err = EMBER_ERR_REPORTER;
	ember__otlp_window_done();
	t->st.profiles++;
	free(pb);
	ember__profile_free(prof);
}

/* Hands prof (which it takes) to the reporters as [start, end) of `pid`
 * (0: the shared profile), once the names on their way for it are there
 * or its wait is over (tree_names.h). */
static void report_profile(ember__tree *t, ember__profile *prof, int32_t pid, uint32_t seq,
			   int64_t start, int64_t end, uint64_t samples, int final)
{
	ember__theld e = {prof, pid, seq, start, end, samples, final,
			  clock_ns(CLOCK_MONOTONIC) + t->held.h.wait_ms * 1000000, 0, 0};
	if (ember__tnames_submit(&t->held, &e, send_profile, t) != 0)
		ember__log(t->cfg, EMBER_LOG_WARN, "process %d: window %" PRIu32
			   " reported before the names on their way: %s",
			   (int)pid, seq, ember_last_error());
}

void ember__tree_set_names(ember__tree *t, const ember__tree_names *names)
{
	/* what is held goes with the hooks it was held for */
	ember__tnames_flush(&t->held, clock_ns(CLOCK_MONOTONIC), 1, send_profile, t);
	t->held.h = names ? *names : (ember__tree_names){0};
}

/* The window's shared profile, [t->win_start, end), to the reporters. */
static void flush_shared(ember__tree *t, int64_t end, int final)
{
	uint64_t samples = t->shared.samples;
	ember__profile *prof = ember__tshared_take(&t->shared);
	if (!prof)
		return;
	prof->time_nanos = t->win_start;
	prof->duration_nanos = end - t->win_start;
	report_profile(t, prof, 0, t->shared_seq++, t->win_start, end, samples, final);
	t->st.shared_profiles++;
}

/*
 * Moves ns of weight onto (take 0) or off (take 1) the stacks of a
 * process's last window, in proportion to their weights; sample counts
 * stay as taken. Returns what was moved: all of ns given, at most the
 * window's weight taken, nothing on a window of no weight.
 *
 * Given: the time a process used after its last sample (known at its
 * end). Where it was seen running is the best account of where it ran
 * since (for the processes of a few periods, most of their time).
 * Taken: the excess of a process whose samples weigh more than it used (a
 * cc1 of 9.5 ms with one sample of a 10 ms period: the period a sample
 * carries is the event's, not what the process counted), so that its
 * profiles hold what it used.
 */
static uint64_t move_weight(ember__agg *a, uint64_t ns, int take)
{
	uint64_t total = a->weight, moved = 0;
	if (take && ns > total)
		ns = total;
	for (size_t i = 0; i < a->n && total; i++) {
		ember__agg_stack *s = a->stacks[i];
		uint64_t share = i + 1 == a->n ? ns - moved
					       : (uint64_t)((unsigned __int128)ns * s->weight / total);
		if (take && share > s->weight)
			share = s->weight;
		s->weight = take ? s->weight - share : s->weight + share;
		moved += share;
	}
	a->weight = take ? a->weight - moved : a->weight + moved;
	return moved;
}

/*
 * Reports p's window [p->win_start, end) if it has samples, or (`final`:
 * p's last) CPU time that no sample stands for, and starts the next one at
 * end. A process younger than the interval joins the window's shared
 * profile instead of a file of its own; the command's process never does.
 */
static void report_window(ember__tree *t, tproc *p, int64_t end, int final)
{
	uint64_t unsampled = final && p->counted_ns > p->sampled_ns ? p->counted_ns - p->sampled_ns : 0;
	if (p->agg.samples == 0 && unsampled == 0) {
		p->win_start = end;
		return;
	}
	if (p->agg.samples)
		symbolizer_for(t, p);
	uint64_t spread = p->agg.weight ? unsampled : 0;
	move_weight(&p->agg, spread, 0);
	/* Only where its count is whole: each of its threads' events was
	 * inherited (it began under the engine: a FORK record, or the command
	 * of a run, whose count the final drain completes) and no record was
	 * lost. The threads `emberprof attach` found running have events of
	 * their own, which leave no READ record. */
	int whole = (p->fork_mono || (t->top_counted && p->pid == t->top)) && !t->st.lost;
	uint64_t trimmed = final && whole && p->counted_ns && p->sampled_ns > p->counted_ns
				   ? move_weight(&p->agg, p->sampled_ns - p->counted_ns, 1)
				   : 0;
	ember__profile *prof = NULL;
	ember__window_cfg wcfg = ember__config_window(t->cfg);
	int rc = ember__window_profile(&p->agg, p->agg.samples ? p->sym : NULL, &wcfg,
				       EMBER__PROFILE_CPU, p->win_start, end, &prof);
	if (rc == 0 && t->kern)
		rc = ember__tkern_apply(t->kern, prof);
	/* its executable named by the path it ran (a symlink), the file's
	 * own path in the profile's comment */
	if (rc == 0 && p->exe && !p->alias_done) {
		p->exe_alias = ember__tprof_exe_alias(p->exe, p->comm, p->pid);
		p->alias_done = 1;
	}
	if (rc == 0 && p->exe_alias)
		rc = ember__tprof_alias_main(prof, p->exe, p->exe_alias);
	const char *exe = p->exe_alias ? p->exe_alias : p->exe;
	if (rc == 0 && unsampled && !spread)
		rc = ember__tprof_unsampled(prof, exe, p->comm, unsampled, EMBER_TREE_UNSAMPLED);
	if (rc == 0 && final && p->pid == t->top && t->uncounted_ns)
		rc = ember__tprof_unsampled(prof, exe, p->comm, t->uncounted_ns, EMBER_TREE_UNCOUNTED);
	if (rc == 0)
		rc = ember__tprof_label(prof, p->pid, p->comm);
	/* short-lived: younger than the interval, and less CPU than ten
	 * samples stand for (a cc1 of 30 ms; not a worker of seconds) */
	uint64_t small = 10ull * 1000000000ull / (t->cfg->hz ? t->cfg->hz : 100);
	int shared = p->pid != t->top && end - p->start_ns < t->interval_ns &&
		     p->sampled_ns + unsampled < small;
	if (rc == 0 && shared)
		rc = ember__tshared_add(&t->shared, prof);
	if (rc) {
		ember__log(t->cfg, EMBER_LOG_ERROR,
			   "process %d (%s): window %" PRIu32 " could not be made, %" PRIu64
			   " samples lost: %s",
			   (int)p->pid, p->comm, p->seq, p->agg.samples, ember_last_error());
		t->st.report_failures++;
		if (!t->err)
			t->err = rc;
	} else if (!shared) {
		report_profile(t, prof, p->pid, p->seq, p->win_start, end, p->agg.samples, final);
		prof = NULL; /* the report's now */
		p->seq++;
	}
	if (rc == 0) {
		t->st.processes_profiled += !p->profiled;
		t->st.processes_shared += shared && !p->profiled;
		t->st.unsampled_reported_ns += unsampled;
		t->st.unsampled_spread_ns += spread;
		t->st.trimmed_ns += trimmed;
		if (final && p->pid == t->top)
			t->st.uncounted_ns = t->uncounted_ns;
		p->profiled = 1;
	}
	ember__profile_free(prof);
	ember__agg_release(&p->agg);
	ember__agg_init(&p->agg);
	p->win_start = end;
}

static void reap_one(ember__tree *t, tproc *p);

static void on_sample(ember__tree *t, const ember__ptree_rec *r)
{
	tproc *p = proc_get(t, r->pid, 1);
	if (!p || !r->u.sample.regs_ok)
		return;
	unsigned flags = 0;
	int max = t->cfg->max_depth ? (int)t->cfg->max_depth : 1;
	ember__tmods_set_budget(t->mods, t->st.sampled_ns);
	int n = ember__tspace_unwind(&p->space, t->mods, &r->u.sample.regs, r->u.sample.stack,
				     (size_t)r->u.sample.stack_len, t->pcs, max, &flags);
	t->st.truncated += (flags & EMBER_UNWIND_TRUNCATED) != 0;
	t->st.sampled_ns += r->u.sample.period;
	p->sampled_ns += r->u.sample.period;
	/* the kernel's frames: the chain's number as an internal label
	 * (tree_kernel.h), its frames put in when the profile is built */
	uint8_t lb[2 + sizeof(EMBER_TKERN_LABEL) + 12];
	uint32_t lblen = 0;
	uint32_t kid = t->kern && r->u.sample.nkips
			       ? ember__tkern_intern(t->kern, r->u.sample.kips, r->u.sample.nkips)
			       : 0;
	if (kid) {
		size_t kl = sizeof(EMBER_TKERN_LABEL) - 1;
		lb[0] = (uint8_t)kl;
		memcpy(lb + 1, EMBER_TKERN_LABEL, kl);
		int vl = snprintf((char *)lb + 2 + kl, sizeof(lb) - 2 - kl, "%u", kid);
		lb[1 + kl] = (uint8_t)vl;
		lblen = (uint32_t)(2 + kl + (size_t)vl);
		t->st.kernel_samples++;
	}
	if (ember__agg_add(&p->agg, r->tid, t->pcs, (uint32_t)n, lb, lblen, r->u.sample.period) != 0)
		return;
	int64_t when = (int64_t)r->time + t->mono_to_epoch;
	if (p->exited && when > p->exit_ns)
		p->exit_ns = when; /* a thread stopped by the exit */
	if (!ember__agg_has_name(&p->agg, r->tid)) {
		const char *name = thread_name(t, r->tid);
		(void)ember__agg_set_name(&p->agg, r->tid, name ? name : p->comm);
	}
}

static void each_proc(ember__tree *t, int64_t end, int final);

/* Closes the windows that end at or before `upto` (epoch ns). */
static void close_windows(ember__tree *t, int64_t upto)
{
	while (t->win_end <= upto) {
		each_proc(t, t->win_end, 0);
		flush_shared(t, t->win_end, 0);
		t->win_start = t->win_end;
		t->win_end += t->interval_ns;
	}
}

static void on_record(void *arg, const ember__ptree_rec *r)
{
	ember__tree *t = arg;
	int64_t when = (int64_t)r->time + t->mono_to_epoch;
	if (t->only_top && r->pid != t->top && r->type != EMBER_PTREE_LOST)
		return;
	/* a record of the next window: this one is over, for every process */
	close_windows(t, when);
	switch (r->type) {
	case EMBER_PTREE_SAMPLE:
		on_sample(t, r);
		break;
	case EMBER_PTREE_MMAP: {
		tproc *p = proc_get(t, r->pid, 1);
		ember__tmod *m = ember__tmods_get(t->mods, r->u.mmap.path, r->u.mmap.maj,
						  r->u.mmap.min, r->u.mmap.ino);
		if (p && m)
			(void)ember__tspace_map(&p->space, r->u.mmap.start, r->u.mmap.len,
						r->u.mmap.pgoff, m, r->time);
		if (p && p->want_exe && r->u.mmap.path[0] == '/') {
			/* the kernel maps the exec'd file first, then its interpreter */
			free(p->exe);
			p->exe = strdup(r->u.mmap.path);
			p->want_exe = 0;
			/* while it runs (argv[0] is one of the clues) */
			free(p->exe_alias);
			p->exe_alias = ember__tprof_exe_alias(p->exe, p->comm, p->pid);
			p->alias_done = 1;
		}
		break;
	}
	case EMBER_PTREE_COMM: {
		set_thread_name(t, r->tid, r->u.comm.comm);
		if (r->pid != r->tid) {
			/* a thread named itself: samples taken before keep up */
			tproc *q = proc_get(t, r->pid, 0);
			if (q && ember__agg_has_name(&q->agg, r->tid))
				(void)ember__agg_rename(&q->agg, r->tid, r->u.comm.comm);
			break;
		}
		tproc *p = proc_get(t, r->pid, 1);
		if (!p)
			break;
		if (r->u.comm.exec) {
			/* a new program: what ran before is named by the old layout */
			report_window(t, p, when, 0);
			/* its windows are numbered from 0 again, as a new
			 * image's agent numbers them in the library: the
			 * first starts at the exec, the others on the interval */
			p->seq = 0;
			free(p->exe_alias);
			p->exe_alias = NULL;
			p->alias_done = 0;
			ember__tspace_clear_before(&p->space, r->time);
			ember__symbolizer_free(p->sym);
			p->sym = NULL;
			p->want_exe = 1;
		}
		snprintf(p->comm, sizeof(p->comm), "%s", r->u.comm.comm);
		if (!r->u.comm.exec && ember__agg_has_name(&p->agg, r->tid))
			(void)ember__agg_rename(&p->agg, r->tid, r->u.comm.comm);
		break;
	}
	case EMBER_PTREE_FORK: {
		if (r->pid == r->u.task.ppid) { /* a thread: named after its process until told */
			tproc *p = proc_get(t, r->pid, 0);
			if (p)
				set_thread_name(t, r->tid, p->comm);
			break;
		}
		tproc *parent = proc_get(t, r->u.task.ppid, 0);
		tproc *old = proc_get(t, r->pid, 0);
		if (old && old->exited) /* its pid is reused: the old one is over */
			reap_one(t, old);
		tproc *p = proc_get(t, r->pid, 1);
		if (!p)
			break;
		p->win_start = when > t->win_start ? when : t->win_start;
		p->fork_mono = (int64_t)r->time;
		p->start_ns = when;
		if (parent) {
			(void)ember__tspace_copy(&p->space, &parent->space);
			memcpy(p->comm, parent->comm, sizeof(p->comm));
			free(p->exe);
			p->exe = parent->exe ? strdup(parent->exe) : NULL;
		}
		set_thread_name(t, r->tid, p->comm);
		/* a parent that forks gets a perf context of its own, so that
		 * its children's do not take its sampling period away
		 * (perf_tree.h); the command's process has one already */
		if (parent && !parent->exited)
			(void)ember__ptree_hold(t->pt, r->u.task.ppid);
		break;
	}
	case EMBER_PTREE_READ: {
		tproc *p = proc_get(t, r->pid, 0);
		if (p)
			p->counted_ns += r->u.read.value;
		break;
	}
	case EMBER_PTREE_EXIT: {
		if (r->pid != r->tid)
			break;
		tproc *p = proc_get(t, r->pid, 0);
		if (p && !p->exited)
			ember__ptree_release(t->pt, r->pid);
		if (!p || p->exited)
			break;
		p->exited = 1;
		if (t->nexited == t->capexited) {
			size_t cap = t->capexited ? 2 * t->capexited : 64;
			tproc **n = realloc(t->exited, cap * sizeof(*n));
			if (!n)
				break; /* reported at the next window instead */
			t->exited = n;
			t->capexited = cap;
		}
		t->exited[t->nexited++] = p;
		p->exit_ns = when; /* its last window ends there */
		break;
	}
	case EMBER_PTREE_LOST:
		t->st.lost += r->u.lost.lost;
		break;
	}
}

/* Reads /proc/<pid>/<what> into buf (NUL-terminated, the last newline
 * dropped). 0, or -errno. */
static int read_proc(pid_t pid, const char *what, char *buf, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = 0;
	if (got && buf[got - 1] == '\n')
		buf[got - 1] = 0;
	return 0;
}

/* One line of /proc/PID/maps, executable and named: what an MMAP2 record
 * would have said. */
static void adopt_mapping(ember__tree *t, tproc *p, const char *line)
{
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	char perms[8];
	int pos = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
		   &ino, &pos) < 7 || !pos || perms[2] != 'x')
		return;
	const char *path = line + pos;
	if (path[0] != '/' && strcmp(path, "[vdso]") != 0)
		return;
	ember__tmod *m = ember__tmods_get(t->mods, path, maj, min, ino);
	if (m)
		(void)ember__tspace_map(&p->space, start, end - start, off, m,
					(uint64_t)clock_ns(CLOCK_MONOTONIC));
}

int ember__tree_adopt(ember__tree *t, pid_t pid)
{
	char buf[4096];
	if (read_proc(pid, "comm", buf, sizeof(buf)) < 0)
		return -ESRCH;
	tproc *p = proc_get(t, (int32_t)pid, 1);
	if (!p)
		return ember__error_oom("tree engine");
	memcpy(p->comm, buf, sizeof(p->comm) - 1);
	p->comm[sizeof(p->comm) - 1] = 0;
	set_thread_name(t, (int32_t)pid, p->comm);
	char path[64];
	ssize_t n = (snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid),
		     readlink(path, buf, sizeof(buf) - 1));
	if (n > 0) {
		buf[n] = 0;
		free(p->exe);
		p->exe = strdup(buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		while (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = 0;
			adopt_mapping(t, p, buf);
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char what[64];
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || strlen(de->d_name) > 12)
			continue;
		snprintf(what, sizeof(what), "task/%.12s/comm", de->d_name);
		if (read_proc(pid, what, buf, sizeof(buf)) == 0)
			set_thread_name(t, (int32_t)atoi(de->d_name), buf);
	}
	if (d)
		closedir(d);
	return 0;
}

/* Reports p's last window and forgets p. */
static void reap_one(ember__tree *t, tproc *p)
{
	report_window(t, p, p->exit_ns > p->win_start ? p->exit_ns : p->win_start + 1, 1);
	if (p->sym)
		ember__log_symbolizer_stats(t->cfg, p->sym);
	uint64_t *v = ember__u64map_get(&t->procs, (uint64_t)p->pid);
	if (v && *v == (uint64_t)(uintptr_t)p)
		*v = 0;
	for (size_t i = 0; i < t->nexited; i++)
		if (t->exited[i] == p)
			t->exited[i] = NULL;
	proc_free(p);
}

/*
 * The processes that exited before `before` (epoch ns; INT64_MAX: all):
 * their last windows, and forget them. The leader's exit record can come
 * before the last samples of threads an exit_group is still stopping:
 * a process is kept a while after it (REAP_DELAY_NS).
 */
#define REAP_DELAY_NS 200000000
/* A window closes once the clock is this far past its end without a
 * later record (the rings' watermark margin, and some). */
#define WINDOW_MARGIN_NS 100000000
static void reap(ember__tree *t, int64_t before)
{
	size_t w = 0;
	for (size_t i = 0; i < t->nexited; i++) {
		tproc *p = t->exited[i];
		if (!p)
			continue;
		/* the command's process: its own count is known at the end */
		if (p->exit_ns < before && (p->pid != t->top || before == INT64_MAX)) {
			t->exited[i] = NULL;
			reap_one(t, p);
		} else {
			t->exited[w++] = p;
		}
	}
	t->nexited = w;
}

static void each_proc(ember__tree *t, int64_t end, int final)
{
	for (size_t i = 0; i < t->procs.cap; i++) {
		ember__u64map_slot *s = &t->procs.slots[i];
		if (!s->used || !s->value)
			continue;
		tproc *p = (tproc *)(uintptr_t)s->value;
		report_window(t, p, end, final);
		if (final && p->sym)
			ember__log_symbolizer_stats(t->cfg, p->sym);
	}
}

int ember__tree_started_by(int pid, int64_t fork_mono_ns)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's name, which may hold anything: field 22 */
	const char *s = strrchr(buf, ')');
	if (!s)
		return -1;
	unsigned long long start = 0;
	int field = 2;
	for (s++; *s && field < 22; s++)
		if (*s == ' ')
			field++;
	if (field != 22 || sscanf(s, "%llu", &start) != 1)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		return -1;
	/* the start time counts from boot, suspends included */
	int64_t boot = fork_mono_ns + (clock_ns(CLOCK_BOOTTIME) - clock_ns(CLOCK_MONOTONIC));
	unsigned long long forked = (unsigned long long)(boot / (1000000000 / hz));
	return start > forked + 2 ? 0 : 1;
}

/*
 * Now, on the engine's clock: the monotonic clock moved to the epoch by
 * the offset read at start, as every record's time is. The wall clock
 * itself would disagree with the records' times once it is set (stepped):
 * a step back held every window for that long, one forward closed windows
 * before their records came.
 */
static int64_t tree_now(const ember__tree *t)
{
	return clock_ns(CLOCK_MONOTONIC) + t->mono_to_epoch;
}

size_t ember__tree_alive(ember__tree *t)
{
	size_t alive = 0;
	int64_t now = tree_now(t);
	for (size_t i = 0; i < t->procs.cap; i++) {
		ember__u64map_slot *s = &t->procs.slots[i];
		tproc *p = s->used ? (tproc *)(uintptr_t)s->value : NULL;
		if (!p || p->exited)
			continue;
		/* kill() says only that the pid is there: after a lost EXIT
		 * record, another process may hold it now. */
		if ((kill(p->pid, 0) == 0 || errno != ESRCH) &&
		    !(p->fork_mono && ember__tree_started_by(p->pid, p->fork_mono) == 0)) {
			alive++;
			continue;
		}
		report_window(t, p, now, 1);
		s->value = 0;
		proc_free(p);
	}
	return alive;
}

/*
 * Every profile held for names reported: the run is over (or goes on in a
 * fork child without the fetches), so the wait is here, each profile's
 * bound at most (the last deadline, and one more pass at it).
 */
static void flush_names(ember__tree *t)
{
	int64_t last = ember__tnames_last_deadline(&t->held);
	while (t->held.n) {
		int64_t now = clock_ns(CLOCK_MONOTONIC);
		ember__tnames_flush(&t->held, now, now >= last, send_profile, t);
		if (t->held.n) {
			struct timespec ts = {0, 20000000};
			nanosleep(&ts, NULL);
		}
	}
}

/* final: every record read is delivered and every process's window is
 * its last; all (not final): every record read is delivered. */
static int drain(ember__tree *t, int final, int all)
{
	t->err = 0;
	t->st.records += ember__ptree_drain(t->pt, final || all, on_record, t);
	int64_t now = tree_now(t);
	if (final) {
		/* what the command's process used itself: the events' total
		 * less what every exited thread's READ record took */
		ember__ptree_stats ps;
		ember__ptree_get_stats(t->pt, &ps);
		tproc *top = t->top_counted ? proc_get(t, t->top, 0) : NULL;
		if (top && ps.counted_ns > ps.read_ns)
			top->counted_ns += ps.counted_ns - ps.read_ns;
		if (ps.counted_ns && t->waited_ns > ps.counted_ns)
			t->uncounted_ns = t->waited_ns - ps.counted_ns;
	}
	reap(t, final ? INT64_MAX : now - REAP_DELAY_NS);
	if (final) {
		each_proc(t, now, 1);
		flush_shared(t, now, 1);
	} else {
		/* records up to the watermark are in: the windows before it
		 * are complete */
		close_windows(t, now - WINDOW_MARGIN_NS);
	}
	ember__tnames_flush(&t->held, clock_ns(CLOCK_MONOTONIC), 0, send_profile, t);
	if (final || all)
		flush_names(t);
	return t->err;
}

int ember__tree_step(ember__tree *t, int timeout_ms)
{
	if (!t->pt)
		return ember__error(EMBER_ERR_INVALID, "tree engine: not attached");
	(void)ember__ptree_wait(t->pt, timeout_ms);
	return drain(t, 0, 0);
}

int ember__tree_settle(ember__tree *t)
{
	if (!t->pt)
		return 0;
	return drain(t, 0, 1);
}

void ember__tree_set_waited(ember__tree *t, uint64_t ns)
{
	t->waited_ns = ns;
}

int ember__tree_finish(ember__tree *t)
{
	if (!t->pt)
		return 0;
	return drain(t, 1, 1);
}

int ember__tree_after_fork(ember__tree *t, ember__config *cfg)
{
	if (cfg->max_depth > t->cfg->max_depth) {
		uint64_t *pcs = realloc(t->pcs, cfg->max_depth * sizeof(uint64_t));
		if (!pcs)
			return ember__error_oom("tree engine");
		t->pcs = pcs;
	}
	t->cfg = cfg;
	/* the fetches are the parent's (its threads): none here */
	ember__tnames_release(&t->held);
	t->held.h = (ember__tree_names){0};
	return 0;
}

int ember__tree_remap_after_fork(ember__tree *t)
{
	return t->pt ? ember__ptree_after_fork(t->pt) : 0;
}

void ember__tree_get_stats(ember__tree *t, ember__tree_stats *out)
{
	*out = t->st;
	if (t->pt) {
		ember__ptree_stats ps;
		ember__ptree_get_stats(t->pt, &ps);
		out->samples = ps.samples;
		out->user_only = ps.exclude_kernel;
		out->kernel_weighed = ps.kernel_weighed;
		out->kernel_frames = ps.kernel_frames;
		out->unsampled_ns = ps.counted_ns > ps.sample_ns ? ps.counted_ns - ps.sample_ns : 0;
	}
	/* (kallsyms is read only if a sample had kernel frames) */
	int kern = t->kern && t->st.kernel_samples;
	out->kernel_named = kern && ember__tkern_named(t->kern);
	out->kernel_why = kern ? ember__tkern_why(t->kern) : "";
	ember__tmods_stats ms;
	ember__tmods_get_stats(t->mods, &ms);
	out->tables = ms.tables;
	out->table_rows = ms.rows;
	out->table_build_ns = ms.build_ns;
	out->table_failures = ms.table_failures;
	out->tables_deferred = ms.deferred;
	out->names_held = t->held.held;
	out->names_expired = t->held.expired;
}

void ember__tree_free(ember__tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->procs.cap; i++) {
		ember__u64map_slot *s = &t->procs.slots[i];
		if (s->used && s->value)
			proc_free((tproc *)(uintptr_t)s->value);
	}
	ember__u64map_free(&t->procs);
	ember__u64map_free(&t->names);
	ember__tshared_release(&t->shared);
	ember__tnames_release(&t->held);
	free(t->tnames);
	free(t->exited);
	ember__ptree_free(t->pt);
	ember__tmods_free(t->mods);
	ember__tkern_free(t->kern);
	free(t->pcs);
	free(t);
}
