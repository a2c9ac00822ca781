/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inject_x86_64.c - inject_arch.h for x86-64: user_regs_struct through
 * PTRACE_GETREGS, and the stub in machine code.
 */
#if defined(__x86_64__)
#include "attach/inject_arch.h"

#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

_Static_assert(sizeof(struct user_regs_struct) <= sizeof(((ember__iregs *)0)->w),
	       "user_regs_struct fits");

#define U(r) ((struct user_regs_struct *)(void *)(r)->w)
#define UC(r) ((const struct user_regs_struct *)(const void *)(r)->w)

int ember__iarch_get(pid_t tid, ember__iregs *r)
{
	memset(r, 0, sizeof(*r));
	return ptrace(PTRACE_GETREGS, tid, NULL, U(r)) == 0 ? 0 : -errno;
}

int ember__iarch_set(pid_t tid, const ember__iregs *r)
{
	return ptrace(PTRACE_SETREGS, tid, NULL, UC(r)) == 0 ? 0 : -errno;
}

long ember__iarch_syscall(const ember__iregs *r)
{
	return (long)UC(r)->orig_rax;
}

long ember__iarch_retval(const ember__iregs *r)
{
	return (long)UC(r)->rax;
}

uint64_t ember__iarch_syscall_insn(const ember__iregs *r)
{
	return UC(r)->rip - 2; /* syscall: 0f 05 */
}

void ember__iarch_setup_syscall(ember__iregs *r, uint64_t insn, long nr, const uint64_t a[6])
{
	struct user_regs_struct *u = U(r);
	u->rip = insn;
	u->rax = (uint64_t)nr;
	u->orig_rax = (uint64_t)-1;
	u->rdi = a[0];
	u->rsi = a[1];
	u->rdx = a[2];
	u->r10 = a[3];
	u->r8 = a[4];
	u->r9 = a[5];
}

void ember__iarch_restart(ember__iregs *r, int eintr_too, uint64_t arg0)
{
	(void)arg0; /* rdi keeps it */
	struct user_regs_struct *u = U(r);
	long ret = (long)u->rax, nr = (long)u->orig_rax;
	if (nr < 0)
		return;
	if (ret == -512 || ret == -513 || ret == -514 || (eintr_too && ret == -EINTR)) {
		u->rax = (uint64_t)nr;
		u->rip -= 2;
	} else if (ret == -516) { /* -ERESTART_RESTARTBLOCK */
		u->rax = SYS_restart_syscall;
		u->rip -= 2;
	}
	u->orig_rax = (uint64_t)-1;
}

/* ---- the stub ---- */

typedef struct emit {
	uint8_t *p;
	size_t n, cap;
	int bad;
} emit;

static void bytes(emit *e, const void *b, size_t n)
{
	if (e->n + n > e->cap) {
		e->bad = 1;
		return;
	}
	memcpy(e->p + e->n, b, n);
	e->n += n;
}

static void u32(emit *e, uint32_t v)
{
	bytes(e, &v, 4);
}

static void u64(emit *e, uint64_t v)
{
	bytes(e, &v, 8);
}

/* An instruction with a rip-relative operand: opcode bytes, disp32 to
 * page offset `to`, then `imm_len` bytes of immediate (imm). */
static void riprel(emit *e, const char *op, size_t oplen, uint32_t to, const void *imm,
		   size_t imm_len)
{
	bytes(e, op, oplen);
	int32_t disp = (int32_t)((int64_t)to - (int64_t)(e->n + 4 + imm_len));
	u32(e, (uint32_t)disp);
	if (imm_len)
		bytes(e, imm, imm_len);
}

/* jz / jmp rel32 placeholders, patched by `land` */
static size_t jump(emit *e, const char *op, size_t oplen)
{
	bytes(e, op, oplen);
	size_t at = e->n;
	u32(e, 0);
	return at;
}

static void land(emit *e, size_t at)
{
	if (e->bad)
		return;
	int32_t rel = (int32_t)((int64_t)e->n - (int64_t)(at + 4));
	memcpy(e->p + at, &rel, 4);
}

static void store_rax(emit *e, uint32_t data_off)
{
	riprel(e, "\x48\x89\x05", 3, EMBER_INJ_DATA + data_off, NULL, 0);
}

static void store_imm(emit *e, uint32_t data_off, uint32_t v)
{
	riprel(e, "\x48\xc7\x05", 3, EMBER_INJ_DATA + data_off, &v, 4);
}

static void call_abs(emit *e, uint64_t fn)
{
	bytes(e, "\x48\xb8", 2); /* mov rax, imm64 */
	u64(e, fn);
	bytes(e, "\xff\xd0", 2); /* call rax */
}

/* saved registers, in the order the stub pops them */
enum { S_R15, S_R14, S_R13, S_R12, S_R11, S_R10, S_R9, S_R8, S_RDI, S_RSI, S_RBP, S_RBX,
       S_RDX, S_RCX, S_RAX, S_FLAGS, S_RSP, S_RIP, S_N };

