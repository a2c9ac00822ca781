/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intern.c - the encoders' table of distinct byte strings (intern.h).
 */
#include "encode/intern.h"

#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

static int rehash(ember__intern *t, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		size_t j = (size_t)t->ents[i].hash & (nslots - 1);
		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

int ember__intern_init(ember__intern *t, uint32_t cap, int owns)
{
	memset(t, 0, sizeof(*t));
	t->owns = owns;
	t->cap = cap < 2 ? 2 : cap;
	t->ents = malloc(t->cap * sizeof(*t->ents));
	if (!t->ents)
		return -1;
	t->ents[0] = (ember__intern_ent){(const uint8_t *)"", 0, ember__hash_bytes("", 0, 0)};
	t->n = 1;
	size_t nslots = 4;
	while (nslots < (size_t)t->cap * 2)
		nslots *= 2;
	return rehash(t, nslots);
}

void ember__intern_free(ember__intern *t)
{
	if (t->owns)
		for (uint32_t i = 1; t->ents && i < t->n; i++)
			free((void *)t->ents[i].data);
	free(t->ents);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

int64_t ember__intern_bytes(ember__intern *t, const void *d, size_t len)
{
	if (t->failed)
		return -1;
	uint64_t h = ember__hash_bytes(d, len, 0);
	size_t j = (size_t)h & (t->nslots - 1);
	for (uint32_t v; (v = t->slots[j]) != 0; j = (j + 1) & (t->nslots - 1)) {
		const ember__intern_ent *e = &t->ents[v - 1];
		if (e->hash == h && e->len == len && (len == 0 || !memcmp(e->data, d, len)))
			return v - 1;
	}
	if (t->n >= INT32_MAX)
		goto oom;
	if (t->n == t->cap) {
		ember__intern_ent *ents = realloc(t->ents, (size_t)t->cap * 2 * sizeof(*ents));
		if (!ents)
			goto oom;
		t->ents = ents;
		t->cap *= 2;
	}
	const uint8_t *data = d;
	if (t->owns) {
		uint8_t *copy = malloc(len ? len : 1);
		if (!copy)
			goto oom;
		if (len)
			memcpy(copy, d, len);
		data = copy;
	}
	uint32_t idx = t->n++;
	t->ents[idx] = (ember__intern_ent){data, len, h};
	if ((size_t)t->n * 2 > t->nslots) {
		if (rehash(t, t->nslots * 2))
			goto oom;
	} else {
		t->slots[j] = idx + 1;
	}
	return idx;
oom:
	t->failed = 1;
	return -1;
}
