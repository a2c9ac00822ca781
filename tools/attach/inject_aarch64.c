/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inject_aarch64.c - inject_arch.h for aarch64: user_pt_regs and the
 * system call number through PTRACE_GETREGSET (NT_PRSTATUS,
 * NT_ARM_SYSTEM_CALL), and the stub in A64 machine code. Run in an arm64
 * kernel by tests/aarch64/vm_attach.sh (qemu-system-aarch64). The one
 * difference in what it leaves is x16 (IP0, a scratch register no caller
 * relies on across a call), which holds the address it returns to.
 *
 * Where arm64 differs from x86-64 at a stop: its do_signal prepares the
 * restart of an interrupted call *before* the tracer sees the thread (pc
 * back on `svc #0`, x0 its first argument again, the -ERESTART... code
 * gone) and forgets the call (NT_ARM_SYSTEM_CALL reads -1). get() turns
 * that back into the x86-64 picture inject.c works with: the call's
 * number (x8, still in place), pc after the `svc`, x0 -ERESTARTNOINTR,
 * the first argument kept aside; set() and restart() undo it.
 */
#if defined(__aarch64__)
#include "attach/inject_arch.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

/* w[] beyond user_pt_regs: the first argument of a call the kernel had
 * rewound (R_X0), and how syscall_nr was found (R_HOW, HOW_ bits). */
enum { R_SP = 31, R_PC = 32, R_PSTATE = 33, R_N = 34, R_X0 = 35, R_HOW = 36 };
enum { HOW_INFERRED = 1, HOW_REWOUND = 2 };
#define SVC0 0xD4000001u
#define ERESTARTNOINTR_ 513

/* The instruction at addr in tid, or 0 when unreadable. */
static uint32_t insn_at(pid_t tid, uint64_t addr)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKTEXT, tid, (void *)(addr & ~(uint64_t)7), NULL);
	if (errno)
		return 0;
	return (uint32_t)((uint64_t)v >> ((addr & 4) ? 32 : 0));
}

int ember__iarch_get(pid_t tid, ember__iregs *r)
{
	memset(r, 0, sizeof(*r));
	struct iovec io = {r->w, R_N * 8};
	int nr = -1;
	struct iovec sc = {&nr, sizeof(nr)};
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0 ||
	    ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &sc) != 0)
		return -errno;
	r->syscall_nr = nr;
	if (nr >= 0) /* a system call stop: the call is known */
		return 0;
	/* a signal-delivery (interrupt) stop: the call was forgotten */
	uint64_t pc = r->w[R_PC];
	if (insn_at(tid, pc) == SVC0) {
		/* rewound for its restart (or stopped just before a call) */
		r->w[R_X0] = r->w[0];
		r->w[0] = (uint64_t)-ERESTARTNOINTR_;
		r->w[R_PC] = pc + 4;
		r->w[R_HOW] = HOW_INFERRED | HOW_REWOUND;
		r->syscall_nr = (int64_t)r->w[8];
	} else if (pc >= 4 && insn_at(tid, pc - 4) == SVC0) {
		/* returned: its result (or -EINTR) in x0 */
		r->w[R_HOW] = HOW_INFERRED;
		r->syscall_nr = (int64_t)r->w[8];
	}
	return 0;
}

int ember__iarch_set(pid_t tid, const ember__iregs *in)
{
	ember__iregs c = *in, *r = &c;
	if ((r->w[R_HOW] & HOW_REWOUND) && r->w[0] == (uint64_t)-ERESTARTNOINTR_) {
		r->w[0] = r->w[R_X0]; /* as the kernel left it: on the `svc` again */
		r->w[R_PC] -= 4;
	}
	if (r->w[R_HOW] & HOW_INFERRED)
		r->syscall_nr = -1; /* what the kernel had */
	struct iovec io = {(void *)r->w, R_N * 8};
	int nr = (int)r->syscall_nr;
	struct iovec sc = {&nr, sizeof(nr)};
	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0 ||
	    ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &sc) != 0)
		return -errno;
	return 0;
}

long ember__iarch_syscall(const ember__iregs *r)
{
	return (long)r->syscall_nr;
}

long ember__iarch_retval(const ember__iregs *r)
{
	return (long)r->w[0];
}

uint64_t ember__iarch_syscall_insn(const ember__iregs *r)
{
	return r->w[R_PC] - 4; /* svc #0 */
}

