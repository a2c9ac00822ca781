/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sym_c.c - the C program of the symbolize tests: a hot loop with a
 * function inlined into it, called through a chain of real calls. Built
 * by the tests themselves at -O2 -g, then stripped (tests/symbolize/).
 */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned long sym_mix(unsigned long x)
{
	return x * 2654435761u ^ (x >> 13);
}

__attribute__((noinline)) unsigned long sym_hot_loop(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += sym_mix(i + s);
	return s;
}

__attribute__((noinline)) unsigned long sym_caller(unsigned long n)
{
	return sym_hot_loop(n) + 1;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000000ul;
	printf("%lu\n", sym_caller(n));
	return 0;
}
