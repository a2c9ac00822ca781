/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_work_lib.c - the shared library of alloc_work.c: an allocation
 * site outside the executable. Built with -fno-plt and -z now, so that
 * its calls go through GLOB_DAT entries in its read-only (RELRO) GOT: the
 * kind the attach has to make writable to patch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *alwork_lib_site(size_t n, unsigned char fill);
int alwork_lib_release(void *p, size_t n, unsigned char fill);

__attribute__((noinline)) void *alwork_lib_site(size_t n, unsigned char fill)
{
	unsigned char *p = malloc(n);
	if (p)
		memset(p, fill, n);
	return p;
}

/* Checks the block still holds its bytes, frees it: 0, or -1 if not. */
__attribute__((noinline)) int alwork_lib_release(void *p, size_t n, unsigned char fill)
{
	const unsigned char *b = p;
	int bad = 0;
	for (size_t i = 0; i < n; i += 61)
		bad |= b[i] != fill;
	free(p);
	return bad ? -1 : 0;
}
