/* SPDX-License-Identifier: Apache-2.0 */
/* Starting into an ember_agent pointer (the running agent would be stored
 * where a ready one is expected) must not compile. */
#include "emberprof.h"

int misuse(ember_agent *ready);
int misuse(ember_agent *ready)
{
	ember_agent *again;
	return ember_agent_start(&again, ready); /* EXPECT-ERROR */
}
