/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_stdio.c - a program that makes stderr a wide-character stream, as
 * programs written with <wchar.h> do. Its first use of stderr decides the
 * stream's orientation: if emberprof had written to the program's stderr
 * FILE first (a complaint from the preloaded library's constructor), the
 * stream would be byte-oriented, fwide() would refuse and every fwprintf
 * would fail.
 *
 * Prints "wide 1" through fwprintf and exits 0 if stderr became wide,
 * else exits 1.
 */
#include <stdio.h>
#include <wchar.h>

int main(void)
{
	int r = fwide(stderr, 1);
	fwprintf(stderr, L"wide %d\n", r > 0);
	return r > 0 ? 0 : 1;
}
