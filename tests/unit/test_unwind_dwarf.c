/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unwind_dwarf.c - the DWARF unwinder (unwind_dwarf.c) and the
 * registry that publishes its tables (unwind_tables.c).
 *
 * Synthetic part: a fake module with hand-written rows and fake stacks, so
 * each rule is checked on its own: sp- and fp-based CFAs, the saved frame
 * pointer, the outermost frame (return address undefined), the PLT rule,
 * a signal frame (registers from a ucontext on the stack, the interrupted
 * PC looked up exactly), the frame-pointer fallback where no row exists
 * (auto) against the end of the walk (dwarf), and every malformed case
 * (CFA out of bounds or not moving up, misaligned or zero return address,
 * depth limit, unknown bounds), none of which may read outside the bounds.
 *
 * Real part: this file is compiled without frame pointers (-O2 default on
 * x86-64); a chain of functions records its own return addresses, takes a
 * getcontext() at the bottom and unwinds it with the tables the registry
 * built for the running process: the chain must come out exactly and the
 * walk must end cleanly at _start. The registry must also add and retire
 * a dlopen'ed library's table. Configuration accepts the dwarf mode.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "cfi/unwind_tables.h"
#include "cfi/cfi_pack.h"
#include "check.h"
#include "ifunc.h"
#include "emberprof.h"
#include "unwind/arch.h"
#include "unwind/unwind.h"
#include "util/dep_elfutils.h"
#include "util/dep_zlib.h"

/* ---- synthetic ---- */

#define MOD_START 0x100000u
#define MOD_END 0x200000u

static uintptr_t stack[512] __attribute__((aligned(16)));

/* 1: make_snap gives its module the packed form of the rows (the tests
 * run once with each form). */
static int g_packed;

/* A snapshot of one module with these rows; one block, free() it. */
static ember__unwind_snapshot *make_snap(const ember__cfi_row *rows, uint32_t n)
{
	void *block = NULL;
	size_t len = 0, head = sizeof(ember__unwind_snapshot) + sizeof(ember__unwind_module);
	ember__cfi_packed p;
	if (g_packed)
		CHECK_EQ_INT(ember__cfi_pack_rows(rows, n, &block, &len, &p), 0);
	ember__unwind_snapshot *s = malloc(head + len);
	memset(s, 0, head);
	s->n = 1;
	s->mods[0].start = MOD_START;
	s->mods[0].end = MOD_END;
	s->mods[0].base = MOD_START;
	if (block) {
		memcpy((uint8_t *)s + head, block, len);
		s->mods[0].packed = p;
		ember__cfi_packed_layout(n, p.nrules, p.npages, (uint8_t *)s + head, &s->mods[0].packed);
		CHECK_EQ_INT(ember__cfi_packed_check(&s->mods[0].packed), 0);
		free(block);
		return s;
	}
	s->mods[0].rows = rows;
	s->mods[0].nrows = n;
	return s;
}

/* The same after rows changed: the packed form is a copy. */
static __attribute__((unused)) ember__unwind_snapshot *remake(ember__unwind_snapshot *s,
							      const ember__cfi_row *rows, uint32_t n)
{
	free(s);
	return make_snap(rows, n);
}

static __attribute__((unused)) ember__stack_bounds bounds_all(void)
{
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[512]};
	return b;
}

#define A(off) ((uintptr_t)MOD_START + (off))

/* Functions of the fake module: A at 0x100 (CFA sp+16), B at 0x200 (CFA
 * sp+32, fp saved at CFA-16), C at 0x300 (CFA fp+16, fp at CFA-16), D at
 * 0x400 (return address undefined: the thread's start). */
