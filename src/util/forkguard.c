/*
 * forkguard.c - see forkguard.h. One process-wide count: the atfork
 * prepare handler reads it with no agent at hand.
 */
#include "util/forkguard.h"

#include <stdatomic.h>

static _Atomic int g_inside;

void ember__forkguard_enter(void)
{
	atomic_fetch_add(&g_inside, 1);
}

void ember__forkguard_leave(void)
{
	atomic_fetch_sub(&g_inside, 1);
}

int ember__forkguard_busy(void)
{
	return atomic_load(&g_inside) > 0;
}
