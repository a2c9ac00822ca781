/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cfi_pack.c - the packed unwind rows (src/cfi/cfi_pack.c, the lookup
 * in src/unwind/unwind_dwarf.c; the format: ember__cfi_packed, unwind.h).
 *
 * Row sets made up to reach every corner - random rows dense and sparse,
 * rows on 64 KiB page and 512-byte bucket boundaries, empty pages between
 * rows, a page with a row at every byte, the top of the 32-bit offsets -
 * are packed, and the packed lookup must return exactly the row (and its
 * number) a binary search of the rows returns, for every address from a
 * page below the first row to a page above the last when that spans at
 * most 8 MiB, else every row's, bucket's and page's boundary +-1 and
 * 200,000 random addresses, and every
 * row must decode to itself. More than 65,535 distinct rules fall back to
 * the 8-byte rows, as does a table too small to gain. Corrupted pages,
 * buckets, rows, rules and counts must give wrong rows at worst, never a
 * read outside the arrays (each copy is an exact-size heap block: the
 * sanitizer build reports any overread), and the cache's check must refuse
 * most of them. libc's real rows are checked byte by byte in test_cfi.c.
 */
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi.h"
#include "cfi/cfi_pack.h"
#include "check.h"
#include "emberprof.h"
#include "unwind/unwind.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng >> 16);
}

/* A rule from a small pool (so rules repeat), SIGNAL rows included. */
static void random_rule(ember__cfi_row *r, uint32_t pool)
{
	static const uint8_t kinds[] = {EMBER_CFI_SP,
					EMBER_CFI_FP,
					EMBER_CFI_NONE,
					EMBER_CFI_SIGNAL,
					EMBER_CFI_PLT,
					EMBER_CFI_UNKNOWN,
					EMBER_CFI_AUX,
					EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF,
					EMBER_CFI_SP | EMBER_CFI_F_FP_LOST | (3 << EMBER_CFI_AUX_SHIFT)};
	uint32_t v = rnd() % pool;
	r->kind = kinds[v % sizeof(kinds)];
	r->cfa = (int16_t)(v * 7919 - 3000);
	r->fp = (int8_t)(v * 31);
}

/* Whether the packed lookup of pc agrees with a search of the rows. */
static int agrees(const ember__cfi_row *rows, uint32_t n, const ember__cfi_packed *p, uint32_t pc)
{
	const ember__cfi_row *want = ember__cfi_rows_find(rows, n, pc);
	ember__cfi_row got;
	uint32_t k = ember__cfi_packed_find(p, pc, &got);
	if (!want)
		return k == 0;
	return k == (uint32_t)(want - rows) + 1 && !memcmp(&got, want, sizeof(got));
}

/* Packs rows[0..n) and checks every lookup and row; returns the mismatches. */
static uint64_t check_set(const char *name, const ember__cfi_row *rows, uint32_t n)
{
	void *block;
	size_t len;
	ember__cfi_packed p;
	CHECK_EQ_INT(ember__cfi_pack_rows(rows, n, &block, &len, &p), 0);
	if (!block)
		return 1;
	CHECK_EQ_INT(len, ember__cfi_packed_layout(n, p.nrules, p.npages, NULL, NULL));
	CHECK_EQ_INT(ember__cfi_packed_check(&p), 0);
	uint64_t wrong = 0, probes = 0;
	for (uint32_t i = 0; i < n; i++) {
		ember__cfi_row r;
		wrong += !ember__cfi_packed_row(&p, i, &r) || memcmp(&r, &rows[i], sizeof(r));
	}
	ember__cfi_row r;
	CHECK(!ember__cfi_packed_row(&p, n, &r));
	/* from a page below the first row to a page above the last */
	uint64_t lo = rows[0].pc >= 0x10002 ? rows[0].pc - 0x10002 : 0;
	uint64_t hi = (uint64_t)rows[n - 1].pc + 0x10002;
	if (hi > UINT32_MAX)
		hi = UINT32_MAX;
	if (hi - lo <= (8u << 20)) {
		for (uint64_t pc = lo; pc <= hi; pc++, probes++)
			wrong += !agrees(rows, n, &p, (uint32_t)pc);
	} else {
		for (uint32_t i = 0; i < n; i++) {
			uint32_t pc = rows[i].pc, page = pc & ~0xffffu;
			uint32_t at[] = {pc - 1, pc, pc + 1, page - 1, page, page + 1, page | 0xffff,
					 (page | 0xffff) + 1, pc | 0x1ff, (pc | 0x1ff) + 1};
			for (size_t k = 0; k < sizeof(at) / sizeof(*at); k++, probes++)
				wrong += !agrees(rows, n, &p, at[k]);
		}
		for (int k = 0; k < 200000; k++, probes++)
			wrong += !agrees(rows, n, &p, (uint32_t)(lo + rnd() % (hi - lo + 1)));
	}
	printf("  %s: %u rows, %u rules (%u SIGNAL), %u pages from %#x, %zu bytes (%.2f a row); "
	       "%llu addresses looked up, %llu wrong\n",
	       name, n, p.nrules, p.nsignal, p.npages, p.page0, len, (double)len / n,
	       (unsigned long long)probes, (unsigned long long)wrong);
	free(block);
	return wrong;
}

