/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threadtab.c - the lock-free tid -> stack bounds table (threadtab.h).
 */
#include "sample/threadtab.h"

#include <sys/mman.h>

static uint32_t hash_tid(int32_t tid)
{
	uint32_t x = (uint32_t)tid;
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

ember__threadtab *ember__threadtab_new(uint32_t cap)
{
	uint32_t c = 64;
	while (c < cap && c < (1u << 24))
		c <<= 1;
	size_t size = sizeof(ember__threadtab) + (size_t)c * sizeof(ember__thread_ent);
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	ember__threadtab *t = m; /* mmap memory is zeroed: all entries empty */
	t->cap = c;
	t->map_size = size;
	return t;
}

void ember__threadtab_free(ember__threadtab *t)
{
	if (t)
		munmap(t, t->map_size);
}

ember__thread_ent *ember__threadtab_find(ember__threadtab *t, int32_t tid)
{
	uint32_t mask = t->cap - 1;
	for (uint32_t i = hash_tid(tid) & mask, n = 0; n < t->cap; i = (i + 1) & mask, n++) {
		int32_t k = atomic_load_explicit(&t->ents[i].tid, memory_order_acquire);
		if (k == tid)
			return &t->ents[i];
		if (k == 0)
			return NULL;
	}
	return NULL;
}

int ember__threadtab_bounds(const ember__threadtab *t, int32_t tid, ember__stack_bounds *out)
{
	ember__thread_ent *e = ember__threadtab_find((ember__threadtab *)t, tid);
	return e ? ember__threadtab_ent_bounds(e, out) : 0;
}

int ember__threadtab_ent_bounds(ember__thread_ent *e, ember__stack_bounds *out)
{
	uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	if (s1 & 1u)
		return 0;
	out->lo = atomic_load_explicit(&e->lo, memory_order_relaxed);
	out->hi = atomic_load_explicit(&e->hi, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s1)
		return 0;
	return out->hi != 0;
}

ember__thread_ent *ember__threadtab_insert(ember__threadtab *t, int32_t tid)
{
	ember__thread_ent *e = ember__threadtab_find(t, tid);
	if (e)
		return e;
	if ((atomic_load_explicit(&t->used, memory_order_relaxed) + 1) * 4 > t->cap * 3)
		return NULL;
	uint32_t mask = t->cap - 1;
	for (uint32_t i = hash_tid(tid) & mask;; i = (i + 1) & mask) {
		if (atomic_load_explicit(&t->ents[i].tid, memory_order_relaxed) == 0) {
			/* Bounds first (still zero = invalid), then the key. */
			atomic_store_explicit(&t->ents[i].tid, tid, memory_order_release);
			atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed);
			return &t->ents[i];
		}
	}
}

void ember__threadtab_set_bounds(ember__thread_ent *e, uintptr_t lo, uintptr_t hi)
{
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
	atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->lo, lo, memory_order_relaxed);
	atomic_store_explicit(&e->hi, hi, memory_order_relaxed);
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}
