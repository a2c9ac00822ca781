/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_flame.c - the flame tree of `emberprof flame` and `emberprof diff`
 * (tools/flame/): exact folded output for a hand-built profile (inlined
 * frames, label sets, an empty stack), --reverse, --where, --min, the
 * depth-first nodes of the page's JSON, the union of sample types, the
 * refusals, and the diff's z statistic against a value computed by hand.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emberprof.h"
#include "flame/flame.h"
#include "flame/flame_diff.h"

static const char *S(ember__profile *p, const char *s)
{
	return ember__profile_strdup(p, s);
}

static uint32_t fn(ember__profile *p, const char *name)
{
	ember__function f = { S(p, name), S(p, name), S(p, "x.c"), 0 };
	return ember__profile_add_function(p, &f);
}

/* A location with one line, or two (inner inlined into outer). */
static uint32_t loc(ember__profile *p, uint32_t inner, uint32_t outer)
{
	ember__location l = { 0x1000 + p->nlocations, 0, outer ? 2 : 1, NULL };
	l.lines = ember__arena_alloc(&p->arena, l.nlines * sizeof(*l.lines));
	l.lines[0].function = inner;
	l.lines[0].line = 7;
	if (outer)
		l.lines[1].function = outer;
	return ember__profile_add_location(p, &l);
}

static void sample(ember__profile *p, const char *thread, int64_t count, int64_t ns, uint32_t n,
		   const uint32_t *locs)
{
	ember__sample s = { 0 };
	s.nlocs = n;
	s.locs = ember__arena_alloc(&p->arena, (n ? n : 1) * sizeof(uint32_t));
	if (n)
		memcpy(s.locs, locs, n * sizeof(uint32_t));
	if (thread) {
		s.nlabels = 1;
		s.labels = ember__arena_alloc(&p->arena, sizeof(ember__label));
		memset(s.labels, 0, sizeof(ember__label));
		s.labels[0].key = S(p, "thread_name");
		s.labels[0].str = S(p, thread);
	}
	s.values[0] = count;
	s.values[1] = ns;
	ember__profile_add_sample(p, &s);
}

/* main -> a -> b (5 samples over two threads), main -> a+inl (1), and an
 * empty stack (value 1). */
static ember__profile *demo(void)
{
	ember__profile *p = ember__profile_new();
	p->nvalues = 2;
	p->sample_type[0] = (ember__value_type){ "samples", "count" };
	p->sample_type[1] = (ember__value_type){ "cpu", "nanoseconds" };
	p->default_sample_type = "cpu";
	p->period = 10;
	uint32_t fmain = fn(p, "main"), fa = fn(p, "a"), fb = fn(p, "b"), finl = fn(p, "inl");
	uint32_t lmain = loc(p, fmain, 0), la = loc(p, fa, 0), lb = loc(p, fb, 0);
	uint32_t linl = loc(p, finl, fa);
	uint32_t s1[] = { lb, la, lmain }, s2[] = { linl, lmain };
	sample(p, "t1", 3, 30, 3, s1);
	sample(p, "t2", 1, 10, 2, s2);
	sample(p, "t2", 2, 20, 3, s1);
	sample(p, NULL, 0, 1, 0, NULL);
	return p;
}

