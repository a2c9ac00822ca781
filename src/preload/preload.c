/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preload.c - the LD_PRELOAD entry point of libemberprof.so.
 *
 * When the library is preloaded into a program (by `emberprof run` or by
 * hand) and the environment asks for profiling (EMBERPROF_OUTPUT_DIR set,
 * or EMBERPROF_AUTOSTART=1), a constructor builds an agent from the
 * EMBERPROF_* variables and starts it before main(); an atexit handler
 * stops it, which reports the final window, and frees it.
 *
 * The host program must never notice us failing: every problem is printed
 * once to stderr as "emberprof: <message>" and the program runs on
 * unprofiled. Nothing is ever written to stdout.
 *
 * A process can hold two copies of the agent: `emberprof run` preloads
 * libemberprof_noalloc.so (the library without malloc & co) when
 * allocation profiling is off, and the program may link libemberprof.so.
 * Only the copy that comes first in the symbol search order, the one the
 * program's ember_* calls reach, starts an agent.
 *
 * The whole process tree is profiled, as `perf record` does: the library
 * stays in LD_PRELOAD, so the programs the process execs (in place, or in
 * children) load it and start their own agents, and a fork child that
 * keeps running starts one of its own (fork_child.c). With
 * EMBERPROF_FOLLOW_CHILDREN=0 only the first process is profiled, whatever
 * it execs into in place: its constructor records its pid in
 * EMBERPROF_PROFILE_PID, and a constructor in another pid stays out of the
 * way. (Editing LD_PRELOAD instead would not reach exec's in-place
 * successor, and posix_spawn's children never pass through our wrappers.)
 *
 * This file is compiled into the shared library only. Nothing here is
 * async-signal-safe.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "engine/sigsetup.h"
#include "heap/gotpatch.h"
#include "emberprof.h"
#include "preload/attach_watch.h"
#include "preload/preload_env.h"
#include "preload/exit_hook.h"
#include "preload/fork_child.h"
#include "util/envsnap.h"
#include "util/error.h"
#include "util/logfd.h"
#include "util/hotpage.h"

/* The agent we started, or NULL, and the process that started it. Atomic:
 * in a fork child another thread starts it (fork_child.c). */
static _Atomic(ember_running *) preload_running EMBER_HOT_DATA;
static _Atomic pid_t preload_pid EMBER_HOT_DATA;

/* The agent this process started, for the _exit hook (exit_hook.c); NULL
 * in a fork child whose agent did not start and once stopped. A lazy start
 * in a fork child is cancelled or waited for first. Async-signal-safe. */
EMBER_HOT_TEXT ember_running *ember__preload_agent(void)
{
	ember__fork_child_settle();
	return ember__preload_agent_now();
}

EMBER_HOT_TEXT ember_running *ember__preload_agent_now(void)
{
	ember_running *r = preload_running; /* (NULL: no getpid call) */
	return r && preload_pid == getpid() ? r : NULL;
}

/* One line on standard error, written as the agent's log is (never
 * through the program's stderr FILE, whose lock, buffer and orientation
 * are the program's; not when descriptor 2 is no longer its stderr). */
static void preload_complain(const char *what, const char *msg)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "emberprof: %s%s%s\n", what, msg && *msg ? ": " : "",
			 msg && *msg ? msg : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) { /* cut, but still one line */
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	ember__logfd_write(line, (size_t)n);
}

static void preload_stop(void)
{
	ember__fork_child_settle();
	/* A forked child inherits this handler but not the agent's thread. */
	if (!preload_running || getpid() != preload_pid)
		return;
	/* one stopper: the exit handler, emberprof's attach stop and the
	 * attach watch (attach_watch.h) may race */
	ember_running *r = atomic_exchange(&preload_running, NULL);
	if (!r)
		return;
	ember_agent *a = NULL;
	if (ember_running_stop(&a, r) < 0)
		preload_complain("final profile not fully reported", ember_last_error());
	ember_agent_shutdown(a);
}

/* Builds `b` (consumed) and starts the agent; returns 0 or prints why not
 * and fails. On the thread running the constructor, or on the helper
 * thread of a lazy start (a fork child, an image exec'd in the tree:
 * fork_child.c). */