void ember__iarch_setup_syscall(ember__iregs *r, uint64_t insn, long nr, const uint64_t a[6])
{
	r->w[R_PC] = insn;
	r->w[8] = (uint64_t)nr;
	for (int i = 0; i < 6; i++)
		r->w[i] = a[i];
	r->syscall_nr = -1; /* no restart of the interrupted call */
	r->w[R_HOW] = 0;
}

void ember__iarch_restart(ember__iregs *r, int eintr_too, uint64_t arg0)
{
	long ret = (long)r->w[0];
	if (r->syscall_nr < 0)
		return;
	if (ret == -512 || ret == -513 || ret == -514 || (eintr_too && ret == -EINTR)) {
		/* x8 still holds the number; a call the kernel rewound kept
		 * its first argument (arg0 is not known then: once stopped,
		 * /proc/TID/syscall shows no call) */
		r->w[0] = (r->w[R_HOW] & HOW_REWOUND) ? r->w[R_X0] : arg0;
		r->w[R_PC] -= 4;
	} else if (ret == -516) { /* -ERESTART_RESTARTBLOCK */
		r->w[8] = SYS_restart_syscall;
		r->w[R_PC] -= 4;
	}
	r->syscall_nr = -1;
	r->w[R_HOW] = 0;
}

/* ---- the stub ---- */

typedef struct emit {
	uint32_t *p;
	size_t n, cap; /* in instructions */
	int bad;
} emit;

static void ins(emit *e, uint32_t v)
{
	if (e->n >= e->cap) {
		e->bad = 1;
		return;
	}
	e->p[e->n++] = v;
}

/* pc-relative offsets to page offset `to` from the next instruction */
static int64_t rel(const emit *e, uint32_t to)
{
	return (int64_t)to - (int64_t)(e->n * 4);
}

static void ldr_lit(emit *e, int rt, uint32_t to) /* ldr xt, =[pc + rel] */
{
	ins(e, 0x58000000u | (((uint32_t)(rel(e, to) / 4) & 0x7ffff) << 5) | (uint32_t)rt);
}

static void adr(emit *e, int rd, uint32_t to)
{
	uint32_t imm = (uint32_t)rel(e, to) & 0x1fffff;
	ins(e, 0x10000000u | ((imm & 3) << 29) | ((imm >> 2) << 5) | (uint32_t)rd);
}

static void str_at(emit *e, int rt, uint32_t to) /* adr x9, to; str xt, [x9] */
{
	adr(e, 9, to);
	ins(e, 0xF9000000u | (9u << 5) | (uint32_t)rt);
}

static void movz(emit *e, int rd, uint16_t v)
{
	ins(e, 0xD2800000u | ((uint32_t)v << 5) | (uint32_t)rd);
}

static void blr(emit *e, int rn)
{
	ins(e, 0xD63F0000u | ((uint32_t)rn << 5));
}

static size_t branch(emit *e, uint32_t op) /* b / cbz x0: patched by land */
{
	size_t at = e->n;
	ins(e, op);
	return at;
}

static void land(emit *e, size_t at)
{
	if (e->bad)
		return;
	int32_t d = (int32_t)(e->n - at);
	if ((e->p[at] & 0xFC000000u) == 0x14000000u)
		e->p[at] |= (uint32_t)d & 0x3ffffff;
	else
		e->p[at] |= ((uint32_t)d & 0x7ffff) << 5;
}

/* data: the saved registers x0..x30, sp, pc, pstate; then the addresses */
#define D_ADDR (EMBER_INJ_DATA + 8 * R_N)

