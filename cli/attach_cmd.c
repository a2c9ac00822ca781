/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attach_cmd.c - `emberprof attach [options] PID...` (and --pid-of NAME):
 * profiles processes that already run, until --duration ends, Ctrl-C
 * (SIGINT, SIGTERM) or their exit, then detaches and prints the top
 * functions as `run` does, with run's options, outputs and reporters
 * (ember__cli_opts_*).
 *
 * CPU profiles take nothing loaded into the process: the tree engine
 * (tools/tree/) samples every thread that exists at attach, one event
 * per CPU per thread, inherited by the threads (and, following children,
 * the processes) they start after, as `perf record -p` does; the threads
 * are listed again until a listing finds none new (a thread started
 * between a listing and its creator's events would be missed otherwise).
 * What each process ran before (its mappings, names) is read from /proc.
 * Detaching is closing the events: the kernel removes them from every
 * thread, inherited ones included.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "attach/attach_target.h"
#include "attach/inject.h"
#include "cli.h"
#include "heap/gotpatch.h"
#include "emberprof.h"
#include "report/local.h"
#include "tree/tree_engine.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/parse.h"

#define REFUSED 1 /* the exit status of a refusal: the target untouched */

void ember__cli_attach_usage(FILE *out)
{
	fprintf(out,
		"usage: emberprof attach [options] PID...\n"
		"       emberprof attach [options] --pid-of NAME\n"
		"\n"
		"Profiles processes that are already running, from now until --duration ends,\n"
		"Ctrl-C, or they exit; then detaches, leaving them as they were, and prints the\n"
		"functions using the most CPU (on stderr), as 'emberprof run' does.\n"
		"\n"
		"CPU profiles load nothing into the process: every thread is sampled from\n"
		"outside by perf events (the threads and, unless --no-follow-children, the child\n"
		"processes it starts meanwhile too), as the tree engine of 'run' does.\n"
		"\n"
		"Options of attach:\n"
		"      --pid-of NAME        the processes named NAME, exactly (/proc/PID/comm,\n"
		"                           15 characters), as 'pgrep -x NAME' finds them\n"
		"      --duration DURATION  stop after this long, e.g. 30s, 2m (default: until\n"
		"                           Ctrl-C or the processes exit)\n"
		"      --no-follow-children only the processes given, not their descendants\n"
		"                           (which are profiled by default, existing ones too)\n"
		"      --wall[=INTERVAL]    also wall-clock profiles, every INTERVAL (50ms): loads\n"
		"                           libemberprof into each process given (ptrace; not\n"
		"                           its descendants), whose agent then profiles CPU and\n"
		"                           wall-clock time, and stops it at the end (the library\n"
		"                           stays loaded). Into a container (another mount\n"
		"                           namespace), an in-memory copy of the library is\n"
		"                           loaded; -o must then be a directory it sees too.\n"
		"      --alloc[=BYTES]      also allocation profiles (x86-64, aarch64): loads\n"
		"                           libemberprof as --wall does and points the\n"
		"                           process's calls of malloc & co (their GOT\n"
		"                           entries) at it; restored at\n"
		"                           the end. Allocations made before attach are not\n"
		"                           seen: in-use figures count only blocks allocated\n"
		"                           after it\n"
		"\n"
		"Every other option is run's, taken as run takes it ('emberprof help run'): the\n"
		"rate, the window, the output directory and format, the depth, the application\n"
		"name (default: the process's name), tags, lines, the log level, the Pyroscope\n"
		"and S3 reporters, and the summary's rows, quiet and flame graph options.\n"
		"\n"
		"Exit status: 0 once detached; 1 when a process cannot be profiled (no such\n"
		"process, another user's, perf events refused, already profiled by emberprof):\n"
		"one line says why and the process is left untouched; 2 bad usage.\n");
}

static volatile sig_atomic_t g_stop;

static void on_stop_signal(int signo)
{
	g_stop = signo;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Tests kill emberprof at each step of an attach: EMBER_TEST_ATTACH_PAUSE=N
 * makes it say "emberprof: paused at step N" and wait there for a signal.
 */
static void test_pause(int step)
{
	const char *v = getenv("EMBER_TEST_ATTACH_PAUSE");
	if (!v || atoi(v) != step)
		return;
	fprintf(stderr, "emberprof: paused at step %d\n", step);
	for (;;)
		pause();
}

/* attach's own options, taken out of argv before run's parser sees it. */
typedef struct attach_args {
	char **argv; /* the rest, argv[0] first */
	int argc;
	const char *pid_of;
	unsigned duration_ms;
	int follow_off; /* --no-follow-children (also left for run's parser) */
} attach_args;

/* Own option with a value: --NAME VALUE or --NAME=VALUE. 1 taken, 0 not
 * this one, -1 missing value. */
static int own_value(const char *name, int argc, char **argv, int *i, const char **out)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*out = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*out = argv[++*i];
	return 1;
}

static int split_args(int argc, char **argv, attach_args *a)
{
	a->argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->argv) {
		ember__cli_error("out of memory");
		return EMBER_EXIT_INTERNAL;
	}
	a->argv[a->argc++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int r;
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				a->argv[a->argc++] = argv[i++];
			break;
		}
		if ((r = own_value("--pid-of", argc, argv, &i, &v)) != 0) {
			if (r < 0 || !*v) {
				ember__cli_error("attach: option --pid-of needs a process name");
				return EMBER_EXIT_USAGE;
			}
			a->pid_of = v;
			continue;
		}
		if ((r = own_value("--duration", argc, argv, &i, &v)) != 0) {
			if (r < 0 || ember__parse_duration_ms(v, &a->duration_ms) != 0 ||
			    !a->duration_ms) {
				ember__cli_error("attach: --duration \"%s\" is invalid: expected a "
						 "duration such as 30s, 500ms, 2m",
						 r < 0 ? "" : v);
				return EMBER_EXIT_USAGE;
			}
			continue;
		}
		if (!strcmp(argv[i], "--no-follow-children"))
			a->follow_off = 1;
		a->argv[a->argc++] = argv[i];
	}
	return 0;
}

