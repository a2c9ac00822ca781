/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_top.c - the top table: exact flat and cum for a hand-built profile
 * (inlined frames, recursion through one and through several locations,
 * a function name present in two modules, an address-only frame, an empty
 * stack), accumulation over two profiles laid out differently, the order
 * of rows, the choice of value, refusals, and the printed table.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emberprof.h"
#include "top/top.h"

static const char *S(ember__profile *p, const char *s)
{
	return ember__profile_strdup(p, s);
}

static uint32_t fn(ember__profile *p, const char *name)
{
	ember__function f = {S(p, name), S(p, name), S(p, ""), 0};
	return ember__profile_add_function(p, &f);
}

static uint32_t loc(ember__profile *p, uint64_t addr, uint32_t mapping, uint32_t f_inner,
		    uint32_t f_outer)
{
	ember__location l = {addr, mapping, 0, NULL};
	l.nlines = f_inner ? (f_outer ? 2 : 1) : 0;
	if (l.nlines) {
		l.lines = ember__arena_alloc(&p->arena, l.nlines * sizeof(*l.lines));
		l.lines[0].function = f_inner;
		if (f_outer)
			l.lines[1].function = f_outer;
	}
	return ember__profile_add_location(p, &l);
}

static void sample(ember__profile *p, int64_t count, int64_t ns, uint32_t n, const uint32_t *locs)
{
	ember__sample s;
	memset(&s, 0, sizeof(s));
	if (n) {
		s.locs = ember__arena_alloc(&p->arena, n * sizeof(*s.locs));
		memcpy(s.locs, locs, n * sizeof(*locs));
	}
	s.nlocs = n;
	s.values[0] = count;
	s.values[1] = ns;
	ember__profile_add_sample(p, &s);
}

static ember__profile *new_profile(void)
{
	ember__profile *p = ember__profile_new();
	p->nvalues = 2;
	p->sample_type[0] = (ember__value_type){S(p, "samples"), S(p, "count")};
	p->sample_type[1] = (ember__value_type){S(p, "cpu"), S(p, "nanoseconds")};
	ember__mapping app = {0x400000, 0x500000, 0, S(p, "/usr/bin/app"), S(p, ""), 1, 1, 1};
	ember__mapping libm = {0x7f00000000, 0x7f00100000, 0, S(p, "/lib/x86_64-linux-gnu/libm.so.6"),
			       S(p, ""), 1, 0, 0};
	ember__profile_add_mapping(p, &app);
	ember__profile_add_mapping(p, &libm);
	return p;
}

#define MS 1000000LL

/* Profile A, values in ms:
 *   S1 [a, main]                          100
 *   S2 [rec@L3, rec@L8, rec@L3, main]     200  (recursion)
 *   S3 [inl<-b, a, main]                  300  (inl inlined into b)
 *   S4 [sqrt(libm), inl<-b, main]          50
 *   S5 [0xabc (no mapping), main]          70
 *   S6 []                                  30  (total only)
 *   S7 [a(libm)]                           10  (same name, other module)
 */
static ember__profile *profile_a(void)
{
	ember__profile *p = new_profile();
	uint32_t f_main = fn(p, "main"), f_a = fn(p, "a"), f_b = fn(p, "b"), f_rec = fn(p, "rec"),
		 f_inl = fn(p, "inl"), f_sqrt = fn(p, "sqrt");
	uint32_t L1 = loc(p, 0x401000, 1, f_a, 0);
	uint32_t L2 = loc(p, 0x402000, 1, f_main, 0);
	uint32_t L3 = loc(p, 0x403000, 1, f_rec, 0);
	uint32_t L4 = loc(p, 0x404000, 1, f_inl, f_b);
	uint32_t L5 = loc(p, 0x7f00001000, 2, f_sqrt, 0);
	uint32_t L6 = loc(p, 0xabc, 0, 0, 0);
	uint32_t L7 = loc(p, 0x7f00002000, 2, f_a, 0);
	uint32_t L8 = loc(p, 0x403100, 1, f_rec, 0);
	sample(p, 10, 100 * MS, 2, (uint32_t[]){L1, L2});
	sample(p, 20, 200 * MS, 4, (uint32_t[]){L3, L8, L3, L2});
	sample(p, 30, 300 * MS, 3, (uint32_t[]){L4, L1, L2});
	sample(p, 5, 50 * MS, 3, (uint32_t[]){L5, L4, L2});
	sample(p, 7, 70 * MS, 2, (uint32_t[]){L6, L2});
	sample(p, 3, 30 * MS, 0, NULL);
	sample(p, 1, 10 * MS, 1, (uint32_t[]){L7});
	return p;
}

