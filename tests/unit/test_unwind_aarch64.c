/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unwind_aarch64.c - the aarch64 parts of the DWARF unwinder and of
 * the CFI compiler, on hand-made input so each rule is checked
 * on its own; runs on aarch64 only (under qemu-user in CI) and skips
 * elsewhere. test_unwind_dwarf.c has the x86-64 twin of the synthetic
 * part; the real-stack tests there and in tests/integration run on both.
 *
 * - .eh_frame as GCC emits it for aarch64 (CIE: CFA = sp, return address
 *   column 30 left in the link register), with a PAC-signed prologue
 *   (paciasp + DW_CFA_AARCH64_negate_ra_state), a frame record saved by
 *   `stp x29, x30, [sp, #-32]!` and an -fomit-frame-pointer function that
 *   saves x30 alone: the rows' return-address codes.
 * - The walk: a leaf whose return address is still in x30 with CFA == sp,
 *   a frame-record frame, a saved-alone frame with a signed return address
 *   (stripped to the 48-bit address), the thread's start; the link register
 *   refused in a caller; a signal frame (rt_sigframe: siginfo, then the
 *   ucontext); a trampoline without CFI (qemu-user's) after code, a
 *   pending module or nothing; the `svc #0` test of the wall-clock engine.
 * - The real libc: its rows, and those of its .plt, which the linker left
 *   without CFI (fill rows), with a walk from inside a PLT stub.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <ucontext.h>

#if defined(__aarch64__)
#include "check.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <unistd.h>

#include "cfi/cfi.h"
#include "cfi/cfi_elf.h"
#include "cfi/cfi_pack.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"

#define VADDR 0x10000u

/* ---- the CFI compiler ---- */

/* CIE: version 1, "zR", code align 4, data align -8, RA column 30, FDE
 * pointers pcrel|sdata4, then DW_CFA_def_cfa sp+0 (GCC's aarch64 CIE). */
static const uint8_t cie[] = {
	0x10, 0, 0, 0,          /* length 16 */
	0, 0, 0, 0,             /* CIE id */
	1, 'z', 'R', 0,         /* version, augmentation */
	4, 0x78, 30,            /* caf 4, daf -8, ra 30 */
	1, 0x1b,                /* aug data: pcrel sdata4 */
	0x0c, 31, 0,            /* def_cfa sp + 0 */
};

/* Appends an FDE for [begin, begin + range) with instructions ins. */
static size_t fde(uint8_t *out, size_t at, uint32_t begin, uint32_t range, const uint8_t *ins,
		  size_t nins)
{
	size_t len = 4 + 4 + 4 + 1 + nins;
	size_t pad = (4 - (len + 4) % 4) % 4;
	len += pad;
	uint32_t l = (uint32_t)len, cie_ptr = (uint32_t)(at + 4);
	memcpy(out + at, &l, 4);
	memcpy(out + at + 4, &cie_ptr, 4);
	int32_t rel = (int32_t)(begin - (VADDR + at + 8));
	memcpy(out + at + 8, &rel, 4);
	memcpy(out + at + 12, &range, 4);
	out[at + 16] = 0; /* aug data length */
	memcpy(out + at + 17, ins, nins);
	memset(out + at + 17 + nins, 0, pad); /* DW_CFA_nop */
	return at + 4 + len;
}

/* The row covering pc in t (either form), or NULL; valid until the next call. */
static const ember__cfi_row *table_row(const ember__cfi_table *t, uint32_t pc)
{
	static ember__cfi_row r;
	return ember__cfi_table_find(t, pc, &r) ? &r : NULL;
}

static void test_cfi_rows(void)
{
	/* F at 0x1000: paciasp; stp x29, x30, [sp, #-32]!; mov x29, sp; ...
	 * ldp; autiasp; ret (the epilogue's CFI: restore state). */
	static const uint8_t f_ins[] = {
		0x41, 0x2d,             /* advance 4; negate_ra_state */
		0x41, 0x0e, 32,         /* advance 4; def_cfa_offset 32 */
		0x9d, 4, 0x9e, 3,       /* x29 at cfa-32, x30 at cfa-24 */
		0x41, 0x0d, 29,         /* advance 4; def_cfa_register x29 */
		0x48, 0x0a,             /* advance 32; remember_state */
		0x0c, 31, 0,            /* def_cfa sp + 0 (after ldp) */
		0xdd, 0xde,             /* restore x29, x30 */
		0x41, 0x2d,             /* advance 4; negate_ra_state (autiasp) */
		0x41, 0x0b,             /* advance 4; restore_state */
	};
	/* G at 0x2000 (-fomit-frame-pointer): str x30, [sp, #-16]! */
	static const uint8_t g_ins[] = {
		0x41, 0x0e, 16,         /* advance 4; def_cfa_offset 16 */
		0x9e, 2,                /* x30 at cfa-16 */
	};
	/* H at 0x3000, a 1168-byte frame (-fomit-frame-pointer, GCC):
	 * sub sp, sp, #1168; ...; str x30, [sp, #80], i.e. x30 at CFA - 1088,
	 * out of the fp field's reach from the CFA (it_dwarf's run() on
	 * aarch64 once its locals grew). */
	static const uint8_t h_ins[] = {
		0x41, 0x0e, 0x90, 0x09, /* advance 4; def_cfa_offset 1168 */
		0x41, 0x9e, 0x88, 0x01, /* advance 4; x30 at cfa-1088 (136 * 8) */
	};
	uint8_t sec[256];
	memset(sec, 0, sizeof(sec));
	memcpy(sec, cie, sizeof(cie));
	size_t at = fde(sec, sizeof(cie), VADDR + 0x1000, 0x60, f_ins, sizeof(f_ins));
	at = fde(sec, at, VADDR + 0x2000, 0x20, g_ins, sizeof(g_ins));
	at = fde(sec, at, VADDR + 0x3000, 0x20, h_ins, sizeof(h_ins));
	ember__cfi_builder *b;
	CHECK_EQ_INT(ember__cfi_builder_new(&b), 0);
	CHECK_EQ_INT(ember__cfi_add_section(b, sec, at, VADDR, EMBER_CFI_EH_FRAME, 1), 0);
	CHECK_EQ_INT(ember__cfi_builder_stats(b)->bad_fdes, 0);
	CHECK_EQ_INT(ember__cfi_builder_stats(b)->fdes, 3);
	CHECK_EQ_INT(ember__cfi_builder_stats(b)->ra_sign_ops, 2);
	ember__cfi_table *t;
	CHECK_EQ_INT(ember__cfi_finish(b, &t), 0);
	const ember__cfi_row *r;
	/* Entry: CFA = sp, return address in x30. */
	r = table_row(t, VADDR + 0x1000);
	CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SP && r->cfa == 0);
	CHECK(r && EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_REG);
	/* After the stp: CFA = sp + 32, the record at CFA - 32. */
	r = table_row(t, VADDR + 0x1008);
	CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SP && r->cfa == 4 && r->fp == -4);
	CHECK(r && EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_RECORD);
	/* Body: CFA = x29 + 32. */
	r = table_row(t, VADDR + 0x1010);
	CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_FP && r->cfa == 4 && r->fp == -4);
	CHECK(r && EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_RECORD);
	/* After the ldp: back to the entry's rule. */
	r = table_row(t, VADDR + 0x1030);
	CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SP && r->cfa == 0);
	CHECK(r && EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_REG);
	/* G: x30 alone at CFA - 16, fp unchanged. */
	r = table_row(t, VADDR + 0x2004);
	CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SP && r->cfa == 2 && r->fp == -2);
	CHECK(r && EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_SLOT);
	CHECK(r && !(r->kind & EMBER_CFI_F_FP_LOST));
	/* H: x30 at the CFA's base + 80 bytes (10 units), not left to the
	 * frame-pointer rule. */
	r = table_row(t, VADDR + 0x3008);
	CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SP && r->cfa == 146 && r->fp == 10);
	CHECK(r && EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_SLOT_BASE_UP);
	ember__cfi_table_free(t);
}

