/* SPDX-License-Identifier: Apache-2.0 */
/*
 * arch.h - the architecture-specific constants of unwinding: the DWARF
 * register numbers of the stack pointer, frame pointer and return address,
 * the ELF machine whose call-frame information we read, and the
 * frame-pointer rule the DWARF unwinder falls back to.
 *
 * Shared by the table builder (src/cfi/, agent side), the unwinder
 * (src/unwind/, signal path) and the few other places that depend on the
 * instruction set (the allocation hook's register capture, the glibc
 * symbol versions we interpose): constants and one register-capturing
 * macro only. The code that touches a ucontext or a signal frame lives in
 * regs_<arch>.c. Shared code tests the EMBER_ARCH_* constants with plain
 * `if`s, which the compiler folds, never with #ifdef.
 */
#ifndef EMBER_UNWIND_ARCH_H
#define EMBER_UNWIND_ARCH_H

#if defined(__x86_64__)

#define EMBER_ARCH_NAME "x86_64"
#define EMBER_ARCH_ELF_MACHINE 62 /* EM_X86_64 */
#define EMBER_ARCH_ADDR_SIZE 8

/* DWARF register numbers (System V AMD64 ABI, figure 3.36). */
#define EMBER_DWARF_REG_FP 6  /* rbp */
#define EMBER_DWARF_REG_SP 7  /* rsp */
#define EMBER_DWARF_REG_RA 16 /* the return address column */
/*
 * rbx: the CFA base of ld.so's lazy-binding trampolines
 * (_dl_runtime_resolve_*), which realign the stack after `push %rbx;
 * mov %rsp, %rbx`. The unwinder tracks it through the frames between.
 */
#define EMBER_DWARF_REG_AUX 3

/*
 * Compiled rows (unwind.h) keep stack offsets in units of a stack slot,
 * and only one return-address rule: saved at CFA - 8, where `call` put it.
 */
#define EMBER_CFI_UNIT 8
#define EMBER_CFI_RA_OFF (-8)

/*
 * The frame-pointer rule, as CFA-relative offsets: after `push %rbp;
 * mov %rsp, %rbp` the CFA is rbp + 16, the return address is at CFA - 8
 * and the caller's rbp at CFA - 16.
 */
#define EMBER_FP_RULE_CFA_OFF 16
#define EMBER_FP_RULE_RA_OFF (-8)
#define EMBER_FP_RULE_FP_OFF (-16)

/*
 * Lazy-binding PLT stubs describe their CFA with one DWARF expression:
 * rsp + base + ((rip & 15) >= threshold ? 8 : 0), i.e. 8 more once the
 * stub has pushed its relocation index. The table builder recognises this
 * exact byte pattern (see cfi_program.c) and keeps base and threshold.
 */
#define EMBER_ARCH_HAS_PLT_EXPR 1

/* PLT stubs without CFI (unwind.h): GNU ld describes .plt, .plt.got and
 * .plt.sec with the expression above; lld's lazy .plt has none, and gets
 * the same rows from regs_x86_64.c. */
#define EMBER_ARCH_PLT_ROWS ember__plt_rows_x86_64

/*
 * The return address is always on the stack (`call` pushed it): no link
 * register, no pointer authentication (return addresses are used as they
 * are), no DW_CFA_AARCH64_negate_ra_state.
 */
#define EMBER_ARCH_LINK_REG 0
#define EMBER_ARCH_PAC 0
#define EMBER_ARCH_PC_MASK (~(uintptr_t)0)

/* Sigreturn trampolines without CFI: none to look for (glibc's
 * __restore_rt has CFI; ember__regs_at_sigreturn says no). */
#define EMBER_ARCH_BARE_SIGRETURN 0

/* glibc's first symbol version on this architecture: what malloc and the
 * old pthread_create carry (src/emberprof.map, src/preload/). */
#define EMBER_GLIBC_BASE "GLIBC_2.2.5"

