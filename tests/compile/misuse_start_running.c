/* SPDX-License-Identifier: Apache-2.0 */
/* Starting an agent that is already running must not compile. */
#include "emberprof.h"

int misuse(ember_running *running);
int misuse(ember_running *running)
{
	ember_running *again;
	return ember_agent_start(&again, running); /* EXPECT-ERROR */
}