static const ember__cfi_row rows_abcd[] = {
	{0x100, 2, 0, EMBER_CFI_SP},
	{0x200, 4, -2, EMBER_CFI_SP},
	{0x300, 2, -2, EMBER_CFI_FP},
	{0x400, 1, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	{0x500, 0, 0, EMBER_CFI_NONE},
};

static void test_rows_find(void)
{
	CHECK(ember__cfi_rows_find(rows_abcd, 5, 0x50) == NULL);
	CHECK(ember__cfi_rows_find(rows_abcd, 5, 0x100) == &rows_abcd[0]);
	CHECK(ember__cfi_rows_find(rows_abcd, 5, 0x1ff) == &rows_abcd[0]);
	CHECK(ember__cfi_rows_find(rows_abcd, 5, 0x200) == &rows_abcd[1]);
	CHECK(ember__cfi_rows_find(rows_abcd, 5, 0x9999) == &rows_abcd[4]);
	CHECK(ember__cfi_rows_find(rows_abcd, 0, 0x100) == NULL);
	ember__unwind_snapshot *s = make_snap(rows_abcd, 5);
	const ember__unwind_module *m = NULL;
	ember__cfi_row r;
	CHECK(ember__unwind_find_row(s, A(0x250), &m, &r) == 1 &&
	      !memcmp(&r, &rows_abcd[1], sizeof(r)));
	CHECK(m == &s->mods[0]);
	CHECK(ember__unwind_find_row(s, A(0x600), &m, &r) == 0); /* a gap */
	CHECK(ember__unwind_find_row(s, MOD_END, &m, NULL) == 0 && m == NULL);
	CHECK(ember__unwind_find_row(s, MOD_START - 1, NULL, NULL) == 0);
	free(s);
}

/*
 * The hand-written rows below follow x86-64's conventions (the return
 * address at CFA - 8, the aux register rbx, the PLT expression);
 * test_unwind_aarch64.c has aarch64's (the link register, frame records,
 * PAC). The real-stack part further down runs on both.
 */
#if defined(__x86_64__)
static void build_abcd(ember__regs *r)
{
	memset(stack, 0xab, sizeof(stack));
	r->pc = A(0x110);
	r->sp = (uintptr_t)&stack[0];
	r->fp = 0x5555; /* garbage in A: nothing may use it */
	stack[1] = A(0x210);                 /* A's return address, CFA = &stack[2] */
	stack[4] = (uintptr_t)&stack[20];    /* B saved the caller's fp at CFA-16 */
	stack[5] = A(0x310);                 /* B's return address, CFA = &stack[6] */
	stack[21] = A(0x410);                /* C: CFA = fp + 16 = &stack[22] */
	stack[20] = (uintptr_t)&stack[40];   /* C's caller's fp */
}

static void test_chain(void)
{
	ember__unwind_snapshot *s = make_snap(rows_abcd, 5);
	ember__regs r;
	build_abcd(&r);
	ember__stack_bounds b = bounds_all();
	uint64_t pcs[16];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(pcs[0], A(0x110));
	CHECK_EQ_INT(pcs[1], A(0x210));
	CHECK_EQ_INT(pcs[2], A(0x310));
	CHECK_EQ_INT(pcs[3], A(0x410));
	CHECK_EQ_INT(flags, 0); /* complete: D's return address is undefined */
	/* Through the dispatcher, both DWARF modes. */
	flags = 0;
	CHECK_EQ_INT(ember__unwind(EMBER_UNWIND_MODE_AUTO, s, &r, &b, pcs, 16, &flags), 4);
	CHECK_EQ_INT(ember__unwind(EMBER_UNWIND_MODE_DWARF, s, &r, &b, pcs, 16, &flags), 4);
	CHECK_EQ_INT(flags, 0);
	/* Depth limit: truncated, exactly max frames. */
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 3, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* max == 4 is exactly enough: the next frame is the outermost one. */
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 4, &flags), 4);
	CHECK_EQ_INT(flags, 0);
	free(s);
}