/* The processes named on the command line. 0, or the exit code (printed). */
static int collect_targets(const attach_args *a, int first, ember__pidlist *targets)
{
	for (int i = first; i < a->argc; i++) {
		const char *s = a->argv[i];
		unsigned long v;
		if (!strcmp(s, "--"))
			continue;
		if (ember__cli_parse_count(s, 1, 0x7fffffff, &v) < 0) {
			ember__cli_error("attach: \"%s\" is not a process id", s);
			ember__cli_attach_usage(stderr);
			return EMBER_EXIT_USAGE;
		}
		if (ember__pidlist_add(targets, (pid_t)v) < 0) {
			ember__cli_error("out of memory");
			return EMBER_EXIT_INTERNAL;
		}
	}
	if (a->pid_of) {
		int rc = ember__attach_find_name(a->pid_of, targets);
		if (rc == EMBER_ERR_INVALID) {
			ember__cli_error("attach: %s", ember_last_error());
			return EMBER_EXIT_USAGE;
		}
		if (rc < 0) {
			ember__cli_error("attach: %s", ember_last_error());
			return EMBER_EXIT_INTERNAL;
		}
		if (targets->n == 0) {
			ember__cli_error("attach: no process is named \"%s\" (pgrep -x)", a->pid_of);
			return REFUSED;
		}
	}
	if (targets->n == 0) {
		ember__cli_error("attach: no process given (PID... or --pid-of NAME)");
		ember__cli_attach_usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	return 0;
}

/* perf_event_paranoid, or -99 when unreadable. */
static int perf_paranoid(void)
{
	return ember__read_int_file("/proc/sys/kernel/perf_event_paranoid", -99);
}

/* The kernel refused the events: one line saying which setting would
 * allow them. */
static void say_perf_refused(pid_t pid, const char *why)
{
	int p = perf_paranoid();
	if (p >= 3)
		ember__cli_error("attach: process %d: perf events refused (%s): "
				 "kernel.perf_event_paranoid is %d; 2 (sysctl "
				 "kernel.perf_event_paranoid=2) lets a user sample their own "
				 "processes, or run as root (CAP_PERFMON)",
				 (int)pid, why, p);
	else
		ember__cli_error("attach: process %d: perf events refused (%s; "
				 "kernel.perf_event_paranoid is %d): run as the process's user or "
				 "root (CAP_PERFMON), outside a seccomp filter that forbids "
				 "perf_event_open",
				 (int)pid, why, p);
}

/* The processes to sample: the targets and, following, their descendants
 * (found again on each pass: a child started meanwhile). */
static int list_processes(const ember__pidlist *targets, int follow, ember__pidlist *procs)
{
	for (size_t i = 0; i < targets->n; i++)
		if (ember__pidlist_add(procs, targets->v[i]) < 0)
			return ember__error_oom("attach");
	return follow ? ember__attach_add_descendants(procs) : 0;
}

/*
 * Opens the events on every thread of every process, listing again until
 * a pass finds no new thread or process. 0, or REFUSED (printed).
 */
static int open_events(ember__tree *t, const ember__pidlist *targets, int follow,
		       ember__pidlist *procs, size_t *nthreads)
{
	ember__pidlist tids = {0};
	int rc = 0, opened = 0;
	for (int pass = 0; pass < 1000 && !rc; pass++) {
		size_t before = tids.n, nprocs = procs->n;
		if (list_processes(targets, follow, procs) < 0) {
			rc = EMBER_EXIT_INTERNAL;
			break;
		}
		for (size_t i = 0; i < procs->n && !rc; i++) {
			size_t from = tids.n;
			if (ember__attach_add_threads(procs->v[i], &tids) < 0) {
				rc = EMBER_EXIT_INTERNAL;
				break;
			}
			for (size_t k = from; k < tids.n && !rc; k++) {
				int r = opened ? ember__tree_add_task(t, tids.v[k])
					       : ember__tree_attach_task(t, tids.v[k], !follow);
				if (r == -ESRCH || (r < 0 && ember__attach_state(tids.v[k]) == 0))
					continue; /* it exited meanwhile */
				if (r < 0) {
					say_perf_refused(procs->v[i], ember_last_error());
					rc = REFUSED;
				}
				opened = 1;
			}
		}
		if (tids.n == before && procs->n == nprocs && pass > 0)
			break;
	}
	if (!rc && !opened) {
		ember__cli_error("attach: process %d has exited", (int)targets->v[0]);
		rc = REFUSED;
	}
	*nthreads = tids.n;
	ember__pidlist_free(&tids);
	return rc;
}

/* Are any of the processes given still running (not exited, not a zombie)? */
static int any_alive(const int *pidfd, const ember__pidlist *targets)
{
	for (size_t i = 0; i < targets->n; i++) {
		if (pidfd[i] >= 0) {
			struct pollfd p = {pidfd[i], POLLIN, 0};
			if (poll(&p, 1, 0) == 0)
				return 1;
			continue;
		}
		char st = ember__attach_state(targets->v[i]);
		if (st && st != 'Z' && st != 'X')
			return 1;
	}
	return 0;
}

/* Samples until --duration, a stop signal or the processes' exit. */
static void sample_loop(ember__tree *t, const ember__pidlist *targets, unsigned duration_ms,
			const char **why)
{
	int *pidfd = calloc(targets->n, sizeof(int));
	for (size_t i = 0; pidfd && i < targets->n; i++)
		pidfd[i] = (int)syscall(SYS_pidfd_open, targets->v[i], 0);
	int64_t end = duration_ms ? mono_ms() + duration_ms : INT64_MAX;
	*why = "stopped";
	for (;;) {
		if (g_stop) {
			*why = g_stop == SIGINT ? "interrupted (SIGINT)" : "stopped (SIGTERM)";
			break;
		}
		if (mono_ms() >= end) {
			*why = "--duration ended";
			break;
		}
		if (pidfd && !any_alive(pidfd, targets)) {
			*why = targets->n == 1 ? "the process exited" : "the processes exited";
			break;
		}
		int64_t left = end - mono_ms();
		int wait = left < 50 ? (int)(left > 0 ? left : 0) : 50;
		if (t)
			(void)ember__tree_step(t, wait);
		else
			poll(NULL, 0, wait);
	}
	for (size_t i = 0; pidfd && i < targets->n; i++)
		if (pidfd[i] >= 0)
			close(pidfd[i]);
	free(pidfd);
}

/* --wall or --alloc (opt) given on the command line (its variable is set
 * only later), or by an inherited variable. */
static int asked(int argc, char **argv, const char *opt, const char *var)
{
	size_t n = strlen(opt);
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strncmp(argv[i], opt, n) && (argv[i][n] == 0 || argv[i][n] == '='))
			return 1;
	const char *v = getenv(var);
	return v && *v;
}

