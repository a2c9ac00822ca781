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
#include "tree/tree_space.h"
#include "util/error.h"
#include "util/hashmap.h"

#define COMM_LEN 16

typedef struct tproc {
	int32_t pid;
	char comm[COMM_LEN];
	char *exe;         /* the file it exec'd: its first executable mapping after */
	int want_exe;
	ember__tspace space;
	ember__agg agg;
	int64_t win_start; /* ns since the epoch: this process's window */
	uint32_t seq;
	int exited;        /* EXIT seen: reported at the end of the drain */
	int64_t exit_ns;   /* when (epoch ns): its last window's end */
	int64_t fork_mono; /* its FORK record's time (CLOCK_MONOTONIC ns), 0: none seen */
	int profiled;
	ember__symbolizer *sym;
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
	uint64_t *pcs;
	int err;               /* the first reporter error of this step */
	int32_t top;           /* the attached process */
	int only_top;          /* --no-follow-children: the others' records are ignored */
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
	t->win_start = clock_ns(CLOCK_REALTIME);
	*out = t;
	return 0;
}

int ember__tree_attach(ember__tree *t, pid_t pid)
{
	ember__ptree_opts o = {t->cfg->hz, 0, 0, 0};
	t->top = (int32_t)pid;
	return ember__ptree_open(&t->pt, pid, &o);
}

int ember__tree_attach_task(ember__tree *t, pid_t tid, int threads_only)
{
	ember__ptree_opts o = {t->cfg->hz, 0, 0, 0};
	t->top = (int32_t)tid;
	int rc = ember__ptree_open_rings(&t->pt, &o, threads_only);
	if (rc == 0 && (rc = ember__ptree_add_task(t->pt, tid)) != 0) {
		ember__ptree_free(t->pt);
		t->pt = NULL;
	}
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
	*v = (uint64_t)(uintptr_t)p;
	t->st.processes++;
	return p;
}