static void test_bad_stacks(void)
{
	ember__unwind_snapshot *s = make_snap(rows_abcd, 5);
	ember__regs r;
	ember__stack_bounds b = bounds_all();
	uint64_t pcs[16];
	unsigned flags;

	/* C's CFA (fp + 16) beyond the top of the stack. */
	build_abcd(&r);
	stack[4] = (uintptr_t)&stack[511];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* C's fp below sp: the CFA would not move up. */
	build_abcd(&r);
	stack[4] = (uintptr_t)&stack[1];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* A misaligned fp: its slots are misaligned. */
	build_abcd(&r);
	stack[4] = (uintptr_t)&stack[20] + 3;
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* The stack ends inside A's frame. */
	build_abcd(&r);
	ember__stack_bounds tiny = {(uintptr_t)&stack[0], (uintptr_t)&stack[1]};
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &tiny, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* A zero return address ends the chain without a complaint. */
	build_abcd(&r);
	stack[5] = 0;
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags), 2);
	CHECK_EQ_INT(flags, 0);
	/* An epilogue after `pop %rbp` whose CFI still says "rbp saved at
	 * CFA-48": the slot is below sp, so fp already holds the caller's
	 * value and is kept, without reading below sp. */
	static const ember__cfi_row popped[] = {
		{0x100, 1, -6, EMBER_CFI_SP},
		{0x200, 2, 0, EMBER_CFI_FP},
		{0x300, 1, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	};
	ember__unwind_snapshot *s3 = make_snap(popped, 3);
	memset(stack, 0xab, sizeof(stack));
	ember__regs pr = {.pc = A(0x110), .sp = (uintptr_t)&stack[10], .fp = (uintptr_t)&stack[20]};
	stack[10] = A(0x210);
	stack[21] = A(0x310);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s3, 1, &pr, &b, pcs, 16, &flags), 3);
	CHECK_EQ_INT(pcs[2], A(0x310));
	CHECK_EQ_INT(flags, 0);
	free(s3);
	/* A row whose CFA does not move up (cfa_off 0): truncated, no loop. */
	static const ember__cfi_row still[] = {{0x100, 0, 0, EMBER_CFI_SP}};
	ember__unwind_snapshot *s2 = make_snap(still, 1);
	build_abcd(&r);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s2, 1, &r, &b, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	free(s2);
	/* Unknown bounds, or sp outside them: the leaf only. */
	build_abcd(&r);
	ember__stack_bounds none = {0, 0}, other = {(uintptr_t)&stack[100], (uintptr_t)&stack[200]};
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &none, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_NO_BOUNDS);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 0, &r, &other, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_NO_BOUNDS);
	CHECK_EQ_INT(ember__unwind_dwarf(s, 0, &r, &b, pcs, 0, &flags), 0);
	free(s);
}

/* No row (outside the module, or a gap): frame pointers in auto, the end
 * in dwarf. An "unknown" row always uses the frame-pointer rule. */
static void test_fallbacks(void)
{
	ember__unwind_snapshot *s = make_snap(rows_abcd, 5);
	ember__stack_bounds b = bounds_all();
	uint64_t pcs[16];
	unsigned flags;
	memset(stack, 0xab, sizeof(stack));
	/* Leaf at 0x9000 (outside the module) with a frame-pointer frame at
	 * stack[8]: caller's fp at [0], return address into A at [1]. */
	ember__regs r = {.pc = 0x9000, .sp = (uintptr_t)&stack[0], .fp = (uintptr_t)&stack[8]};
	stack[8] = (uintptr_t)&stack[30];
	stack[9] = A(0x110); /* back in A: CFA = sp + 16 with sp = &stack[10] */
	stack[11] = A(0x410);
	flags = 0;
	int n = ember__unwind_dwarf(s, 0, &r, &b, pcs, 16, &flags);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(pcs[1], A(0x110));
	CHECK_EQ_INT(pcs[2], A(0x410));
	CHECK_EQ_INT(flags, 0);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* The same in a gap of the module. */
	r.pc = A(0x700);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 0, &r, &b, pcs, 16, &flags), 3);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* No row and fp == 0: the frame-pointer convention's outermost frame. */
	r.fp = 0;
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 0, &r, &b, pcs, 16, &flags), 1);
	CHECK_EQ_INT(flags, 0);
	/* An unknown rule (realigned stack) uses fp even in dwarf mode. */
	static const ember__cfi_row unk[] = {
		{0x100, 2, 0, EMBER_CFI_SP},
		{0x800, 0, 0, EMBER_CFI_UNKNOWN},
		{0x900, 1, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	};
	ember__unwind_snapshot *s2 = make_snap(unk, 3);
	r.pc = A(0x810);
	r.fp = (uintptr_t)&stack[8];
	stack[9] = A(0x910);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s2, 1, &r, &b, pcs, 16, &flags), 2);
	CHECK_EQ_INT(pcs[1], A(0x910));
	CHECK_EQ_INT(flags, 0);
	/* A frame whose caller's fp was lost: a later fp-based rule fails. */
	static const ember__cfi_row lost[] = {
		{0x100, 2, 0, EMBER_CFI_SP | EMBER_CFI_F_FP_LOST},
		{0x300, 2, -2, EMBER_CFI_FP},
	};
	ember__unwind_snapshot *s3 = make_snap(lost, 2);
	r.pc = A(0x110);
	r.sp = (uintptr_t)&stack[0];
	r.fp = (uintptr_t)&stack[20];
	stack[1] = A(0x310);
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s3, 1, &r, &b, pcs, 16, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	free(s3);
	free(s2);
	free(s);
}

