/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach_target.c - finding, checking and listing the processes `emberprof
 * attach` profiles, from /proc (attach_target.h).
 */
#include "attach/attach_target.h"
#include "attach/inject.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emberprof.h"
#include "util/error.h"

#define COMM_MAX 15 /* TASK_COMM_LEN - 1 */

int ember__pidlist_add(ember__pidlist *l, pid_t pid)
{
	if (ember__pidlist_has(l, pid))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		pid_t *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = pid;
	return 1;
}

int ember__pidlist_has(const ember__pidlist *l, pid_t pid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == pid)
			return 1;
	return 0;
}

void ember__pidlist_free(ember__pidlist *l)
{
	free(l->v);
	*l = (ember__pidlist){0};
}

/* A name of /proc (or /proc/PID/task) that is a pid: the pid, else 0. */
static pid_t dir_pid(const char *name)
{
	if (!isdigit((unsigned char)name[0]))
		return 0;
	char *end;
	long v = strtol(name, &end, 10);
	return *end || v <= 0 ? 0 : (pid_t)v;
}

/* Reads a file (at most n - 1 bytes, NUL-terminated, the last newline
 * dropped). The bytes read, or -errno. */
static int read_path(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t got = fread(buf, 1, n - 1, f);
	int e = ferror(f) ? errno : 0;
	fclose(f);
	buf[got] = 0;
	if (got && buf[got - 1] == '\n')
		buf[--got] = 0;
	return e ? -e : (int)got;
}

/* The same for /proc/<pid>/<what>. */
static int read_proc(pid_t pid, const char *what, char *buf, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	return read_path(path, buf, n);
}

int ember__attach_find_name(const char *name, ember__pidlist *out)
{
	if (strlen(name) > COMM_MAX)
		return ember__error(EMBER_ERR_INVALID,
				    "--pid-of \"%s\": a process name has at most %d characters "
				    "(/proc/PID/comm), so it would never match; give its first %d",
				    name, COMM_MAX, COMM_MAX);
	DIR *d = opendir("/proc");
	if (!d)
		return ember__error_errno(EMBER_ERR_SYS, errno, "cannot list /proc");
	struct dirent *de;
	pid_t self = getpid();
	int rc = 0;
	while ((de = readdir(d))) {
		pid_t pid = dir_pid(de->d_name);
		char comm[64];
		if (!pid || pid == self || read_proc(pid, "comm", comm, sizeof(comm)) < 0)
			continue;
		if (strcmp(comm, name) == 0 && ember__pidlist_add(out, pid) < 0) {
			rc = ember__error_oom("attach");
			break;
		}
	}
	closedir(d);
	return rc;
}

/* /proc/PID/stat: state and parent pid (after the name, which may hold
 * spaces and parentheses). 0 or -1. */
static int stat_fields(pid_t pid, char *state, pid_t *ppid)
{
	char buf[1024];
	if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
		return -1;
	const char *p = strrchr(buf, ')');
	int pp;
	if (!p || sscanf(p + 1, " %c %d", state, &pp) != 2)
		return -1;
	*ppid = (pid_t)pp;
	return 0;
}

char ember__attach_state(pid_t pid)
{
	char st;
	pid_t pp;
	return stat_fields(pid, &st, &pp) == 0 ? st : 0;
}

/* Has this process CAP_SYS_PTRACE in its effective set? */
static int have_cap_sys_ptrace(void)
{
	char buf[4096];
	if (read_proc(getpid(), "status", buf, sizeof(buf)) < 0)
		return 0;
	const char *p = strstr(buf, "CapEff:");
	unsigned long long caps = p ? strtoull(p + 7, NULL, 16) : 0;
	return (caps >> 19) & 1; /* CAP_SYS_PTRACE */
}

/* Is pid a descendant of this process? */
static int is_descendant(pid_t pid)
{
	pid_t self = getpid();
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		char st;
		pid_t pp;
		if (stat_fields(pid, &st, &pp) < 0)
			return 0;
		if (pp == self)
			return 1;
		pid = pp;
	}
	return 0;
}

/* Yama's ptrace_scope, for injection: 0, or EMBER_ERR_INVALID saying which setting would allow it. */
static int check_yama(pid_t pid)
{
	char buf[16];
	if (read_path("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) < 0)
		return 0; /* no Yama */
	int scope = atoi(buf);
	if (scope >= 3)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: Yama's kernel.yama.ptrace_scope is 3 (no attaching at "
				    "all, until reboot): --wall and --alloc need ptrace to load the "
				    "library; CPU profiles (without them) need no ptrace",
				    (int)pid);
	if (scope == 2 && !have_cap_sys_ptrace())
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: Yama's kernel.yama.ptrace_scope is 2 (admin only): "
				    "--wall and --alloc need ptrace, which needs CAP_SYS_PTRACE (run as "
				    "root); CPU profiles (without them) need no ptrace",
				    (int)pid);
	if (scope == 1 && !have_cap_sys_ptrace() && !is_descendant(pid))
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: Yama's kernel.yama.ptrace_scope is 1 (only a parent may "
				    "trace): --wall and --alloc need ptrace; run as root, or set "
				    "kernel.yama.ptrace_scope=0; CPU profiles (without them) need no ptrace",
				    (int)pid);
	return 0;
}

/* Reads maps: whether an emberprof library is in it, whether any shared
 * library is (a loader to call). 0 or -errno. */
