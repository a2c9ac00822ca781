/*
 * arch.h - the architecture-specific constants of unwinding: the DWARF
 * register numbers of the stack pointer, frame pointer and return address,
 * the ELF machine whose call-frame information we read, and the
 * frame-pointer rule the DWARF unwinder falls back to.
 *
 * Shared by the table builder (src/cfi/, agent side) and the unwinder
 * (src/unwind/, signal path): constants only. The code that touches a
 * ucontext or a signal frame lives in regs_<arch>.c. Another architecture
 * (aarch64: sp 31, fp 29, lr 30) adds its block here and its regs file.
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
 * exact byte pattern (see cfi.c) and keeps base and threshold.
 */
#define EMBER_ARCH_HAS_PLT_EXPR 1

#else
#error "emberprof's unwinder supports x86-64 only; add this architecture to src/unwind/arch.h"
#endif

#endif
