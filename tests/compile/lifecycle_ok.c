/* SPDX-License-Identifier: Apache-2.0 */
/* The correct lifecycle compiles (the control for the misuse cases). */
#include <stddef.h>

#include "emberprof.h"

int lifecycle_ok(void);
int lifecycle_ok(void)
{
	ember_builder *b;
	ember_agent *a;
	ember_running *r;
	ember_stats st;
	if (ember_builder_new(&b, "app") || ember_builder_set_sample_rate(b, 99) ||
	    ember_builder_build(&a, b))
		return 1;
	ember_agent_stats(a, &st);
	if (ember_agent_start(&r, a) == 0) {
		const ember_running *cr = r;
		ember_running_stats(cr, &st);
		ember_running_stop(&a, r);
	}
	ember_agent_shutdown(a);
	/* Null pointers stay accepted where the functions take them. */
	ember_agent_shutdown(NULL);
	ember_builder_free(0);
	/* The functions themselves remain: their addresses, and calls that
	 * bypass the checking macros. */
	void (*shutdown)(ember_agent *) = ember_agent_shutdown;
	void (*free_builder)(ember_builder *) = &ember_builder_free;
	(ember_builder_free)(NULL);
	shutdown(NULL);
	free_builder(NULL);
	return 0;
}
