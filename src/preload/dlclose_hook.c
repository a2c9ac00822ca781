/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlclose_hook.c - libemberprof.so's dlclose: while an agent of this
 * process runs, the library being closed is recorded (path, load base,
 * PT_LOAD segments, build id: symbols/dlclosed.h) before glibc's dlclose
 * unmaps it, so that its samples get names even when the agent never saw
 * it mapped (loaded and unloaded between two drains).
 *
 * In effect where libemberprof.so comes first in the symbol search order
 * (LD_PRELOAD by `emberprof run`, or linked into the program before libc).
 * Not in programs that link the static library (their dlclose is libc's:
 * src/link/), nor when `emberprof attach` dlopens the library into a
 * running process (the program's references are bound already), nor with
 * the async-profiler backend (it names its own frames; the agent does
 * not enable the journal then).
 *
 * Both of glibc's versions are defined (src/emberprof.map): GLIBC_2.34,
 * where libc.so.6 has it, and the first one of the architecture
 * (EMBER_GLIBC_BASE: libdl.so.2's before 2.34), which programs linked
 * against older glibc reference. glibc's own is found with
 * dlsym(RTLD_NEXT) before main. A dlclose that does not unload the object
 * (still referenced) is recorded too; the agent ignores the record.
 *
 * Not async-signal-safe (neither is dlclose). No malloc; bounded: the
 * record is captured on the stack (dl_iterate_phdr takes the loader's list
 * lock, which the real dlclose takes after us anyway) and put in the
 * journal without waiting (dropped and counted when full).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>

#include "symbols/dlclosed.h"
#include "unwind/arch.h" /* EMBER_GLIBC_BASE */

typedef int (*dlclose_fn)(void *);

static _Atomic(dlclose_fn) real_dlclose;

static dlclose_fn resolve(void)
{
	dlclose_fn f = atomic_load_explicit(&real_dlclose, memory_order_acquire);
	if (!f) {
		f = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
		atomic_store_explicit(&real_dlclose, f, memory_order_release);
	}
	return f;
}

__attribute__((constructor(101))) static void resolve_dlclose(void)
{
	(void)resolve();
}

static int hooked_dlclose(void *handle)
{
	dlclose_fn f = resolve();
	if (!f) {
		errno = ENOSYS; /* cannot happen with glibc: it defines dlclose */
		return -1;
	}
	if (handle) {
		int saved = errno;
		ember__dlclosed_note(handle);
		errno = saved;
	}
	return f(handle);
}

int ember__dlclose_v234(void *handle);
int ember__dlclose_base(void *handle);

__attribute__((visibility("default"))) int ember__dlclose_v234(void *handle)
{
	return hooked_dlclose(handle);
}

__attribute__((visibility("default"))) int ember__dlclose_base(void *handle)
{
	return hooked_dlclose(handle);
}

__asm__(".symver ember__dlclose_v234, dlclose@@GLIBC_2.34");
__asm__(".symver ember__dlclose_base, dlclose@" EMBER_GLIBC_BASE);
