/* SPDX-License-Identifier: Apache-2.0 */
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
			return 2; /* interrupted, not restarted */
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

static int32_t rel32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* call rel32 (e8): its target; call *disp32(%rip) (ff 15): the pointer's
 * address. Other indirect calls (through a register, or memory an
 * address register names) say nothing from their bytes. */
int ember__regs_call_dest(const uint8_t c[8], uintptr_t ra, uintptr_t *dest)
{
	if (c[3] == 0xe8) {
		*dest = ra + (uintptr_t)(intptr_t)rel32(c + 4);
		return 1;
	}
	if (c[2] == 0xff && c[3] == 0x15) {
		*dest = ra + (uintptr_t)(intptr_t)rel32(c + 4);
		return 2;
	}
	return 0;
}

/* jmp *disp32(%rip) (ff 25), after endbr64 (f3 0f 1e fa) and a bnd
 * prefix (f2) where the stub has them (.plt, .plt.got, .plt.sec). */
int ember__regs_plt_slot(const uint8_t code[16], uintptr_t at, uintptr_t *slot)
{
	size_t i = 0;
	if (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa)
		i = 4;
	if (code[i] == 0xf2)
		i++;
	if (code[i] != 0xff || code[i + 1] != 0x25)
		return 0;
	*slot = at + i + 6 + (uintptr_t)(intptr_t)rel32(code + i + 2);
	return 1;
}
#endif

/*
 * PLT stubs without CFI (unwind.h: ember__plt_rows_*; agent side, compiled
 * on every host). GNU ld describes .plt, .plt.got and .plt.sec in
 * .eh_frame (the lazy stubs with the expression EMBER_CFI_PLT rows keep),
 * and those rows win; lld writes the lazy .plt without any. Both use the
 * classic layout: PLT0 = `push GOT+8(%rip)` (ff 35 rel32), `jmp
 * *GOT+16(%rip)` (ff 25 rel32), 4 bytes of padding; then 16-byte stubs
 * `jmp *slot(%rip)` (ff 25 rel32), `push $index` (68 imm32), `jmp PLT0`
 * (e9 rel32). Its rows, as GNU ld's CFI says them: in PLT0 CFA = rsp + 16
 * (a stub pushed the index over the return address), rsp + 24 after PLT0's
 * push; in the stubs rsp + 8, 8 more from byte 11 on (after the push): the
 * PLT row, base 1 unit, threshold 11. Recognised by those opcodes in PLT0
 * and the first stub, in a 16-aligned .plt; other layouts (IBT's, which
 * start with endbr64; retpoline PLTs) and .iplt get no rows.
 */
int ember__plt_rows_x86_64(const uint8_t *code, size_t len, uint64_t addr, uint64_t size,
			   int lazy, ember__plt_run *out, int max)
{
	if (!lazy || max < EMBER_PLT_RUNS_MAX || (addr & 15) || (size & 15) || size < 32 ||
	    len < 32 || addr + size < addr)
		return 0;
	if (code[0] != 0xff || code[1] != 0x35 || code[6] != 0xff || code[7] != 0x25 ||
	    code[16] != 0xff || code[17] != 0x25 || code[22] != 0x68 || code[27] != 0xe9)
		return 0;
	static const struct {
		uint64_t off;
		int16_t cfa;
		int8_t fp;
		uint8_t kind;
	} rule[] = {{0, 2, 0, EMBER_CFI_SP}, {6, 3, 0, EMBER_CFI_SP}, {16, 1, 11, EMBER_CFI_PLT}};
	for (int i = 0; i < 3; i++) {
		out[i].start = addr + rule[i].off;
		out[i].end = i < 2 ? addr + rule[i + 1].off : addr + size;
		out[i].row.pc = (uint32_t)out[i].start;
		out[i].row.cfa = rule[i].cfa;
		out[i].row.fp = rule[i].fp;
		out[i].row.kind = rule[i].kind;
	}
	return 3;
}
