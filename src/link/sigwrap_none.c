/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigwrap_none.c - the static library (emberprof_internal) has no libc
 * wrappers: programs linking it keep calling libc's sigaction,
 * pthread_sigmask and exec directly (see src/preload/signal_wrap.c).
 */
#include "engine/sigsetup.h"

int ember__sigwrap_in_effect(void)
{
	return 0;
}
