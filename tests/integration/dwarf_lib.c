/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dwarf_lib.c - a library the DWARF unwinder tests dlopen. Built without
 * frame pointers, twice (see CMakeLists.txt): once with .eh_frame (the
 * usual case) and once with only .debug_frame moved to a separate debug
 * file found through .gnu_debuglink. DWARF_LIB_PREFIX names the functions
 * of each build apart (dl_*, dbg_*), so that profiles tell them apart.
 *
 * Chain: <prefix>work -> <prefix>mid -> <prefix>hot, the hot loop a leaf
 * that keeps data on its stack (a frame, but no frame pointer).
 */
#include <stdint.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(DWARF_LIB_PREFIX, name)

double FN(work)(int n, int reps);

__attribute__((noinline)) static double FN(hot)(int n)
{
	volatile double acc[4] = {0, 0, 0, 0};
	for (int i = 0; i < n; i++)
		acc[i & 3] += (double)i * 0.25;
	return acc[0] + acc[1] + acc[2] + acc[3];
}

__attribute__((noinline)) static double FN(mid)(int n)
{
	volatile double r = FN(hot)(n);
	return r + 1;
}

__attribute__((visibility("default"))) double FN(work)(int n, int reps)
{
	double s = 0;
	for (int i = 0; i < reps; i++)
		s += FN(mid)(n);
	return s;
}