/* Profile B: the same names, other indices and order.
 *   [a, main] 100, [main] 40, [b, b, main] 20 (b recursing, no inline) */
static ember__profile *profile_b(void)
{
	ember__profile *p = new_profile();
	uint32_t f_b = fn(p, "b"), f_x = fn(p, "unused"), f_main = fn(p, "main"), f_a = fn(p, "a");
	loc(p, 0x405000, 1, f_x, 0); /* in no sample */
	uint32_t Lm = loc(p, 0x402000, 1, f_main, 0);
	uint32_t Lb = loc(p, 0x404100, 1, f_b, 0);
	uint32_t La = loc(p, 0x401000, 1, f_a, 0);
	sample(p, 10, 100 * MS, 2, (uint32_t[]){La, Lm});
	sample(p, 4, 40 * MS, 1, (uint32_t[]){Lm});
	sample(p, 2, 20 * MS, 3, (uint32_t[]){Lb, Lb, Lm});
	return p;
}

/* Finds a row by key; returns its position or -1. */
static long find(const ember__top *t, const char *function, const char *module, ember__top_entry *e)
{
	for (size_t i = 0; i < ember__top_count(t); i++) {
		if (ember__top_row(t, i, e))
			return -1;
		if (strcmp(e->function, function) == 0 && strcmp(e->module, module) == 0)
			return (long)i;
	}
	return -1;
}

static void expect_row(const ember__top *t, const char *function, const char *module, int64_t flat,
		       int64_t cum)
{
	ember__top_entry e;
	if (find(t, function, module, &e) < 0) {
		fprintf(stderr, "no row (%s, %s)\n", function, module);
		CHECK(!"row missing");
		return;
	}
	if (e.flat != flat || e.cum != cum)
		fprintf(stderr, "row (%s, %s): flat %lld cum %lld, want %lld %lld\n", function,
			module, (long long)e.flat, (long long)e.cum, (long long)flat, (long long)cum);
	CHECK_EQ_INT(e.flat, flat);
	CHECK_EQ_INT(e.cum, cum);
}

static void test_single_profile(void)
{
	ember__top *t = ember__top_new();
	ember__profile *p = profile_a();
	CHECK_EQ_INT(ember__top_add(t, p, 1), 0);
	ember__profile_free(p); /* the table keeps its own strings */
	CHECK_EQ_INT(ember__top_total(t), 760 * MS);
	CHECK_EQ_STR(ember__top_unit(t), "nanoseconds");
	CHECK_EQ_INT(ember__top_count(t), 8);
	expect_row(t, "inl", "app", 300 * MS, 350 * MS);
	expect_row(t, "rec", "app", 200 * MS, 200 * MS);
	expect_row(t, "a", "app", 100 * MS, 400 * MS);
	expect_row(t, "0xabc", "?", 70 * MS, 70 * MS);
	expect_row(t, "sqrt", "libm.so.6", 50 * MS, 50 * MS);
	expect_row(t, "a", "libm.so.6", 10 * MS, 10 * MS);
	expect_row(t, "main", "app", 0, 720 * MS);
	expect_row(t, "b", "app", 0, 350 * MS);
	CHECK_EQ_INT(find(t, "no_such_function", "app", &(ember__top_entry){0}), -1);

	/* Order: flat desc, then cum desc, then name. */
	static const char *const order[] = {"inl", "rec", "a", "0xabc", "sqrt", "a", "main", "b"};
	for (size_t i = 0; i < 8; i++) {
		ember__top_entry e;
		CHECK_EQ_INT(ember__top_row(t, i, &e), 0);
		CHECK_EQ_STR(e.function, order[i]);
	}
	ember__top_entry e;
	CHECK_EQ_INT(ember__top_row(t, 8, &e), EMBER_ERR_INVALID);
	ember__top_free(t);
}

static void test_accumulate(void)
{
	ember__top *t = ember__top_new();
	ember__profile *a = profile_a(), *b = profile_b();
	CHECK_EQ_INT(ember__top_add(t, a, 1), 0);
	CHECK_EQ_INT(ember__top_add(t, b, 1), 0);
	CHECK_EQ_INT(ember__top_total(t), 920 * MS);
	expect_row(t, "a", "app", 200 * MS, 500 * MS);
	expect_row(t, "main", "app", 40 * MS, 880 * MS);
	expect_row(t, "b", "app", 20 * MS, 370 * MS);
	expect_row(t, "inl", "app", 300 * MS, 350 * MS);
	/* "unused" has a location but is in no sample: no row. */
	ember__top_entry e;
	CHECK_EQ_INT(find(t, "unused", "app", &e), -1);
	/* "a" overtook "rec" (same flat, larger cum). */
	CHECK_EQ_INT(ember__top_row(t, 0, &e), 0);
	CHECK_EQ_STR(e.function, "inl");
	CHECK_EQ_INT(ember__top_row(t, 1, &e), 0);
	CHECK_EQ_STR(e.function, "a");
	ember__top_free(t);

	/* Value 0 (counts) gives the count numbers. */
	t = ember__top_new();
	CHECK_EQ_INT(ember__top_add(t, a, 0), 0);
	CHECK_EQ_INT(ember__top_add(t, b, 0), 0);
	CHECK_EQ_INT(ember__top_total(t), 92);
	expect_row(t, "a", "app", 20, 50);
	expect_row(t, "rec", "app", 20, 20);
	CHECK_EQ_STR(ember__top_unit(t), "count");
	ember__top_free(t);
	ember__profile_free(a);
	ember__profile_free(b);
}

