/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_fp.c - the frame-pointer unwinder.
 *
 * With frame pointers each frame starts with the caller's frame pointer and
 * the return address above it: fp[0] = caller's fp, fp[1] = return address
 * (x86-64's push rbp after call; aarch64's frame record {x29, x30}).
 * Stacks grow down, so a well-formed chain moves strictly upwards towards
 * the stack's top, where the thread's first frame has fp == 0 (glibc's
 * clone() and _start clear it). Async-signal-safe: it reads only inside
 * [sp, hi) of the current thread's stack, which is mapped because it is
 * the live part of the stack we are running on.
 */
#include "unwind/unwind.h"

#include <stddef.h>

#include "unwind/arch.h"

EMBER_STACK_READ int ember__unwind_fp(const ember__regs *regs, const ember__stack_bounds *bounds,
		     uint64_t *pcs, int max, unsigned *flags)
{
	if (max <= 0)
		return 0;
	int n = 0;
	pcs[n++] = regs->pc;

	uintptr_t lo = regs->sp, hi = bounds->hi;
	if (bounds->hi == 0 || regs->sp < bounds->lo || regs->sp >= bounds->hi) {
		*flags |= EMBER_UNWIND_NO_BOUNDS;
		return n;
	}
	uintptr_t fp = regs->fp;
	while (n < max) {
		/* The thread's outermost frame: glibc clears rbp there (0), and
		 * leaves a small non-pointer (1) above main; nothing below a
		 * page can be a frame. Complete, not truncated. */
		if (fp < 4096)
			return n;
		if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1))) {
			*flags |= EMBER_UNWIND_TRUNCATED;
			return n;
		}
		const uintptr_t *frame = (const uintptr_t *)fp;
		uintptr_t next = frame[0];
		/* aarch64: the record's return address may carry a PAC
		 * signature; strip it (arch.h; a no-op on x86-64). */
		uintptr_t ra = frame[1] & EMBER_ARCH_PC_MASK;
		if (ra == 0)
			return n;
		/* A "return address" inside this thread's stack is data, not
		 * code: the chain has left the frame-pointer convention, e.g.
		 * above main, where glibc's __libc_start_call_main (built
		 * without frame pointers) left a stack pointer in rbp and the
		 * word above it is a pointer to argv/envp strings. Stacks are
		 * never executable, so the walk ends here. */
		if (bounds->lo && ra >= bounds->lo && ra < bounds->hi) {
			*flags |= EMBER_UNWIND_TRUNCATED;
			return n;
		}
		pcs[n++] = ra;
		/* The chain must move up, or it loops. */
		if (next != 0 && next <= fp) {
			*flags |= EMBER_UNWIND_TRUNCATED;
			return n;
		}
		lo = fp + 2 * sizeof(uintptr_t);
		fp = next;
	}
	if (fp != 0)
		*flags |= EMBER_UNWIND_TRUNCATED;
	return n;
}
