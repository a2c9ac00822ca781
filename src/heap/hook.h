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
 * malloc is one thread-local subtraction and compare and a jump to the
 * real allocator; free() adds a range check (the bootstrap arena) and one
 * byte of the live table's filter, and looks the pointer up in the table
 * (two cache lines) only when that byte says a sampled block may be on
 * its page (livetab.h).
 */
#ifndef EMBER_HEAP_HOOK_H
#define EMBER_HEAP_HOOK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/livetab.h"
#include "sample/sampbuf.h"

/* Flags of a sampled allocation's ring record (ember__sample_rec.flags,
 * next to the EMBER_UNWIND_* bits). */
enum { EMBER_HEAP_REC_ALLOC = 1u << 12 };

/*
 * What the sampled path writes to: owned by the agent (src/heap/heapprof.c),
 * published with ember__heap_hook_attach while the agent runs. A record's
 * weight is the requested size in bytes, its pcs the allocating stack
 * (leaf first; the leaf is the return address into malloc's caller minus
 * one, so it is an exact address inside the call instruction), and the
 * block's address is in the first 8 bytes of its label area
 * (ember__sample_labels; label_len stays 0).
 */
typedef struct ember__heap_hook {
	ember__sampbuf buf;
	ember__livetab *live;
	uint64_t mean; /* bytes between samples, on average */
	_Atomic uint64_t sampled;      /* records written */
	_Atomic uint64_t dropped_full; /* sampled, but the ring was full: not recorded */
	_Atomic uint64_t no_bounds;    /* leaf only: the thread's stack bounds unknown */
	_Atomic uint64_t live_overflow;/* recorded, but the live table had no room */
} ember__heap_hook;

/*
 * Publishes `h`: threads start sampling at their next allocation check
 * (within 16 KiB of allocation). The live table must be empty. -1 if a
 * hook is attached already. Agent side.
 */
int ember__heap_hook_attach(ember__heap_hook *h);
/*
 * Unpublishes the hook. The sampled path runs inside ember__sigpath_enter
 * and leave, so once ember__sigpath_quiesce (sigsetup.c) returns after
 * this, no thread writes to it any more.
 */
void ember__heap_hook_detach(void);

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

/* The functions the exported names forward to. */
void *ember__heap_malloc(size_t n);
void ember__heap_free(void *p);
void *ember__heap_calloc(size_t n, size_t size);
void *ember__heap_realloc(void *p, size_t n);
void *ember__heap_reallocarray(void *p, size_t n, size_t size);
int ember__heap_posix_memalign(void **out, size_t align, size_t n);
void *ember__heap_aligned_alloc(size_t align, size_t n);
void *ember__heap_memalign(size_t align, size_t n);
void *ember__heap_valloc(size_t n);
void *ember__heap_pvalloc(size_t n);

/*
 * The exported malloc of this build, or NULL when none is built (the
 * sanitizer build: AddressSanitizer owns the allocator). Defined by
 * heap_exports.c / heap_link.c, or weakly NULL in hook.c.
 */
void *ember__heap_malloc_entry(void);

/* The code of the hook: frames whose PC lies inside are not the
 * application's and are cut from sampled stacks. */
#define EMBER_HEAP_HOOK_SECTION __attribute__((section("ember_hook_text")))

#endif