static int start_builder(ember_builder *b)
{
	static int exit_registered EMBER_HOT_DATA; /* a fork child inherits the registration */
	ember_agent *a = NULL;
	ember_running *r = NULL;

	if (ember_builder_build(&a, b) < 0) {
		preload_complain("cannot build the profiler", ember_last_error());
		return -1;
	}
	if (ember_agent_start(&r, a) < 0) {
		preload_complain("cannot start the profiler", ember_last_error());
		ember_agent_shutdown(a);
		return -1;
	}
	preload_pid = getpid();
	preload_running = r;
	if (!exit_registered && atexit(preload_stop) != 0) {
		/* Without an exit hook the final window would be lost silently:
		 * better not to profile at all. */
		preload_complain("cannot register the exit handler, not profiling", NULL);
		preload_running = NULL;
		(void)ember_running_stop(&a, r); /* always gives the agent back */
		ember_agent_shutdown(a);
		return -1;
	}
	exit_registered = 1;
	return 0;
}

/* The agent the environment describes (EMBERPROF_*, docs/CONFIG.md). */
static int preload_start(void)
{
	ember_builder *b = NULL;
	const char *app = program_invocation_short_name;

	if (ember_builder_new(&b, app && *app ? app : "app") < 0) {
		preload_complain("cannot create the profiler", ember_last_error());
		return -1;
	}
	if (ember_builder_apply_env(b) < 0) {
		preload_complain("bad configuration, not profiling", ember_last_error());
		ember_builder_free(b);
		return -1;
	}
	return start_builder(b);
}

/*
 * Fork children of an agent the program started through the API with
 * ember_builder_follow_forks: the same lazy start as the environment's
 * (fork_child.c), from a copy of the parent agent's settings. The copy is
 * taken at the agent's start and dropped at its stop, under g_tpl_mu,
 * which a fork also holds (tpl_prepare), so a child never inherits it
 * half made or half freed. The child's helper thread reads its own copy.
 */
static pthread_mutex_t g_tpl_mu = PTHREAD_MUTEX_INITIALIZER;
static ember_builder *g_tpl; /* settings only, no reporter; NULL: not following */

static void tpl_prepare(void)
{
	pthread_mutex_lock(&g_tpl_mu);
}

static void tpl_release(void)
{
	pthread_mutex_unlock(&g_tpl_mu);
}

int ember__follow_forks_available(void)
{
	return 1;
}

/* fork_child.c's start in a child of an API agent: on the child's helper
 * thread, 2 ms of CPU or 20 ms after the fork. */
static int api_child_start(void)
{
	ember_builder *b = NULL;
	pthread_mutex_lock(&g_tpl_mu);
	int rc = g_tpl ? ember__builder_from_settings(&b, &g_tpl->cfg) : 1;
	pthread_mutex_unlock(&g_tpl_mu);
	if (rc == 1)
		return -1; /* the parent's agent stopped as it forked: nothing to follow */
	if (rc < 0) {
		preload_complain("cannot create a fork child's profiler", ember_last_error());
		return -1;
	}
	if (b->cfg.fork_fn(b->cfg.fork_ud, b) < 0) {
		ember_builder_free(b); /* the program chose to leave this child alone */
		return -1;
	}
	return start_builder(b);
}

int ember__follow_forks_begin(const ember__config *cfg)
{
	static int registered; /* per program image; a fork child inherits it */
	ember_builder *t = NULL;
	int rc = ember__builder_from_settings(&t, cfg);
	if (rc < 0)
		return rc;
	if (!registered) {
		/* before fork_child.c's: prepare handlers run last registered
		 * first, so a fork holds g_tpl_mu only after fork_child.c's
		 * prepare handler has waited for a start under way, which may
		 * itself take g_tpl_mu */
		if (pthread_atfork(tpl_prepare, tpl_release, tpl_release) != 0) {
			ember_builder_free(t);
			return ember__error(EMBER_ERR_SYS, "cannot register the fork handlers");
		}
		registered = 1;
	}
	pthread_mutex_lock(&g_tpl_mu);
	ember_builder *old = g_tpl;
	g_tpl = t;
	pthread_mutex_unlock(&g_tpl_mu);
	ember_builder_free(old);
	ember__fork_follow_enable(api_child_start);
	return 0;
}

