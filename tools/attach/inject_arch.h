/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inject_arch.h - what inject.c needs of an architecture: a thread's
 * registers through ptrace, the system call it was stopped in, a system
 * call made on it, and the stub that calls into the loaded library and
 * returns to where the thread was (inject_x86_64.c, inject_aarch64.c).
 * Not async-signal-safe.
 */
#ifndef EMBER_INJECT_ARCH_H
#define EMBER_INJECT_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Room for any architecture's general registers (x86-64 user_regs_struct
 * is 27 words, aarch64 user_pt_regs 34) and the system call number. */
typedef struct ember__iregs {
	uint64_t w[40];
	int64_t syscall_nr; /* aarch64: NT_ARM_SYSTEM_CALL */
} ember__iregs;

int ember__iarch_get(pid_t tid, ember__iregs *r);
int ember__iarch_set(pid_t tid, const ember__iregs *r);

/* The system call the thread was stopped in (-1: none), and its return
 * register (the kernel's -ERESTART... code while stopped). */
long ember__iarch_syscall(const ember__iregs *r);
long ember__iarch_retval(const ember__iregs *r);
/* The address of the system call instruction it was stopped after. */
uint64_t ember__iarch_syscall_insn(const ember__iregs *r);

/* r made to execute system call nr(a[0..5]) at the instruction `insn`,
 * with no restart of the interrupted one. */
void ember__iarch_setup_syscall(ember__iregs *r, uint64_t insn, long nr, const uint64_t a[6]);

/* Makes the kernel's restart of the interrupted call explicit in r (pc
 * back on the system call instruction, its number in place) when ret is
 * one of -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND,
 * -ERESTART_RESTARTBLOCK, or -EINTR with `eintr_too` (a call the kernel
 * does not restart, whose EINTR the program must not see). arg0: the
 * call's first argument as the kernel saved it (/proc/PID/task/TID/syscall:
 * aarch64 returns in the register that held it). */
void ember__iarch_restart(ember__iregs *r, int eintr_too, uint64_t arg0);

/* The layout of the page (inject.c fills the strings and reads results). */
#define EMBER_INJ_PAGE_LEN 0x8000u
#define EMBER_INJ_DATA 0x1000u     /* saved registers, results */
#define EMBER_INJ_LIB 0x2000u      /* the library's path, NUL-terminated */
#define EMBER_INJ_FN 0x3000u       /* the function's name */
#define EMBER_INJ_ARG 0x4000u      /* its argument, up to the end of the page */
/* results, at EMBER_INJ_DATA + : */
#define EMBER_INJ_R_HANDLE 0x200u  /* dlopen's */
#define EMBER_INJ_R_FN 0x208u      /* dlsym's */
#define EMBER_INJ_R_RET 0x210u     /* fn's return */
#define EMBER_INJ_R_ERR 0x218u     /* dlerror()'s string, after a failure */
#define EMBER_INJ_R_STATUS 0x220u  /* 1 dlopen failed, 2 dlsym failed, 3 called */
#define EMBER_INJ_R_DONE 0x228u    /* 1 once the registers are being restored */

/* The addresses the stub calls, in the process, and what it does
 * between dlopen and dlsym. */
typedef struct ember__iaddrs {
	uint64_t dlopen, dlsym, dlerror;
	int flags;    /* dlopen's */
	int close_fd; /* >= 0: a descriptor of the process the stub closes
			 (system call close) right after dlopen, whatever it
			 returned: the in-memory copy dlopen read; -1: none */
} ember__iaddrs;

/*
 * The page's code (at offset 0) and saved registers (in the data part),
 * for a page at `base` of the process, resuming the thread as `resume`
 * says (its original registers, restart made explicit). page has
 * EMBER_INJ_PAGE_LEN bytes; the strings are the caller's. Then *entry is
 * where the thread starts (its stack pointer stays). 0, or -1 if the stub
 * does not fit.
 */
int ember__iarch_stub(uint8_t *page, uint64_t base, const ember__iregs *resume,
		      const ember__iaddrs *a, ember__iregs *entry);

#endif
