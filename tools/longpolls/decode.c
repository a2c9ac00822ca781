/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode.c - long polls from emberprof's pprof labels (decode.h). The JFR
 * side is decode_jfr.c.
 */
#include "longpolls/decode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

void ember__longpolls_init(ember__longpolls *lp)
{
	memset(lp, 0, sizeof(*lp));
	lp->next_jfr_id = 1;
}

void ember__longpolls_free(ember__longpolls *lp)
{
	for (size_t i = 0; i < lp->n; i++)
		free(lp->polls[i].stacks);
	free(lp->polls);
	ember__u64map_free(&lp->index);
	ember__arena_release(&lp->arena);
	memset(lp, 0, sizeof(*lp));
}

static ember__lp_poll *poll_for(ember__longpolls *lp, uint64_t id)
{
	int inserted;
	uint64_t *v = ember__u64map_put(&lp->index, id, &inserted);
	if (!v)
		return NULL;
	if (!inserted)
		return &lp->polls[*v - 1];
	if (lp->n == lp->cap) {
		size_t ncap = lp->cap ? lp->cap * 2 : 16;
		ember__lp_poll *np = realloc(lp->polls, ncap * sizeof(*np));
		if (!np)
			return NULL;
		lp->polls = np;
		lp->cap = ncap;
	}
	ember__lp_poll *p = &lp->polls[lp->n++];
	memset(p, 0, sizeof(*p));
	p->id = id;
	p->tid = -1;
	p->duration_ms = -1; /* none yet: the first one seen wins */
	v = ember__u64map_get(&lp->index, id);
	*v = lp->n;
	return p;
}

static int same_stack(const ember__lp_stack *s, const char *const *frames, uint32_t n)
{
	if (s->nframes != n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(s->frames[i], frames[i]))
			return 0;
	return 1;
}

int ember__longpolls_add(ember__longpolls *lp, uint64_t id, int64_t tid, const char *thread,
			 double duration_ms, int open, const char *const *frames, uint32_t n,
			 uint64_t count)
{
	ember__lp_poll *p = poll_for(lp, id);
	if (!p)
		return ember__error_oom("long polls");
	if (p->tid < 0 && tid >= 0)
		p->tid = tid;
	if (!p->thread && thread && !(p->thread = ember__arena_strdup(&lp->arena, thread)))
		return ember__error_oom("long polls");
	if (duration_ms > p->duration_ms) {
		p->duration_ms = duration_ms;
		p->open = open;
	} else if (!open && duration_ms == p->duration_ms) {
		p->open = 0;
	}
	p->samples += count;
	if (!count)
		return 0; /* the poll only */
	for (size_t i = 0; i < p->nstacks; i++)
		if (same_stack(&p->stacks[i], frames, n)) {
			p->stacks[i].samples += count;
			return 0;
		}
	if (p->nstacks == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 4;
		ember__lp_stack *ns = realloc(p->stacks, ncap * sizeof(*ns));
		if (!ns)
			return ember__error_oom("long polls");
		p->stacks = ns;
		p->cap = ncap;
	}
	ember__lp_stack *s = &p->stacks[p->nstacks];
	s->frames = ember__arena_alloc(&lp->arena, (n ? n : 1) * sizeof(*s->frames));
	if (!s->frames)
		return ember__error_oom("long polls");
	for (uint32_t i = 0; i < n; i++)
		if (!(s->frames[i] = ember__arena_strdup(&lp->arena, frames[i])))
			return ember__error_oom("long polls");
	s->nframes = n;
	s->samples = count;
	p->nstacks++;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_ms(const char *s, double *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > 1e12)
		return -1;
	*out = v;
	return 0;
}