/* n sorted, distinct rows from `start`, gaps drawn from the mode. */
static uint32_t make_rows(ember__cfi_row *rows, uint32_t n, uint64_t start, int mode, uint32_t pool)
{
	uint64_t pc = start;
	uint32_t k = 0;
	while (k < n && pc <= UINT32_MAX) {
		memset(&rows[k], 0, sizeof(rows[k]));
		rows[k].pc = (uint32_t)pc;
		random_rule(&rows[k], pool);
		k++;
		uint32_t x = rnd();
		switch (mode) {
		case 0: pc += 1 + x % 40; break; /* dense code */
		case 1: /* gaps of whole pages, page and bucket boundaries */
			if (x % 16 == 0)
				pc += (uint64_t)(1 + x / 16 % 4) << 16; /* empty pages */
			else if (x % 16 == 1)
				pc = (pc | 0xffff) + 1; /* the next page's first byte */
			else if (x % 16 == 2)
				pc = (pc | 0xffff); /* a page's last byte */
			else if (x % 16 == 3)
				pc = (pc | 0x1ff) + 1; /* a bucket's first byte */
			else
				pc += 1 + x % 300;
			if (pc <= rows[k - 1].pc)
				pc = rows[k - 1].pc + 1;
			break;
		default: pc += 1; break; /* a row at every byte */
		}
	}
	return k;
}

static void test_random_sets(void)
{
	enum { N = 200000 };
	ember__cfi_row *rows = malloc(N * sizeof(*rows));
	if (!rows)
		return;
	uint64_t wrong = 0;
	uint32_t n = make_rows(rows, 50000, 0x1234, 0, 300);
	wrong += check_set("dense", rows, n);
	n = make_rows(rows, 600, 0x400000 - 0x20, 1, 50);
	wrong += check_set("page gaps and boundaries", rows, n);
	n = make_rows(rows, 1, 0x10000, 0, 5);
	wrong += check_set("one row, at a page's first byte", rows, n);
	n = make_rows(rows, 3, 0xffff, 2, 5);
	wrong += check_set("three rows across a page boundary", rows, n);
	n = make_rows(rows, 65536 + 700, 0x30000 - 300, 2, 1000);
	wrong += check_set("a row at every byte of a page", rows, n);
	n = make_rows(rows, 5000, 0xfffe0000u, 1, 40);
	wrong += check_set("the top of 32-bit offsets", rows, n);
	n = make_rows(rows, 200, 0x100000, 1, 20);
	rows[n - 1].pc = 0x70000000u; /* far away: thousands of empty pages */
	wrong += check_set("sparse", rows, n);
	for (int k = 0; k < 20; k++) {
		n = make_rows(rows, 1 + rnd() % 1500, rnd() % 0x300000, (int)(rnd() % 2), 1 + rnd() % 400);
		wrong += check_set("random", rows, n);
	}
	CHECK_EQ_INT(wrong, 0);
	free(rows);
}