/* The registers of the calling point, for unwinding from the caller's own
 * frame (the allocation hook): pc, sp, fp. */
#define EMBER_ARCH_CURRENT_REGS(r)                                                           \
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"                \
			 : "=r"((r).pc), "=r"((r).sp), "=r"((r).fp))

#elif defined(__aarch64__)

#define EMBER_ARCH_NAME "aarch64"
#define EMBER_ARCH_ELF_MACHINE 183 /* EM_AARCH64 */
#define EMBER_ARCH_ADDR_SIZE 8

/* DWARF register numbers (DWARF for the Arm 64-bit Architecture, 4.1). */
#define EMBER_DWARF_REG_FP 29 /* x29, the frame pointer */
#define EMBER_DWARF_REG_SP 31 /* sp */
#define EMBER_DWARF_REG_RA 30 /* x30, the link register: the return address column */
/*
 * aux is the link register. `bl` leaves the return address in x30, and a
 * function saves it to the stack (usually with x29, as the frame record
 * {x29, x30}) only if it calls something; until then, and in leaf
 * functions, the return address is the register's value. ember__regs.aux
 * carries it from the signal context; the rows say where each frame's
 * return address is (EMBER_CFI_LR_* in unwind.h).
 */
#define EMBER_DWARF_REG_AUX 30

/* Stack offsets in units of 8 bytes (every save slot is 8-aligned). The
 * return address has no fixed place: EMBER_CFI_RA_OFF is only the frame
 * record's, the frame-pointer rule below. */
#define EMBER_CFI_UNIT 8
#define EMBER_CFI_RA_OFF (-8)

/*
 * The frame-pointer rule (AAPCS64 6.2.3, frame records): x29 points at
 * {caller's x29, return address}, and nothing of the frame lies above the
 * record that unwinding needs, so as a CFA-relative rule: CFA = x29 + 16,
 * return address at CFA - 8, caller's x29 at CFA - 16.
 */
#define EMBER_FP_RULE_CFA_OFF 16
#define EMBER_FP_RULE_RA_OFF (-8)
#define EMBER_FP_RULE_FP_OFF (-16)

/* PLT stubs keep the CFA at sp (they only branch): no expression. */
#define EMBER_ARCH_HAS_PLT_EXPR 0

/* ... and the linkers (GNU ld, lld) give .plt and .iplt no CFI at all: the
 * table builder adds fixed rows for them (unwind.h, regs_aarch64.c). */
#define EMBER_ARCH_PLT_ROWS ember__plt_rows_aarch64

/*
 * Return addresses may be signed (PAC, -mbranch-protection=standard:
 * `paciasp` at entry, DW_CFA_AARCH64_negate_ra_state in the CFI). The
 * signature lives in the address's top bits; a user-space address is
 * below 2^48 (Linux's default user VA size, and the largest without an
 * explicit high mmap hint), so masking to 48 bits strips any signature or
 * tag and leaves an unsigned address unchanged. No PAC instruction
 * (xpaclri, autiasp) is ever executed: the CPU may not have them.
 */
#define EMBER_ARCH_LINK_REG 1
#define EMBER_ARCH_PAC 1
#define EMBER_ARCH_VA_BITS 48
#define EMBER_ARCH_PC_MASK ((((uintptr_t)1) << EMBER_ARCH_VA_BITS) - 1)

/* Sigreturn trampolines without CFI exist (qemu-user's page): the walk
 * asks ember__regs_at_sigreturn at every return address. */
#define EMBER_ARCH_BARE_SIGRETURN 1

/* glibc's first symbol version on arm64 (its first glibc was 2.17). */
#define EMBER_GLIBC_BASE "GLIBC_2.17"

#define EMBER_ARCH_CURRENT_REGS(r)                                                           \
	__asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29"                            \
			 : "=r"((r).pc), "=r"((r).sp), "=r"((r).fp))

#else
#error "emberprof supports x86-64 and aarch64; add this architecture to src/unwind/arch.h"
#endif

#endif