/* ---- the walk ---- */

#define MOD_START 0x100000u
#define MOD_END 0x200000u
#define A(off) ((uintptr_t)MOD_START + (off))

static uintptr_t stack[1024] __attribute__((aligned(16)));

static ember__unwind_snapshot *make_snap(const ember__cfi_row *rows, uint32_t n)
{
	ember__unwind_snapshot *s = malloc(sizeof(*s) + sizeof(s->mods[0]));
	memset(s, 0, sizeof(*s) + sizeof(s->mods[0]));
	s->n = 1;
	s->mods[0].start = MOD_START;
	s->mods[0].end = MOD_END;
	s->mods[0].base = MOD_START;
	s->mods[0].rows = rows;
	s->mods[0].nrows = n;
	return s;
}

#define LR(code) ((unsigned)(code) << EMBER_CFI_AUX_SHIFT)

/* L at 0x100: leaf, nothing allocated, return address in x30. R at 0x200:
 * frame record at CFA - 32 (CFA sp+32). S at 0x300: x30 alone at
 * CFA - 16 (CFA sp+16), signed. T at 0x400: the thread's start. */
static const ember__cfi_row rows_lrst[] = {
	{0x100, 0, 0, EMBER_CFI_SP | LR(EMBER_CFI_LR_REG)},
	{0x200, 4, -4, EMBER_CFI_SP | LR(EMBER_CFI_LR_RECORD)},
	{0x300, 2, -2, EMBER_CFI_SP | LR(EMBER_CFI_LR_SLOT)},
	{0x400, 2, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	{0x500, 0, 0, EMBER_CFI_NONE},
};

static void test_walk(void)
{
	ember__unwind_snapshot *s = make_snap(rows_lrst, 5);
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[1024]};
	memset(stack, 0xab, sizeof(stack));
	/* R's frame: sp = &stack[0], CFA = &stack[4]; record at stack[0..1]. */
	stack[0] = (uintptr_t)&stack[100]; /* R's caller's x29 */
	stack[1] = A(0x310);               /* R returns into S */
	/* S's frame: sp = &stack[4], CFA = &stack[6]; x30 at stack[4], signed. */
	stack[4] = A(0x410) | ((uintptr_t)0x5a3c << 48);
	ember__regs r = {.pc = A(0x110), .sp = (uintptr_t)&stack[0], .fp = 0x77, .aux = A(0x210)};
	uint64_t pcs[8];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(pcs[0], A(0x110));
	CHECK_EQ_INT(pcs[1], A(0x210)); /* from x30 */
	CHECK_EQ_INT(pcs[2], A(0x310)); /* from the frame record */
	CHECK_EQ_INT(pcs[3], A(0x410)); /* PAC bits stripped */
	CHECK_EQ_INT(flags, 0);

	/* The link register is unknown (an unwind that starts from a
	 * captured frame, not a signal): the leaf ends the walk, truncated. */
	r.aux = 0;
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);

	/* A caller whose row says "still in x30" cannot be: its x30 was
	 * overwritten by its call. Start in R, whose caller is L's code. */
	stack[1] = A(0x110);
	r = (ember__regs){.pc = A(0x210), .sp = (uintptr_t)&stack[0], .fp = 0, .aux = A(0x999)};
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	free(s);
}

