/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sort.h - an in-place sort: qsort's contract without its memory.
 *
 * glibc's qsort (before 2.37) is a merge sort that mallocs a second array
 * as large as the one it sorts. Sorting a big module's symbol index
 * (hundreds of thousands of 32-byte entries) then touches as many fresh
 * pages again, and each fresh page is a page fault: ≈ 12 µs on the VMs
 * measured, more than the sort's own work (docs/BENCHMARKS.md, section
 * 13, "rustc"). This one is an introsort (median-of-three quicksort,
 * heapsort past a depth bound, insertion sort for short runs): no
 * allocation, O(n log n) in the worst case. Not stable, like qsort.
 *
 * Called by the agent's threads; async-signal-safe in itself (it calls
 * only cmp, and memcpy), though nothing on the signal path uses it.
 */
#ifndef EMBER_UTIL_SORT_H
#define EMBER_UTIL_SORT_H

#include <stddef.h>

/* Sorts n elements of `size` bytes at base into the order cmp gives (as
 * qsort's comparator: negative, zero, positive). base may be NULL when n
 * is 0. */
void ember__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
