/*
 * regs_x86_64.c - x86-64 registers from a signal's ucontext.
 * Async-signal-safe. Another architecture adds regs_<arch>.c with the same
 * function and is chosen by the preprocessor below.
 */
#include "unwind/unwind.h"

#if defined(__x86_64__)
#include <ucontext.h>

void ember__regs_from_ucontext(const void *ucontext, ember__regs *out)
{
	const ucontext_t *uc = ucontext;
	out->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	out->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	out->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
}
#endif
