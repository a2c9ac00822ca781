/* SPDX-License-Identifier: Apache-2.0 */
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
 * The filter. free() runs for every block, sampled or not, and a table
 * lookup (two buckets, two cache lines far apart in 1.5 MiB) for each
 * cost ~190 instructions and a cache miss per free. So in front of the
 * table sits a counting filter: one byte per 1 KiB chunk of address space
 * (EMBER_LIVETAB_FILTER_GRAIN), 16 KiB in all
 * (EMBER_LIVETAB_FILTER_SLOTS), counting the live entries whose address
 * falls in a chunk that maps to it. free() looks at that byte first
 * (ember__livetab_maybe: shifts, a multiply, an add, a mask, one load)
 * and consults the table only when it is not zero. Adjacent chunks map
 * to adjacent bytes, so one filter line covers 64 KiB of heap and the
 * lines a program's frees touch stay cached; each 16 MiB region of the
 * address space starts at a hashed offset of the filter, so that glibc's
 * 64 MiB-aligned thread arenas do not all land on the same bytes.
 * The count never under-counts (an insert counts before it publishes, a
 * remove uncounts after it has emptied the slot), so the filter has no
 * false negatives; a false positive (a chunk shared with a sampled block,
 * or aliased: about live entries / 16384 of frees once the heap spans
 * more than 16 MiB) costs one table lookup. A byte that reaches 255
 * stays there (a permanent false positive for its chunks, never a miss).
 *
 * Insert, remove, maybe and scan are async-signal-safe and may run on any
 * threads at once; init and destroy may not.
 */
#ifndef EMBER_HEAP_LIVETAB_H
#define EMBER_HEAP_LIVETAB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_LIVETAB_BUCKET 8
#define EMBER_LIVETAB_FILTER_BITS 14
#define EMBER_LIVETAB_FILTER_GRAIN 10 /* log2 of the bytes a counter covers */
#define EMBER_LIVETAB_FILTER_SLOTS (1u << EMBER_LIVETAB_FILTER_BITS)

typedef struct ember__live_val {
	uint64_t size; /* bytes requested */
	uint64_t hash; /* ember__heap_stack_hash of the sampled stack */
} ember__live_val;

typedef struct ember__livetab {
	_Atomic uintptr_t *keys; /* 0: empty, 1: being written, else the pointer */
	/* EMBER_LIVETAB_FILTER_SLOTS counters (see above); NULL until init. */
	_Atomic(_Atomic uint8_t *) filter;
	ember__live_val *vals;
	size_t map_size;
	uint32_t nbuckets; /* a power of two */
	_Atomic int64_t count;     /* live entries */
	_Atomic uint64_t overflow; /* inserts refused: both buckets full */
} ember__livetab;

/* Maps a table with room for `capacity` entries (rounded up to a power of
 * two, at least 64). 0 or EMBER_ERR_NOMEM / EMBER_ERR_INVALID. */
int ember__livetab_init(ember__livetab *t, uint32_t capacity);
/* The same with a filter the caller owns (EMBER_LIVETAB_FILTER_SLOTS
 * bytes, zero or pinned at 255 with ember__livetab_filter_pin, living at
 * least as long as the table and untouched by destroy): the malloc hook's
 * is static, so that free() reads it without checking that a table
 * exists. */
int ember__livetab_init_filter(ember__livetab *t, uint32_t capacity, _Atomic uint8_t *filter);
void ember__livetab_destroy(ember__livetab *t);

/* Records p. 0, or -1 when both of its buckets are full (counted). */
int ember__livetab_insert(ember__livetab *t, uintptr_t p, uint64_t size, uint64_t hash);

/* Removes p if present: 1 if it was, 0 if not (an unsampled block, a
 * double free, a pointer never allocated: nothing happens). The free path
 * calls it only when ember__livetab_maybe(t, p). */
int ember__livetab_remove(ember__livetab *t, uintptr_t p);

/* Starts loading the cache lines an insert or removal of p will touch
 * (both buckets' keys and values), so that they arrive while the caller
 * does other work. Async-signal-safe; reads nothing itself. */
void ember__livetab_prefetch(const ember__livetab *t, uintptr_t p);

/* Whether anything is live. */
static inline int ember__livetab_any(ember__livetab *t)
{
	return atomic_load_explicit(&t->count, memory_order_relaxed) > 0;
}

/* The filter counter of p's chunk: the chunk number's low bits, shifted
 * by a Fibonacci hash of its high bits. */
static inline uint32_t ember__livetab_filter_slot(uintptr_t p)
{
	uint64_t chunk = (uint64_t)p >> EMBER_LIVETAB_FILTER_GRAIN;
	uint64_t shift = ((chunk >> EMBER_LIVETAB_FILTER_BITS) * 0x9e3779b97f4a7c15ULL) >>
			 (64 - EMBER_LIVETAB_FILTER_BITS);
	return (uint32_t)((chunk + shift) & (EMBER_LIVETAB_FILTER_SLOTS - 1));
}

/* Sticks the counter of p's chunk in filter f at "maybe", for good.
 * Async-signal-safe. */
static inline void ember__livetab_filter_pin(_Atomic uint8_t *f, uintptr_t p)
{
	atomic_store_explicit(&f[ember__livetab_filter_slot(p)], UINT8_MAX, memory_order_seq_cst);
}

/* The filter of an initialised table, NULL before (acquire: a filter
 * seen means the table is seen). */
static inline _Atomic uint8_t *ember__livetab_filter(ember__livetab *t)
{
	return atomic_load_explicit(&t->filter, memory_order_acquire);
}

/*
 * Whether p may be in the table whose filter is f: 0 means it certainly
 * is not (the free path's test, a few instructions and one load). A free
 * of p that comes after p's insert (as every free of a block comes after
 * its malloc returned) sees the insert's count.
 */
static inline int ember__livetab_filter_maybe(_Atomic uint8_t *f, uintptr_t p)
{
	return atomic_load_explicit(&f[ember__livetab_filter_slot(p)], memory_order_relaxed) != 0;
}

/* ember__livetab_filter_maybe for table t (0 before its init). */
static inline int ember__livetab_maybe(ember__livetab *t, uintptr_t p)
{
	_Atomic uint8_t *f = ember__livetab_filter(t);
	return f && ember__livetab_filter_maybe(f, p);
}

/* Calls fn for every live entry. Entries inserted or removed during the
 * scan may or may not be seen. Returns the number visited. */
size_t ember__livetab_scan(ember__livetab *t,
			   void (*fn)(void *ud, uintptr_t p, const ember__live_val *v), void *ud);

/* Empties the table (no insert may run; removals may). */
void ember__livetab_clear(ember__livetab *t);

#endif