/* A table as ember__cfi_finish leaves it before packing. */
static ember__cfi_table *table_of(const ember__cfi_row *rows, uint32_t n)
{
	ember__cfi_table *t = calloc(1, sizeof(*t));
	t->rows = malloc(n * sizeof(*rows));
	memcpy(t->rows, rows, n * sizeof(*rows));
	t->nrows = n;
	t->nindex = ((rows[n - 1].pc - rows[0].pc) >> EMBER_CFI_INDEX_SHIFT) + 1;
	t->index_shift = EMBER_CFI_INDEX_SHIFT;
	t->index = calloc(t->nindex, sizeof(*t->index));
	for (uint32_t i = 0, r = 0; i < t->nindex; i++) {
		while (r + 1 < n && rows[r + 1].pc <= rows[0].pc + (i << EMBER_CFI_INDEX_SHIFT))
			r++;
		t->index[i] = r;
	}
	t->bytes = sizeof(*t) + n * sizeof(*rows) + t->nindex * sizeof(*t->index);
	return t;
}

/* More than 65,535 distinct rules: the 8-byte rows stay; 65,535 pack. */
static void test_fallbacks(void)
{
	enum { N = 70000 };
	ember__cfi_row *rows = calloc(N, sizeof(*rows));
	for (uint32_t i = 0; i < N; i++) {
		rows[i].pc = 0x1000 + 4 * i;
		rows[i].cfa = (int16_t)(i & 0x7fff);
		rows[i].fp = (int8_t)(i >> 15);
		rows[i].kind = EMBER_CFI_SP;
	}
	void *block;
	size_t len;
	ember__cfi_packed p;
	CHECK_EQ_INT(ember__cfi_pack_rows(rows, N, &block, &len, &p), 1);
	CHECK(block == NULL);
	ember__cfi_table *t = table_of(rows, N);
	CHECK_EQ_INT(ember__cfi_pack(t), 0);
	CHECK(t->rows && t->index && t->packed.nrows == 0 && t->stats.unpacked_rules == 1);
	uint32_t wrong = 0;
	for (uint32_t pc = 0xff0; pc < 0x1000 + 4 * N + 8; pc++) {
		ember__cfi_row r;
		const ember__cfi_row *want = ember__cfi_rows_find(rows, N, pc);
		int got = ember__cfi_table_find(t, pc, &r);
		wrong += got != (want != NULL) || (got && memcmp(&r, want, sizeof(r)));
	}
	CHECK_EQ_INT(wrong, 0);
	ember__cfi_table_free(t);

	/* exactly the most rules a 16-bit number can name */
	CHECK_EQ_INT(check_set("65,535 distinct rules", rows, EMBER_CFI_RULES_MAX), 0);
	t = table_of(rows, EMBER_CFI_RULES_MAX);
	CHECK_EQ_INT(ember__cfi_pack(t), 0);
	CHECK(!t->rows && !t->index && t->packed.nrules == EMBER_CFI_RULES_MAX);
	CHECK_EQ_INT(t->bytes, sizeof(*t) + t->block_len);
	ember__cfi_table_free(t);

	/* a few rows: the page's 256-byte bucket index would not pay */
	t = table_of(rows, 3);
	CHECK_EQ_INT(ember__cfi_pack(t), 0);
	CHECK(t->rows && t->packed.nrows == 0 && t->stats.unpacked_small == 1);
	ember__cfi_table_free(t);
	free(rows);
}

/*
 * Corrupted arrays and counts: lookups, row decoding and a walk stay
 * inside the (exact-size) block; most corruptions of the index fail the
 * check the cache applies.
 */
