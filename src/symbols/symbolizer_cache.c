/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer_cache.c - the symbolizer's cache of resolved addresses
 * (symbolizer_internal.h): open addressing by address, bounded; when it
 * fills up it is emptied (the frames' strings stay their modules').
 *
 * Agent thread only; not async-signal-safe.
 */
#include "symbols/symbolizer_internal.h"

#include <stdlib.h>

#include "util/error.h"

#define CACHE_MIN_SLOTS 1024u
#define CACHE_MAX_SLOTS (1u << 16) /* at most 32K cached addresses, ~2.4 MB */

static size_t cache_slot(uint64_t addr, size_t cap)
{
	return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

void ember__symbolizer_cache_clear(ember__symbolizer *s)
{
	for (size_t i = 0; i < s->cache_cap; i++) {
		free(s->cache[i].rest);
		s->cache[i] = (cache_entry){0};
	}
	s->cache_count = 0;
}

cache_entry *ember__symbolizer_cache_get(ember__symbolizer *s, uint64_t addr)
{
	if (!s->cache_count)
		return NULL;
	for (size_t i = cache_slot(addr, s->cache_cap);; i = (i + 1) & (s->cache_cap - 1)) {
		if (!s->cache[i].mod)
			return NULL;
		if (s->cache[i].addr == addr)
			return &s->cache[i];
	}
}

static void cache_place(cache_entry *table, size_t cap, const cache_entry *e)
{
	size_t i = cache_slot(e->addr, cap);
	while (table[i].mod)
		i = (i + 1) & (cap - 1);
	table[i] = *e;
}

/* Moves every entry into a new table of `cap` slots. */
static int cache_grow(ember__symbolizer *s, size_t cap)
{
	cache_entry *n = calloc(cap, sizeof(*n));
	if (!n)
		return ember__error_oom("symbol cache");
	for (size_t i = 0; i < s->cache_cap; i++) {
		if (s->cache[i].mod)
			cache_place(n, cap, &s->cache[i]);
	}
	free(s->cache);
	s->cache = n;
	s->cache_cap = cap;
	return 0;
}

/* Takes ownership of e->rest. Never fails: when it cannot grow, it empties. */
void ember__symbolizer_cache_put(ember__symbolizer *s, cache_entry *e)
{
	if ((s->cache_count + 1) * 2 > s->cache_cap) {
		if (s->cache_cap >= CACHE_MAX_SLOTS ||
		    cache_grow(s, s->cache_cap ? s->cache_cap * 2 : CACHE_MIN_SLOTS))
			ember__symbolizer_cache_clear(s);
	}
	if (!s->cache_cap) { /* could not even allocate the first table */
		free(e->rest);
		return;
	}
	cache_place(s->cache, s->cache_cap, e);
	s->cache_count++;
}
