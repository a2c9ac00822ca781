/* SPDX-License-Identifier: Apache-2.0 */
/*
 * regs_aarch64.c - AArch64 registers from a signal's ucontext and from the
 * signal frame __kernel_rt_sigreturn runs on, and the "blocked in a system
 * call" test. Async-signal-safe. The x86-64 twin is regs_x86_64.c.
 */
#include "unwind/unwind.h"

#if defined(__aarch64__)
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <ucontext.h>

void ember__regs_from_ucontext(const void *ucontext, ember__regs *out)
{
	const ucontext_t *uc = ucontext;
	out->pc = (uintptr_t)uc->uc_mcontext.pc;
	out->sp = (uintptr_t)uc->uc_mcontext.sp;
	out->fp = (uintptr_t)uc->uc_mcontext.regs[29];
	out->aux = (uintptr_t)uc->uc_mcontext.regs[30]; /* the link register */
}

/*
 * The kernel's arm64 rt_sigframe is { siginfo_t info; struct ucontext uc; }
 * (followed by a frame record), and the handler is entered with sp at its
 * start and x30 = __kernel_rt_sigreturn (the vDSO's), so the trampoline
 * runs with sp = &info. glibc's ucontext_t has the kernel's layout (its
 * 128-byte sigset_t is the kernel's sigmask plus padding), so offsetof
 * applies. Only the general registers, sp and pc are read, never the
 * extension records (FP/SIMD, SVE) after them. qemu-user builds the same
 * frame for the programs it runs.
 */
EMBER_STACK_READ int ember__regs_from_sigframe(uintptr_t sp, uintptr_t hi, ember__regs *out)
{
	const size_t uc_at = sizeof(siginfo_t);
	const size_t need = uc_at + offsetof(ucontext_t, uc_mcontext.pstate);
	if ((sp & 15) || sp >= hi || hi - sp < need)
		return 0;
	ember__regs_from_ucontext((const void *)(sp + uc_at), out);
	return 1;
}

/*
 * `svc #0` is the 4-byte instruction 0xd4000001. A signal that interrupts
 * a blocking call either restarts it - the kernel moves the PC back onto
 * the svc and restores x0 - or makes it fail with EINTR - the PC is just
 * after the svc and x0 is -EINTR. Having merely passed through a quick
 * call leaves the PC after the svc with the call's result in x0: running.
 * Instructions are 4-byte aligned, so [pc-4, pc) and [pc, pc+4) lie in
 * pc's page unless pc starts a page (then the first is not read). pc is
 * where the thread executes next, so its page is mapped, and readable:
 * Linux maps code read+execute (execute-only user mappings are not
 * used by Debian's toolchains or ld.so).
 */
#define SVC_0 0xd4000001u

EMBER_STACK_READ int ember__regs_in_syscall(const void *ucontext, uintptr_t pc)
{
	const ucontext_t *u = ucontext;
	if (pc & 3)
		return -1;
	long x0 = (long)u->uc_mcontext.regs[0];
	if (*(const volatile uint32_t *)pc == SVC_0)
		return 1; /* to be restarted */
	if ((pc & 4095u) == 0)
		return -1;
	if (*(const volatile uint32_t *)(pc - 4) == SVC_0 && x0 == -EINTR)
		return 2; /* interrupted, not restarted */
	return 0;
}

/*
 * A sigreturn trampoline without call-frame information: `mov x8, #139
 * (rt_sigreturn); svc #0`, the two instructions of the kernel's
 * __kernel_rt_sigreturn, which some runtimes place without an FDE (qemu-
 * user's signal trampoline page). Reading code at an arbitrary return
 * address could fault (a garbage slot), so only the one address our own
 * handler was entered to return to (ember__regs_note_sigreturn: its x30,
 * set by the kernel) is examined; that page stays mapped.
 */
static _Atomic uintptr_t g_sigreturn;

void ember__regs_note_sigreturn(uintptr_t ra)
{
	if (atomic_load_explicit(&g_sigreturn, memory_order_relaxed) != ra)
		atomic_store_explicit(&g_sigreturn, ra, memory_order_relaxed);
}