static int scan_maps(pid_t pid, int *agent, int *shared)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	*agent = *shared = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strchr(line, '/');
		if (!p)
			continue;
		const char *base = strrchr(p, '/') + 1;
		/* loaded from a file, or as the in-memory copy of attach (a
		 * process in another mount namespace: "/memfd:emberprof (deleted)") */
		if (!strncmp(base, "libemberprof", 12) ||
		    (!strncmp(p, "/" EMBER_INJECT_MEMFD, sizeof(EMBER_INJECT_MEMFD)) &&
		     (p[sizeof(EMBER_INJECT_MEMFD)] == ' ' || p[sizeof(EMBER_INJECT_MEMFD)] == '\n')))
			*agent = 1;
		if (strstr(base, ".so"))
			*shared = 1;
	}
	fclose(f);
	return 0;
}

/* Does a thread of pid carry an emberprof agent's name ("emberprof", or
 * "emberprof-" and a role: the agent's threads name themselves so)? */
static int agent_thread(pid_t pid)
{
	ember__pidlist tids = {0};
	int found = 0;
	(void)ember__attach_add_threads(pid, &tids); /* out of memory: none found */
	for (size_t i = 0; i < tids.n && !found; i++) {
		char what[64], comm[32];
		snprintf(what, sizeof(what), "task/%d/comm", (int)tids.v[i]);
		if (read_proc(pid, what, comm, sizeof(comm)) >= 0)
			found = !strncmp(comm, "emberprof", 9) && (comm[9] == 0 || comm[9] == '-');
	}
	ember__pidlist_free(&tids);
	return found;
}

int ember__attach_check_process(pid_t pid, ember__attach_check *c)
{
	c->uid_differs = c->is_static = c->has_agent = 0;
	if (pid <= 0)
		return ember__error(EMBER_ERR_INVALID, "%d is not a process id", (int)pid);
	if (kill(pid, 0) != 0) {
		if (errno == ESRCH)
			return ember__error(EMBER_ERR_INVALID, "process %d: no such process", (int)pid);
		if (errno == EPERM) {
			c->uid_differs = 1;
			return ember__error(EMBER_ERR_INVALID,
					    "process %d belongs to another user: profile it as that "
					    "user, or as root",
					    (int)pid);
		}
	}
	char st = ember__attach_state(pid);
	if (!st)
		return ember__error(EMBER_ERR_INVALID, "process %d: no such process", (int)pid);
	if (st == 'Z' || st == 'X')
		return ember__error(EMBER_ERR_INVALID, "process %d has exited (a zombie): nothing "
				    "to profile", (int)pid);
	int agent = 0, shared = 0, rc = scan_maps(pid, &agent, &shared);
	if (rc == -EACCES || rc == -EPERM) {
		c->uid_differs = 1;
		return ember__error(EMBER_ERR_INVALID,
				    "process %d: its memory map cannot be read (another user's, or "
				    "not dumpable): profile it as its user, or as root",
				    (int)pid);
	}
	if (rc < 0)
		return ember__error(EMBER_ERR_INVALID, "process %d: no such process", (int)pid);
	/* the library loaded is not enough: an earlier attach leaves it
	 * loaded, its agent stopped; an agent runs threads of its own */
	c->has_agent = agent && agent_thread(pid);
	c->is_static = !shared;
	if (c->has_agent)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d is already profiled by an emberprof agent "
				    "(libemberprof is loaded in it and its threads run): not starting "
				    "a second",
				    (int)pid);
	if (c->inject && !shared)
		return ember__error(EMBER_ERR_INVALID,
				    "process %d is statically linked: there is no loader to call, so "
				    "--wall and --alloc cannot be profiled in it; CPU profiles "
				    "(without them) can",
				    (int)pid);
	if (c->inject)
		return check_yama(pid);
	return 0;
}

int ember__attach_perf_allowed(pid_t pid)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int ember__attach_add_descendants(ember__pidlist *l)
{
	/* (pid, ppid) of every process, then the closure */
	ember__pidlist pids = {0}, parents = {0};
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) && !rc) {
		pid_t pid = dir_pid(de->d_name), pp;
		char st;
		if (!pid || stat_fields(pid, &st, &pp) < 0)
			continue;
		if (pids.n == pids.cap) {
			size_t cap = pids.cap ? 2 * pids.cap : 256;
			pid_t *a = realloc(pids.v, cap * sizeof(*a)), *b;
			if (a)
				pids.v = a;
			b = a ? realloc(parents.v, cap * sizeof(*b)) : NULL;
			if (!b) {
				rc = ember__error_oom("attach");
				break;
			}
			parents.v = b;
			pids.cap = parents.cap = cap;
		}
		pids.v[pids.n++] = pid;
		parents.v[parents.n++] = pp;
	}
	closedir(d);
	for (int grew = 1; grew && !rc;) {
		grew = 0;
		for (size_t i = 0; i < pids.n && !rc; i++) {
			if (!ember__pidlist_has(l, parents.v[i]) || ember__pidlist_has(l, pids.v[i]))
				continue;
			if (ember__pidlist_add(l, pids.v[i]) < 0)
				rc = ember__error_oom("attach");
			grew = 1;
		}
	}
	free(pids.v);
	free(parents.v);
	return rc;
}

int ember__attach_add_threads(pid_t pid, ember__pidlist *out)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *de;
	int added = 0;
	while ((de = readdir(d))) {
		pid_t tid = dir_pid(de->d_name);
		if (!tid)
			continue;
		int r = ember__pidlist_add(out, tid);
		if (r < 0) {
			added = ember__error_oom("attach");
			break;
		}
		added += r;
	}
	closedir(d);
	return added;
}