/* A frame over 1 KiB with x30 above its bottom (EMBER_CFI_LR_SLOT_BASE_UP):
 * the walk reads it at sp + 80 and goes on to the caller, whose x29 the
 * frame never touched. */
static void test_large_frame(void)
{
	static const ember__cfi_row rows[] = {
		{0x100, 146, 10, EMBER_CFI_SP | LR(EMBER_CFI_LR_SLOT_BASE_UP)},
		{0x200, 2, -2, EMBER_CFI_SP | LR(EMBER_CFI_LR_SLOT)},
		{0x400, 2, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
		{0x500, 0, 0, EMBER_CFI_NONE},
	};
	ember__unwind_snapshot *s = make_snap(rows, 4);
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[1024]};
	memset(stack, 0xab, sizeof(stack));
	stack[10] = A(0x210);  /* the large frame's x30, at sp + 80 */
	stack[146] = A(0x410); /* its caller's x30, at its CFA - 16 */
	ember__regs r = {.pc = A(0x110), .sp = (uintptr_t)&stack[0], .fp = 0x77, .aux = A(0x999)};
	uint64_t pcs[8];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 3);
	CHECK_EQ_INT(pcs[1], A(0x210));
	CHECK_EQ_INT(pcs[2], A(0x410));
	CHECK_EQ_INT(flags, 0);
	free(s);
}

