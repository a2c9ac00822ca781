/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hook.h - the malloc interposition: what runs inside malloc, free and
 * the rest on the application's threads, and the state it reaches.
 *
 * The exported names (malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc) are defined
 * in src/preload/heap_exports.c (libemberprof.so, under glibc's symbol
 * versions) and src/link/heap_link.c (an object programs link in); both
 * only forward to the ember__heap_* functions below.
 *
 * Constraints of everything here (the hook runs inside the application's
 * allocator calls, at any time, on any thread, possibly inside the dynamic
 * loader or a signal handler that allocates): no allocation, no lock, no
 * stdio, no errno change beyond the real allocator's. The unsampled
 * malloc is a flag test, one thread-local subtraction and compare and a
 * jump to the real allocator; free() reads one byte of the live table's
 * filter (while anything sampled is live), and looks the pointer up in
 * the table (two cache lines) only when that byte says a sampled (or
 * bootstrap) block may be in its 1 KiB chunk (livetab.h). See the fast
 * paths at the end of this file.
 */
#ifndef EMBER_HEAP_HOOK_H
#define EMBER_HEAP_HOOK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/livetab.h"
#include "sample/sampbuf.h"

/* Flags of a sampled allocation's ring record (ember__sample_rec.flags,
 * next to the EMBER_UNWIND_* bits). REC_TSC: time_ns holds the CPU's
 * time-stamp counter, for the agent to convert (tsclock.h). */
enum { EMBER_HEAP_REC_ALLOC = 1u << 12, EMBER_HEAP_REC_TSC = 1u << 13 };

/*
 * What the sampled path writes to: owned by the agent (src/heap/heapprof.c),
 * published with ember__heap_hook_attach while the agent runs. A record's
 * weight is the requested size in bytes, its pcs the allocating stack
 * (leaf first; the leaf is the return address into malloc's caller minus
 * one, so it is an exact address inside the call instruction), and the
 * block's address is in its addr field (label_len stays 0).
 */
typedef struct ember__heap_hook {
	ember__sampbuf buf;
	ember__livetab *live;
	uint64_t mean; /* bytes between samples, on average */
	/* records written: buf.head (each successful claim moves it) */
	_Atomic uint64_t dropped_full; /* sampled, but the ring was full: not recorded */
	_Atomic uint64_t no_bounds;    /* leaf only: the thread's stack bounds unknown */
	_Atomic uint64_t live_overflow;/* recorded, but the live table had no room */
} ember__heap_hook;

/*
 * Publishes `h`: threads start sampling at their next allocation check
 * (within 64 KiB of allocation). The live table must be empty. -1 if a
 * hook is attached already. Agent side.
 */
int ember__heap_hook_attach(ember__heap_hook *h);
/* Registers the hook's atfork handler now (once per program image; the
 * first attach does it too): see ember__threads_atfork_init. */
void ember__heap_atfork_init(void);
/*
 * Unpublishes the hook. The sampled path runs inside ember__sigpath_enter
 * and leave, so once ember__sigpath_quiesce (sigsetup.c) returns after
 * this, no thread writes to it any more.
 */
void ember__heap_hook_detach(void);

/* Whether sampled records carry TSC ticks instead of CLOCK_REALTIME
 * nanoseconds: on once the agent knows their rate (tsclock.h), off at
 * detach. Agent side. */
void ember__heap_set_tsc(int on);

/* The process-wide live table, mapped on first use (agent thread) and
 * never unmapped: free() may consult it at any time. NULL if mapping
 * failed. */
ember__livetab *ember__heap_live_table(void);

/* Whether the calling thread is emberprof's own (never sampled), and
 * marking it so: the agent, upload and wall-clock threads mark
 * themselves; threads they create inherit the mark (thread_hook.c). */
int ember__heap_internal(void);
void ember__heap_set_internal(int on);

/* The malloc the hook calls (glibc's __libc_malloc, or the allocator
 * that follows us in the symbol search order; see hook.c), for logs. */
void *ember__heap_real_malloc(void);

/*
 * Sets the allocator the hook calls, instead of the dlsym(RTLD_NEXT)
 * lookup of the first call: NULL for glibc's own (the __libc_* entry
 * points), or `next` (malloc, free, calloc, realloc and memalign
 * required; the others may be NULL: they fall back on memalign). For a
 * library loaded by dlopen, whose RTLD_NEXT is not the process's
 * allocator (gotpatch.h). 0, or -1 when the hook is bound to another
 * allocator already (or a lookup is under way). Not async-signal-safe.
 */
struct ember__heap_next;
int ember__heap_use_next(const struct ember__heap_next *next);

/* The functions the exported names forward to (malloc and free are
 * ember__heap_malloc_fast and ember__heap_free_fast, below). */
void *ember__heap_calloc(size_t n, size_t size);
void *ember__heap_realloc(void *p, size_t n);
void *ember__heap_reallocarray(void *p, size_t n, size_t size);
int ember__heap_posix_memalign(void **out, size_t align, size_t n);
void *ember__heap_aligned_alloc(size_t align, size_t n);
void *ember__heap_memalign(size_t align, size_t n);
void *ember__heap_valloc(size_t n);
void *ember__heap_pvalloc(size_t n);

