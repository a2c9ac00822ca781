/* SPDX-License-Identifier: Apache-2.0 */
/* Reading an agent's counters from a builder must not compile. */
#include "emberprof.h"

void misuse(const ember_builder *b, ember_stats *st);
void misuse(const ember_builder *b, ember_stats *st)
{
	ember_agent_stats(b, st); /* EXPECT-ERROR */
}
