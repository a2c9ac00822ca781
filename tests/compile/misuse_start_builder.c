/* SPDX-License-Identifier: Apache-2.0 */
/* Starting a builder that was not built must not compile. */
#include "emberprof.h"

int misuse(ember_builder *b);
int misuse(ember_builder *b)
{
	ember_running *r;
	return ember_agent_start(&r, b); /* EXPECT-ERROR */
}