void ember__follow_forks_end(void)
{
	ember__fork_follow_disable();
	pthread_mutex_lock(&g_tpl_mu);
	ember_builder *old = g_tpl;
	g_tpl = NULL;
	pthread_mutex_unlock(&g_tpl_mu);
	ember_builder_free(old);
}

/*
 * Does this program image start sampling at once? The command `emberprof
 * run` started does (its parent is the run, also after an exec in place),
 * as does every process when the library was preloaded by hand; any other
 * image of the tree (a shell loop's /bin/true, a compiler driver's cc1)
 * defers: most live a millisecond or two, less than an agent's start.
 */
EMBER_HOT_TEXT static int starts_at_once(void)
{
	const char *v = getenv(EMBER_ENV_RUN_PID);
	char *end;
	if (!v || !*v)
		return 1;
	/* Allocation profiling counts a process's allocations from its start,
	 * and a short one (a compiler's cc1) allocates most of its memory in
	 * its first milliseconds: such runs start every image at once. */
	uint64_t mean = 0;
	const char *alloc = getenv("EMBERPROF_ALLOC");
	if (alloc && *alloc && ember__parse_alloc(alloc, &mean) == 0 && mean > 0)
		return 1;
	unsigned long pid = 0;
	for (end = (char *)v; *end >= '0' && *end <= '9' && pid < (1ul << 40); end++)
		pid = pid * 10 + (unsigned long)(*end - '0');
	return *end != '\0' || pid == 0 || pid == (unsigned long)syscall(SYS_getppid);
}

/* ember__sigpath_preclaim for the signal the environment names; -1 when
 * it names none that parses (the agent's start then says why). */
EMBER_HOT_TEXT static int preclaim_signal(void)
{
	const char *v = getenv("EMBERPROF_SIGNAL");
	int signo = SIGPROF;
	if (v && *v && ember__parse_signal(v, &signo) != 0)
		return -1;
	return ember__sigpath_preclaim(signo);
}

/* A boolean variable; unset is off. Returns 0 or -1 if malformed. */
EMBER_HOT_TEXT static int env_flag(const char *name, int *out)
{
	const char *v = getenv(name);
	*out = 0;
	if (!v)
		return 0;
	if (ember__parse_bool(v, out) == 0)
		return 0;
	char what[512];
	snprintf(what, sizeof(what), "%s=\"%s\" is invalid (expected 0 or 1), not profiling", name, v);
	preload_complain(what, NULL);
	return -1;
}

/*
 * With EMBERPROF_FOLLOW_CHILDREN=0: is this the one process to profile?
 * The first constructor to run records its pid in EMBERPROF_PROFILE_PID;
 * the same pid after an exec in place is still it, any other is not.
 */
EMBER_HOT_TEXT static int is_profiled_pid(void)
{
	const char *v = getenv(EMBER_ENV_PROFILE_PID);
	char buf[24];
	/* (syscall(): its page fork_child.c's raw_getpid has touched) */
	ember__logfd_decimal(buf, (unsigned long)syscall(SYS_getpid));
	if (v && *v)
		return strcmp(v, buf) == 0;
	if (setenv(EMBER_ENV_PROFILE_PID, buf, 1) != 0)
		preload_complain("cannot set " EMBER_ENV_PROFILE_PID ", its children may be profiled "
				 "too", NULL);
	return 1;
}

/* Is this copy of emberprof the first in the symbol search order? */
EMBER_HOT_TEXT static int is_first_copy(void)
{
	Dl_info api, self;
	void *sym = dlsym(RTLD_DEFAULT, "ember_builder_new");
	if (!sym || !dladdr(sym, &api) || !dladdr((void *)is_first_copy, &self))
		return 1; /* cannot tell: behave as the only copy */
	return api.dli_fbase == self.dli_fbase;
}

