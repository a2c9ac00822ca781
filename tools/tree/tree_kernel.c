/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree_kernel.c - kernel callchains interned and named from /proc/kallsyms
 * (tree_kernel.h; the names: symbols/kallsyms.h).
 */
#include "tree/tree_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/kallsyms.h"
#include "util/error.h"
#include "util/hashmap.h"

typedef struct kchain {
	uint32_t off, n; /* in ips */
} kchain;

struct ember__tkern {
	ember__kallsyms *ks; /* the names (symbols/kallsyms.h) */
	uint64_t *ips;
	size_t nips, capips;
	kchain *chains;
	size_t nchains, capchains;
	ember__u64map index; /* chain hash -> 1 + number (collisions: not merged) */
};

int ember__tkern_new(ember__tkern **out)
{
	ember__tkern *k = calloc(1, sizeof(*k));
	if (!k)
		return ember__error_oom("kernel symbols");
	int rc = ember__kallsyms_new(&k->ks);
	if (rc) {
		free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void ember__tkern_free(ember__tkern *k)
{
	if (!k)
		return;
	ember__kallsyms_free(k->ks);
	free(k->ips);
	free(k->chains);
	ember__u64map_free(&k->index);
	free(k);
}

int ember__tkern_named(ember__tkern *k)
{
	return ember__kallsyms_named(k->ks);
}

const char *ember__tkern_why(ember__tkern *k)
{
	return ember__kallsyms_why(k->ks);
}

uint32_t ember__tkern_intern(ember__tkern *k, const uint64_t *ips, uint32_t n)
{
	uint64_t h = ember__hash_bytes(ips, n * sizeof(*ips), n);
	int inserted;
	uint64_t *v = ember__u64map_put(&k->index, h, &inserted);
	if (v && !inserted && *v) {
		const kchain *c = &k->chains[*v - 1];
		if (c->n == n && !memcmp(k->ips + c->off, ips, n * sizeof(*ips)))
			return (uint32_t)*v;
		v = NULL; /* another chain of that hash: kept apart */
	}
	if (k->nips + n > k->capips) {
		size_t cap = k->capips ? 2 * k->capips : 4096;
		while (cap < k->nips + n)
			cap *= 2;
		uint64_t *p = realloc(k->ips, cap * sizeof(*p));
		if (!p)
			return 0;
		k->ips = p;
		k->capips = cap;
	}
	if (k->nchains == k->capchains) {
		size_t cap = k->capchains ? 2 * k->capchains : 256;
		kchain *p = realloc(k->chains, cap * sizeof(*p));
		if (!p)
			return 0;
		k->chains = p;
		k->capchains = cap;
	}
	memcpy(k->ips + k->nips, ips, n * sizeof(*ips));
	k->chains[k->nchains++] = (kchain){(uint32_t)k->nips, n};
	k->nips += n;
	if (v)
		*ember__u64map_get(&k->index, h) = k->nchains;
	return (uint32_t)k->nchains;
}

/* Per profile: its kernel mapping, and the locations made so far. */
typedef struct applier {
	ember__tkern *k;
	ember__profile *p;
	uint32_t mapping;
	ember__u64map locs;  /* address -> location */
	ember__u64map funcs; /* name (its address; 0: [kernel]) -> function */
} applier;

static uint32_t function_of(applier *a, const char *name, uint64_t key)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&a->funcs, key, &inserted);
	if (!v)
		return 0;
	if (!inserted)
		return (uint32_t)*v;
	const char *n = ember__profile_strdup(a->p, name);
	ember__function f = {n, n, ember__profile_strdup(a->p, ""), 0};
	uint32_t idx = n && f.filename ? ember__profile_add_function(a->p, &f) : 0;
	*ember__u64map_get(&a->funcs, key) = idx;
	return idx;
}

/* The location of a kernel frame: `leaf`, the interrupted IP; else a
 * return address, named by the call before it. Named: 0 for [kernel]. */
static uint32_t location_of(applier *a, uint64_t addr, int leaf)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&a->locs, addr, &inserted);
	if (!v)
		return 0;
	if (!inserted)
		return (uint32_t)*v;
	const char *name = addr ? ember__kallsyms_lookup(a->k->ks, leaf ? addr : addr - 1) : NULL;
	uint32_t fn = name ? function_of(a, name, (uint64_t)(uintptr_t)name)
			   : function_of(a, "[kernel]", 0);
	ember__line *line = ember__arena_alloc(&a->p->arena, sizeof(*line));
	if (!fn || !line)
		return 0;
	*line = (ember__line){fn, 0};
	ember__location l = {addr, a->mapping, 1, line};
	uint32_t idx = ember__profile_add_location(a->p, &l);
	*ember__u64map_get(&a->locs, addr) = idx;
	return idx;
}

int ember__tkern_apply(ember__tkern *k, ember__profile *p)
{
	uint64_t lo, hi;
	const char *build_id = ember__kallsyms_range(k->ks, &lo, &hi);
	int named = ember__kallsyms_named(k->ks);
	applier a = {k, p, 0, EMBER_U64MAP_INIT, EMBER_U64MAP_INIT};
	int rc = 0;
	for (uint32_t i = 0; i < p->nsamples && rc == 0; i++) {
		ember__sample *s = &p->samples[i];
		uint32_t id = 0, w = 0;
		for (uint32_t j = 0; j < s->nlabels; j++) {
			if (s->labels[j].str && !strcmp(s->labels[j].key, EMBER_TKERN_LABEL))
				id = (uint32_t)strtoul(s->labels[j].str, NULL, 10);
			else
				s->labels[w++] = s->labels[j];
		}
		s->nlabels = w;
		if (!id || id > k->nchains)
			continue;
		if (!a.mapping) {
			ember__mapping m = {lo, hi, 0, ember__profile_strdup(p, EMBER_KALLSYMS_MAPPING),
					    ember__profile_strdup(p, build_id), named, 0, 0};
			if (!m.file || !m.build_id || !(a.mapping = ember__profile_add_mapping(p, &m))) {
				rc = -1;
				break;
			}
		}
		const kchain *c = &k->chains[id - 1];
		/* named: every frame; else one [kernel] frame (address 0) */
		uint32_t nk = named ? c->n : 1;
		uint32_t *locs = ember__arena_alloc(&p->arena, (nk + s->nlocs) * sizeof(*locs));
		if (!locs) {
			rc = -1;
			break;
		}
		for (uint32_t d = 0; d < nk && rc == 0; d++)
			if (!(locs[d] = location_of(&a, named ? k->ips[c->off + d] : 0, d == 0)))
				rc = -1;
		memcpy(locs + nk, s->locs, s->nlocs * sizeof(*locs));
		s->locs = locs;
		s->nlocs += nk;
	}
	ember__u64map_free(&a.locs);
	ember__u64map_free(&a.funcs);
	return rc ? ember__error_oom("kernel frames") : 0;
}
