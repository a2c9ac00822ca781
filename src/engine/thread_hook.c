/* SPDX-License-Identifier: Apache-2.0 */
/*
 * thread_hook.c - covers threads created after start.
 *
 * emberprof defines pthread_create: in libemberprof.so under glibc's own
 * symbol versions (src/preload/pthread_versions.c: a versioned reference
 * such as pthread_create@GLIBC_2.34 only binds to a definition carrying
 * that version), and unversioned in the static library
 * (src/link/pthread_create.c). Where this definition comes first in the
 * symbol search order (LD_PRELOAD, or linked into the program), the
 * application's threads start in a trampoline that registers the thread
 * (stack bounds, CPU timer) before the real start routine runs, so a new
 * thread is sampled from its first period. A thread-specific-data
 * destructor unregisters it at exit. Where the hook is not in effect
 * (e.g. emberprof was dlopen'ed), the agent's periodic scan of
 * /proc/self/task covers new threads instead (threads.c).
 *
 * Runs on application threads, outside signal handlers; not
 * async-signal-safe.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine/threads.h"
#include "emberprof.h"
#include "heap/hook.h"
#include "sample/handler.h"
#include "sample/sigvirt.h"
#include "unwind/arch.h"
#include "util/envsnap.h"
#include "util/hotpage.h"

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static _Atomic(pthread_create_fn) real_create EMBER_HOT_DATA;
static pthread_key_t exit_key EMBER_HOT_DATA;
static pthread_once_t key_once EMBER_HOT_DATA = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *value)
{
	ember__tls_exiting = 1; /* first: no wall sample of this hook (handler.h) */
	/* the value is the thread's start routine (ember_thread_start) */
	ember__threads_on_exit((uintptr_t)value);
}

static void make_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

static pthread_create_fn resolve_real(void)
{
	pthread_create_fn f = atomic_load_explicit(&real_create, memory_order_acquire);
	if (!f) {
#if defined(__SANITIZE_THREAD__)
		/* ThreadSanitizer's interceptor comes next and is unversioned:
		 * dlvsym passes over it (glibc's own definition would start
		 * threads TSan does not know, which crash at their first
		 * instrumented call). */
		f = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (f) {
			atomic_store_explicit(&real_create, f, memory_order_release);
			return f;
		}
#endif
		/* Ask for glibc's current version first: a plain dlsym could
		 * return an older compatibility version on some systems. */
		f = (pthread_create_fn)dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
		if (!f)
			f = (pthread_create_fn)dlvsym(RTLD_NEXT, "pthread_create", EMBER_GLIBC_BASE);
		if (!f)
			f = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (!f)
			return NULL;
		atomic_store_explicit(&real_create, f, memory_order_release);
	}
	return f;
}

struct trampoline {
	void *(*fn)(void *);
	void *arg;
	int internal; /* an emberprof thread: its allocations are never profiled */
	int sig_blocked; /* the creator virtually blocks the sampling signal (sigvirt.h) */
	const char *name; /* emberprof's own threads: their name (static), else NULL */
	int env_own; /* created by one of emberprof's threads (util/envsnap.h) */
};

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
/* Our own threads start through glibc's pthread_create, past ASan's
 * interceptor (resolve_real), so ASan does not know them ("T-1") and
 * never cleans their stacks: a stack glibc reuses from an exited thread
 * keeps that thread's poisoned redzones, and the agent thread's first
 * deep call reads them as an overflow (seen in cli.test_run_library).
 * Unpoison the part of the stack below this frame. */
static void unpoison_own_stack(void)
{
	pthread_attr_t a;
	void *lo = NULL;
	size_t sz = 0;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	pthread_attr_getstack(&a, &lo, &sz);
	pthread_attr_destroy(&a);
	char *below = (char *)__builtin_frame_address(0) - 256;
	if (lo && below > (char *)lo)
		ASAN_UNPOISON_MEMORY_REGION(lo, (size_t)(below - (char *)lo));
}
#else
static void unpoison_own_stack(void)
{
}
#endif

/* emberprof's own threads (agent, uploads, wall clock) start here. */
static void *internal_thread_start(void *p)
{
	unpoison_own_stack();
	struct trampoline tr = *(struct trampoline *)p;
	free(p);
	ember__heap_set_internal(1);
	/* ember__getenv() reads the start-up copy here, never the live
	 * environment the program may be changing (util/envsnap.h) */
	ember__env_own_thread();
	if (tr.name)
		pthread_setname_np(pthread_self(), tr.name);
	return tr.fn(tr.arg);
}

int ember__real_pthread_create(pthread_t *th, const pthread_attr_t *attr,
			       void *(*fn)(void *), void *arg, const char *name)
{
	pthread_create_fn f = resolve_real();
	if (!f)
		return EAGAIN;
	struct trampoline *tr = malloc(sizeof(*tr));
	if (!tr) /* ENOMEM, not pthread_create's EAGAIN: the message then says why */
		return ENOMEM;
	*tr = (struct trampoline){fn, arg, 1, 0, name, 1};
	int rc = f(th, attr, internal_thread_start, tr);
	if (rc != 0)
		free(tr);
	return rc;
}

static void *ember_thread_start(void *p)
{
	struct trampoline tr = *(struct trampoline *)p;
	free(p);
	ember__heap_set_internal(tr.internal);
	ember__sigvirt_set_blocked(tr.sig_blocked); /* inherited, as a real mask is */
	if (tr.env_own) /* libcurl's resolver reads the start-up environment too */
		ember__env_own_thread();
	pthread_once(&key_once, make_key);
	pthread_setspecific(exit_key, (void *)(uintptr_t)tr.fn);
	ember__threads_on_start();
	return tr.fn(tr.arg);
}

int ember__hooked_pthread_create(pthread_t *th, const pthread_attr_t *attr,
				 void *(*fn)(void *), void *arg)
{
	pthread_create_fn real = resolve_real();
	if (!real)
		return EAGAIN;
	struct trampoline *tr = malloc(sizeof(*tr));
	if (!tr) /* run the thread unhooked rather than fail the application */
		return real(th, attr, fn, arg);
	tr->fn = fn;
	tr->arg = arg;
	/* A thread an emberprof thread creates (libcurl's resolver) is ours too. */
	tr->internal = ember__heap_internal();
	tr->sig_blocked = ember__sigvirt_blocked();
	tr->name = NULL;
	tr->env_own = ember__env_is_own_thread();
	int rc = real(th, attr, ember_thread_start, tr);
	if (rc != 0)
		free(tr);
	return rc;
}

int ember__threads_hooked(const ember__threads *t)
{
	(void)t;
	void *entry = ember__pthread_create_entry();
	if (!entry)
		return 0;
	/* Programs built against glibc >= 2.34 bind pthread_create@GLIBC_2.34,
	 * older ones pthread_create@EMBER_GLIBC_BASE (GLIBC_2.2.5 on x86-64,
	 * GLIBC_2.17 on aarch64): check what each resolves to. */
	return dlvsym(RTLD_DEFAULT, "pthread_create", "GLIBC_2.34") == entry ||
	       dlsym(RTLD_DEFAULT, "pthread_create") == entry;
}