static void test_corruption(void)
{
	enum { N = 6000 };
	ember__cfi_row *rows = malloc(N * sizeof(*rows));
	uint32_t n = make_rows(rows, N, 0x20000 - 100, 1, 60);
	void *good;
	size_t len;
	ember__cfi_packed p;
	CHECK_EQ_INT(ember__cfi_pack_rows(rows, n, &good, &len, &p), 0);
	if (!good)
		return;
	static uintptr_t stack[256];
	uint32_t index_hits = 0, index_refused = 0, rounds = 3000;
	size_t words = len / 4, index_from = (size_t)p.nrows + p.nrules;
	for (uint32_t round = 0; round < rounds; round++) {
		uint8_t *b = malloc(len);
		memcpy(b, good, len);
		ember__cfi_packed q = p;
		ember__cfi_packed_layout(q.nrows, q.nrules, q.npages, b, &q);
		int in_index = 0;
		for (uint32_t k = 0; k <= rnd() % 4; k++) {
			static const uint32_t vals[] = {0, 1, 0xffff, 0x10000, 0xffffffffu, 0x7fffffffu};
			uint32_t v = rnd() % 3 ? vals[rnd() % 6] : rnd();
			if (rnd() % 8 == 0)
				v = q.nrows + rnd() % 3 - 1;
			size_t w = rnd() % 2 ? index_from + rnd() % (words - index_from) : rnd() % words;
			in_index |= w >= index_from;
			if (rnd() % 2)
				memcpy(b + 4 * w, &v, 4);
			else
				memcpy(b + 4 * w + 2 * (rnd() % 2), &v, 2);
		}
		switch (rnd() % 8) { /* counts that lie (never past the block) */
		case 0: q.nsignal = rnd(); break;
		case 1: q.page0 = rnd(); break;
		case 2: q.nrules = rnd() % (q.nrules + 1); break;
		case 3: q.npages = rnd() % (q.npages + 1); break;
		case 4: q.nrows = rnd() % (q.nrows + 1); break;
		}
		if (in_index) {
			index_hits++;
			index_refused += ember__cfi_packed_check(&q) != 0;
		}
		ember__cfi_row r;
		for (int k = 0; k < 300; k++) {
			uint32_t pc = k < 100 ? rows[rnd() % n].pc + rnd() % 3 - 1
					      : 0x10000 + rnd() % (rows[n - 1].pc + 0x20000);
			(void)ember__cfi_packed_find(&q, pc, &r);
		}
		for (uint32_t i = 0; i < q.nrows; i += 1 + rnd() % 50)
			(void)ember__cfi_packed_row(&q, i, &r);
		/* a walk through the corrupted module, over garbage stack words */
		ember__unwind_snapshot *s = calloc(1, sizeof(*s) + sizeof(s->mods[0]));
		s->n = 1;
		s->mods[0].start = 0x100000;
		s->mods[0].end = 0x100000 + 0x1000000;
		s->mods[0].base = 0x100000;
		s->mods[0].packed = q;
		for (size_t k = 0; k < 256; k++)
			stack[k] = k % 3 ? 0x100000 + rnd() % (rows[n - 1].pc + 0x100)
					 : (uintptr_t)&stack[rnd() % 256];
		ember__regs regs = {.pc = 0x100000 + rows[rnd() % n].pc, .sp = (uintptr_t)&stack[0],
				    .fp = (uintptr_t)&stack[rnd() % 256]};
		ember__stack_bounds bounds = {(uintptr_t)&stack[0], (uintptr_t)&stack[256]};
		uint64_t pcs[64];
		unsigned flags = 0;
		int got = ember__unwind_dwarf(s, (int)(round & 1), &regs, &bounds, pcs, 64, &flags);
		CHECK(got >= 1 && got <= 64);
		free(s);
		free(b);
	}
	printf("  %u rounds; %u corrupted the page or bucket index, %u of those refused by the "
	       "check\n",
	       rounds, index_hits, index_refused);
	CHECK(index_refused * 2 > index_hits);
	free(good);
	free(rows);
}

int main(void)
{
	RUN(test_random_sets);
	RUN(test_fallbacks);
	RUN(test_corruption);
	return CHECK_DONE();
}