static void test_plt(void)
{
	/* A PLT stub at 0x1000..0x1010: CFA = sp + 8, + 8 from (pc & 15) >= 11. */
	static const ember__cfi_row plt[] = {
		{0x100, 1, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
		{0x1000, 1, 11, EMBER_CFI_PLT},
		{0x1010, 0, 0, EMBER_CFI_NONE},
	};
	ember__unwind_snapshot *s = make_snap(plt, 3);
	ember__stack_bounds b = bounds_all();
	uint64_t pcs[8];
	unsigned flags = 0;
	memset(stack, 0, sizeof(stack));
	stack[0] = A(0x110);
	stack[1] = A(0x120);
	ember__regs r = {.pc = A(0x1004), .sp = (uintptr_t)&stack[0], .fp = 0};
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK_EQ_INT(pcs[1], A(0x110)); /* before the push: the RA is at sp */
	r.pc = A(0x100b);
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK_EQ_INT(pcs[1], A(0x120)); /* after it: at sp + 8 */
	CHECK_EQ_INT(flags, 0);
	free(s);
}

/*
 * A signal frame: handler H (0x100, CFA sp+16) returns into the
 * trampoline T (SIGNAL row at 0x200, no byte before it in the FDE), whose
 * sp holds a ucontext. The interrupted PC is the first byte of E (0x300,
 * CFA sp+8): it must be looked up exactly, not at pc - 1 (which lies in F
 * at 0x2f0 with a different CFA).
 */
static void test_signal_frame(void)
{
	static const ember__cfi_row rows[] = {
		{0x100, 2, 0, EMBER_CFI_SP},
		{0x180, 0, 0, EMBER_CFI_NONE},
		{0x200, 0, 0, EMBER_CFI_SIGNAL},
		{0x210, 0, 0, EMBER_CFI_NONE},
		{0x2f0, 8, 0, EMBER_CFI_SP},
		{0x300, 1, 0, EMBER_CFI_SP},
		{0x380, 1, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	};
	ember__unwind_snapshot *s = make_snap(rows, 7);
	ember__stack_bounds b = bounds_all();
	memset(stack, 0, sizeof(stack));
	stack[1] = A(0x200); /* H returns to the trampoline's first byte */
	ucontext_t *uc = (ucontext_t *)&stack[2];
	uintptr_t *interrupted_sp = &stack[300];
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)A(0x300);
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)interrupted_sp;
	uc->uc_mcontext.gregs[REG_RBP] = 0x1234;
	interrupted_sp[0] = A(0x390); /* E's return address, at its sp (CFA sp+8) */
	ember__regs r = {.pc = A(0x110), .sp = (uintptr_t)&stack[0], .fp = 0};
	uint64_t pcs[8];
	unsigned flags = 0;
	int n = ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(pcs[1], A(0x200) + 1); /* + 1: looked up at pc - 1, in T */
	CHECK_EQ_INT(pcs[2], A(0x300) + 1); /* interrupted PC + 1 */
	CHECK_EQ_INT(pcs[3], A(0x390));
	CHECK_EQ_INT(flags, 0);
	/* The ucontext does not fit below the top of the stack. */
	ember__stack_bounds cut = {(uintptr_t)&stack[0], (uintptr_t)&stack[10]};
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &cut, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* The interrupted sp below the frame: refused. */
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)&stack[1];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	free(s);
}