static void test_refusals(void)
{
	ember__top *t = ember__top_new();
	ember__profile *a = profile_a();
	CHECK_EQ_INT(ember__top_add(t, a, 2), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__top_count(t), 0);
	CHECK_EQ_INT(ember__top_add(t, a, 1), 0);
	/* Counts cannot be added to nanoseconds. */
	CHECK_EQ_INT(ember__top_add(t, a, 0), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "count") != NULL);
	/* A sample pointing past the locations is refused, table unchanged. */
	a->samples[0].locs[0] = 1000;
	CHECK_EQ_INT(ember__top_add(t, a, 1), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__top_total(t), 760 * MS);
	ember__profile_free(a);
	ember__top_free(t);
	ember__top_free(NULL);
}

/* Captures the printed table. */
static char *print_table(const ember__top *t, size_t n, const char *label)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	CHECK_EQ_INT(ember__top_print(t, fp, n, label), 0);
	fclose(fp);
	return buf;
}

/* The printed line for a function, or NULL. */
static const char *line_of(const char *text, const char *function)
{
	size_t n = strlen(function);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		/* The function column follows "%  " after cum%. */
		const char *c = strstr(l, "%  ");
		const char *eol = strchr(l, '\n');
		while (c && (!eol || c < eol)) {
			if (strncmp(c + 3, function, n) == 0 && c[3 + n] == ' ')
				return l;
			c = strstr(c + 1, "%  ");
		}
	}
	return NULL;
}

static int line_has(const char *line, const char *what)
{
	const char *eol = strchr(line, '\n');
	const char *hit = strstr(line, what);
	return hit && (!eol || hit < eol);
}

static void test_print(void)
{
	ember__top *t = ember__top_new();
	ember__profile *a = profile_a();
	CHECK_EQ_INT(ember__top_add(t, a, 1), 0);
	char *out = print_table(t, 3, "cpu");
	CHECK(strstr(out, "Total cpu: 0.76s") != NULL);
	CHECK(strstr(out, "flat") && strstr(out, "flat%") && strstr(out, "cum%"));
	CHECK(strstr(out, "module") != NULL);
	const char *l = line_of(out, "inl");
	CHECK(l != NULL);
	if (l) {
		CHECK(line_has(l, "0.30s"));
		CHECK(line_has(l, "39.47%"));
		CHECK(line_has(l, "0.35s"));
		CHECK(line_has(l, "46.05%"));
		CHECK(line_has(l, "app"));
	}
	l = line_of(out, "a");
	CHECK(l != NULL);
	if (l) {
		CHECK(line_has(l, "0.10s"));
		CHECK(line_has(l, "0.40s"));
		CHECK(line_has(l, "52.63%"));
	}
	/* Only the top 3 rows. */
	CHECK(line_of(out, "0xabc") == NULL);
	CHECK(line_of(out, "main") == NULL);
	free(out);

	/* All rows, label from the profile; the address row has module "?". */
	out = print_table(t, 100, NULL);
	CHECK(strstr(out, "Total cpu:") != NULL);
	l = line_of(out, "0xabc");
	CHECK(l != NULL && line_has(l, " ?"));
	l = line_of(out, "sqrt");
	CHECK(l != NULL && line_has(l, "libm.so.6"));
	free(out);
	ember__top_free(t);

	/* Non-time units print as numbers. */
	t = ember__top_new();
	CHECK_EQ_INT(ember__top_add(t, a, 0), 0);
	out = print_table(t, 100, NULL);
	CHECK(strstr(out, "Total samples: 76") != NULL);
	l = line_of(out, "inl");
	CHECK(l != NULL && line_has(l, " 30 ") && line_has(l, " 35 "));
	free(out);
	ember__top_free(t);
	ember__profile_free(a);
}

int main(void)
{
	RUN(test_single_profile);
	RUN(test_accumulate);
	RUN(test_refusals);
	RUN(test_print);
	return CHECK_DONE();
}