/* The frame-pointer walk: records {x29, x30}, a signed x30 stripped. */
static void test_fp_walk(void)
{
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[1024]};
	memset(stack, 0, sizeof(stack));
	stack[10] = (uintptr_t)&stack[20];
	stack[11] = 0x401000 | ((uintptr_t)0x1234 << 48);
	stack[20] = 0; /* the outermost record */
	stack[21] = 0x402000;
	ember__regs r = {.pc = 0x400100, .sp = (uintptr_t)&stack[0], .fp = (uintptr_t)&stack[10]};
	uint64_t pcs[8];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 8, &flags), 3);
	CHECK_EQ_INT(pcs[1], 0x401000);
	CHECK_EQ_INT(pcs[2], 0x402000);
	CHECK_EQ_INT(flags, 0);
}

/* A signal frame: handler H (0x100, record at CFA - 16, CFA sp+16) returns
 * to the trampoline T (SIGNAL row at 0x200); at T's sp the kernel's
 * rt_sigframe: siginfo_t, then the ucontext of the interrupted E (0x300),
 * whose return address is still in x30. */
static void test_signal_frame(void)
{
	static const ember__cfi_row rows[] = {
		{0x100, 2, -2, EMBER_CFI_SP | LR(EMBER_CFI_LR_RECORD)},
		{0x180, 0, 0, EMBER_CFI_NONE},
		{0x200, 0, 0, EMBER_CFI_SIGNAL},
		{0x210, 0, 0, EMBER_CFI_NONE},
		{0x300, 0, 0, EMBER_CFI_SP | LR(EMBER_CFI_LR_REG)},
		{0x380, 2, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	};
	ember__unwind_snapshot *s = make_snap(rows, 6);
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[1024]};
	memset(stack, 0, sizeof(stack));
	stack[0] = 0;          /* H's caller's x29 */
	stack[1] = A(0x200);   /* H returns to the trampoline */
	uintptr_t frame = (uintptr_t)&stack[2];
	ucontext_t *uc = (ucontext_t *)(frame + sizeof(siginfo_t));
	uintptr_t interrupted_sp = (uintptr_t)&stack[900];
	uc->uc_mcontext.pc = A(0x300);
	uc->uc_mcontext.sp = interrupted_sp;
	uc->uc_mcontext.regs[29] = 0x1234;
	uc->uc_mcontext.regs[30] = A(0x390);
	ember__regs r = {.pc = A(0x110), .sp = (uintptr_t)&stack[0], .fp = 0, .aux = 0};
	uint64_t pcs[8];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(pcs[1], A(0x200) + 1); /* + 1: looked up at pc - 1, in T */
	CHECK_EQ_INT(pcs[2], A(0x300) + 1); /* the interrupted PC + 1 */
	CHECK_EQ_INT(pcs[3], A(0x390));     /* from the interrupted x30 */
	CHECK_EQ_INT(flags, 0);
	/* The ucontext does not fit below the stack's top. */
	ember__stack_bounds cut = {(uintptr_t)&stack[0], (uintptr_t)&stack[20]};
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &cut, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	free(s);
}

/*
 * A trampoline without CFI (qemu-user's page: `mov x8, #139; svc #0` at a
 * page's first byte), known only as the address our handler returns to
 * (ember__regs_note_sigreturn). Whatever lies before it - code of a
 * module with rows, a module whose table is pending, nothing - the walk
 * takes it for the signal frame it is, and records it one byte in (pc - 1,
 * where callers are looked up, must lie in it: profiles cut a stack at a
 * caller address outside code). H (0x100) returns to it; the interrupted
 * E (0x300) has its return address in x30.
 */
