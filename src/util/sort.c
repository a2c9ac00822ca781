/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sort.c - the in-place introsort of sort.h.
 */
#include "util/sort.h"

#include <stdint.h>
#include <string.h>

typedef int (*cmp_fn)(const void *, const void *);

#define AT(i) (base + (i) * size)
/* Runs this short are finished by insertion sort. */
#define SHORT_RUN 12

static void swap(char *a, char *b, size_t size)
{
	if (a == b)
		return;
	while (size >= sizeof(uint64_t)) {
		uint64_t t;
		memcpy(&t, a, sizeof(t));
		memcpy(a, b, sizeof(t));
		memcpy(b, &t, sizeof(t));
		a += sizeof(t);
		b += sizeof(t);
		size -= sizeof(t);
	}
	while (size--) {
		char t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

static void insertion(char *base, size_t n, size_t size, cmp_fn cmp)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && cmp(AT(j - 1), AT(j)) > 0; j--)
			swap(AT(j - 1), AT(j), size);
}

static void sift_down(char *base, size_t root, size_t n, size_t size, cmp_fn cmp)
{
	for (;;) {
		size_t child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && cmp(AT(child), AT(child + 1)) < 0)
			child++;
		if (cmp(AT(root), AT(child)) >= 0)
			return;
		swap(AT(root), AT(child), size);
		root = child;
	}
}

static void heap_sort(char *base, size_t n, size_t size, cmp_fn cmp)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(base, i, n, size, cmp);
	for (size_t end = n; end-- > 1;) {
		swap(AT(0), AT(end), size);
		sift_down(base, 0, end, size, cmp);
	}
}

static void intro(char *base, size_t n, size_t size, cmp_fn cmp, unsigned depth)
{
	while (n > SHORT_RUN) {
		if (depth-- == 0) {
			heap_sort(base, n, size, cmp);
			return;
		}
		/* The median of the first, middle and last goes first: the pivot. */
		char *lo = AT(0), *mid = AT(n / 2), *hi = AT(n - 1);
		if (cmp(mid, lo) < 0)
			swap(mid, lo, size);
		if (cmp(hi, mid) < 0) {
			swap(hi, mid, size);
			if (cmp(mid, lo) < 0)
				swap(mid, lo, size);
		}
		swap(lo, mid, size);
		/* Hoare's partition around base[0]; both scans stop on elements
		 * equal to the pivot, so runs of equal keys split evenly. The
		 * pivot itself stops the downward scan at 0. */
		size_t i = 0, j = n;
		for (;;) {
			do
				i++;
			while (i < n && cmp(AT(i), base) < 0);
			do
				j--;
			while (cmp(AT(j), base) > 0);
			if (i >= j)
				break;
			swap(AT(i), AT(j), size);
		}
		swap(AT(0), AT(j), size);
		/* [0, j) <= pivot at j <= (j, n): recurse into the shorter side
		 * (a stack depth of log n), loop on the longer. */
		size_t left = j, right = n - j - 1;
		if (left < right) {
			intro(base, left, size, cmp, depth);
			base = AT(j + 1);
			n = right;
		} else {
			intro(AT(j + 1), right, size, cmp, depth);
			n = left;
		}
	}
	insertion(base, n, size, cmp);
}

void ember__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n < 2 || size == 0)
		return;
	unsigned depth = 0;
	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	intro(base, n, size, cmp, depth);
}
