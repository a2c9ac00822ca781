/* SPDX-License-Identifier: Apache-2.0 */
/* Stopping an agent that was never started must not compile. */
#include "emberprof.h"

int misuse(ember_agent *ready);
int misuse(ember_agent *ready)
{
	ember_agent *back;
	return ember_running_stop(&back, ready); /* EXPECT-ERROR */
}