EMBER_STACK_READ int ember__regs_at_sigreturn(uintptr_t pc)
{
	if (pc == 0 || pc != atomic_load_explicit(&g_sigreturn, memory_order_relaxed))
		return 0;
	if ((pc & 3) || (pc & 4095u) > 4088u)
		return 0;
	const volatile uint32_t *p = (const volatile uint32_t *)pc;
	return p[0] == 0xd2801168u && p[1] == SVC_0;
}
/*
 * The instruction before a return address (4 bytes, little-endian): bl,
 * blr, or one of the pointer-authenticating blraa/blrab(z) that code
 * built with -mbranch-protection=standard may call through.
 */
int ember__regs_after_call(const uint8_t c[8])
{
	uint32_t insn = (uint32_t)c[4] | (uint32_t)c[5] << 8 | (uint32_t)c[6] << 16 |
			(uint32_t)c[7] << 24;
	return (insn & 0xfc000000u) == 0x94000000u || /* bl imm26 */
	       (insn & 0xfffffc1fu) == 0xd63f0000u || /* blr xn */
	       (insn & 0xfefff800u) == 0xd63f0800u;   /* blraa(z), blrab(z) */
}
int ember__regs_after_syscall(const uint8_t c[8])
{
	return ((uint32_t)c[4] | (uint32_t)c[5] << 8 | (uint32_t)c[6] << 16 |
		(uint32_t)c[7] << 24) == SVC_0;
}
/* Not decoded on aarch64 (bl's target, the adrp/ldr/br stubs): the
 * callers take "cannot tell". */
int ember__regs_call_dest(const uint8_t c[8], uintptr_t ra, uintptr_t *dest)
{
	(void)c;
	(void)ra;
	(void)dest;
	return 0;
}
int ember__regs_plt_slot(const uint8_t code[16], uintptr_t at, uintptr_t *slot)
{
	(void)code;
	(void)at;
	(void)slot;
	return 0;
}
#endif

/*
 * PLT stubs (unwind.h: ember__plt_rows_*; agent side, compiled on every
 * host). Neither GNU ld nor lld gives an aarch64 .plt or .iplt CFI. A stub
 * (`adrp x16; ldr x17; add x16; br x17`, behind `bti c` with BTI, with
 * `autia1716` with PAC-PLT) touches neither sp nor x30: CFA = sp, the
 * return address still in x30, x29 unchanged - the entry rule of every
 * function, which the walk accepts in the frame it starts in, the only
 * place a stub can be (it branches, never calls). The lazy-binding header
 * PLT0, 32 bytes at the start of .plt in both linkers (`[bti c;] stp x16,
 * x30, [sp, #-16]!; adrp; ldr; add; br x17; nop...`), pushes 16 bytes
 * first: after that stp, CFA = sp + 16, x30 still the caller's return
 * address (PLT0 is entered by a branch from a stub). PLT0 is recognised
 * by that stp in its first two instructions; without it the whole section
 * gets the stub rule.
 */
#define A64_BTI_C 0xd503245fu
#define A64_STP_X16_X30_PRE16 0xa9bf7bf0u /* stp x16, x30, [sp, #-16]! */
#define A64_PLT0_SIZE 32u

static uint32_t a64_insn(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void a64_run(ember__plt_run *r, uint64_t start, uint64_t end, int16_t cfa_units)
{
	r->start = start;
	r->end = end;
	r->row.pc = (uint32_t)start;
	r->row.cfa = cfa_units;
	r->row.fp = 0; /* x29 unchanged */
	r->row.kind = (uint8_t)(EMBER_CFI_SP | (EMBER_CFI_LR_REG << EMBER_CFI_AUX_SHIFT));
}

int ember__plt_rows_aarch64(const uint8_t *code, size_t len, uint64_t addr, uint64_t size,
			    int lazy, ember__plt_run *out, int max)
{
	if (size == 0 || addr + size < addr || max < EMBER_PLT_RUNS_MAX || (addr & 3))
		return 0;
	int n = 0;
	uint64_t at = addr;
	if (lazy && size >= A64_PLT0_SIZE) {
		for (size_t k = 0; k <= 4 && k + 4 <= len; k += 4) {
			uint32_t insn = a64_insn(code + k);
			if (insn == A64_STP_X16_X30_PRE16) {
				a64_run(&out[n++], addr, addr + k + 4, 0);
				a64_run(&out[n++], addr + k + 4, addr + A64_PLT0_SIZE, 2);
				at = addr + A64_PLT0_SIZE;
				break;
			}
			if (insn != A64_BTI_C)
				break;
		}
	}
	if (at < addr + size)
		a64_run(&out[n++], at, addr + size, 0);
	return n;
}
