/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unwind_fp.c - the frame-pointer walker on synthetic stacks: a
 * well-formed chain, the thread's end (fp == 0), and every malformed case
 * (out of bounds, misaligned, loops, unknown bounds, depth limit), none of
 * which may read outside the given bounds.
 */
#include "check.h"
#include "unwind/unwind.h"

/* A fake stack: frames at words 4, 10, 20 -> return addresses 0x1001.. */
static uintptr_t stack[64];

static void build_chain(void)
{
	for (int i = 0; i < 64; i++)
		stack[i] = 0xdeadbeef;
	stack[4] = (uintptr_t)&stack[10];
	stack[5] = 0x1001;
	stack[10] = (uintptr_t)&stack[20];
	stack[11] = 0x1002;
	stack[20] = 0; /* outermost frame */
	stack[21] = 0x1003;
}

static ember__stack_bounds bounds(void)
{
	ember__stack_bounds b = {(uintptr_t)&stack[0], (uintptr_t)&stack[64]};
	return b;
}

static void test_good_chain(void)
{
	build_chain();
	ember__regs r = {.pc = 0x1000, .sp = (uintptr_t)&stack[2], .fp = (uintptr_t)&stack[4]};
	ember__stack_bounds b = bounds();
	uint64_t pcs[16];
	unsigned flags = 0;
	int n = ember__unwind_fp(&r, &b, pcs, 16, &flags);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(pcs[0], 0x1000);
	CHECK_EQ_INT(pcs[1], 0x1001);
	CHECK_EQ_INT(pcs[2], 0x1002);
	CHECK_EQ_INT(pcs[3], 0x1003);
	CHECK_EQ_INT(flags, 0); /* complete */
}

/*
 * Above main, rbp is whatever glibc's __libc_start_call_main left (it keeps
 * no frame pointer): here a stack address whose upper word points at the
 * argv strings, also on the stack. That word is data, never a frame: the
 * walk stops before it (a bogus bottom frame at a stack address).
 */
static void test_return_address_on_stack(void)
{
	build_chain();
	stack[21] = (uintptr_t)&stack[40] + 7; /* "return address" = a string on the stack */
	stack[20] = (uintptr_t)&stack[30];     /* and a plausible next frame */
	ember__regs r = {.pc = 0x1000, .sp = (uintptr_t)&stack[2], .fp = (uintptr_t)&stack[4]};
	ember__stack_bounds b = bounds();
	uint64_t pcs[16];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 16, &flags), 3);
	CHECK_EQ_INT(pcs[2], 0x1002);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
}

static void test_depth_limit(void)
{
	build_chain();
	ember__regs r = {.pc = 0x1000, .sp = (uintptr_t)&stack[2], .fp = (uintptr_t)&stack[4]};
	ember__stack_bounds b = bounds();
	uint64_t pcs[2];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 2, &flags), 2);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
}

static void test_fp_out_of_bounds(void)
{
	build_chain();
	stack[10] = (uintptr_t)&stack[64] + 4096; /* points past the stack top */
	ember__regs r = {.pc = 0x1000, .sp = (uintptr_t)&stack[2], .fp = (uintptr_t)&stack[4]};
	ember__stack_bounds b = bounds();
	uint64_t pcs[16];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 16, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* fp below sp is never followed either */
	build_chain();
	r.fp = (uintptr_t)&stack[1];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	/* the last frame's return address must fit below hi */
	build_chain();
	r.fp = (uintptr_t)&stack[63];
	flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
}

static void test_misaligned_and_loop(void)
{
	build_chain();
	stack[10] = (uintptr_t)&stack[20] + 3;
	ember__regs r = {.pc = 0x1000, .sp = (uintptr_t)&stack[2], .fp = (uintptr_t)&stack[4]};
	ember__stack_bounds b = bounds();
	uint64_t pcs[16];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 16, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
	build_chain();
	stack[10] = (uintptr_t)&stack[4]; /* a loop back down */
	flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &b, pcs, 16, &flags), 3);
	CHECK(flags & EMBER_UNWIND_TRUNCATED);
}

static void test_unknown_bounds(void)
{
	build_chain();
	ember__regs r = {.pc = 0x1000, .sp = (uintptr_t)&stack[2], .fp = (uintptr_t)&stack[4]};
	ember__stack_bounds none = {0, 0};
	uint64_t pcs[16];
	unsigned flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &none, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_NO_BOUNDS);
	/* sp outside the thread's bounds (an alternate or foreign stack) */
	ember__stack_bounds other = {(uintptr_t)&stack[32], (uintptr_t)&stack[64]};
	flags = 0;
	CHECK_EQ_INT(ember__unwind_fp(&r, &other, pcs, 16, &flags), 1);
	CHECK(flags & EMBER_UNWIND_NO_BOUNDS);
}

int main(void)
{
	RUN(test_good_chain);
	RUN(test_depth_limit);
	RUN(test_return_address_on_stack);
	RUN(test_fp_out_of_bounds);
	RUN(test_misaligned_and_loop);
	RUN(test_unknown_bounds);
	return CHECK_DONE();
}
