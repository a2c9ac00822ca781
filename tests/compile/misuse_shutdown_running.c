/* SPDX-License-Identifier: Apache-2.0 */
/* Shutting down a running agent (without stopping it) must not compile. */
#include "emberprof.h"

void misuse(ember_running *running);
void misuse(ember_running *running)
{
	ember_agent_shutdown(running); /* EXPECT-ERROR */
}
