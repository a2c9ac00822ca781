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
 * Unless EMBERPROF_FOLLOW_CHILDREN=1, the library removes itself from
 * LD_PRELOAD in the process's own environment, so programs it execs run
 * unprofiled. (A fork without exec keeps running our code but not our
 * agent: timers are not inherited, and the exit handler only acts in the
 * process that started the agent.)
 *
 * This file is compiled into the shared library only. Nothing here is
 * async-signal-safe.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "emberprof.h"
#include "preload/preload_env.h"
#include "preload/exit_hook.h"

static ember_running *preload_running; /* the agent we started, or NULL */
static pid_t preload_pid;              /* the process that started it */

/* The agent this process started, for the _exit hook (exit_hook.c); NULL
 * in a fork child and once stopped. Async-signal-safe. */
ember_running *ember__preload_agent(void)
{
	return preload_pid == getpid() ? preload_running : NULL;
}

static void preload_complain(const char *what, const char *msg)
{
	if (msg && *msg)
		fprintf(stderr, "emberprof: %s: %s\n", what, msg);
	else
		fprintf(stderr, "emberprof: %s\n", what);
}

/* Is the file name [base, base+n) libname, with or without a version suffix? */
static int is_libname(const char *base, size_t n, const char *libname)
{
	size_t nlib = strlen(libname);
	/* libemberprof.so, libemberprof.so.0, libemberprof.so.0.1.0 */
	return n >= nlib && memcmp(base, libname, nlib) == 0 && (n == nlib || base[nlib] == '.');
}

/* Is the LD_PRELOAD entry [entry, entry+len) this library (either variant)? */
static int is_our_library(const char *entry, size_t len, const char *self)
{
	const char *base = entry;
	for (size_t i = 0; i < len; i++)
		if (entry[i] == '/')
			base = entry + i + 1;
	size_t nbase = len - (size_t)(base - entry);
	if (is_libname(base, nbase, EMBER_PRELOAD_LIBNAME) ||
	    is_libname(base, nbase, EMBER_PRELOAD_NOALLOC_LIBNAME))
		return 1;
	return self && strlen(self) == len && memcmp(self, entry, len) == 0;
}

/*
 * Removes this library from LD_PRELOAD (entries are separated by spaces
 * or colons; the rest keep their order and are joined with ':'). The
 * variable is unset if nothing else remains.
 */
static void remove_self_from_ld_preload(void)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old)
		return;
	const char *self = NULL;
	Dl_info info;
	if (dladdr((void *)remove_self_from_ld_preload, &info) && info.dli_fname)
		self = info.dli_fname;

	size_t n = strlen(old);
	char *out = malloc(n + 1);
	if (!out) {
		preload_complain("out of memory editing LD_PRELOAD", NULL);
		return;
	}
	size_t len = 0;
	int removed = 0;
	const char *p = old;
	while (*p) {
		size_t skip = strspn(p, " :");
		p += skip;
		size_t tok = strcspn(p, " :");
		if (tok == 0)
			break;
		if (is_our_library(p, tok, self)) {
			removed = 1;
		} else {
			if (len > 0)
				out[len++] = ':';
			memcpy(out + len, p, tok);
			len += tok;
		}
		p += tok;
	}
	out[len] = '\0';
	if (removed) {
		if (len == 0)
			unsetenv("LD_PRELOAD");
		else
			setenv("LD_PRELOAD", out, 1);
	}
	free(out);
}

static void preload_stop(void)
{
	ember_running *r = preload_running;
	/* A forked child inherits this handler but not the agent's thread. */
	if (!r || getpid() != preload_pid)
		return;
	preload_running = NULL;
	ember_agent *a = NULL;
	if (ember_running_stop(&a, r) < 0)
		preload_complain("final profile not fully reported", ember_last_error());
	ember_agent_shutdown(a);
}

/* Builds and starts the agent; returns 0 or prints why not and fails. */
static int preload_start(void)
{
	ember_builder *b = NULL;
	ember_agent *a = NULL;
	ember_running *r = NULL;
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
	if (ember_builder_build(&a, b) < 0) {
		preload_complain("cannot build the profiler", ember_last_error());
		return -1;
	}
	if (ember_agent_start(&r, a) < 0) {
		preload_complain("cannot start the profiler", ember_last_error());
		ember_agent_shutdown(a);
		return -1;
	}
	preload_running = r;
	preload_pid = getpid();
	if (atexit(preload_stop) != 0) {
		/* Without an exit hook the final window would be lost silently:
		 * better not to profile at all. */
		preload_complain("cannot register the exit handler, not profiling", NULL);
		preload_running = NULL;
		(void)ember_running_stop(&a, r); /* always gives the agent back */
		ember_agent_shutdown(a);
		return -1;
	}
	return 0;
}

/* A boolean variable; unset is off. Returns 0 or -1 if malformed. */
static int env_flag(const char *name, int *out)
{
	const char *v = getenv(name);
	*out = 0;
	if (!v)
		return 0;
	if (ember__parse_bool(v, out) == 0)
		return 0;
	fprintf(stderr, "emberprof: %s=\"%s\" is invalid (expected 0 or 1), not profiling\n", name,
		v);
	return -1;
}

/* Is this copy of emberprof the first in the symbol search order? */
static int is_first_copy(void)
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

	int follow_ok = env_flag(EMBER_ENV_FOLLOW_CHILDREN, &follow) == 0;
	if (!follow)
		remove_self_from_ld_preload();
	if (follow_ok)
		preload_start();
out:
	errno = saved_errno;
}
