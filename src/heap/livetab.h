/*
 * livetab.h - the table of live sampled allocations: pointer -> (size,
 * stack hash). The malloc hook inserts what it samples; free() removes.
 * The agent scans it at the end of each window for the in-use profile.
 *
 * Lock-free and bounded. Keys live in buckets of 8 (one cache line); each
 * pointer has two candidate buckets (two hash functions), and an insert
 * takes a free slot in either, so no probe chains and no tombstones exist:
 * a removal simply empties its slot. When both buckets are full the insert
 * fails and is counted (overflow): the table never grows. Memory is
 * mmap'd once, so neither path allocates.
 *
 * A lookup for a pointer that is not there (every free of an unsampled
 * block while something is live) reads two cache lines; when nothing is
 * live it reads one counter. Insert, remove and scan are async-signal-safe
 * and may run on any threads at once; init and destroy may not.
 */
#ifndef EMBER_HEAP_LIVETAB_H
#define EMBER_HEAP_LIVETAB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_LIVETAB_BUCKET 8

typedef struct ember__live_val {
	uint64_t size; /* bytes requested */
	uint64_t hash; /* ember__heap_stack_hash of the sampled stack */
} ember__live_val;

typedef struct ember__livetab {
	_Atomic uintptr_t *keys; /* 0: empty, 1: being written, else the pointer */
	ember__live_val *vals;
	size_t map_size;
	uint32_t nbuckets; /* a power of two */
	_Atomic int64_t count;     /* live entries */
	_Atomic uint64_t overflow; /* inserts refused: both buckets full */
} ember__livetab;

/* Maps a table with room for `capacity` entries (rounded up to a power of
 * two, at least 64). 0 or EMBER_ERR_NOMEM / EMBER_ERR_INVALID. */
int ember__livetab_init(ember__livetab *t, uint32_t capacity);
void ember__livetab_destroy(ember__livetab *t);

/* Records p. 0, or -1 when both of its buckets are full (counted). */
int ember__livetab_insert(ember__livetab *t, uintptr_t p, uint64_t size, uint64_t hash);

/* Removes p if present: 1 if it was, 0 if not (an unsampled block, a
 * double free, a pointer never allocated: nothing happens). */
int ember__livetab_remove(ember__livetab *t, uintptr_t p);

/* Whether anything is live: the free path's first, cheapest check. */
static inline int ember__livetab_any(ember__livetab *t)
{
	return atomic_load_explicit(&t->count, memory_order_relaxed) > 0;
}

/* Calls fn for every live entry. Entries inserted or removed during the
 * scan may or may not be seen. Returns the number visited. */
size_t ember__livetab_scan(ember__livetab *t,
			   void (*fn)(void *ud, uintptr_t p, const ember__live_val *v), void *ud);

/* Empties the table (no insert may run; removals may). */
void ember__livetab_clear(ember__livetab *t);

#endif