int ember__longpolls_add_pprof(ember__longpolls *lp, const ember__profile *p)
{
	const char **frames = NULL;
	size_t cap = 0;
	int rc = 0;
	for (uint32_t i = 0; i < p->nsamples && rc == 0; i++) {
		const ember__sample *s = &p->samples[i];
		const char *id_s = NULL, *dur_s = NULL, *thread = NULL, *tid_s = NULL;
		int open = 0;
		for (uint32_t k = 0; k < s->nlabels; k++) {
			const ember__label *l = &s->labels[k];
			if (!l->key || !l->str)
				continue;
			if (!strcmp(l->key, "poll_id"))
				id_s = l->str;
			else if (!strcmp(l->key, "poll_duration_ms"))
				dur_s = l->str;
			else if (!strcmp(l->key, "poll_open"))
				open = !strcmp(l->str, "1");
			else if (!strcmp(l->key, "thread_name"))
				thread = l->str;
			else if (!strcmp(l->key, "thread_id"))
				tid_s = l->str;
		}
		if (!id_s)
			continue;
		uint64_t id, tid = 0;
		double dur;
		if (parse_u64(id_s, &id) || parse_ms(dur_s, &dur)) {
			rc = ember__error(EMBER_ERR_FORMAT, "sample %u has a malformed poll label "
					  "(poll_id \"%.40s\", poll_duration_ms \"%.40s\")", i, id_s,
					  dur_s ? dur_s : "(missing)");
			break;
		}
		int has_tid = tid_s && parse_u64(tid_s, &tid) == 0;
		/* frames, leaf first: each location's lines are innermost first */
		size_t n = 0;
		for (uint32_t d = 0; d < s->nlocs; d++) {
			if (!s->locs[d] || s->locs[d] > p->nlocations) {
				rc = ember__error(EMBER_ERR_FORMAT, "sample %u refers to a missing location", i);
				break;
			}
			const ember__location *loc = &p->locations[s->locs[d] - 1];
			uint32_t nl = loc->nlines ? loc->nlines : 1;
			if (n + nl > cap) {
				size_t ncap = (n + nl) * 2;
				const char **nf = realloc(frames, ncap * sizeof(*nf));
				if (!nf) {
					rc = ember__error_oom("long polls");
					break;
				}
				frames = nf;
				cap = ncap;
			}
			if (!loc->nlines) {
				char *hex = ember__arena_alloc(&lp->arena, 24);
				if (!hex) {
					rc = ember__error_oom("long polls");
					break;
				}
				snprintf(hex, 24, "0x%llx", (unsigned long long)loc->address);
				frames[n++] = hex;
				continue;
			}
			for (uint32_t l = 0; l < loc->nlines; l++) {
				uint32_t f = loc->lines[l].function;
				const char *name = f && f <= p->nfunctions && p->functions[f - 1].name
							   ? p->functions[f - 1].name
							   : "?";
				frames[n++] = *name ? name : "?";
			}
		}
		if (rc == 0)
			rc = ember__longpolls_add(lp, id, has_tid ? (int64_t)tid : -1, thread, dur, open,
						  frames, (uint32_t)n,
						  s->values[0] > 0 ? (uint64_t)s->values[0] : 1);
	}
	free(frames);
	return rc;
}

static int cmp_poll(const void *a, const void *b)
{
	const ember__lp_poll *x = a, *y = b;
	if (x->duration_ms != y->duration_ms)
		return x->duration_ms > y->duration_ms ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_stack(const void *a, const void *b)
{
	const ember__lp_stack *x = a, *y = b;
	return x->samples > y->samples ? -1 : x->samples < y->samples;
}

void ember__longpolls_sort(ember__longpolls *lp)
{
	if (lp->n)
		qsort(lp->polls, lp->n, sizeof(*lp->polls), cmp_poll);
	for (size_t i = 0; i < lp->n; i++) {
		*ember__u64map_get(&lp->index, lp->polls[i].id) = i + 1;
		if (lp->polls[i].nstacks)
			qsort(lp->polls[i].stacks, lp->polls[i].nstacks, sizeof(*lp->polls[i].stacks),
			      cmp_stack);
	}
}
