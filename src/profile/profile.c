/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.c - construction of the in-memory profile model (see profile.h).
 * Tables grow by doubling with realloc; strings and per-item arrays live in
 * the arena.
 */
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"
#include "util/fileio.h"

ember__profile *ember__profile_new(void)
{
	ember__profile *p = calloc(1, sizeof(*p));
	return p;
}

void ember__profile_free(ember__profile *p)
{
	if (!p)
		return;
	free(p->mappings);
	free(p->functions);
	free(p->locations);
	free(p->samples);
	ember__arena_release(&p->arena);
	free(p);
}

const char *ember__profile_strdup(ember__profile *p, const char *s)
{
	return ember__arena_strdup(&p->arena, s);
}

/* Grows *tab (of elements of `size` bytes) to hold one more; 0 on OOM. */
static int grow(void **tab, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return 1;
	uint32_t ncap = *cap ? *cap * 2 : 64;
	if (ncap <= *cap)
		return 0;
	void *t = realloc(*tab, (size_t)ncap * size);
	if (!t)
		return 0;
	*tab = t;
	*cap = ncap;
	return 1;
}

#define APPEND(p, tab, n, cap, item)                                            \
	do {                                                                    \
		if (!grow((void **)&(p)->tab, (p)->n, &(p)->cap, sizeof(*(item)))) \
			return 0;                                               \
		(p)->tab[(p)->n++] = *(item);                                   \
		return (p)->n;                                                  \
	} while (0)

uint32_t ember__profile_add_mapping(ember__profile *p, const ember__mapping *m)
{
	APPEND(p, mappings, nmappings, cap_mappings, m);
}

uint32_t ember__profile_add_function(ember__profile *p, const ember__function *f)
{
	APPEND(p, functions, nfunctions, cap_functions, f);
}

uint32_t ember__profile_add_location(ember__profile *p, const ember__location *l)
{
	APPEND(p, locations, nlocations, cap_locations, l);
}

uint32_t ember__profile_add_sample(ember__profile *p, const ember__sample *s)
{
	APPEND(p, samples, nsamples, cap_samples, s);
}

/* The function `name` with no source file, added unless present. */
static uint32_t function_named(ember__profile *p, const char *name)
{
	for (uint32_t i = 0; i < p->nfunctions; i++)
		if (!strcmp(p->functions[i].name, name) && !p->functions[i].filename[0])
			return i + 1;
	const char *n = ember__profile_strdup(p, name);
	ember__function f = {n, n, ember__profile_strdup(p, ""), 0};
	return n && f.filename ? ember__profile_add_function(p, &f) : 0;
}

/* A new location of `function` at no address. */
static uint32_t location_of(ember__profile *p, uint32_t mapping, uint32_t function)
{
	ember__line *line = ember__arena_alloc(&p->arena, sizeof(*line));
	if (!line || !function)
		return 0;
	*line = (ember__line){function, 0};
	ember__location l = {0, mapping, 1, line};
	return ember__profile_add_location(p, &l);
}

uint32_t ember__profile_add_pseudo(ember__profile *p, const char *exe, const char *comm,
				   const char *leaf, int64_t ns)
{
	uint32_t mapping = 0;
	for (uint32_t i = 0; exe && i < p->nmappings && !mapping; i++)
		if (!strcmp(p->mappings[i].file, exe))
			mapping = i + 1;
	if (exe && !mapping) {
		ember__mapping m = {0, 0, 0, ember__profile_strdup(p, exe), ember__profile_strdup(p, ""),
				    1, 0, 0};
		if (!m.file || !m.build_id || !(mapping = ember__profile_add_mapping(p, &m)))
			return 0;
	}
	const char *base = exe ? strrchr(exe, '/') : NULL;
	base = base ? base + 1 : exe ? exe : comm && *comm ? comm : "?";
	uint32_t *locs = ember__arena_alloc(&p->arena, 2 * sizeof(*locs));
	if (!locs)
		return 0;
	locs[0] = location_of(p, mapping, function_named(p, leaf));
	locs[1] = location_of(p, mapping, function_named(p, base));
	ember__sample s;
	memset(&s, 0, sizeof(s));
	s.locs = locs;
	s.nlocs = 2;
	s.values[1] = ns; /* samples 0 */
	return locs[0] && locs[1] ? ember__profile_add_sample(p, &s) : 0;
}

int ember__profile_read_file(const char *path, size_t max, ember__profile_decoder decode,
			     ember__profile **out)
{
	*out = NULL;
	uint8_t *buf;
	size_t len;
	int err = ember__read_file(path, max, &buf, &len);
	if (err)
		return err;
	err = decode(buf, len, out);
	if (err == EMBER_ERR_FORMAT) {
		/* Name the file in front of the decoder's message. */
		char msg[EMBER_ERROR_MAX];
		snprintf(msg, sizeof(msg), "%s", ember_last_error());
		ember__error(err, "%s: %s", path, msg);
	}
	free(buf);
	return err;
}
