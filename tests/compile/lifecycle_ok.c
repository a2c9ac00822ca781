/* The correct lifecycle compiles (the control for the misuse cases). */
#include "emberprof.h"

int lifecycle_ok(void);
int lifecycle_ok(void)
{
	ember_builder *b;
	ember_agent *a;
	ember_running *r;
	if (ember_builder_new(&b, "app") || ember_builder_build(&a, b))
		return 1;
	if (ember_agent_start(&r, a) == 0)
		ember_running_stop(&a, r);
	ember_agent_shutdown(a);
	return 0;
}