__attribute__((constructor)) static void preload_init(void)
{
	int saved_errno = errno;
	const char *dir = getenv(EMBER_ENV_OUTPUT_DIR);
	int autostart = 0, follow = 0;

	if (!is_first_copy())
		goto out; /* the other copy is the program's agent */

	if (env_flag(EMBER_ENV_AUTOSTART, &autostart) < 0)
		goto out;
	/* A server to send to is a request to profile too. */
	const char *server = getenv("EMBERPROF_SERVER_URL");
	if (!server || !*server)
		server = getenv("PYROSCOPE_SERVER_ADDRESS");
	if (!(dir && *dir) && !autostart && !(server && *server))
		goto out; /* preloaded but not asked to profile: stay out of the way */

	follow = 1; /* the default: the whole tree */
	if (getenv(EMBER_ENV_FOLLOW_CHILDREN) && env_flag(EMBER_ENV_FOLLOW_CHILDREN, &follow) < 0)
		goto out;
	if (!follow && !is_profiled_pid())
		goto out; /* another process of a --no-follow-children run */
	/* The environment as the image started, for the agent's own reads
	 * from now on: fork children (fork_child.c) and agent threads, whose
	 * getenv would not be safe while the program calls setenv. */
	ember__env_snapshot_take();
	ember__env_snapshot_use();
	/* Any other image of the tree: claim the signal now, start later. */
	if (follow && !starts_at_once() && preclaim_signal() == 0) {
		ember__fork_lazy_start(preload_start);
		goto out;
	}
	if (preload_start() == 0 && follow)
		ember__fork_follow_enable(preload_start);
out:
	errno = saved_errno;
}

/*
 * `emberprof attach --wall/--alloc` loads this library into a running
 * process (dlopen, called from outside: tools/attach/inject.h) and then
 * calls these, on a thread it borrowed, through dlsym. The process was
 * started without our variables and its environment cannot be changed
 * from outside: the settings come as "KEY=VALUE" lines instead
 * (ember__env_snapshot_set). Exported by name in the version scripts
 * (src/emberprof.map), not part of the public API.
 *
 * ember__attach_start: 0 once the agent runs; -1 (said on stderr) if it
 * cannot start, or if an agent runs already.
 * With allocation profiling the agent's start points the modules' GOT
 * entries of malloc & co at our wrappers (heap/gotpatch.h) and
 * ember__attach_stop restores them first (the agent's stop does too, on
 * any other way it stops).
 * With EMBERPROF_ATTACHER_PID in the settings (emberprof's pid), a watch
 * (attach_watch.h) stops the agent if that process exits first.
 * ember__attach_stop: stops the agent, which reports its final window
 * and leaves nothing behind (its threads joined, its signal handler and
 * timers removed, its descriptors closed); the library stays loaded
 * (unloading it under the program's feet is not safe: an atexit entry
 * and the program's references may point into it). 0, or -1 when no
 * agent ran.
 */
__attribute__((visibility("default"))) int ember__attach_start(const char *settings);
__attribute__((visibility("default"))) int ember__attach_stop(void);

int ember__attach_start(const char *settings)
{
	int saved_errno = errno;
	int rc = -1;
	if (preload_running)
		preload_complain("an agent runs already in this process, not starting another", NULL);
	else if (!settings || ember__env_snapshot_set(settings) != 0)
		preload_complain("cannot read the attach settings, not profiling", NULL);
	else {
		/* malloc & co reach the hook only through their patched GOT
		 * entries (gotpatch.h): the agent's start patches them when
		 * allocation profiling is on */
		ember__heap_got_request(1);
		rc = preload_start();
	}
	/* stop by ourselves if emberprof is killed before it stops us */
	const char *attacher = rc == 0 ? ember__getenv("EMBERPROF_ATTACHER_PID") : NULL;
	if (attacher && *attacher) {
		const char *why = NULL;
		if (ember__attach_watch_start((pid_t)atoi(attacher), preload_stop, &why) != 0)
			preload_complain("the agent will not stop by itself if emberprof is killed",
					 why);
	}
	errno = saved_errno;
	return rc;
}

int ember__attach_stop(void)
{
	int saved_errno = errno;
	if (ember__attach_watch_end()) {
		errno = saved_errno;
		return -1; /* the watch stopped it: emberprof had gone */
	}
	int rc = preload_running ? 0 : -1;
	/* the program's calls back to its allocator before the agent stops
	 * (the agent's stop logs how many were restored) */
	ember__heap_got_restore();
	preload_stop();
	errno = saved_errno;
	return rc;
}