/* The settings the library's agent starts with: this process's
 * EMBERPROF_*, PYROSCOPE_* and AWS_* variables, as exported for the
 * options, one "KEY=VALUE" a line. malloc'd, or NULL. */
static char *agent_settings(void)
{
	extern char **environ;
	size_t n = 1;
	static const char *const prefixes[] = {"EMBERPROF_", "PYROSCOPE_", "AWS_"};
	for (int pass = 0; pass < 2; pass++) {
		char *s = pass ? malloc(n) : NULL, *w = s;
		if (pass && !s)
			return NULL;
		for (char **e = environ; e && *e; e++) {
			int ours = 0;
			for (size_t k = 0; k < 3; k++)
				ours |= !strncmp(*e, prefixes[k], strlen(prefixes[k]));
			if (!ours || strchr(*e, '\n'))
				continue;
			if (!strncmp(*e, "EMBERPROF_LIB=", 14) || !strncmp(*e, "EMBERPROF_ENGINE=", 17))
				continue;
			if (pass)
				w += sprintf(w, "%s\n", *e);
			else
				n += strlen(*e) + 1;
		}
		if (pass) {
			*w = 0;
			return s;
		}
	}
	return NULL;
}

/* Is pid in our pid namespace (our pid is the same number there)? */
static int same_pidns(pid_t pid)
{
	char path[64];
	struct stat a, b;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	return stat("/proc/self/ns/pid", &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Adds EMBERPROF_ATTACHER_PID (our pid) to *settings, so that the agent
 * stops by itself if we are killed before we stop it (the library's
 * attach watch), when every target sees us by that number; else the
 * settings stay as they are. 0, or -1 out of memory (*settings kept). */
static int add_attacher(char **settings, const ember__pidlist *targets)
{
	for (size_t i = 0; i < targets->n; i++)
		if (!same_pidns(targets->v[i]))
			return 0;
	size_t n = strlen(*settings);
	char *s = realloc(*settings, n + 48);
	if (!s)
		return -1;
	snprintf(s + n, 48, "EMBERPROF_ATTACHER_PID=%d\n", (int)getpid());
	*settings = s;
	return 0;
}

/* Is `file` (absolute) the same file from the process's root (not
 * another mount namespace's)? */
static int same_in_root(pid_t pid, const char *file)
{
	char path[4200];
	struct stat a, b;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, file);
	return stat(file, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/*
 * --wall: the library loaded into each process given (not its
 * descendants) and its agent started there with the options, which then
 * profiles CPU and wall-clock time itself; stopped again at the end (the
 * library stays loaded). Returns the exit code.
 */
static int attach_library(const ember__pidlist *targets, const char *dir, const attach_args *a,
			  const ember__cli_names *before, const ember__cli_names *jfr_before,
			  const char *app, const ember__cli_opts *o, int alloc_hook)
{
	char *lib = NULL, *settings = NULL;
	ember__inject **inj = calloc(targets->n, sizeof(*inj));
	int *started = calloc(targets->n, sizeof(int));
	int *copy = calloc(targets->n, sizeof(int));
	int code = EMBER_EXIT_INTERNAL;
	if (!inj || !started || !copy || !(settings = agent_settings())) {
		ember__cli_error("out of memory");
		goto out;
	}
	/* always the library with malloc & co (libemberprof.so), for --wall
	 * too: a dlopen'ed library interposes nothing by itself, and a
	 * second agent library could not be loaded later (its static TLS
	 * does not fit once the first one took the loader's surplus), so one
	 * file serves every later attach, with --alloc or without */
	if ((code = ember__cli_find_library(1, &lib)) != 0) {
		ember__cli_error("attach: %s", ember_last_error());
		goto out;
	}
	const char *force_copy = getenv("EMBER_TEST_ATTACH_COPY"); /* tests: the copy's steps */
	for (size_t i = 0; i < targets->n; i++) {
		/* the process writes its profiles itself: where it sees them */
		if (dir && !same_in_root(targets->v[i], dir)) {
			ember__cli_error("attach: process %d runs in another mount namespace (a "
					 "container?), where the output directory %s is not the same "
					 "directory: its agent would write its profiles where emberprof "
					 "does not see them; give -o a directory both see (a volume "
					 "shared with the container)",
					 (int)targets->v[i], dir);
			code = REFUSED;
			goto out;
		}
		copy[i] = (force_copy && *force_copy == '1') || !same_in_root(targets->v[i], lib);
		if (copy[i])
			fprintf(stderr, "emberprof: process %d runs in another mount namespace (a "
					"container?), where %s is not the same file: loading an "
					"in-memory copy of it\n",
				(int)targets->v[i], lib);
		/* the process writes its profiles itself: as its own user */
		struct stat st;
		char sp[64];
		snprintf(sp, sizeof(sp), "/proc/%d", (int)targets->v[i]);
		if (dir && geteuid() == 0 && stat(sp, &st) == 0 && st.st_uid != 0 &&
		    chown(dir, st.st_uid, st.st_gid) != 0)
			ember__cli_error("attach: warning: cannot give %s to the process's user: %s", dir,
					 strerror(errno));
	}
	if (add_attacher(&settings, targets) != 0) {
		ember__cli_error("out of memory");
		goto out;
	}
	int64_t t0 = mono_ms();
	for (size_t i = 0; i < targets->n; i++) {
		int ret = -1;
		if (ember__inject_call(&inj[i], targets->v[i], lib, copy[i], "ember__attach_start",
				       settings, 10000, &ret) < 0) {
			ember__cli_error("attach: %s", ember_last_error());
			code = REFUSED;
			goto stop;
		}
		if (ret != 0) {
			ember__cli_error("attach: process %d: the agent did not start (the process's "
					 "standard error says why)",
					 (int)targets->v[i]);
			code = REFUSED;
			goto stop;
		}
		started[i] = 1;
	}
	fprintf(stderr, "emberprof: library loaded and agent started in %zu process%s in %lld ms\n",
		targets->n, targets->n == 1 ? "" : "es", (long long)(mono_ms() - t0));
	test_pause(8);
	const char *why;
	sample_loop(NULL, targets, a->duration_ms, &why);
	fprintf(stderr, "emberprof: %s: stopping the agent%s\n", why, targets->n == 1 ? "" : "s");
	code = 0;
stop:
	for (size_t i = 0; i < targets->n; i++) {
		int ret = -1;
		char st = ember__attach_state(targets->v[i]);
		if (!st || st == 'Z' || st == 'X')
			continue; /* exited: its exit wrote the last window */
		if (started[i] && ember__inject_call(&inj[i], targets->v[i], lib, copy[i],
						     "ember__attach_stop", "", 30000, &ret) < 0) {
			ember__cli_error("attach: process %d: the agent could not be stopped, it goes on "
					 "profiling until the process exits: %s",
					 (int)targets->v[i], ember_last_error());
			if (!code)
				code = REFUSED;
		} else if (ember__inject_unmap(inj[i]) < 0) {
			ember__cli_error("attach: note: %s", ember_last_error());
		}
	}
	if (started[0])
		fprintf(stderr, "emberprof: detached after %.1f s (the library stays loaded: unloading "
				"it under the program is not safe)\n",
			(double)(mono_ms() - t0) / 1000);
	if (dir && code == 0) {
		ember__cli_summary sum = {.dir = dir, .cmd = app};
		ember__cli_opts_summary(o, &sum);
		ember__cli_summarize(&sum, before, jfr_before);
		if (alloc_hook && !sum.quiet)
			fprintf(stderr, "\nnote: %s\n", EMBER_HEAP_ATTACH_NOTE);
	}
out:
	for (size_t i = 0; inj && i < targets->n; i++)
		ember__inject_free(inj[i]);
	free(inj);
	free(started);
	free(copy);
	free(settings);
	free(lib);
	return code;
}

int ember__cli_attach(int argc, char **argv)
{
	attach_args a = {0};
	ember__cli_opts *o = NULL;
	ember__pidlist targets = {0}, procs = {0};
	ember__cli_tree *ct = NULL;
	char *dir = NULL;
	ember__cli_names before = {0}, jfr_before = {0};
	int first = 0, alloc_hook = 0, code;

	if ((code = split_args(argc, argv, &a)) != 0)
		goto out;
	code = ember__cli_opts_parse("attach", ember__cli_attach_usage, a.argc, a.argv, &o, &first);
	if (code >= 0)
		goto out;
	if ((code = collect_targets(&a, first, &targets)) != 0)
		goto out;

	/* Each process checked before anything touches it. */
	int alloc = asked(a.argc, a.argv, "--alloc", "EMBERPROF_ALLOC");
#if !defined(__x86_64__) && !defined(__aarch64__)
	if (alloc) {
		ember__cli_error("attach: --alloc is implemented on x86-64 and aarch64 only (it points the "
				 "process's GOT entries of malloc & co at emberprof's); attach with "
				 "--wall, or without, for CPU profiles");
		code = EMBER_EXIT_USAGE;
		goto out;
	}
#endif
	ember__attach_check chk = {0};
	int inject = alloc || asked(a.argc, a.argv, "--wall", "EMBERPROF_WALL");
	chk.inject = inject;
	for (size_t i = 0; i < targets.n; i++) {
		if (ember__attach_check_process(targets.v[i], &chk) < 0) {
			ember__cli_error("attach: %s", ember_last_error());
			code = REFUSED;
			goto out;
		}
	}
	for (size_t i = 0; i < targets.n; i++) {
		int r = ember__attach_perf_allowed(targets.v[i]);
		if (r == -EACCES || r == -EPERM) {
			say_perf_refused(targets.v[i], strerror(-r));
			code = REFUSED;
			goto out;
		}
	}
	test_pause(1);

	char app[64] = "app", path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)targets.v[0]);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(app, sizeof(app), f))
			app[strcspn(app, "\n")] = 0;
		fclose(f);
	}
	if ((code = ember__cli_opts_setup(o, app, &dir, &alloc_hook)) != 0)
		goto out;
	const char *engine = getenv("EMBERPROF_ENGINE");
	if (engine && *engine && strcmp(engine, "tree") != 0 && strcmp(engine, "auto") != 0) {
		ember__cli_error("attach: --engine %s: attach samples CPU from outside the process "
				 "(the tree engine) only",
				 engine);
		code = EMBER_EXIT_USAGE;
		goto out;
	}
	unsetenv("EMBERPROF_ENGINE");
	if (dir && (ember__cli_list_profiles(dir, &before) < 0 ||
		    ember__cli_list_files(dir, EMBER_LOCAL_JFR_SUFFIX, &jfr_before) < 0)) {
		ember__cli_error("%s", ember_last_error());
		code = EMBER_EXIT_INTERNAL;
		goto out;
	}
	/* Stop signals end the profiling, not emberprof (handlers without
	 * SA_RESTART: the wait returns). */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ember__inject_step_hook = test_pause;
	if (inject) {
		code = attach_library(&targets, dir, &a, &before, &jfr_before, app, o, alloc_hook);
		goto out;
	}
	int follow = !a.follow_off;
	int rc = ember__cli_tree_new(&ct, ember__cli_opts_verbose(), 1);
	if (rc < 0) {
		ember__cli_error("attach: %s", ember_last_error());
		code = rc == EMBER_ERR_INVALID ? EMBER_EXIT_USAGE : EMBER_EXIT_INTERNAL;
		goto out;
	}
	ember__tree *t = ember__cli_tree_engine(ct);
	int64_t t0 = mono_ms();
	size_t nthreads = 0;
	if ((code = open_events(t, &targets, follow, &procs, &nthreads)) != 0)
		goto out;
	for (size_t i = 0; i < procs.n; i++)
		(void)ember__tree_adopt(t, procs.v[i]); /* -ESRCH: it exited meanwhile */
	fprintf(stderr, "emberprof: attached to %zu process%s (%zu thread%s) in %lld ms\n",
		procs.n, procs.n == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s",
		(long long)(mono_ms() - t0));
	test_pause(2);

	const char *why;
	sample_loop(t, &targets, a.duration_ms, &why);
	int64_t t1 = mono_ms();
	ember__cli_tree_stop(ct);
	ember__cli_tree_free(ct); /* the events closed: detached */
	ct = NULL;
	fprintf(stderr, "emberprof: %s: detached after %.1f s\n", why, (double)(t1 - t0) / 1000);
	code = 0;
	if (dir) {
		ember__cli_summary sum = {.dir = dir, .cmd = app, .tree = 1};
		ember__cli_opts_summary(o, &sum);
		ember__cli_summarize(&sum, &before, &jfr_before);
	}
out:
	ember__cli_tree_free(ct);
	ember__cli_names_free(&before);
	ember__cli_names_free(&jfr_before);
	ember__pidlist_free(&targets);
	ember__pidlist_free(&procs);
	ember__cli_opts_free(o);
	free(a.argv);
	free(dir);
	return code;
}