static void test_bare_trampoline(void)
{
	static const ember__cfi_row rows[] = {
		{0x100, 2, -2, EMBER_CFI_SP | LR(EMBER_CFI_LR_RECORD)},
		{0x180, 0, 0, EMBER_CFI_NONE},
		{0x300, 0, 0, EMBER_CFI_SP | LR(EMBER_CFI_LR_REG)},
		{0x380, 2, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	};
	static const ember__cfi_row before_rows[] = {{0, 2, 0, EMBER_CFI_SP}};
	uint32_t *page = aligned_alloc(4096, 2 * 4096);
	CHECK(page != NULL);
	if (!page)
		return;
	uint32_t *code = page + 1024; /* the second page's first byte */
	code[0] = 0xd2801168u;        /* mov x8, #139 (rt_sigreturn) */
	code[1] = 0xd4000001u;        /* svc #0 */
	uintptr_t t = (uintptr_t)code;
	ember__unwind_snapshot *s = malloc(sizeof(*s) + 2 * sizeof(s->mods[0]));
	CHECK(s != NULL);
	if (!s) {
		free(page);
		return;
	}
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[1024]};
	ember__regs_note_sigreturn(t);
	for (int before = 0; before < 3; before++) { /* nothing, code, pending */
		memset(s, 0, sizeof(*s) + 2 * sizeof(s->mods[0]));
		s->n = before ? 2 : 1;
		s->mods[0] = (ember__unwind_module){.start = MOD_START, .end = MOD_END,
						    .base = MOD_START, .rows = rows, .nrows = 4};
		/* a module whose code ends where the trampoline's page starts */
		s->mods[1] = (ember__unwind_module){.start = (uintptr_t)page, .end = t,
						    .base = (uintptr_t)page};
		if (before == 1)
			s->mods[1].rows = before_rows, s->mods[1].nrows = 1;
		else
			s->mods[1].pending = 1;
		memset(stack, 0, sizeof(stack));
		stack[0] = 0; /* H's caller's x29 */
		stack[1] = t; /* H returns to the trampoline */
		ucontext_t *uc = (ucontext_t *)((uintptr_t)&stack[2] + sizeof(siginfo_t));
		uc->uc_mcontext.pc = A(0x300);
		uc->uc_mcontext.sp = (uintptr_t)&stack[900];
		uc->uc_mcontext.regs[29] = 0x1234;
		uc->uc_mcontext.regs[30] = A(0x390);
		ember__regs r = {.pc = A(0x110), .sp = (uintptr_t)&stack[0], .fp = 0, .aux = 0};
		uint64_t pcs[8];
		unsigned flags = 0;
		CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 4);
		CHECK_EQ_INT(pcs[1], t + 1);
		CHECK_EQ_INT(pcs[2], A(0x300) + 1);
		CHECK_EQ_INT(pcs[3], A(0x390));
		CHECK_EQ_INT(flags, 0);
	}
	ember__regs_note_sigreturn(0);
	free(s);
	free(page);
}

/* `svc #0` before the PC with x0 == -EINTR, or at the PC: in a call. */
static void test_in_syscall(void)
{
	static uint32_t code[1024] __attribute__((aligned(4096)));
	code[10] = 0xd4000001u; /* svc #0 */
	code[11] = 0xd503201fu; /* nop */
	ucontext_t uc;
	memset(&uc, 0, sizeof(uc));
	uc.uc_mcontext.regs[0] = (uint64_t)(int64_t)-EINTR;
	CHECK_EQ_INT(ember__regs_in_syscall(&uc, (uintptr_t)&code[11]), 2); /* EINTR */
	CHECK_EQ_INT(ember__regs_in_syscall(&uc, (uintptr_t)&code[10]), 1); /* restart */
	uc.uc_mcontext.regs[0] = 3; /* a quick call's result: running */
	CHECK_EQ_INT(ember__regs_in_syscall(&uc, (uintptr_t)&code[11]), 0);
	CHECK_EQ_INT(ember__regs_in_syscall(&uc, (uintptr_t)&code[12]), 0);
	/* The first word of a page: [pc-4, pc) is not read. */
	code[0] = 0xd503201fu;
	CHECK_EQ_INT(ember__regs_in_syscall(&uc, (uintptr_t)&code[0]), -1);
}

/* A real return address follows a call (this function's caller's bl);
 * a branch, a return, a nop do not; the PAC-signing blraa(z) do. */
