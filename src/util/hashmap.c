/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hashmap.c - the u64 -> u64 open-addressing map (hashmap.h).
 */
#include "util/hashmap.h"

#include <stdlib.h>

uint64_t ember__hash64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t ember__hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	while (len >= 8) {
		uint64_t w;
		__builtin_memcpy(&w, p, 8);
		h = (h ^ ember__hash64(w)) * 0x100000001b3ULL;
		p += 8;
		len -= 8;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return ember__hash64(h);
}

uint64_t *ember__u64map_get(const ember__u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = ember__hash64(key) & mask;; i = (i + 1) & mask) {
		if (!m->slots[i].used)
			return NULL;
		if (m->slots[i].key == key)
			return &m->slots[i].value;
	}
}

static int rehash(ember__u64map *m, size_t ncap)
{
	ember__u64map_slot *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].used)
			continue;
		size_t j = ember__hash64(m->slots[i].key) & (ncap - 1);
		while (ns[j].used)
			j = (j + 1) & (ncap - 1);
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

uint64_t *ember__u64map_put(ember__u64map *m, uint64_t key, int *inserted)
{
	if (inserted)
		*inserted = 0;
	if ((m->n + 1) * 10 > m->cap * 7 && rehash(m, m->cap ? m->cap * 2 : 64) != 0)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = ember__hash64(key) & mask;; i = (i + 1) & mask) {
		if (!m->slots[i].used) {
			m->slots[i].used = 1;
			m->slots[i].key = key;
			m->slots[i].value = 0;
			m->n++;
			if (inserted)
				*inserted = 1;
			return &m->slots[i].value;
		}
		if (m->slots[i].key == key)
			return &m->slots[i].value;
	}
}

void ember__u64map_free(ember__u64map *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}
