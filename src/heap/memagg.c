/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memagg.c - a window's memory profile by stack (memagg.h).
 */
#include "heap/memagg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "heap/sampler.h"
#include "profile/window.h"
#include "util/error.h"

/* A value rounded half away from zero, as llround (no libm: sampler.h). */
static int64_t round_i64(double v)
{
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	return v >= 0 ? (int64_t)(v + 0.5) : -(int64_t)(-v + 0.5);
}

void ember__memagg_init(ember__memagg *m)
{
	memset(m, 0, sizeof(*m));
}

void ember__memagg_release(ember__memagg *m)
{
	ember__arena_release(&m->arena);
	ember__u64map_free(&m->index);
	free(m->stacks);
	memset(m, 0, sizeof(*m));
}

int ember__memagg_add(ember__memagg *m, const uint64_t *pcs, uint32_t depth,
		      const double v[EMBER_MEM_NVALUES])
{
	uint64_t h = ember__heap_stack_hash(pcs, depth);
	int inserted;
	uint64_t *head = ember__u64map_put(&m->index, h, &inserted);
	if (!head)
		return EMBER_ERR_NOMEM;
	ember__memagg_stack *s = NULL;
	for (uint64_t pos = inserted ? 0 : *head; pos; pos = m->stacks[pos - 1]->next) {
		ember__memagg_stack *c = m->stacks[pos - 1];
		if (c->depth == depth && !memcmp(c->pcs, pcs, depth * sizeof(*pcs))) {
			s = c;
			break;
		}
	}
	if (!s) {
		if (m->n == m->cap) {
			size_t ncap = m->cap ? m->cap * 2 : 256;
			ember__memagg_stack **ns = realloc(m->stacks, ncap * sizeof(*ns));
			if (!ns)
				return EMBER_ERR_NOMEM;
			m->stacks = ns;
			m->cap = ncap;
		}
		s = ember__arena_alloc(&m->arena, sizeof(*s) + depth * sizeof(*pcs));
		if (!s)
			return EMBER_ERR_NOMEM;
		s->hash = h;
		s->depth = depth;
		memcpy(s->pcs, pcs, depth * sizeof(*pcs));
		s->next = inserted ? 0 : (uint32_t)*head;
		m->stacks[m->n++] = s;
		*head = m->n;
	}
	for (int i = 0; i < EMBER_MEM_NVALUES; i++) {
		s->v[i] += v[i];
		m->total[i] += v[i];
	}
	m->samples++;
	return 0;
}

const ember__memagg_stack *ember__memagg_find(const ember__memagg *m, uint64_t hash)
{
	const uint64_t *pos = ember__u64map_get(&m->index, hash);
	return pos && *pos ? m->stacks[*pos - 1] : NULL;
}

int ember__memagg_profile(ember__memagg *m, ember__symbolizer *sym, const ember__window_cfg *cfg,
			  uint64_t mean, int64_t start_ns, int64_t end_ns, ember__profile **out)
{
	*out = NULL;
	ember__profile *p = ember__profile_new();
	if (!p)
		return ember__error_oom("memory profile");
	static const char *const types[EMBER_MEM_NVALUES][2] = {
		{"alloc_objects", "count"},
		{"alloc_space", "bytes"},
		{"inuse_objects", "count"},
		{"inuse_space", "bytes"},
	};
	p->nvalues = EMBER_MEM_NVALUES;
	for (int i = 0; i < EMBER_MEM_NVALUES; i++)
		p->sample_type[i] = (ember__value_type){ember__profile_strdup(p, types[i][0]),
							ember__profile_strdup(p, types[i][1])};
	p->period_type = (ember__value_type){ember__profile_strdup(p, "space"),
					     ember__profile_strdup(p, "bytes")};
	p->period = (int64_t)mean;
	p->time_nanos = start_ns;
	p->duration_nanos = end_ns - start_ns;
	p->default_sample_type = p->sample_type[EMBER_MEM_INUSE_BYTES].type;

	ember__window_row *rows = calloc(m->n ? m->n : 1, sizeof(*rows));
	int64_t *vals = calloc(m->n ? m->n * EMBER_MEM_NVALUES : 1, sizeof(*vals));
	if (!rows || !vals) {
		free(rows);
		free(vals);
		ember__profile_free(p);
		return ember__error_oom("memory profile");
	}
	size_t nr = 0;
	for (size_t i = 0; i < m->n; i++) {
		ember__memagg_stack *s = m->stacks[i];
		int64_t *v = vals + nr * EMBER_MEM_NVALUES;
		int any = 0;
		for (int k = 0; k < EMBER_MEM_NVALUES; k++)
			any |= (v[k] = round_i64(s->v[k])) != 0;
		s->sample = -1;
		if (!any)
			continue; /* e.g. a stack kept only for blocks since freed */
		s->sample = (int32_t)nr;
		rows[nr++] = (ember__window_row){s->pcs, s->depth, v};
	}
	int rc = ember__window_rows(p, sym, cfg, rows, nr);
	free(rows);
	free(vals);
	if (rc) {
		ember__profile_free(p);
		return rc;
	}
	*out = p;
	return 0;
}
