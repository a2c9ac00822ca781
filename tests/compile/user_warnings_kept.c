/* SPDX-License-Identifier: Apache-2.0 */
/* The header must not change the diagnostics of the including program's
 * own code: the unrelated incompatible-pointer assignment below must get
 * the same diagnostic (warning or error, by the compiler's own default)
 * as it does when this file is compiled without the #include. */
#include "emberprof.h"

int own_code(void);
int own_code(void)
{
	long l = 1;
	int *p;
	p = &l; /* EXPECT-SAME */
	return *p != 0;
}
