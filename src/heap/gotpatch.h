/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gotpatch.h - allocation profiling of a process emberprof was loaded
 * into after its start (`emberprof attach --alloc`, x86-64 and aarch64): the
 * modules' GOT entries for malloc & co pointed at the hook's wrappers,
 * and back again at detach.
 *
 * A library loaded by dlopen comes last in the symbol search order: the
 * program's calls to malloc stay bound to libc's. So, from inside the
 * process, on the agent's start path (never the signal path), every
 * loaded module (dl_iterate_phdr; not the vDSO, not libemberprof) has its
 * JUMP_SLOT and GLOB_DAT relocations (R_X86_64_*, R_AARCH64_*) against the names
 * below rewritten: the slot now holds the wrapper (heap/exports.h), which
 * calls the process's allocator. Only a slot that holds what the dynamic
 * loader would have put there is touched: the process's allocator itself
 * (the first module in load order that defines malloc, not counting
 * libemberprof), or, for a lazily bound JUMP_SLOT, its not yet resolved
 * PLT stub inside the module. A slot bound to anything else (a module's
 * own malloc under -Bsymbolic or DT_DEEPBIND, another interposer) is left
 * and counted. Slots in the module's RELRO region have their page made
 * writable for the one 8-byte store and read-only again.
 *
 * Not patched, by choice: R_X86_64_64 / R_AARCH64_ABS64 (absolute) references to these
 * names. They are data (an allocator table such as {malloc, free} that
 * the program may have copied or compares against), not call sites: the
 * allocations made through them are not seen (counted and logged). Not
 * patched either: calls that never went through a GOT (the dynamic
 * loader's own malloc pointer, a statically linked allocator's internal
 * calls). malloc_usable_size needs no wrapper: the hook hands out the
 * allocator's own blocks.
 *
 * Modules loaded later (dlopen): every window end rescans on the agent
 * thread (ember__heap_got_rescan); allocations a new module makes before
 * that are not seen. A slot patched already holds the wrapper and is
 * skipped, so the rescan patches only what is new.
 *
 * Restore (ember__heap_got_restore): each slot gets its original value
 * back, only if it still holds the wrapper, and only in a module that is
 * still loaded (done inside dl_iterate_phdr, which holds the loader's
 * lock: no dlclose unmaps a module meanwhile). The wrappers stay mapped
 * (the library is never unloaded): a thread inside one finishes its call
 * to the allocator.
 *
 * Allocations made before the patch are not seen: the in-use figures
 * count only blocks allocated after it (a block of before freed after
 * goes through the wrapper's free, which does not find it sampled).
 *
 * None of this is async-signal-safe. Process-wide state, under a mutex.
 */
#ifndef EMBER_HEAP_GOTPATCH_H
#define EMBER_HEAP_GOTPATCH_H

#include <stddef.h>

#include "util/log.h"

/* What the memory profiles of such a run say in their comment (and the
 * attach command's summary). */
#define EMBER_HEAP_ATTACH_NOTE                                                                 \
	"attached to a running process: allocations made before attach are not seen; "       \
	"inuse_objects and inuse_space count only blocks allocated after attach"

/* A name to patch and the wrapper its slots get. */
typedef struct ember__got_fn {
	const char *name;
	void *wrapper;
} ember__got_fn;

/* What a patch or rescan did (counts of slots). */
typedef struct ember__got_stats {
	unsigned modules;   /* modules scanned */
	unsigned patched;   /* slots now holding a wrapper */
	unsigned elsewhere; /* slots bound to something else: left */
	unsigned absolute;  /* R_X86_64_64 references: left (see above) */
	unsigned failed;    /* slots whose page could not be made writable */
	unsigned pending;   /* slots not relocated yet (a dlopen under way): the
			       next rescan looks again */
} ember__got_stats;

/* Asks the next ember__heapprof_start to patch (attach sets it before
 * starting the agent); 0 clears it. */
void ember__heap_got_request(int on);
int ember__heap_got_requested(void);

/*
 * Sets the hook's allocator (heap/hook.h ember__heap_use_next) to the
 * process's and patches every module's slots of `fns` (n entries, the
 * wrappers: ember__heap_wrappers). 0 with *st filled, or ember_err (not
 * x86-64 or aarch64, no allocator found, the hook bound to another allocator
 * already): nothing patched then. Logs what it did.
 */
int ember__heap_got_patch(const ember__got_fn *fns, size_t n, const ember__logger *log,
			  ember__got_stats *st);

/* Patches the modules loaded since (a no-op when nothing was loaded, or
 * no patch is active). Agent thread, each window. */
void ember__heap_got_rescan(const ember__logger *log);

/* Whether slots are patched now (patch done, restore not yet). */
int ember__heap_got_active(void);

/* Puts every patched slot back (see above). Returns how many were
 * restored; idempotent (0 when nothing is patched). */
unsigned ember__heap_got_restore(void);

/* The slots the last patch (and its rescans) patched, and how many its
 * restore put back (fewer: a module unloaded meanwhile, or a slot
 * rewritten by someone else, both left as they are). */
void ember__heap_got_last(unsigned *patched, unsigned *restored);

#endif
