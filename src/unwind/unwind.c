/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind.c - dispatch from an unwinding mode to its implementation.
 * Async-signal-safe.
 */
#include "unwind/unwind.h"

#include <stddef.h>

int ember__unwind(int mode, const ember__unwind_snapshot *snap, const ember__regs *regs,
		  const ember__stack_bounds *bounds, uint64_t *pcs, int max, unsigned *flags)
{
	switch (mode) {
	case EMBER_UNWIND_MODE_AUTO:
	case EMBER_UNWIND_MODE_DWARF:
		if (snap)
			return ember__unwind_dwarf(snap, mode == EMBER_UNWIND_MODE_DWARF, regs, bounds,
						   pcs, max, flags);
		/* No tables (yet): frame pointers. */
		return ember__unwind_fp(regs, bounds, pcs, max, flags);
	case EMBER_UNWIND_MODE_FP:
	default:
		return ember__unwind_fp(regs, bounds, pcs, max, flags);
	}
}

void ember__unwind_relocate_copy(uint64_t *words, size_t nwords, uintptr_t sp, uintptr_t base)
{
	const uint64_t lo = sp, hi = sp + nwords * sizeof(uint64_t), delta = base - sp;
	for (size_t i = 0; i < nwords; i++)
		if (words[i] >= lo && words[i] < hi)
			words[i] += delta;
}