/*
 * The wrappers of this build for gotpatch.h (malloc, free and the rest,
 * as exported), their count in *n; NULL (*n 0) when none is built.
 * Defined with ember__heap_malloc_entry.
 */
struct ember__got_fn;
const struct ember__got_fn *ember__heap_wrappers(size_t *n);

/*
 * The exported malloc of this build, or NULL when none is built (the
 * sanitizer build: AddressSanitizer owns the allocator). Defined by
 * heap_exports.c / heap_link.c, or weakly NULL in hook.c.
 */
void *ember__heap_malloc_entry(void);

/* The code of the hook: frames whose PC lies inside are not the
 * application's and are cut from sampled stacks. */
#define EMBER_HEAP_HOOK_SECTION __attribute__((section("ember_hook_text")))

/*
 * ---- The two hot paths, inlined into the exported malloc and free ----
 *
 * Written out in the exported functions themselves (exports.h), so that a
 * call costs no jump beyond the tail jump to the real allocator
 * (docs/BENCHMARKS.md section 7 measured each extra jump). Everything they
 * reach is hook.c's, declared hidden so that the shared library reaches
 * it without the GOT.
 */
#define EMBER_HEAP_HIDDEN __attribute__((visibility("hidden")))

/* The real allocator (the next one in the symbol search order, hook.c's
 * resolve()). malloc and free are hook.c's stubs until the first call has
 * resolved them; the fast paths read those two and `armed`, which share
 * the first cache line. */
typedef struct ember__heap_next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	/* 0 until allocation profiling first attaches in this process: until
	 * then malloc does not even count. Never cleared. */
	int armed;
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
} ember__heap_next;
extern EMBER_HEAP_HIDDEN ember__heap_next ember__heap_next_fns;
/* Bytes this thread may still allocate before its next sampling check. */
extern EMBER_HEAP_HIDDEN __thread int64_t ember__heap_left
	__attribute__((tls_model("initial-exec")));
/* The live table's filter (livetab.h), static so that free() needs no
 * check that it exists: all zero until something is sampled, except the
 * bytes of the bootstrap arena's blocks, stuck at 255. */
extern EMBER_HEAP_HIDDEN _Atomic uint8_t ember__heap_filter[EMBER_LIVETAB_FILTER_SLOTS];
/* The process-wide live table (its count: entries live or being inserted). */
extern EMBER_HEAP_HIDDEN ember__livetab ember__heap_live;
/* The bootstrap arena: what malloc hands out while the real allocator is
 * being looked up (hook.c). Its blocks are never freed. */
#define EMBER_HEAP_BOOT_SIZE (128u * 1024u)
extern EMBER_HEAP_HIDDEN unsigned char ember__heap_boot[EMBER_HEAP_BOOT_SIZE];
EMBER_HEAP_HIDDEN void *ember__heap_malloc_slow(size_t n);
EMBER_HEAP_HIDDEN void ember__heap_free_maybe(void *p);

/* The unsampled malloc: count the request down (once allocation
 * profiling has ever been on), jump to the real one. Async-signal-safe
 * as far as the real allocator is. */
static inline __attribute__((always_inline)) void *ember__heap_malloc_fast(size_t n)
{
	if (__atomic_load_n(&ember__heap_next_fns.armed, __ATOMIC_RELAXED) &&
	    __builtin_expect((ember__heap_left -= (int64_t)n) < 0, 0))
		return ember__heap_malloc_slow(n);
	return __atomic_load_n(&ember__heap_next_fns.malloc, __ATOMIC_RELAXED)(n);
}

/*
 * free: while no sampled block is live (allocation profiling off, the
 * common case), a range check for the bootstrap arena; otherwise one
 * filter byte (which has the arena's blocks pinned) says whether p may be
 * a sampled block: almost never, and then the real free. The count is in
 * a line the hook keeps cached; the filter byte, for a program whose frees
 * range over megabytes, often is not (measured: ~1.5 % of a malloc-bound
 * program). A sampled block's insert counts before malloc returns it, so a
 * free of it, which comes after, sees a count above zero. NULL goes to the
 * real free, which ignores it.
 */
static inline __attribute__((always_inline)) void ember__heap_free_fast(void *p)
{
	if (atomic_load_explicit(&ember__heap_live.count, memory_order_relaxed) != 0) {
		if (__builtin_expect(ember__livetab_filter_maybe(ember__heap_filter, (uintptr_t)p), 0))
			return ember__heap_free_maybe(p);
	} else if ((uintptr_t)p - (uintptr_t)ember__heap_boot < EMBER_HEAP_BOOT_SIZE) {
		return; /* a bootstrap block */
	}
	__atomic_load_n(&ember__heap_next_fns.free, __ATOMIC_RELAXED)(p);
}

#endif