__attribute__((noinline)) static uintptr_t my_return_address(void)
{
	return (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
}

static int after_insn(uint32_t insn)
{
	uint8_t c[8] = {0};
	memcpy(c + 4, &insn, 4);
	return ember__regs_after_call(c);
}

static void test_after_call(void)
{
	uintptr_t ra = my_return_address();
	uint8_t c[8];
	memcpy(c, (const void *)(ra - 8), 8);
	CHECK_EQ_INT(ember__regs_after_call(c), 1);
	CHECK_EQ_INT(after_insn(0x94000010u), 1); /* bl */
	CHECK_EQ_INT(after_insn(0xd63f0020u), 1); /* blr x1 */
	CHECK_EQ_INT(after_insn(0xd73f0822u), 1); /* blraa x1, x2 */
	CHECK_EQ_INT(after_insn(0xd63f0c7fu), 1); /* blrabz x3 */
	CHECK_EQ_INT(after_insn(0x14000010u), 0); /* b */
	CHECK_EQ_INT(after_insn(0xd61f0200u), 0); /* br x16 */
	CHECK_EQ_INT(after_insn(0xd65f03c0u), 0); /* ret */
	CHECK_EQ_INT(after_insn(0xd503201fu), 0); /* nop */
}

/* The registers a signal handler sees. */
static void test_regs(void)
{
	ucontext_t uc;
	memset(&uc, 0, sizeof(uc));
	uc.uc_mcontext.pc = 1;
	uc.uc_mcontext.sp = 2;
	uc.uc_mcontext.regs[29] = 3;
	uc.uc_mcontext.regs[30] = 4;
	ember__regs r;
	ember__regs_from_ucontext(&uc, &r);
	CHECK(r.pc == 1 && r.sp == 2 && r.fp == 3 && r.aux == 4);
}

/*
 * The real libc of this machine (arm64 glibc built by GCC, PAC-signed
 * where Debian's flags say so): every FDE compiles, each function's entry
 * row says "CFA = sp, return address in x30", few rows are left to the
 * frame-pointer rule, and the index agrees with the plain search.
 */
/* The loaded libc (its handle in *h) and its table built from the file,
 * or NULL (checked). */
static ember__cfi_table *libc_table(void **h, struct link_map **lm)
{
	*h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	*lm = NULL;
	CHECK(*h && dlinfo(*h, RTLD_DI_LINKMAP, lm) == 0 && *lm);
	ember__cfi_table *t = NULL;
	ember__cfi_module_info info;
	if (*lm)
		CHECK_EQ_INT(ember__cfi_build_file((*lm)->l_name, &t, &info), 0);
	return t;
}

static void test_real_libc(void)
{
	void *h;
	struct link_map *lm;
	ember__cfi_table *t = libc_table(&h, &lm);
	if (!t)
		return;
	uint32_t lr_rows[8] = {0};
	ember__cfi_row *rows = calloc(t->nrows, sizeof(*rows));
	CHECK(rows != NULL);
	if (!rows)
		return;
	for (uint32_t i = 0; i < t->nrows; i++) {
		CHECK(ember__cfi_table_row(t, i, &rows[i]));
		if ((rows[i].kind & EMBER_CFI_KIND_MASK) != EMBER_CFI_NONE)
			lr_rows[EMBER_CFI_AUX_CODE(rows[i].kind)]++;
	}
	printf("  %s: %u rows, %u FDEs, %u unknown; return address in x30 %u, record %u, "
	       "slot %u, record at base %u; negate_ra_state %u\n",
	       lm->l_name, t->nrows, t->stats.fdes, t->stats.unknown_rows, lr_rows[0], lr_rows[1],
	       lr_rows[2], lr_rows[3], t->stats.ra_sign_ops);
	CHECK(t->nrows > 5000);
	CHECK_EQ_INT(t->stats.bad_fdes, 0);
	CHECK_EQ_INT(t->stats.bad_cies, 0);
	CHECK(t->stats.unknown_rows * 50 < t->stats.raw_rows); /* < 2 % */
	static const char *const fns[] = {"qsort", "getenv", "strtol", "fopen"};
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		void *fn = dlsym(h, fns[i]);
		const ember__cfi_row *r =
			fn ? table_row(t, (uint32_t)((uintptr_t)fn - lm->l_addr))
			   : NULL;
		CHECK(r && (r->kind & EMBER_CFI_KIND_MASK) == EMBER_CFI_SP && r->cfa == 0 &&
		      EMBER_CFI_AUX_CODE(r->kind) == EMBER_CFI_LR_REG);
	}
	/* The table's lookup (packed) agrees with a search of its rows. */
	uint32_t wrong = 0;
	for (uint32_t pc = rows[0].pc - 3; pc < rows[t->nrows - 1].pc + 4096; pc += 3) {
		const ember__cfi_row *want = ember__cfi_rows_find(rows, t->nrows, pc);
		const ember__cfi_row *got = table_row(t, pc);
		wrong += !want != !got || (want && memcmp(want, got, sizeof(*got)));
	}
	CHECK_EQ_INT(wrong, 0);
	CHECK(t->packed.nrows == t->nrows);
	free(rows);
	ember__cfi_table_free(t);
}

