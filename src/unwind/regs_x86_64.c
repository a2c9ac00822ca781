/*
 * regs_x86_64.c - x86-64 registers from a signal's ucontext, and from the
 * signal frame a sigreturn trampoline runs on.
 * Async-signal-safe. Another architecture adds regs_<arch>.c with the same
 * functions and is chosen by the preprocessor below.
 */
#include "unwind/unwind.h"

#if defined(__x86_64__)
#include <errno.h>
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

/*
 * A signal that interrupts a blocking call either restarts it - the
 * kernel moves the PC back onto the 2-byte `syscall` instruction (0f 05)
 * and puts the call number back in rax - or makes it fail with EINTR -
 * the PC is just after the instruction and rax is -EINTR. A thread that
 * was running and merely passed through a quick system call when the
 * signal arrived is after the instruction with the call's result in rax,
 * so it counts as running (a bare "PC next to a syscall" test would call
 * every syscall-heavy loop sleeping).
 *
 * Code bytes are read only inside the 4 KiB page that holds pc: pc is
 * where the thread executes next, so that page is mapped and readable
 * (code is never execute-only on Linux/x86-64). [pc-2, pc) is read only
 * when it starts in that page, [pc, pc+2) only when it ends in it; at a
 * page edge the answer may be "cannot tell".
 */
EMBER_STACK_READ int ember__regs_in_syscall(const void *ucontext, uintptr_t pc)
{
	const ucontext_t *u = ucontext;
	long ax = (long)u->uc_mcontext.gregs[REG_RAX];
	unsigned off = (unsigned)(pc & 4095u);
	int told = 0;
	if (off <= 4094) {
		const volatile uint8_t *p = (const volatile uint8_t *)pc;
		if (p[0] == 0x0f && p[1] == 0x05)
			return 1; /* to be restarted */
		told = 1;
	}
	if (off >= 2) {
		const volatile uint8_t *p = (const volatile uint8_t *)(pc - 2);
		if (p[0] == 0x0f && p[1] == 0x05 && ax == -EINTR)
			return 1; /* interrupted, not restarted */
		told = 1;
	}
	return told ? 0 : -1;
}

/* glibc's x86-64 signal trampoline (__restore_rt) has call-frame
 * information; nothing is recognised by its code. */
int ember__regs_at_sigreturn(uintptr_t pc)
{
	(void)pc;
	return 0;
}

void ember__regs_note_sigreturn(uintptr_t ra)
{
	(void)ra;
}
/* call rel32 (e8) or call r/m64 (ff /2, with a ModRM of 1 to 6 bytes). */
int ember__regs_after_call(const uint8_t c[8])
{
	if (c[3] == 0xe8)
		return 1;
	for (int len = 2; len <= 7; len++)
		if (c[8 - len] == 0xff && (c[9 - len] & 0x38) == 0x10)
			return 1;
	return 0;
}
/* syscall (0f 05) */
int ember__regs_after_syscall(const uint8_t c[8])
{
	return c[6] == 0x0f && c[7] == 0x05;
}
#endif
