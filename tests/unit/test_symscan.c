/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_symscan.c - the symbol index's two shortcuts, on every module of
 * this very process (the test, libc, libdw, libelf, libz...):
 *  - reading a module's symbols in place gives the same index, entry for
 *    entry, as reading each through libdwfl;
 *  - naming addresses with one pass over the symbols (scan) gives the
 *    names the built index gives, at symbol starts, inside symbols, at
 *    their ends and between them;
 *  - the symbolizer's prefetch names a window's addresses as its lookups
 *    would without it, and leaves the module's index unbuilt, until the
 *    module has had its scans: through libdwfl, and on the libelf path
 *    (symbolizer_elf.c), where this process's libc is named.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self_dwfl.h"
#include "symbols/symbolizer.h"
#include "symbols/symbolizer_internal.h"
#include "symbols/symindex.h"

static int same_name(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Addresses around the index's symbols, sorted, no repeats: every
 * `stride`-th symbol's start, middle, last byte and end, and one byte
 * before its start. */
static uint64_t *probe_addrs(const ember__symindex *ix, uint64_t start, uint64_t limit,
			     size_t stride, size_t *n)
{
	uint64_t *v = malloc((ix->nsyms / stride + 1) * 5 * sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; v && i < ix->nsyms; i += stride) {
		const ember__sym_entry *e = &ix->syms[i];
		uint64_t cand[5] = {e->addr, e->addr + e->size / 2, e->addr + e->size - 1,
				    e->addr + e->size, e->addr - 1};
		for (int c = 0; c < 5; c++)
			if (cand[c] >= start && cand[c] < limit)
				v[k++] = cand[c];
	}
	if (k > 1)
		qsort(v, k, sizeof(*v), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
	return v;
}

static void check_module(sym_module *m, size_t *modules, size_t *raw_modules,
			 size_t *syms_checked, size_t *addrs_checked)
{
	ember__symindex raw = EMBER_SYMINDEX_INIT, ref = EMBER_SYMINDEX_INIT,
			 scan = EMBER_SYMINDEX_INIT;
	uint64_t start = m->info.start, limit = m->info.limit;
	CHECK_EQ_INT(ember__symindex_build_syms_ex(&raw, m->dm, start, limit, 0), 0);
	CHECK_EQ_INT(ember__symindex_build_syms_ex(&ref, m->dm, start, limit, 1), 0);
	CHECK_EQ_INT(raw.nsyms, ref.nsyms);
	CHECK_EQ_INT(ref.syms_raw, 0);
	*raw_modules += raw.syms_raw;
	size_t bad = 0;
	for (size_t i = 0; i < raw.nsyms && i < ref.nsyms; i++) {
		const ember__sym_entry *a = &raw.syms[i], *b = &ref.syms[i];
		if (a->addr != b->addr || a->size != b->size || a->rank != b->rank ||
		    strcmp(a->name, b->name) != 0) {
			if (!bad++)
				fprintf(stderr, "  %s: entry %zu: %#llx %u %s, libdwfl %#llx %u %s\n",
					m->info.path, i, (unsigned long long)a->addr, a->size, a->name,
					(unsigned long long)b->addr, b->size, b->name);
		}
	}
	CHECK_EQ_INT(bad, 0);
	*syms_checked += raw.nsyms;

	size_t n;
	uint64_t *addrs = probe_addrs(&ref, start, limit, raw.nsyms > 20000 ? 7 : 1, &n);
	CHECK(addrs != NULL);
	const char **names = calloc(n ? n : 1, sizeof(*names));
	CHECK(names != NULL);
	if (addrs && names) {
		CHECK_EQ_INT(ember__symindex_scan(&scan, m->dm, start, limit, addrs, n, names), 0);
		bad = 0;
		for (size_t i = 0; i < n; i++) {
			const char *want = ember__symindex_symbol_at(&ref, addrs[i]);
			if (!same_name(names[i], want) && !bad++)
				fprintf(stderr, "  %s: %#llx: scan %s, index %s\n", m->info.path,
					(unsigned long long)addrs[i], names[i] ? names[i] : "(none)",
					want ? want : "(none)");
		}
		CHECK_EQ_INT(bad, 0);
		*addrs_checked += n;
	}
	free(names);
	free(addrs);
	ember__symindex_reset(&raw);
	ember__symindex_reset(&ref);
	ember__symindex_reset(&scan);
	(*modules)++;
}

static void test_scan_and_raw_match_libdwfl(void)
{
	ember__symbolizer *s = ember_test_dwfl_symbolizer();
	CHECK(s != NULL);
	if (!s)
		return;
	size_t modules = 0, raw_modules = 0, syms = 0, addrs = 0;
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i]->dm)
			check_module(s->mods[i], &modules, &raw_modules, &syms, &addrs);
	fprintf(stderr, "  %zu modules (%zu read in place), %zu symbols, %zu addresses compared\n",
		modules, raw_modules, syms, addrs);
	CHECK(modules >= 3);   /* the test, libc, libdw at least */
	CHECK(raw_modules >= 3); /* the comparison compared something */
	CHECK(syms > 5000);    /* libc alone has thousands */
	CHECK(addrs > 5000);
	ember__symbolizer_free(s);
}

