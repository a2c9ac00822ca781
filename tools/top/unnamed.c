/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unnamed.c - the share of a profile's samples without a function name,
 * per module (unnamed.h). Modules are few (tens): a linear list.
 */
#include "top/unnamed.h"

#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/arena.h"
#include "util/error.h"

struct ember__unnamed {
	ember__arena arena;
	ember__unnamed_mod *mods;
	size_t n, cap;
	int64_t total, unnamed;
};

ember__unnamed *ember__unnamed_new(void)
{
	ember__unnamed *u = calloc(1, sizeof(*u));
	if (u)
		u->arena = (ember__arena)EMBER_ARENA_INIT;
	return u;
}

void ember__unnamed_free(ember__unnamed *u)
{
	if (!u)
		return;
	ember__arena_release(&u->arena);
	free(u->mods);
	free(u);
}

int ember__unnamed_is_placeholder(const char *name, const char *file)
{
	if (!name || !*name || !strncmp(name, "0x", 2))
		return 1;
	const char *base = file ? strrchr(file, '/') : NULL;
	base = base ? base + 1 : file;
	size_t bl = base ? strlen(base) : 0;
	return bl && !strncmp(name, base, bl) && !strncmp(name + bl, "+0x", 3);
}

static ember__unnamed_mod *module_of(ember__unnamed *u, const char *path, const char *build_id)
{
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->mods[i].path, path))
			return &u->mods[i];
	if (u->n == u->cap) {
		size_t nc = u->cap ? u->cap * 2 : 16;
		ember__unnamed_mod *m = realloc(u->mods, nc * sizeof(*m));
		if (!m)
			return NULL;
		u->mods = m;
		u->cap = nc;
	}
	const char *p = ember__arena_strdup(&u->arena, path);
	const char *b = ember__arena_strdup(&u->arena, build_id ? build_id : "");
	if (!p || !b)
		return NULL;
	u->mods[u->n] = (ember__unnamed_mod){.path = p, .build_id = b};
	return &u->mods[u->n++];
}

static int by_unnamed(const void *a, const void *b)
{
	const ember__unnamed_mod *x = a, *y = b;
	if (x->unnamed != y->unnamed)
		return x->unnamed > y->unnamed ? -1 : 1;
	return strcmp(x->path, y->path);
}

int ember__unnamed_add(ember__unnamed *u, const ember__profile *p, uint32_t vi)
{
	if (vi >= p->nvalues)
		return ember__error(EMBER_ERR_INVALID, "no sample value %u", vi);
	for (uint32_t s = 0; s < p->nsamples; s++) {
		const ember__sample *sm = &p->samples[s];
		int64_t v = sm->values[vi];
		u->total += v;
		if (!sm->nlocs || sm->locs[0] == 0 || sm->locs[0] > p->nlocations)
			continue;
		const ember__location *loc = &p->locations[sm->locs[0] - 1];
		const ember__mapping *mp = loc->mapping && loc->mapping <= p->nmappings
						   ? &p->mappings[loc->mapping - 1]
						   : NULL;
		const char *file = mp && mp->file && *mp->file ? mp->file : "?";
		const char *name = NULL;
		if (loc->nlines && loc->lines[0].function &&
		    loc->lines[0].function <= p->nfunctions)
			name = p->functions[loc->lines[0].function - 1].name;
		ember__unnamed_mod *m = module_of(u, file, mp ? mp->build_id : "");
		if (!m)
			return ember__error_oom("unnamed shares");
		m->total += v;
		if (ember__unnamed_is_placeholder(name, file)) {
			m->unnamed += v;
			u->unnamed += v;
		}
	}
	qsort(u->mods, u->n, sizeof(*u->mods), by_unnamed);
	return 0;
}

int64_t ember__unnamed_total(const ember__unnamed *u)
{
	return u->total;
}

int64_t ember__unnamed_sum(const ember__unnamed *u)
{
	return u->unnamed;
}

size_t ember__unnamed_count(const ember__unnamed *u)
{
	size_t c = 0; /* sorted by ember__unnamed_add: the unnamed ones first */
	while (c < u->n && u->mods[c].unnamed > 0)
		c++;
	return c;
}

void ember__unnamed_module(const ember__unnamed *u, size_t i, ember__unnamed_mod *out)
{
	*out = u->mods[i];
}