int ember__iarch_stub(uint8_t *page, uint64_t base, const ember__iregs *resume,
		      const ember__iaddrs *a, ember__iregs *entry)
{
	const struct user_regs_struct *u = UC(resume);
	uint64_t saved[S_N] = {
		[S_R15] = u->r15, [S_R14] = u->r14, [S_R13] = u->r13, [S_R12] = u->r12,
		[S_R11] = u->r11, [S_R10] = u->r10, [S_R9] = u->r9,   [S_R8] = u->r8,
		[S_RDI] = u->rdi, [S_RSI] = u->rsi, [S_RBP] = u->rbp, [S_RBX] = u->rbx,
		[S_RDX] = u->rdx, [S_RCX] = u->rcx, [S_RAX] = u->rax, [S_FLAGS] = u->eflags,
		[S_RSP] = u->rsp, [S_RIP] = u->rip,
	};
	memcpy(page + EMBER_INJ_DATA, saved, sizeof(saved));
	memset(page + EMBER_INJ_DATA + EMBER_INJ_R_HANDLE, 0, 0x30);

	emit e = {page, 0, EMBER_INJ_DATA, 0};
	/* a stack below the thread's own, past its red zone, 16-aligned */
	riprel(&e, "\x48\x8b\x25", 3, EMBER_INJ_DATA + 8 * S_RSP, NULL, 0); /* mov rsp, [rip+] */
	bytes(&e, "\x48\x81\xec\x00\x01\x00\x00", 7);                      /* sub rsp, 256 */
	bytes(&e, "\x48\x83\xe4\xf0", 4);                                  /* and rsp, -16 */
	/* handle = dlopen(lib, flags) */
	riprel(&e, "\x48\x8d\x3d", 3, EMBER_INJ_LIB, NULL, 0); /* lea rdi, [rip+] */
	bytes(&e, "\xbe", 1);                                  /* mov esi, imm32 */
	u32(&e, (uint32_t)a->flags);
	call_abs(&e, a->dlopen);
	store_rax(&e, EMBER_INJ_R_HANDLE);
	if (a->close_fd >= 0) {
		bytes(&e, "\xbf", 1); /* mov edi, imm32 */
		u32(&e, (uint32_t)a->close_fd);
		bytes(&e, "\xb8\x03\x00\x00\x00\x0f\x05", 7); /* mov eax, SYS_close; syscall */
		riprel(&e, "\x48\x8b\x05", 3, EMBER_INJ_DATA + EMBER_INJ_R_HANDLE, NULL, 0); /* mov rax, [rip+] */
	}
	bytes(&e, "\x48\x85\xc0", 3); /* test rax, rax */
	size_t open_failed = jump(&e, "\x0f\x84", 2);
	/* fn = dlsym(handle, name) */
	bytes(&e, "\x48\x89\xc7", 3);                         /* mov rdi, rax */
	riprel(&e, "\x48\x8d\x35", 3, EMBER_INJ_FN, NULL, 0); /* lea rsi, [rip+] */
	call_abs(&e, a->dlsym);
	store_rax(&e, EMBER_INJ_R_FN);
	bytes(&e, "\x48\x85\xc0", 3);
	size_t sym_failed = jump(&e, "\x0f\x84", 2);
	/* ret = fn(arg) */
	riprel(&e, "\x48\x8d\x3d", 3, EMBER_INJ_ARG, NULL, 0);
	bytes(&e, "\xff\xd0", 2); /* call rax */
	store_rax(&e, EMBER_INJ_R_RET);
	store_imm(&e, EMBER_INJ_R_STATUS, 3);
	size_t to_done = jump(&e, "\xe9", 1);
	land(&e, open_failed);
	store_imm(&e, EMBER_INJ_R_STATUS, 1);
	size_t to_err = jump(&e, "\xe9", 1);
	land(&e, sym_failed);
	store_imm(&e, EMBER_INJ_R_STATUS, 2);
	land(&e, to_err);
	call_abs(&e, a->dlerror);
	store_rax(&e, EMBER_INJ_R_ERR);
	land(&e, to_done);
	/* every register as it was, then back where the thread was */
	riprel(&e, "\x48\x8d\x25", 3, EMBER_INJ_DATA, NULL, 0); /* lea rsp, [rip+] */
	bytes(&e, "\x41\x5f\x41\x5e\x41\x5d\x41\x5c\x41\x5b\x41\x5a\x41\x59\x41\x58", 16);
	bytes(&e, "\x5f\x5e\x5d\x5b\x5a\x59\x58", 7); /* rdi rsi rbp rbx rdx rcx rax */
	bytes(&e, "\x9d", 1);                         /* popfq */
	store_imm(&e, EMBER_INJ_R_DONE, 1);           /* (mov: the flags stay) */
	riprel(&e, "\x48\x8b\x25", 3, EMBER_INJ_DATA + 8 * S_RSP, NULL, 0);
	riprel(&e, "\xff\x25", 2, EMBER_INJ_DATA + 8 * S_RIP, NULL, 0); /* jmp [rip+] */
	if (e.bad)
		return -1;
	*entry = *resume;
	U(entry)->rip = base;
	U(entry)->orig_rax = (uint64_t)-1;
	return 0;
}
#endif