/* The libc module of s, named through libdwfl (dwfl) or with libelf, or NULL. */
static sym_module *libc_module(ember__symbolizer *s, int dwfl)
{
	for (size_t i = 0; i < s->nmods; i++)
		if ((dwfl ? s->mods[i]->dm != NULL : s->mods[i]->syms_src.main != NULL) &&
		    strstr(s->mods[i]->info.path, "/libc.so"))
			return s->mods[i];
	return NULL;
}

/* dwfl: both symbolizers name libc through libdwfl, else with libelf. */
static void prefetch_case(int dwfl)
{
	ember__symbolizer *a = NULL, *b = NULL;
	if (dwfl) {
		a = ember_test_dwfl_symbolizer();
		b = ember_test_dwfl_symbolizer();
	} else {
		CHECK_EQ_INT(ember__symbolizer_new(&a), 0);
		CHECK_EQ_INT(ember__symbolizer_new(&b), 0);
	}
	sym_module *ma = a ? libc_module(a, dwfl) : NULL, *mb = b ? libc_module(b, dwfl) : NULL;
	CHECK(ma && mb);
	if (!ma || !mb) {
		ember__symbolizer_free(a);
		ember__symbolizer_free(b);
		return;
	}
	/* addresses of libc's functions, as a window's frames would be */
	ember__symindex ix = EMBER_SYMINDEX_INIT;
	if (dwfl)
		CHECK_EQ_INT(ember__symindex_build_syms(&ix, ma->dm, ma->info.start, ma->info.limit), 0);
	else
		CHECK_EQ_INT(ember__symindex_build_syms_elf(&ix, &ma->syms_src, ma->info.start,
							    ma->info.limit),
			     0);
	size_t n = 0;
	uint64_t *v = probe_addrs(&ix, ma->info.start, ma->info.limit, 97, &n);
	ember__symindex_reset(&ix);
	CHECK(v && n > 20);
	if (!v) {
		ember__symbolizer_free(a);
		ember__symbolizer_free(b);
		return;
	}
	uint64_t *scratch = malloc(n * sizeof(*scratch));
	for (unsigned round = 0; round <= EMBER_SYMINDEX_MAX_SCANS; round++) {
		/* each round asks for a third of the addresses not asked yet */
		size_t lo = n * round / 3, hi = round == EMBER_SYMINDEX_MAX_SCANS ? n : n * (round + 1) / 3;
		memcpy(scratch, v + lo, (hi - lo) * sizeof(*scratch));
		CHECK_EQ_INT(ember__symbolizer_prefetch(a, scratch, hi - lo), 0);
		size_t bad = 0;
		for (size_t i = lo; i < hi; i++) {
			ember__symbol_info sa, sb;
			CHECK_EQ_INT(ember__symbolizer_lookup(a, v[i], &sa), 0);
			CHECK_EQ_INT(ember__symbolizer_lookup(b, v[i], &sb), 0);
			const char *na = sa.nframes ? sa.frames[sa.nframes - 1].system_name : NULL;
			const char *nb = sb.nframes ? sb.frames[sb.nframes - 1].system_name : NULL;
			if (!same_name(na, nb) && !bad++)
				fprintf(stderr, "  %#llx: prefetched %s, looked up %s\n",
					(unsigned long long)v[i], na ? na : "(none)", nb ? nb : "(none)");
		}
		CHECK_EQ_INT(bad, 0);
		if (round < EMBER_SYMINDEX_MAX_SCANS) {
			/* named by scans: no index yet */
			CHECK_EQ_INT(ma->ix.syms_built, 0);
			CHECK_EQ_INT(ma->ix.scans, round + 1);
		} else {
			/* out of scans: the lookups built the index */
			CHECK_EQ_INT(ma->ix.syms_built, 1);
		}
	}
	CHECK_EQ_INT(mb->ix.syms_built, 1);
	free(scratch);
	free(v);
	ember__symbolizer_free(a);
	ember__symbolizer_free(b);
}

static void test_prefetch(void)
{
	prefetch_case(1);
}

static void test_prefetch_libelf(void)
{
	prefetch_case(0);
}

int main(void)
{
	RUN(test_scan_and_raw_match_libdwfl);
	RUN(test_prefetch);
	RUN(test_prefetch_libelf);
	return CHECK_DONE();
}