/*
 * The PLT stubs of the real libc, which the linker gave no CFI:
 * the table built from the file has rows for its .plt - CFA = sp, return
 * address in x30, x29 unchanged; CFA = sp + 16 at the end of PLT0, after
 * its stp - and a DWARF walk (strict: no frame-pointer guess) from a
 * sample inside a stub goes on to the caller through x30 instead of
 * ending there.
 */
static void test_real_plt(void)
{
	void *h;
	struct link_map *lm;
	ember__cfi_table *t = libc_table(&h, &lm);
	if (!t)
		return;
	/* .plt from the section headers, read independently of the builder */
	GElf_Shdr sh;
	int found = 0;
	int fd = open(lm->l_name, O_RDONLY);
	Elf *e = fd >= 0 && elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t shstrndx;
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0)
		for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(e, scn));)
			found = gelf_getshdr(scn, &sh) &&
				!strcmp(elf_strptr(e, shstrndx, sh.sh_name), ".plt");
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	CHECK(found && sh.sh_size > 32);
	if (!found || sh.sh_size <= 32) {
		ember__cfi_table_free(t);
		return;
	}
	printf("  %s: .plt %#llx+%#llx, %u fill rows\n", lm->l_name, (unsigned long long)sh.sh_addr,
	       (unsigned long long)sh.sh_size, t->stats.fill_rows);
	CHECK(t->stats.fill_rows >= 2);
	const unsigned lr = EMBER_CFI_SP | LR(EMBER_CFI_LR_REG);
	const ember__cfi_row *r = table_row(t, (uint32_t)sh.sh_addr);
	CHECK(r && r->kind == lr && r->cfa == 0 && r->fp == 0); /* PLT0's first instruction */
	r = table_row(t, (uint32_t)sh.sh_addr + 28);
	CHECK(r && r->kind == lr && r->cfa == 2 && r->fp == 0); /* after PLT0's stp */
	unsigned bad = 0;
	for (uint64_t pc = sh.sh_addr + 32; pc < sh.sh_addr + sh.sh_size; pc += 4) {
		r = table_row(t, (uint32_t)pc);
		bad += !r || r->kind != lr || r->cfa != 0 || r->fp != 0;
	}
	CHECK_EQ_INT(bad, 0);

	/* The walk: a sample in the first stub, x30 = an address in qsort. */
	ember__unwind_snapshot *s = malloc(sizeof(*s) + sizeof(s->mods[0]));
	memset(s, 0, sizeof(*s) + sizeof(s->mods[0]));
	s->n = 1;
	s->mods[0].start = lm->l_addr + sh.sh_addr;
	s->mods[0].end = lm->l_addr + sh.sh_addr + 0x1000000;
	s->mods[0].base = lm->l_addr;
	ember__cfi_table_to_module(t, &s->mods[0]);
	uintptr_t caller = (uintptr_t)dlsym(h, "qsort") + 8;
	memset(stack, 0, sizeof(stack));
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[1024]};
	ember__regs regs = {.pc = lm->l_addr + sh.sh_addr + 36, .sp = (uintptr_t)&stack[512],
			    .fp = 0, .aux = caller};
	uint64_t pcs[8];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, 1, &regs, &b, pcs, 8, &flags);
	CHECK(n >= 2);
	CHECK(n >= 2 && pcs[1] == caller);
	free(s);
	ember__cfi_table_free(t);
}

int main(void)
{
	RUN(test_cfi_rows);
	RUN(test_real_libc);
	RUN(test_real_plt);
	RUN(test_walk);
	RUN(test_large_frame);
	RUN(test_fp_walk);
	RUN(test_signal_frame);
	RUN(test_bare_trampoline);
	RUN(test_in_syscall);
	RUN(test_after_call);
	RUN(test_regs);
	return CHECK_DONE();
}
#else
int main(void)
{
	printf("SKIP: aarch64 only (this is %s); make test-aarch64 runs it under qemu\n",
#if defined(__x86_64__)
	       "x86-64"
#else
	       "another architecture"
#endif
	);
	return 77;
}
#endif
