/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forkguard.c - see forkguard.h. One process-wide count: the atfork
 * prepare handler reads it with no agent at hand.
 */
#include "util/forkguard.h"
#include "util/hotpage.h"

#include <stdatomic.h>

static _Atomic int g_inside EMBER_HOT_DATA;

EMBER_HOT_TEXT void ember__forkguard_enter(void)
{
	atomic_fetch_add(&g_inside, 1);
}

EMBER_HOT_TEXT void ember__forkguard_leave(void)
{
	atomic_fetch_sub(&g_inside, 1);
}

EMBER_HOT_TEXT int ember__forkguard_busy(void)
{
	return atomic_load(&g_inside) > 0;
}