/*
 * The aux register (rbx): F (0x100, CFA sp+24) saved its caller's rbx at
 * CFA-16; its caller T (0x200) is a lazy-binding trampoline whose CFA is
 * rbx+32, with its own caller's rbx at CFA-32; G (0x300) is the thread's
 * start. T's rbx comes from F's save slot, not from the register.
 */
static void test_aux_cfa(void)
{
	ember__cfi_row rows[] = {
		{0x100, 3, 0, EMBER_CFI_SP | (1u << EMBER_CFI_AUX_SHIFT)},
		{0x200, 4, 0, EMBER_CFI_AUX | (3u << EMBER_CFI_AUX_SHIFT)},
		{0x300, 1, 0, EMBER_CFI_SP | EMBER_CFI_F_RA_UNDEF},
	};
	ember__unwind_snapshot *s = make_snap(rows, 3);
	ember__stack_bounds b = bounds_all();
	memset(stack, 0xab, sizeof(stack));
	stack[2] = A(0x210);                /* F's return address (CFA &stack[3]) */
	stack[1] = (uintptr_t)&stack[40];   /* F saved T's rbx */
	stack[43] = A(0x310);               /* T: CFA = rbx + 32 = &stack[44] */
	stack[40] = 0x7777;                 /* T saved G's rbx at CFA-32 */
	ember__regs r = {.pc = A(0x110), .sp = (uintptr_t)&stack[0], .fp = 0, .aux = 0x4242};
	uint64_t pcs[8];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 3);
	CHECK_EQ_INT(pcs[1], A(0x210));
	CHECK_EQ_INT(pcs[2], A(0x310));
	CHECK_EQ_INT(flags, 0);
	/* F did not save rbx: T's is still in the register. */
	rows[0].kind = EMBER_CFI_SP;
	s = remake(s, rows, 3);
	r.aux = (uintptr_t)&stack[40];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 3);
	CHECK_EQ_INT(pcs[2], A(0x310));
	CHECK_EQ_INT(flags, 0);
	/* ... but its value is unknown (an unwind that starts outside a
	 * signal): T's frame ends the walk, truncated. */
	r.aux = 0;
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* F lost it (saved where no code can say). */
	rows[0].kind = EMBER_CFI_SP | (EMBER_CFI_AUX_LOST << EMBER_CFI_AUX_SHIFT);
	s = remake(s, rows, 3);
	r.aux = (uintptr_t)&stack[40];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* A saved rbx that points below the frame: the CFA would not move up. */
	rows[0].kind = EMBER_CFI_SP | (1u << EMBER_CFI_AUX_SHIFT);
	s = remake(s, rows, 3);
	stack[1] = (uintptr_t)&stack[0] - 8 * sizeof(uintptr_t); /* CFA = &stack[-4] */
	flags = 0;
	CHECK_EQ_INT(ember__unwind_dwarf(s, 1, &r, &b, pcs, 8, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	free(s);
}
#endif /* __x86_64__ */

/* ---- real code, real tables ---- */

#define LEVELS 6
static uintptr_t expect_ra[LEVELS];
static uint64_t got[128];
static int got_n;
static unsigned got_flags;
static const ember__unwind_snapshot *g_snap;
static ember__stack_bounds g_bounds;

/* Unwinds from here into pcs (128 entries); returns the frame count. */
__attribute__((noinline)) static int unwind_here(uint64_t *pcs, unsigned *flags)
{
	ucontext_t uc;
	getcontext(&uc);
	ember__regs r;
	ember__regs_from_ucontext(&uc, &r);
	*flags = 0;
	int n = ember__unwind_dwarf(g_snap, 1, &r, &g_bounds, pcs, 128, flags);
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) static void level(int n)
{
	expect_ra[n] = (uintptr_t)__builtin_return_address(0);
	if (n == 0)
		got_n = unwind_here(got, &got_flags);
	else
		level(n - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

/*
 * Lazy binding: the first call to the IFUNC fixture goes through the PLT
 * into _dl_runtime_resolve_* (CFA = rbx + n after it realigns the stack),
 * _dl_fixup and the resolver, which calls in_resolver. The unwind from
 * there must pass the trampoline and reach _start.
 */
static uint64_t lazy_pcs[128];
static int lazy_n = -1;
static unsigned lazy_flags;
static uintptr_t lazy_expect;

static void in_resolver(void)
{
	lazy_n = unwind_here(lazy_pcs, &lazy_flags);
}

__attribute__((noinline)) static int call_through_plt(void)
{
	lazy_expect = (uintptr_t)__builtin_return_address(0);
	int v = ember_fixture_ifunc_add1(41);
	__asm__ volatile("" ::: "memory");
	return v;
}

static void check_lazy_binding(void)
{
	ember_fixture_ifunc_hook = in_resolver;
	CHECK_EQ_INT(call_through_plt(), 42);
	ember_fixture_ifunc_hook = NULL;
	if (lazy_n < 0) {
		/* The resolver ran before main: binding is not lazy here. */
		CHECK(getenv("LD_BIND_NOW") != NULL);
		printf("  lazy binding: LD_BIND_NOW is set, not checked\n");
		return;
	}
	int in_ldso = 0, found = 0;
	for (int i = 0; i < lazy_n; i++) {
		Dl_info di;
		if (dladdr((void *)(uintptr_t)(lazy_pcs[i] - 1), &di) && di.dli_fname &&
		    strstr(di.dli_fname, "ld-linux"))
			in_ldso++;
		found |= lazy_pcs[i] == lazy_expect;
	}
	printf("  lazy binding: %d frames (%d in ld.so), flags %u\n", lazy_n, in_ldso, lazy_flags);
	CHECK(in_ldso >= 2); /* _dl_fixup and the trampoline at least */
	CHECK(found);        /* past the trampoline: call_through_plt's caller */
	CHECK_EQ_INT(lazy_flags, 0);
}

static void test_real_stack(void)
{
	static _Atomic(const ember__unwind_snapshot *) slot;
	ember__unwind_tables *t = NULL;
	CHECK_EQ_INT(ember__unwind_tables_new(&t, &slot, NULL), 0);
	CHECK_EQ_INT(ember__unwind_tables_refresh(t), 0);
	g_snap = atomic_load(&slot);
	CHECK(g_snap != NULL && g_snap->n >= 2); /* this program, libc, ... */
	ember__unwind_tables_stats st;
	ember__unwind_tables_get_stats(t, &st);
	printf("  tables: %llu modules, %llu rows, %llu bytes, %.2f ms\n",
	       (unsigned long long)st.modules, (unsigned long long)st.rows,
	       (unsigned long long)st.bytes, (double)st.build_ns / 1e6);
	CHECK(st.modules >= 2 && st.bytes > 0 && st.built >= 2);

	pthread_attr_t attr;
	void *addr;
	size_t size;
	CHECK_EQ_INT(pthread_getattr_np(pthread_self(), &attr), 0);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	g_bounds.lo = (uintptr_t)addr;
	g_bounds.hi = (uintptr_t)addr + size;

	level(LEVELS - 1);
	/* got: unwind_here's pc, level(0)'s return into level(1) is
	 * expect_ra[0] ... level(LEVELS-1)'s into this function, then main,
	 * libc's start code and _start. */
	CHECK(got_n >= LEVELS + 4);
	for (int i = 0; i < LEVELS && i + 2 < got_n; i++)
		CHECK_EQ_INT(got[i + 2], expect_ra[i]);
	CHECK_EQ_INT(got_flags, 0); /* complete: ends at _start's undefined RA */
	printf("  real stack: %d frames, flags %u\n", got_n, got_flags);
	check_lazy_binding();

	/* A library loaded later gets a table; unloaded, its table retires. */
	static const char *const libs[] = {"libtinfo.so.6", "libcap.so.2", "libacl.so.1",
					   "libattr.so.1", "libgmp.so.10"};
	void *h = NULL;
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs) && !h; i++)
		if (!dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD))
			h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("  (no unloaded system library to dlopen: registry churn not checked)\n");
	} else {
		ember__unwind_tables_stats a, b2, c;
		ember__unwind_tables_get_stats(t, &a);
		CHECK_EQ_INT(ember__unwind_tables_poll(t), 0); /* the dl counters changed */
		ember__unwind_tables_get_stats(t, &b2);
		CHECK_EQ_INT(b2.built, a.built + 1);
		CHECK_EQ_INT(b2.modules, a.modules + 1);
		CHECK(b2.snapshots == a.snapshots + 1);
		dlclose(h);
		CHECK_EQ_INT(ember__unwind_tables_poll(t), 0);
		ember__unwind_tables_get_stats(t, &c);
		CHECK_EQ_INT(c.modules, a.modules);
		CHECK_EQ_INT(c.retired, b2.retired + 1);
		CHECK_EQ_INT(c.freed, c.retired); /* no handler runs: freed at once */
		/* Nothing changed: no new snapshot. */
		CHECK_EQ_INT(ember__unwind_tables_refresh(t), 0);
		ember__unwind_tables_get_stats(t, &a);
		CHECK_EQ_INT(a.snapshots, c.snapshots);
	}
	ember__unwind_tables_free(t);
	CHECK(atomic_load(&slot) == NULL);
}

