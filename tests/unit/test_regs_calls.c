/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_regs_calls.c - where a call before a return address went, and
 * where a PLT stub jumps (ember__regs_call_dest, ember__regs_plt_slot;
 * the wall-clock engine's check of frame records guessed from a blocked
 * thread's stack). The bytes are real encodings, as gcc, GNU ld and
 * libasan have them; x86-64 only (aarch64 does not decode: "cannot tell").
 */
#include "check.h"
#include "unwind/unwind.h"

#include <string.h>

#if defined(__x86_64__)
/* 8 code bytes ending at a return address: `pad` then the call */
static void before(uint8_t c[8], const uint8_t *call, size_t n)
{
	memset(c, 0x90, 8);
	memcpy(c + 8 - n, call, n);
}

static void test_direct_call(void)
{
	/* 18429c: e8 ff 08 ff ff   call 174ba0 <ppoll@plt> (ra 1842a1) */
	static const uint8_t call[] = {0xe8, 0xff, 0x08, 0xff, 0xff};
	uint8_t c[8];
	before(c, call, sizeof(call));
	uintptr_t dest = 0;
	CHECK_EQ_INT(ember__regs_call_dest(c, 0x1842a1, &dest), 1);
	CHECK(dest == 0x174ba0);
}

static void test_call_through_pointer(void)
{
	/* 755ac: ff 15 16 51 0d 00   call *0xd5116(%rip) # 14a6c8 (ra 755b2) */
	static const uint8_t call[] = {0xff, 0x15, 0x16, 0x51, 0x0d, 0x00};
	uint8_t c[8];
	before(c, call, sizeof(call));
	uintptr_t dest = 0;
	CHECK_EQ_INT(ember__regs_call_dest(c, 0x755b2, &dest), 2);
	CHECK(dest == 0x14a6c8);
}

static void test_call_through_register(void)
{
	static const uint8_t rax[] = {0xff, 0xd0};             /* call *%rax */
	static const uint8_t mem[] = {0x41, 0xff, 0x54, 0x24, 0x08}; /* call *8(%r12) */
	uint8_t c[8];
	uintptr_t dest = 7;
	before(c, rax, sizeof(rax));
	CHECK_EQ_INT(ember__regs_call_dest(c, 0x5000, &dest), 0);
	before(c, mem, sizeof(mem));
	CHECK_EQ_INT(ember__regs_call_dest(c, 0x5000, &dest), 0);
	CHECK(dest == 7); /* untouched */
}

static void test_plt_stubs(void)
{
	uintptr_t slot = 0;
	/* lazy .plt at 174ba0: jmp *0x1b1602(%rip); push $0xa2; jmp PLT0 */
	uint8_t lazy[16] = {0xff, 0x25, 0x02, 0x16, 0x1b, 0x00, 0x68, 0xa2,
			    0x00, 0x00, 0x00, 0xe9, 0x00, 0x00, 0x00, 0x00};
	CHECK_EQ_INT(ember__regs_plt_slot(lazy, 0x174ba0, &slot), 1);
	CHECK(slot == 0x174ba0 + 6 + 0x1b1602);
	/* IBT .plt.sec: endbr64; bnd jmp *0x2fe2(%rip) */
	uint8_t sec[16] = {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xe2,
			   0x2f, 0x00, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00};
	CHECK_EQ_INT(ember__regs_plt_slot(sec, 0x1030, &slot), 1);
	CHECK(slot == 0x1030 + 11 + 0x2fe2);
	/* a function's first bytes: endbr64; push %rbp; mov %rsp,%rbp */
	uint8_t fn[16] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5};
	CHECK_EQ_INT(ember__regs_plt_slot(fn, 0x2000, &slot), 0);
}
#else
static void test_not_decoded(void)
{
	uint8_t c[16] = {0};
	uintptr_t d = 0;
	CHECK_EQ_INT(ember__regs_call_dest(c, 0x1000, &d), 0);
	CHECK_EQ_INT(ember__regs_plt_slot(c, 0x1000, &d), 0);
}
#endif

int main(void)
{
#if defined(__x86_64__)
	RUN(test_direct_call);
	RUN(test_call_through_pointer);
	RUN(test_call_through_register);
	RUN(test_plt_stubs);
#else
	RUN(test_not_decoded);
#endif
	return CHECK_DONE();
}
