/* SPDX-License-Identifier: Apache-2.0 */
/*
 * livetab.c - the bounded lock-free table of live sampled allocations
 * (livetab.h).
 *
 * An insert claims an empty slot by CAS 0 -> 1 ("being written"), fills
 * its value, then publishes the key with a release store. Remove and scan
 * load keys with acquire, so a published key's value is visible. A slot
 * being written is neither empty (nobody else claims it) nor a match.
 * The filter (livetab.h) is counted up before an insert claims a slot
 * (and back down if it finds none), and down after a removal has emptied
 * one: it is never below the number of entries in its chunks.
 */
#include "heap/livetab.h"

#include <errno.h>
#include <sys/mman.h>

#include "emberprof.h"
#include "util/hashmap.h"

enum { KEY_EMPTY = 0, KEY_BUSY = 1 };

/*
 * Maps *size bytes, zeroed. A table of a megabyte or more gets a 2 MiB
 * aligned mapping (its size rounded up, *size updated) marked for
 * transparent huge pages: a sampled malloc touches a random bucket of it,
 * and with 4 KiB pages each such touch was a TLB miss too (a nested page
 * walk under virtualization). Where THP is off, madvise fails harmlessly.
 */
#define HUGE ((size_t)2 << 20)
static void *map_table(size_t *size)
{
	int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
	if (*size < HUGE / 2) {
		void *m = mmap(NULL, *size, prot, flags, -1, 0);
		return m == MAP_FAILED ? NULL : m;
	}
	size_t want = (*size + HUGE - 1) & ~(HUGE - 1);
	char *m = mmap(NULL, want + HUGE, prot, flags, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	size_t tail = (size_t)(m + want + HUGE - (a + want));
	if (tail)
		munmap(a + want, tail);
	(void)madvise(a, want, MADV_HUGEPAGE);
	*size = want;
	return a;
}

static int init(ember__livetab *t, uint32_t capacity, _Atomic uint8_t *filter)
{
	if (capacity == 0 || capacity > (1u << 28))
		return EMBER_ERR_INVALID;
	uint32_t n = 64;
	while (n < capacity)
		n <<= 1;
	size_t keys = (size_t)n * sizeof(uintptr_t);
	size_t vals = (size_t)n * sizeof(ember__live_val);
	size_t size = keys + vals + (filter ? 0 : EMBER_LIVETAB_FILTER_SLOTS);
	void *m = map_table(&size);
	if (!m)
		return EMBER_ERR_NOMEM;
	t->keys = m;
	t->vals = (ember__live_val *)((char *)m + keys);
	t->map_size = size;
	t->nbuckets = n / EMBER_LIVETAB_BUCKET;
	atomic_init(&t->count, 0);
	atomic_init(&t->overflow, 0);
	_Atomic uint8_t *f = filter ? filter : (_Atomic uint8_t *)((char *)m + keys + vals);
	/* Last, with release: a free that sees the filter sees the table. */
	atomic_store_explicit(&t->filter, f, memory_order_release);
	return 0;
}

int ember__livetab_init(ember__livetab *t, uint32_t capacity)
{
	return init(t, capacity, NULL);
}

int ember__livetab_init_filter(ember__livetab *t, uint32_t capacity, _Atomic uint8_t *filter)
{
	return filter ? init(t, capacity, filter) : EMBER_ERR_INVALID;
}

void ember__livetab_destroy(ember__livetab *t)
{
	atomic_store_explicit(&t->filter, NULL, memory_order_relaxed);
	if (t->keys)
		munmap((void *)t->keys, t->map_size);
	t->keys = NULL;
	t->vals = NULL;
}

/* Adds d (+1 or -1) to p's filter counter; 255 is sticky, and a counter
 * never goes below 0. */
static void filter_add(ember__livetab *t, uintptr_t p, int d)
{
	_Atomic uint8_t *c =
		&atomic_load_explicit(&t->filter, memory_order_relaxed)[ember__livetab_filter_slot(p)];
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
	do {
		if (v == UINT8_MAX || (d < 0 && v == 0))
			return;
	} while (!atomic_compare_exchange_weak_explicit(c, &v, (uint8_t)(v + d), memory_order_relaxed,
							 memory_order_relaxed));
}

/* The two candidate buckets of p (may be the same). */
static void buckets(const ember__livetab *t, uintptr_t p, uint32_t *b0, uint32_t *b1)
{
	uint64_t h = ember__hash64((uint64_t)p);
	*b0 = (uint32_t)h & (t->nbuckets - 1);
	*b1 = (uint32_t)(h >> 32) & (t->nbuckets - 1);
}

void ember__livetab_prefetch(const ember__livetab *t, uintptr_t p)
{
	if (!t->keys)
		return;
	uint32_t b[2];
	buckets(t, p, &b[0], &b[1]);
	for (int i = 0; i < 2; i++) {
		size_t base = (size_t)b[i] * EMBER_LIVETAB_BUCKET;
		__builtin_prefetch((const void *)&t->keys[base], 1, 3);
		__builtin_prefetch(&t->vals[base], 1, 3);
		__builtin_prefetch(&t->vals[base + EMBER_LIVETAB_BUCKET - 1], 1, 3);
	}
}

static int empties(const ember__livetab *t, uint32_t b)
{
	size_t base = (size_t)b * EMBER_LIVETAB_BUCKET;
	int n = 0;
	for (size_t i = base; i < base + EMBER_LIVETAB_BUCKET; i++)
		n += atomic_load_explicit(&t->keys[i], memory_order_relaxed) == KEY_EMPTY;
	return n;
}

static int try_bucket(ember__livetab *t, uint32_t b, uintptr_t p, uint64_t size, uint64_t hash)
{
	size_t base = (size_t)b * EMBER_LIVETAB_BUCKET;
	for (size_t i = base; i < base + EMBER_LIVETAB_BUCKET; i++) {
		uintptr_t k = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
		if (k != KEY_EMPTY)
			continue;
		if (!atomic_compare_exchange_strong_explicit(&t->keys[i], &k, KEY_BUSY,
							     memory_order_acquire, memory_order_relaxed))
			continue;
		/* Counted before the key is published, as the filter: a removal
		 * (which needs the published key) never takes the count below
		 * the entries live, and the malloc hook's free() relies on a
		 * count above zero while any is. */
		atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
		t->vals[i].size = size;
		t->vals[i].hash = hash;
		atomic_store_explicit(&t->keys[i], p, memory_order_release);
		return 0;
	}
	return -1;
}

int ember__livetab_insert(ember__livetab *t, uintptr_t p, uint64_t size, uint64_t hash)
{
	if (p <= KEY_BUSY || !t->keys)
		return -1;
	uint32_t b0, b1;
	buckets(t, p, &b0, &b1);
	/* The emptier bucket first ("two choices"): keeps buckets even, so
	 * the table fills to ~90% before an insert is refused. */
	if (b1 != b0 && empties(t, b1) > empties(t, b0)) {
		uint32_t x = b0;
		b0 = b1;
		b1 = x;
	}
	filter_add(t, p, +1);
	if (try_bucket(t, b0, p, size, hash) == 0 || (b1 != b0 && try_bucket(t, b1, p, size, hash) == 0))
		return 0;
	filter_add(t, p, -1);
	atomic_fetch_add_explicit(&t->overflow, 1, memory_order_relaxed);
	return -1;
}

static int remove_in(ember__livetab *t, uint32_t b, uintptr_t p)
{
	size_t base = (size_t)b * EMBER_LIVETAB_BUCKET;
	for (size_t i = base; i < base + EMBER_LIVETAB_BUCKET; i++) {
		uintptr_t k = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
		if (k != p)
			continue;
		if (atomic_compare_exchange_strong_explicit(&t->keys[i], &k, KEY_EMPTY,
							    memory_order_relaxed, memory_order_relaxed)) {
			atomic_fetch_sub_explicit(&t->count, 1, memory_order_relaxed);
			filter_add(t, p, -1);
			return 1;
		}
	}
	return 0;
}

int ember__livetab_remove(ember__livetab *t, uintptr_t p)
{
	if (p <= KEY_BUSY || !t->keys)
		return 0;
	uint32_t b0, b1;
	buckets(t, p, &b0, &b1);
	return remove_in(t, b0, p) || (b1 != b0 && remove_in(t, b1, p));
}

size_t ember__livetab_scan(ember__livetab *t,
			   void (*fn)(void *ud, uintptr_t p, const ember__live_val *v), void *ud)
{
	size_t n = 0, total = (size_t)t->nbuckets * EMBER_LIVETAB_BUCKET;
	for (size_t i = 0; t->keys && i < total; i++) {
		uintptr_t k = atomic_load_explicit(&t->keys[i], memory_order_acquire);
		if (k <= KEY_BUSY)
			continue;
		ember__live_val v = t->vals[i];
		/* Freed (and maybe reused) while we copied: skip it. */
		if (atomic_load_explicit(&t->keys[i], memory_order_acquire) != k)
			continue;
		fn(ud, k, &v);
		n++;
	}
	return n;
}

void ember__livetab_clear(ember__livetab *t)
{
	size_t total = (size_t)t->nbuckets * EMBER_LIVETAB_BUCKET;
	for (size_t i = 0; t->keys && i < total; i++) {
		uintptr_t k = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
		if (k > KEY_BUSY &&
		    atomic_compare_exchange_strong_explicit(&t->keys[i], &k, KEY_EMPTY,
							    memory_order_relaxed, memory_order_relaxed)) {
			atomic_fetch_sub_explicit(&t->count, 1, memory_order_relaxed);
			filter_add(t, k, -1);
		}
	}
}