static void test_config(void)
{
	ember_builder *b;
	CHECK_EQ_INT(ember_builder_new(&b, "t"), 0);
	CHECK_EQ_INT(ember_builder_set_unwind(b, EMBER_UNWIND_DWARF), 0);
	CHECK_EQ_INT(ember_builder_set_unwind(b, (ember_unwind_mode)3), EMBER_ERR_INVALID);
	setenv("EMBERPROF_UNWIND", "dwarf", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), 0);
	setenv("EMBERPROF_UNWIND", "libunwind", 1);
	CHECK_EQ_INT(ember_builder_apply_env(b), EMBER_ERR_INVALID);
	CHECK(strstr(ember_last_error(), "dwarf") != NULL);
	unsetenv("EMBERPROF_UNWIND");
	ember_builder_free(b);
	CHECK_EQ_INT(EMBER_UNWIND_MODE_DWARF, EMBER_UNWIND_DWARF);
	CHECK_EQ_INT(EMBER_UNWIND_MODE_AUTO, EMBER_UNWIND_AUTO);
	CHECK_EQ_INT(EMBER_UNWIND_MODE_FP, EMBER_UNWIND_FP);
}

int main(void)
{
	/* libdw and zlib are loaded at first use (util/lazydep.h): load them
	 * now, so the modules mapped stay the same from table to table. */
	if (ember__lazydep_load(&ember__elfutils) < 0 || ember__lazydep_load(&ember__zlib) < 0)
		fprintf(stderr, "%s\n", ember_last_error());
	for (g_packed = 0; g_packed < 2; g_packed++) {
		printf("%s rows:\n", g_packed ? "packed" : "8-byte");
		RUN(test_rows_find);
#if defined(__x86_64__)
		RUN(test_chain);
		RUN(test_bad_stacks);
		RUN(test_fallbacks);
		RUN(test_plt);
		RUN(test_signal_frame);
		RUN(test_aux_cfa);
#endif
	}
	RUN(test_real_stack);
	RUN(test_config);
	return CHECK_DONE();
}
