/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sort.c - ember__sort against qsort: random keys with many
 * duplicates, sorted, reversed, all equal, organ-pipe and short arrays,
 * for 4-byte and 32-byte elements; the result is ordered and a
 * permutation of the input (every element's tag present once).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/sort.h"

typedef struct {
	uint64_t key;
	uint64_t tag; /* the element's index in the input */
	char pad[16];
} big;

static int cmp_big(const void *a, const void *b)
{
	const big *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

enum { RANDOM, FEW_KEYS, SORTED, REVERSED, EQUAL, ORGAN, NSHAPES };

static uint64_t key_of(int shape, size_t i, size_t n)
{
	switch (shape) {
	case RANDOM: return next();
	case FEW_KEYS: return next() % 5;
	case SORTED: return i;
	case REVERSED: return n - i;
	case EQUAL: return 7;
	default: return i < n / 2 ? i : n - i;
	}
}

static void check_big(int shape, size_t n)
{
	big *v = calloc(n ? n : 1, sizeof(*v)), *w = calloc(n ? n : 1, sizeof(*w));
	char *seen = calloc(n ? n : 1, 1);
	CHECK(v && w && seen);
	for (size_t i = 0; i < n; i++) {
		v[i].key = key_of(shape, i, n);
		v[i].tag = i;
		memset(v[i].pad, (int)(i & 0x7f), sizeof(v[i].pad));
	}
	memcpy(w, v, n * sizeof(*v));
	ember__sort(v, n, sizeof(*v), cmp_big);
	qsort(w, n, sizeof(*w), cmp_big);
	int ordered = 1, permutation = 1, same_keys = 1;
	for (size_t i = 0; i < n; i++) {
		if (i && v[i - 1].key > v[i].key)
			ordered = 0;
		if (v[i].key != w[i].key)
			same_keys = 0;
		uint64_t t = v[i].tag;
		if (t >= n || seen[t] || v[i].pad[0] != (char)(t & 0x7f))
			permutation = 0;
		else
			seen[t] = 1;
	}
	if (!ordered || !permutation || !same_keys)
		fprintf(stderr, "shape %d, n %zu: ordered %d, permutation %d, keys as qsort's %d\n",
			shape, n, ordered, permutation, same_keys);
	CHECK(ordered && permutation && same_keys);
	free(v);
	free(w);
	free(seen);
}

static void test_big_elements(void)
{
	static const size_t sizes[] = {0, 1, 2, 3, 12, 13, 17, 100, 1000, 20000};
	for (int shape = 0; shape < NSHAPES; shape++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			check_big(shape, sizes[k]);
}

static void test_small_elements(void)
{
	size_t n = 50000;
	uint32_t *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));
	CHECK(v && w);
	for (size_t i = 0; i < n; i++)
		v[i] = (uint32_t)(next() % 1000);
	memcpy(w, v, n * sizeof(*v));
	ember__sort(v, n, sizeof(*v), cmp_u32);
	qsort(w, n, sizeof(*w), cmp_u32);
	CHECK(memcmp(v, w, n * sizeof(*v)) == 0);
	free(v);
	free(w);
}

/* Keys built to defeat a median-of-three pivot: whatever the input, the
 * depth bound hands over to heapsort and the result stays sorted. */
static void test_adversarial(void)
{
	size_t n = 4096;
	big *v = calloc(n, sizeof(*v));
	CHECK(v != NULL);
	for (size_t i = 0; i < n; i++) {
		v[i].key = (i % 2) ? i : n + i; /* interleaved halves */
		v[i].tag = i;
	}
	ember__sort(v, n, sizeof(*v), cmp_big);
	int ordered = 1;
	for (size_t i = 1; i < n; i++)
		if (v[i - 1].key > v[i].key)
			ordered = 0;
	CHECK(ordered);
	free(v);
}

int main(void)
{
	RUN(test_big_elements);
	RUN(test_small_elements);
	RUN(test_adversarial);
	return CHECK_DONE();
}
