/*
 * unwind.h - the unwinder interface used by the signal handler.
 *
 * An unwinder turns the interrupted thread's registers into a list of
 * program counters, leaf first. It runs inside the signal handler, so every
 * implementation must be async-signal-safe: no allocation, no locks, no
 * stdio, and no memory read outside what the caller proved readable (the
 * stack bounds passed in). A frame-pointer unwinder exists now; a DWARF
 * unwinder plugs in behind the same call (ember__unwind) with its own mode.
 */
#ifndef EMBER_UNWIND_H
#define EMBER_UNWIND_H

#include <stdint.h>

/* The registers an unwinder needs, taken from the signal's ucontext. */
typedef struct ember__regs {
	uintptr_t pc, sp, fp;
} ember__regs;

/*
 * Memory the unwinder may read: [lo, hi) of the current thread's stack.
 * Reads are further limited to [sp, hi), the part of the stack that is
 * live and therefore mapped. lo == hi == 0 means unknown: only the leaf PC
 * (a register) can be recorded.
 */
typedef struct ember__stack_bounds {
	uintptr_t lo, hi;
} ember__stack_bounds;

enum {
	EMBER_UNWIND_MODE_FP = 1,
};

/* Result flags. */
enum {
	EMBER_UNWIND_TRUNCATED = 1u << 0, /* stopped before the stack's end */
	EMBER_UNWIND_NO_BOUNDS = 1u << 1  /* leaf only: bounds unknown */
};

/*
 * Fills pcs[0..max) from regs, leaf first; returns the count (>= 1 when
 * max >= 1) and ORs EMBER_UNWIND_* flags into *flags.
 * Async-signal-safe. Reads memory only inside [regs->sp, bounds->hi).
 */
int ember__unwind(int mode, const ember__regs *regs, const ember__stack_bounds *bounds,
		  uint64_t *pcs, int max, unsigned *flags);

/* The frame-pointer walker. Same contract as ember__unwind. */
int ember__unwind_fp(const ember__regs *regs, const ember__stack_bounds *bounds,
		     uint64_t *pcs, int max, unsigned *flags);

/*
 * Architecture part (regs_<arch>.c): registers from a ucontext_t.
 * Async-signal-safe.
 */
void ember__regs_from_ucontext(const void *ucontext, ember__regs *out);

#endif
