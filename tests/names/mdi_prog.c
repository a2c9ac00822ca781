/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mdi_prog.c - the program test_minidebuginfo.sh strips the way Fedora
 * does: two local functions (in no .dynsym) that only the MiniDebugInfo
 * symbol table can name. Burns CPU in mdi_inner, called by mdi_outer.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long mdi_inner(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += (i * i) ^ (s >> 3);
	return s;
}

__attribute__((noinline)) static unsigned long mdi_outer(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long k = 0; k < 50; k++)
		s += mdi_inner(n + k);
	return s;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	for (int r = 0; r < 40; r++)
		sink += mdi_outer(n);
	printf("%lu\n", sink);
	return 0;
}
