/*
 * regs_x86_64.c - x86-64 registers from a signal's ucontext, and from the
 * signal frame a sigreturn trampoline runs on.
 * Async-signal-safe. Another architecture adds regs_<arch>.c with the same
 * functions and is chosen by the preprocessor below.
 */
#include "unwind/unwind.h"

#if defined(__x86_64__)
#include <stddef.h>
#include <ucontext.h>

void ember__regs_from_ucontext(const void *ucontext, ember__regs *out)
{
	const ucontext_t *uc = ucontext;
	out->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	out->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	out->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	out->aux = (uintptr_t)uc->uc_mcontext.gregs[REG_RBX];
}

/*
 * The kernel's x86-64 rt_sigframe is { pretcode; struct ucontext uc;
 * siginfo; fp state }, with the handler entered at sp = &pretcode. The
 * handler's `ret` pops pretcode (glibc's __restore_rt), so the trampoline
 * runs with sp = &uc. glibc's ucontext_t starts like the kernel's struct
 * ucontext (flags, link, stack, then the sigcontext registers, whose order
 * REG_* follows), so its offsets apply; only the general registers are
 * read, never the fp state that follows.
 */
EMBER_STACK_READ int ember__regs_from_sigframe(uintptr_t sp, uintptr_t hi, ember__regs *out)
{
	const size_t need = offsetof(ucontext_t, uc_mcontext.gregs) + sizeof(gregset_t);
	if ((sp & (sizeof(uintptr_t) - 1)) || sp >= hi || hi - sp < need)
		return 0;
	ember__regs_from_ucontext((const void *)sp, out);
	return 1;
}
#endif
