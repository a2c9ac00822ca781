/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names_lib.c - the shared library of the names tests: a
 * function the program calls through its PLT in a tight loop, one defined
 * under a symbol version (`fx_vers@@FX_2` in .symtab, as glibc's
 * `memcpy@@GLIBC_2.14`), and allocations made in the library.
 */
#include <stdlib.h>

#include "names_fx.h"

int fx_nop(int x)
{
	return x + 1;
}

/* Exported only as fx_vers@@FX_2 (names_lib.map keeps fx_vers_impl local). */
double fx_vers_impl(long n);
double fx_vers_impl(long n)
{
	volatile double a = 0;
	for (long i = 0; i < n; i++)
		a += (double)i * 0.5;
	return a;
}
__asm__(".symver fx_vers_impl, fx_vers@@FX_2");

void *fx_alloc(size_t n)
{
	return malloc(n);
}
