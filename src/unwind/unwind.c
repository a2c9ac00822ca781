/*
 * unwind.c - dispatch from an unwinding mode to its implementation.
 * Async-signal-safe.
 */
#include "unwind/unwind.h"

int ember__unwind(int mode, const ember__regs *regs, const ember__stack_bounds *bounds,
		  uint64_t *pcs, int max, unsigned *flags)
{
	switch (mode) {
	case EMBER_UNWIND_MODE_FP:
	default:
		return ember__unwind_fp(regs, bounds, pcs, max, flags);
	}
}
