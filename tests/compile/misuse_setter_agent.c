/* SPDX-License-Identifier: Apache-2.0 */
/* A builder setter given a built agent must not compile. */
#include "emberprof.h"

int misuse(ember_agent *ready);
int misuse(ember_agent *ready)
{
	return ember_builder_set_sample_rate(ready, 99); /* EXPECT-ERROR */
}