static void proc_free(tproc *p)
{
	free(p->exe);
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

/* Reports p's window [p->win_start, end) if it has samples, and starts
 * the next one at end. */
static void report_window(ember__tree *t, tproc *p, int64_t end, int final)
{
	if (p->agg.samples == 0) {
		p->win_start = end;
		return;
	}
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
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
	ember__profile *prof = NULL;
	uint8_t *pb = NULL;
	size_t pblen = 0;
	ember__window_cfg wcfg = ember__config_window(t->cfg);
	rc = ember__window_profile(&p->agg, p->sym, &wcfg, EMBER__PROFILE_CPU, p->win_start, end,
				   &prof);
	if (rc == 0)
		rc = ember__pprof_encode(prof, &pb, &pblen);
	if (rc) {
		ember__log(t->cfg, EMBER_LOG_ERROR,
			   "process %d (%s): window %" PRIu32 " could not be encoded, %" PRIu64
			   " samples lost: %s",
			   (int)p->pid, p->comm, p->seq, p->agg.samples, ember_last_error());
		t->st.report_failures++;
		if (!t->err)
			t->err = rc;
	} else {
		ember_report rep = {
			.app_name = t->cfg->app_name,
			.profile_type = "cpu",
			.start_ns = p->win_start,
			.end_ns = end,
			.samples = p->agg.samples,
			.pprof = pb,
			.pprof_len = pblen,
			.seq = p->seq,
			.final = final,
			.format = EMBER_FORMAT_PPROF,
			.interval_ms = t->cfg->interval_ms,
			.pid = p->pid,
		};
		ember__otlp_window_profile(prof); /* the model, for the OTLP reporter */
		if (ember__config_call_reporters(t->cfg, &rep, &t->st.report_failures) != 0 &&
		    !t->err)
			t->err = EMBER_ERR_REPORTER;
		ember__otlp_window_done();
		t->st.profiles++;
		t->st.processes_profiled += !p->profiled;
		p->profiled = 1;
	}
	free(pb);
	ember__profile_free(prof);
	p->seq++;
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
	if (ember__agg_add(&p->agg, r->tid, t->pcs, (uint32_t)n, NULL, 0, r->u.sample.period) != 0)
		return;
	int64_t when = (int64_t)r->time + t->mono_to_epoch;
	if (p->exited && when > p->exit_ns)
		p->exit_ns = when; /* a thread stopped by the exit */
	if (!ember__agg_has_name(&p->agg, r->tid)) {
		const char *name = thread_name(t, r->tid);
		(void)ember__agg_set_name(&p->agg, r->tid, name ? name : p->comm);
	}
}

static void on_record(void *arg, const ember__ptree_rec *r)
{
	ember__tree *t = arg;
	int64_t when = (int64_t)r->time + t->mono_to_epoch;
	if (t->only_top && r->pid != t->top && r->type != EMBER_PTREE_LOST)
		return;
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
						r->u.mmap.pgoff, m);
		if (p && p->want_exe && r->u.mmap.path[0] == '/') {
			/* the kernel maps the exec'd file first, then its interpreter */
			free(p->exe);
			p->exe = strdup(r->u.mmap.path);
			p->want_exe = 0;
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
			ember__tspace_clear(&p->space);
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
		if (parent) {
			(void)ember__tspace_copy(&p->space, &parent->space);
			memcpy(p->comm, parent->comm, sizeof(p->comm));
			free(p->exe);
			p->exe = parent->exe ? strdup(parent->exe) : NULL;
		}
		set_thread_name(t, r->tid, p->comm);
		break;
	}
	case EMBER_PTREE_EXIT: {
		if (r->pid != r->tid)
			break;
		tproc *p = proc_get(t, r->pid, 0);
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
	char path[64];
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
		(void)ember__tspace_map(&p->space, start, end - start, off, m);
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
static void reap(ember__tree *t, int64_t before)
{
	size_t w = 0;
	for (size_t i = 0; i < t->nexited; i++) {
		tproc *p = t->exited[i];
		if (!p)
			continue;
		if (p->exit_ns < before) {
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

size_t ember__tree_alive(ember__tree *t)
{
	size_t alive = 0;
	int64_t now = clock_ns(CLOCK_REALTIME);
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

/* final: every record read is delivered and every process's window is
 * its last; all (not final): every record read is delivered. */
static int drain(ember__tree *t, int final, int all)
{
	t->err = 0;
	t->st.records += ember__ptree_drain(t->pt, final || all, on_record, t);
	int64_t now = clock_ns(CLOCK_REALTIME);
	reap(t, final ? INT64_MAX : now - REAP_DELAY_NS);
	if (final) {
		each_proc(t, now, 1);
	} else if (now - t->win_start >= (int64_t)t->cfg->interval_ms * 1000000) {
		each_proc(t, now, 0);
		t->win_start = now;
	}
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
	return t->pt ? ember__ptree_after_fork(t->pt) : 0;
}

void ember__tree_get_stats(const ember__tree *t, ember__tree_stats *out)
{
	*out = t->st;
	if (t->pt) {
		ember__ptree_stats ps;
		ember__ptree_get_stats(t->pt, &ps);
		out->samples = ps.samples;
		out->user_only = ps.exclude_kernel;
		out->kernel_weighed = ps.kernel_weighed;
		out->unsampled_ns = ps.counted_ns > ps.sample_ns ? ps.counted_ns - ps.sample_ns : 0;
	}
	ember__tmods_stats ms;
	ember__tmods_get_stats(t->mods, &ms);
	out->tables = ms.tables;
	out->table_rows = ms.rows;
	out->table_build_ns = ms.build_ns;
	out->table_failures = ms.table_failures;
	out->tables_deferred = ms.deferred;
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
	free(t->tnames);
	free(t->exited);
	ember__ptree_free(t->pt);
	ember__tmods_free(t->mods);
	free(t->pcs);
	free(t);
}
