/* SPDX-License-Identifier: Apache-2.0 */
/*
 * follow_none.c - the static library (emberprof_internal) cannot follow
 * fork children (ember_builder_follow_forks): that needs the shared
 * library's atfork handlers and lazy start (src/preload/fork_child.c).
 */
#include "agent/agent.h"
#include "util/error.h"

int ember__follow_forks_available(void)
{
	return 0;
}

int ember__follow_forks_begin(const ember__config *cfg)
{
	(void)cfg;
	return ember__error(EMBER_ERR_UNSUPPORTED, "following fork children needs the shared "
			    "library libemberprof.so");
}

void ember__follow_forks_end(void)
{
}
