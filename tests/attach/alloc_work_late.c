/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_work_late.c - a library alloc_work.c loads with dlopen on "late",
 * while the attach runs: its GOT entries (lazily bound JUMP_SLOTs) are
 * patched by the agent's rescan at a window's end, not at the start.
 */
#include <stdlib.h>
#include <string.h>

void *alwork_late_site(size_t n);
void alwork_late_release(void *p);

__attribute__((noinline)) void *alwork_late_site(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 0x77, n);
	return p;
}

__attribute__((noinline)) void alwork_late_release(void *p)
{
	free(p);
}
