/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jeheap.c - jemalloc heap_v2 dump parser and jeprof's unsampling.
 * See jeheap.h for the format. The input is untrusted (fuzzed): every read
 * is bounded by the line's length, numbers are checked for overflow.
 */
#include "heap/jeheap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "heap/sampler.h"
#include "util/error.h"

typedef struct cursor {
	const char *p, *end;
} cursor;

static void skip_blanks(cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

static int eat(cursor *c, char ch)
{
	skip_blanks(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Unsigned number in base 10 or 16; 0 if none or it overflows. */
static int number(cursor *c, int base, uint64_t *out)
{
	skip_blanks(c);
	const char *start = c->p;
	uint64_t v = 0;
	while (c->p < c->end) {
		int d = hexval(*c->p);
		if (d < 0 || d >= base)
			break;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return 0;
		v = v * (uint64_t)base + (uint64_t)d;
		c->p++;
	}
	*out = v;
	return c->p > start;
}

static int at_end(cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
	return c->p == c->end;
}

/* "t*: a: b [c: d]" or "t<n>: ..."; *star tells which. 1 if it parsed. */
static int counts_line(cursor c, int *star, uint64_t v[4])
{
	if (!eat(&c, 't'))
		return 0;
	if (c.p < c.end && *c.p == '*') {
		*star = 1;
		c.p++;
	} else {
		uint64_t tid;
		if (!number(&c, 10, &tid))
			return 0;
		*star = 0;
	}
	return eat(&c, ':') && number(&c, 10, &v[0]) && eat(&c, ':') && number(&c, 10, &v[1]) &&
	       eat(&c, '[') && number(&c, 10, &v[2]) && eat(&c, ':') && number(&c, 10, &v[3]) &&
	       eat(&c, ']') && at_end(&c);
}

/* "@ 0x1 0x2 ...": fills pcs (capacity EMBER_JEHEAP_MAX_DEPTH). -1 if malformed. */
static int stack_line(cursor c, uint64_t *pcs)
{
	if (!eat(&c, '@'))
		return -1;
	int n = 0;
	for (;;) {
		skip_blanks(&c);
		if (at_end(&c))
			return n;
		if (n == EMBER_JEHEAP_MAX_DEPTH)
			return -1;
		if (c.end - c.p >= 2 && c.p[0] == '0' && (c.p[1] == 'x' || c.p[1] == 'X'))
			c.p += 2;
		if (!number(&c, 16, &pcs[n]))
			return -1;
		if (c.p < c.end && *c.p != ' ' && *c.p != '\t' && *c.p != '\r')
			return -1;
		n++;
	}
}

/* A /proc/pid/maps line; keeps executable mappings only. */
static int map_line(ember__jeheap *h, cursor c)
{
	uint64_t start, limit, offset, dummy;
	if (!number(&c, 16, &start) || !eat(&c, '-') || !number(&c, 16, &limit))
		return 0;
	skip_blanks(&c);
	if (c.end - c.p < 4)
		return 0;
	int exec = c.p[2] == 'x';
	c.p += 4;
	if (!number(&c, 16, &offset) || !number(&c, 16, &dummy) || !eat(&c, ':') ||
	    !number(&c, 16, &dummy) || !number(&c, 10, &dummy))
		return 0;
	if (!exec || limit <= start)
		return 0;
	skip_blanks(&c);
	const char *pe = c.end;
	while (pe > c.p && (pe[-1] == ' ' || pe[-1] == '\r'))
		pe--;
	if (h->nmaps == h->cap_maps) {
		size_t cap = h->cap_maps ? h->cap_maps * 2 : 32;
		ember__jeheap_map *m = ember__arena_alloc(&h->arena, cap * sizeof(*m));
		if (!m)
			return EMBER_ERR_NOMEM;
		if (h->nmaps)
			memcpy(m, h->maps, h->nmaps * sizeof(*m));
		h->maps = m;
		h->cap_maps = cap;
	}
	const char *path = ember__arena_strndup(&h->arena, c.p, (size_t)(pe - c.p));
	if (!path)
		return EMBER_ERR_NOMEM;
	h->maps[h->nmaps++] = (ember__jeheap_map){start, limit, offset, path};
	return 0;
}

static int add_stack(ember__jeheap *h, const uint64_t *pcs, int depth)
{
	if (h->nstacks == h->cap_stacks) {
		size_t cap = h->cap_stacks ? h->cap_stacks * 2 : 64;
		ember__jeheap_stack *s = realloc(h->stacks, cap * sizeof(*s));
		if (!s)
			return EMBER_ERR_NOMEM;
		h->stacks = s;
		h->cap_stacks = cap;
	}
	uint64_t *copy = ember__arena_alloc(&h->arena, (size_t)(depth ? depth : 1) * sizeof(*copy));
	if (!copy)
		return EMBER_ERR_NOMEM;
	memcpy(copy, pcs, (size_t)depth * sizeof(*copy));
	h->stacks[h->nstacks++] = (ember__jeheap_stack){.pcs = copy, .depth = (uint32_t)depth};
	return 0;
}

static int fail(ember__jeheap *h, int err, size_t lineno, const char *what)
{
	ember__jeheap_release(h);
	if (err == EMBER_ERR_NOMEM)
		return ember__error_oom("jemalloc heap profile");
	return ember__error(EMBER_ERR_FORMAT, "jemalloc heap profile, line %zu: %s", lineno, what);
}

int ember__jeheap_parse(const char *buf, size_t len, ember__jeheap *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t *pcs = malloc(EMBER_JEHEAP_MAX_DEPTH * sizeof(*pcs));
	if (!pcs)
		return ember__error_oom("jemalloc heap profile");
	const char *p = buf, *end = buf + len;
	size_t lineno = 0;
	int maps_part = 0, rc = 0;
	int want_counts = 0; /* the last stack still needs its t* line */
	const char *err = NULL;
	while (p < end && rc == 0 && !err) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		cursor c = {p, nl ? nl : end};
		p = nl ? nl + 1 : end;
		lineno++;
		if (lineno == 1) {
			static const char magic[] = "heap_v2/";
			size_t m = sizeof(magic) - 1;
			if ((size_t)(c.end - c.p) < m || memcmp(c.p, magic, m) != 0) {
				err = "not a jemalloc heap_v2 profile (no \"heap_v2/<period>\" header)";
				break;
			}
			c.p += m;
			if (!number(&c, 10, &out->period) || !at_end(&c))
				err = "bad sample period in the header";
			continue;
		}
		if (maps_part) {
			rc = map_line(out, c);
			continue;
		}
		cursor t = c;
		skip_blanks(&t);
		if (at_end(&t))
			continue;
		if (*t.p == '@') {
			if (want_counts) {
				err = "stack without a \"t*:\" line";
				break;
			}
			int depth = stack_line(t, pcs);
			if (depth <= 0) {
				err = depth == 0 ? "empty stack" : "malformed stack line";
				break;
			}
			rc = add_stack(out, pcs, depth);
			want_counts = 1;
		} else if (*t.p == 't') {
			int star;
			uint64_t v[4];
			if (!counts_line(t, &star, v)) {
				err = "malformed counts line (want \"t*: <objs>: <bytes> [<objs>: <bytes>]\")";
				break;
			}
			if (!star)
				continue; /* per-thread counts: the t* line has their sum */
			if (out->nstacks == 0) {
				out->curobjs = v[0];
				out->curbytes = v[1];
				out->accumobjs = v[2];
				out->accumbytes = v[3];
			} else if (want_counts) {
				ember__jeheap_stack *s = &out->stacks[out->nstacks - 1];
				s->curobjs = v[0];
				s->curbytes = v[1];
				s->accumobjs = v[2];
				s->accumbytes = v[3];
				want_counts = 0;
			} else {
				err = "second \"t*:\" line for one stack";
				break;
			}
		} else if ((size_t)(t.end - t.p) >= 17 && !memcmp(t.p, "MAPPED_LIBRARIES:", 17)) {
			if (want_counts) {
				err = "stack without a \"t*:\" line";
				break;
			}
			maps_part = 1;
		} else {
			err = "unexpected line";
		}
	}
	free(pcs);
	if (!err && rc == 0 && lineno == 0)
		err = "empty input";
	if (!err && rc == 0 && want_counts)
		err = "stack without a \"t*:\" line";
	if (err || rc)
		return fail(out, rc ? rc : EMBER_ERR_FORMAT, lineno, err);
	return 0;
}

void ember__jeheap_release(ember__jeheap *h)
{
	free(h->stacks);
	ember__arena_release(&h->arena);
	memset(h, 0, sizeof(*h));
}

void ember__jeheap_unsample(uint64_t objs, uint64_t bytes, uint64_t period, double *objs_out,
			    double *bytes_out)
{
	*objs_out = (double)objs;
	*bytes_out = (double)bytes;
	if (objs == 0) {
		*objs_out = *bytes_out = 0;
		return;
	}
	if (period == 0 || bytes == 0)
		return;
	double ratio = ((double)bytes / (double)objs) / (double)period;
	double scale = 1.0 / ember__one_minus_exp_neg(ratio); /* 1 / (1 - exp(-ratio)) */
	*objs_out *= scale;
	*bytes_out *= scale;
}

static int in_maps(const ember__jeheap *h, const char *path, uint64_t pc)
{
	for (size_t i = 0; i < h->nmaps; i++)
		if (pc >= h->maps[i].start && pc < h->maps[i].limit && !strcmp(h->maps[i].path, path))
			return 1;
	return 0;
}

size_t ember__jeheap_strip_module(ember__jeheap *h, uint64_t addr)
{
	const char *path = NULL;
	for (size_t i = 0; i < h->nmaps && !path; i++)
		if (addr >= h->maps[i].start && addr < h->maps[i].limit && h->maps[i].path[0])
			path = h->maps[i].path;
	if (!path)
		return 0;
	size_t nmatch = 0;
	for (size_t i = 0; i < h->nmaps; i++)
		nmatch += !strcmp(h->maps[i].path, path);
	for (size_t i = 0; i < h->nstacks; i++) {
		ember__jeheap_stack *s = &h->stacks[i];
		while (s->depth > 1 && in_maps(h, path, s->pcs[0])) {
			s->pcs++;
			s->depth--;
		}
	}
	return nmatch;
}