/* The folded output of p with the options, malloc'd. */
static char *folded(const ember__flame_opts *o, ember__profile *p)
{
	ember__flame *fl = ember__flame_new(o);
	CHECK(fl != NULL);
	CHECK_EQ_INT(ember__flame_add(fl, p, "demo.pb", 0), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK_EQ_INT(ember__flame_write_folded(fl, f), 0);
	fclose(f);
	ember__flame_free(fl);
	return buf;
}

static void test_folded(void)
{
	ember__profile *p = demo();
	ember__flame_opts o = { 0 };
	char *out = folded(&o, p);
	CHECK_EQ_STR(out, "main;a;b 50\nmain;a;inl 10\n");
	free(out);

	o.reverse = 1;
	out = folded(&o, p);
	CHECK_EQ_STR(out, "b;a;main 50\ninl;a;main 10\n");
	free(out);

	ember__flame_opts w = { 0 };
	w.nwhere = 1;
	w.where_key[0] = "thread_name";
	w.where_val[0] = "t1";
	out = folded(&w, p);
	CHECK_EQ_STR(out, "main;a;b 30\n");
	free(out);

	/* inl is 10 of 61 (16%): under --min 20 its value goes to a */
	ember__flame_opts m = { 0 };
	m.min_pct = 20;
	out = folded(&m, p);
	CHECK_EQ_STR(out, "main;a 10\nmain;a;b 50\n");
	free(out);

	ember__flame_opts t = { 0 };
	t.type = "samples";
	out = folded(&t, p);
	CHECK_EQ_STR(out, "main;a;b 5\nmain;a;inl 1\n");
	free(out);
	ember__profile_free(p);
}

static void test_json(void)
{
	ember__profile *p = demo();
	ember__flame_opts o = { 0 };
	ember__flame *fl = ember__flame_new(&o);
	CHECK_EQ_INT(ember__flame_add(fl, p, "demo.pb", 0), 0);
	/* two (node, label set) samples of b merged per thread, inl, empty */
	CHECK_EQ_INT(fl->nsamples, 4);
	CHECK_EQ_INT(fl->nnodes, 4);
	CHECK_EQ_INT(ember__flame_total(fl, 0, 1), 61);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK_EQ_INT(ember__flame_write_json(fl, NULL, f), 0);
	fclose(f);
	/* frames by first sight, leaf first: b 0, a 1, main 2, inl 3; nodes
	 * depth-first as (frame, depth) */
	CHECK(strstr(buf, "\"nodes\":[2,0,1,1,0,2,3,2]") != NULL);
	/* cpu values 30, 10, 20, 1 have no common divisor but 1 */
	CHECK(strstr(buf, "\"scale\":[1,1]") != NULL);
	CHECK(strstr(buf, "\"dflt\":1") != NULL);
	free(buf);

	/* a wall profile adds a type; a file without samples is refused */
	ember__profile *q = ember__profile_new();
	q->nvalues = 1;
	q->sample_type[0] = (ember__value_type){ "wall", "nanoseconds" };
	CHECK(ember__flame_add(fl, q, "wall.pb", 0) < 0);
	CHECK(strstr(ember_last_error(), "'wall.pb' is empty") != NULL);
	uint32_t l1[] = { 1 };
	sample(q, NULL, 5, 0, 1, l1);
	q->nlocations = 0; /* refers to a missing location now */
	CHECK(ember__flame_add(fl, q, "wall.pb", 0) < 0);
	ember__profile_free(q);
	q = demo();
	q->sample_type[1] = (ember__value_type){ "wall", "nanoseconds" };
	CHECK_EQ_INT(ember__flame_add(fl, q, "wall.pb", 0), 0);
	CHECK_EQ_INT(fl->ntypes, 3);
	ember__profile_free(q);
	ember__flame_free(fl);

	/* --type absent from a file: the message names both */
	ember__flame_opts t = { 0 };
	t.type = "alloc_space";
	fl = ember__flame_new(&t);
	CHECK(ember__flame_add(fl, p, "demo.pb", 0) < 0);
	CHECK(strstr(ember_last_error(), "'demo.pb' has no sample type 'alloc_space'") != NULL);
	ember__flame_free(fl);
	ember__profile_free(p);
}

/* A profile of `b` and `c` leaf samples (one location each), counts only. */
static ember__profile *two(int64_t nb, int64_t nc)
{
	ember__profile *p = ember__profile_new();
	p->nvalues = 1;
	p->sample_type[0] = (ember__value_type){ "samples", "count" };
	uint32_t lb = loc(p, fn(p, "b"), 0), lc = loc(p, fn(p, "c"), 0);
	sample(p, NULL, nb, 0, 1, &lb);
	sample(p, NULL, nc, 0, 1, &lc);
	return p;
}

static void check_diff(int64_t scale, int significant)
{
	ember__flame_opts o = { 0 };
	o.diff = 1;
	o.type = "samples";
	ember__flame *fl = ember__flame_new(&o);
	ember__profile *base = two(50 * scale, 50 * scale), *neu = two(70 * scale, 30 * scale);
	CHECK_EQ_INT(ember__flame_add(fl, base, "base", 1), 0);
	CHECK_EQ_INT(ember__flame_add(fl, neu, "new", 0), 0);
	ember__flame_diff d;
	CHECK_EQ_INT(ember__flame_diff_compute(fl, &d), 0);
	CHECK_EQ_INT(d.nrows, 2);
	/* pooled p = 0.6; se = sqrt(0.6 * 0.4 * 2 / n); z = 0.2 / se */
	double n = 100.0 * (double)scale;
	double z = 0.2 / sqrt(0.6 * 0.4 * 2 / n);
	for (size_t i = 0; i < d.nrows; i++) {
		const ember__flame_diff_row *r = &d.rows[i];
		int is_b = !strcmp(fl->strings[fl->frames[r->frame].name], "b");
		CHECK(fabs(r->delta - (is_b ? 20.0 : -20.0)) < 1e-9);
		CHECK(fabs(r->z - (is_b ? z : -z)) < 1e-6);
		CHECK_EQ_INT(r->significant, significant);
	}
	/* two functions: Bonferroni at 0.001 / 2, two-sided: |z| > 3.48 */
	CHECK(fabs(d.z_threshold - 3.4807) < 0.001);
	CHECK(fabs(ember__flame_diff_worst(&d) - (significant ? 20.0 : 0.0)) < 1e-9);
	ember__flame_diff_free(&d);
	ember__flame_free(fl);
	ember__profile_free(base);
	ember__profile_free(neu);
}

static void test_diff(void)
{
	check_diff(1, 0);  /* z = 2.89: noise */
	check_diff(10, 1); /* z = 9.13 */

	/* the two sides in different units of the type */
	ember__flame_opts o = { 0 };
	o.diff = 1;
	o.type = "samples";
	ember__flame *fl = ember__flame_new(&o);
	ember__profile *a = two(1, 1), *b = two(1, 1);
	b->sample_type[0].unit = "nanoseconds";
	CHECK_EQ_INT(ember__flame_add(fl, a, "a", 1), 0);
	CHECK(ember__flame_add(fl, b, "b", 0) < 0);
	CHECK(strstr(ember_last_error(), "'b': sample type 'samples' is in nanoseconds") != NULL);
	ember__flame_free(fl);
	ember__profile_free(a);
	ember__profile_free(b);
}

int main(void)
{
	RUN(test_folded);
	RUN(test_json);
	RUN(test_diff);
	return CHECK_DONE();
}
