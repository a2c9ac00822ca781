/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exit_hook.c - _exit() and _Exit() in libemberprof.so: the final window
 * is reported before the process ends, as exit() does through atexit.
 *
 * A program that ends with _exit() (daemons after fork, programs that skip
 * their own cleanup, most fork children) never runs atexit handlers, so
 * the preloaded agent would never report its last partial window: up to
 * a whole reporting interval of profile lost without a word. These
 * definitions come first in symbol lookup (the library is preloaded), ask
 * the agent thread to report the final window (reporters flush as at a
 * stop, within their own flush timeouts), wait for it at most
 * EXIT_WAIT_MS, then end the process through the C library's _exit.
 * If the wait runs out, one line on stderr says the window was lost.
 *
 * Only the process that started the agent waits: a fork or vfork child
 * calling _exit (after a failed exec, say) goes straight through. Waiting
 * uses only atomics, clock_gettime and nanosleep, since _exit is
 * async-signal-safe and programs call it from signal handlers; the work is
 * done by the agent thread, so a lock the interrupted code held cannot
 * deadlock the exit, only delay it by the bounded wait.
 *
 * exec ends the program image too (the pid goes on as another program):
 * the exec wrappers (signal_wrap.c) report the final window the same way
 * first (ember__preload_exec_flush), so a wrapper that execs the real
 * program (sh -c, pyenv's shims) keeps what it ran before.
 *
 * Not covered: a raw exit_group system call (syscall(SYS_exit_group)),
 * which no library can see; such a run loses its last partial window.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "util/logfd.h"

/* The longest _exit waits: the default 5 s network flush plus encoding. */
#define EXIT_WAIT_MS 10000

#include "preload/exit_hook.h"
#include "util/hotpage.h"

typedef void (*exit_fn)(int) __attribute__((noreturn));
static exit_fn real_exit EMBER_HOT_DATA; /* libc's, found before main() (dlsym is not signal-safe) */

__attribute__((constructor)) static void find_real_exit(void)
{
	real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
}

static void flush_agent(ember_running *r)
{
	if (!r)
		return;
	if (ember__running_exit_flush(r, EXIT_WAIT_MS) == 1) {
		static const char msg[] = "emberprof: warning: the program called _exit() and the "
					  "final window was not reported within 10 s: it is lost\n";
		ember__logfd_write(msg, sizeof(msg) - 1);
	}
}

EMBER_HOT_TEXT static void final_flush(void)
{
	flush_agent(ember__preload_agent());
}

EMBER_HOT_TEXT void ember__preload_exec_flush(const char *path)
{
	/* Most execs come from processes without an agent (a shell's fork
	 * children, whose agent is the parent's; a process not profiled):
	 * they make no system call and bind no libc function here, which the
	 * child would otherwise resolve again in every fork (see
	 * docs/BENCHMARKS.md section 13). */
	ember_running *r = ember__preload_agent_now();
	if (!r)
		return;
	if (path && strchr(path, '/') && access(path, X_OK) != 0)
		return; /* the exec will fail: the program goes on, profiled */
	flush_agent(r);
}

__attribute__((noreturn)) static void end_process(int status)
{
	if (real_exit)
		real_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

EMBER_API EMBER_HOT_TEXT __attribute__((noreturn)) void _exit(int status)
{
	final_flush();
	end_process(status);
}

EMBER_API EMBER_HOT_TEXT __attribute__((noreturn)) void _Exit(int status)
{
	final_flush();
	end_process(status);
}