int ember__iarch_stub(uint8_t *page, uint64_t base, const ember__iregs *resume,
		      const ember__iaddrs *a, ember__iregs *entry)
{
	uint64_t addrs[3] = {a->dlopen, a->dlsym, a->dlerror};
	memcpy(page + EMBER_INJ_DATA, resume->w, 8 * R_N);
	memcpy(page + D_ADDR, addrs, sizeof(addrs));
	memset(page + EMBER_INJ_DATA + EMBER_INJ_R_HANDLE, 0, 0x30);
	emit e = {(uint32_t *)(void *)page, 0, EMBER_INJ_DATA / 4, 0};
	/* a stack below the thread's own, 16-aligned */
	ldr_lit(&e, 16, EMBER_INJ_DATA + 8 * R_SP);
	ins(&e, 0xD1000000u | (256u << 10) | (16u << 5) | 16u);            /* sub x16, x16, #256 */
	ins(&e, 0x92000000u | (1u << 22) | (60u << 16) | (59u << 10) | (16u << 5) | 31u); /* and sp, x16, #~15 */
	adr(&e, 0, EMBER_INJ_LIB);
	ins(&e, 0x52800000u | ((uint32_t)(a->flags & 0xffff) << 5) | 1u); /* mov w1, #flags */
	ldr_lit(&e, 16, D_ADDR);
	blr(&e, 16);
	str_at(&e, 0, EMBER_INJ_DATA + EMBER_INJ_R_HANDLE);
	if (a->close_fd >= 0) { /* close(fd): x0 the only register a call changes */
		movz(&e, 0, (uint16_t)(a->close_fd & 0xffff));
		if (a->close_fd > 0xffff) /* movk x0, #hi, lsl 16 */
			ins(&e, 0xF2A00000u | ((uint32_t)((a->close_fd >> 16) & 0xffff) << 5));
		movz(&e, 8, 57);      /* SYS_close */
		ins(&e, 0xD4000001u); /* svc #0 */
		ins(&e, 0xF9400120u); /* ldr x0, [x9]: the handle again */
	}
	size_t open_failed = branch(&e, 0xB4000000u); /* cbz x0 */
	adr(&e, 1, EMBER_INJ_FN);
	ldr_lit(&e, 16, D_ADDR + 8);
	blr(&e, 16);
	str_at(&e, 0, EMBER_INJ_DATA + EMBER_INJ_R_FN);
	size_t sym_failed = branch(&e, 0xB4000000u);
	ins(&e, 0xAA0003F0u); /* mov x16, x0 */
	adr(&e, 0, EMBER_INJ_ARG);
	blr(&e, 16);
	str_at(&e, 0, EMBER_INJ_DATA + EMBER_INJ_R_RET);
	movz(&e, 10, 3);
	str_at(&e, 10, EMBER_INJ_DATA + EMBER_INJ_R_STATUS);
	size_t to_done = branch(&e, 0x14000000u);
	land(&e, open_failed);
	movz(&e, 10, 1);
	str_at(&e, 10, EMBER_INJ_DATA + EMBER_INJ_R_STATUS);
	size_t to_err = branch(&e, 0x14000000u);
	land(&e, sym_failed);
	movz(&e, 10, 2);
	str_at(&e, 10, EMBER_INJ_DATA + EMBER_INJ_R_STATUS);
	land(&e, to_err);
	ldr_lit(&e, 16, D_ADDR + 16);
	blr(&e, 16);
	str_at(&e, 0, EMBER_INJ_DATA + EMBER_INJ_R_ERR);
	land(&e, to_done);
	movz(&e, 10, 1);
	str_at(&e, 10, EMBER_INJ_DATA + EMBER_INJ_R_DONE);
	/* every register as it was (x16 excepted), then back */
	adr(&e, 16, EMBER_INJ_DATA);
	ins(&e, 0xF9400000u | ((uint32_t)R_PSTATE << 10) | (16u << 5) | 17u); /* ldr x17, [x16, pstate] */
	ins(&e, 0xD51B4211u);                                                 /* msr nzcv, x17 */
	ins(&e, 0xF9400000u | ((uint32_t)R_SP << 10) | (16u << 5) | 17u);     /* ldr x17, [x16, sp] */
	ins(&e, 0x9100023Fu);                                                 /* mov sp, x17 */
	for (uint32_t r = 0; r < 16; r += 2)                                  /* ldp x0..x15 */
		ins(&e, 0xA9400000u | (r << 15) | ((r + 1) << 10) | (16u << 5) | r);
	ins(&e, 0xF9400000u | (17u << 10) | (16u << 5) | 17u); /* ldr x17, [x16, #136] */
	for (uint32_t r = 18; r < 30; r += 2)                  /* ldp x18..x29 */
		ins(&e, 0xA9400000u | (r << 15) | ((r + 1) << 10) | (16u << 5) | r);
	ins(&e, 0xF9400000u | (30u << 10) | (16u << 5) | 30u);                /* ldr x30 */
	ins(&e, 0xF9400000u | ((uint32_t)R_PC << 10) | (16u << 5) | 16u);     /* ldr x16, [x16, pc] */
	ins(&e, 0xD61F0000u | (16u << 5));                                    /* br x16 */
	if (e.bad)
		return -1;
	*entry = *resume;
	entry->w[R_PC] = base;
	entry->syscall_nr = -1;
	entry->w[R_HOW] = 0;
	return 0;
}
#endif
