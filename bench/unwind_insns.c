/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_insns.c - the instruction count of one unwind, for comparing
 * architectures where time means nothing (aarch64 under qemu-user):
 *
 *     ember_bench_unwind_insns fp|dwarf N
 *
 * builds the DWARF tables of this process, recurses until the walk
 * records 32 frames (the recursion keeps frame pointers, so both walkers
 * see the same frames), takes getcontext() there and unwinds that context
 * N times with the chosen walker (the code the signal handler runs, called
 * directly). It prints the frames recorded; an external counter (qemu's
 * instruction-count plugin, bench/qemu_insn_plugin.c, or valgrind
 * --tool=callgrind on x86-64) counts the whole run, and
 * bench/unwind_insns.sh takes the difference of two values of N, which
 * cancels start-up and table building. A benchmark: judges nothing.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "cfi/unwind_tables.h"
#include "unwind/unwind.h"

#define WANT 32

static const ember__unwind_snapshot *g_snap;
static ember__stack_bounds g_bounds;
static int g_dwarf;
static long g_n;
static int g_frames;
static unsigned g_flags;

__attribute__((noinline)) static void unwind_here(void)
{
	ucontext_t uc;
	getcontext(&uc);
	ember__regs regs;
	ember__regs_from_ucontext(&uc, &regs);
	uint64_t pcs[WANT];
	for (long i = 0; i < g_n; i++) {
		g_flags = 0;
		g_frames = g_dwarf ? ember__unwind_dwarf(g_snap, 0, &regs, &g_bounds, pcs, WANT, &g_flags)
				   : ember__unwind_fp(&regs, &g_bounds, pcs, WANT, &g_flags);
		__asm__ volatile("" : : "r"(pcs) : "memory");
	}
}

__attribute__((noinline)) static int recurse(int level)
{
	if (level <= 1)
		unwind_here();
	else
		recurse(level - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
	return level;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "fp") && strcmp(argv[1], "dwarf"))) {
		fprintf(stderr, "usage: %s fp|dwarf N\n", argv[0]);
		return 2;
	}
	g_dwarf = !strcmp(argv[1], "dwarf");
	long n = strtol(argv[2], NULL, 10);
	static _Atomic(const ember__unwind_snapshot *) slot;
	ember__unwind_tables *t = NULL;
	if (ember__unwind_tables_new(&t, &slot, NULL) || ember__unwind_tables_refresh(t)) {
		fprintf(stderr, "cannot build the unwind tables\n");
		return 1;
	}
	g_snap = atomic_load(&slot);
	pthread_attr_t attr;
	void *addr;
	size_t size;
	pthread_getattr_np(pthread_self(), &attr);
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	g_bounds.lo = (uintptr_t)addr;
	g_bounds.hi = (uintptr_t)addr + size;
	/* Deep enough that the walk is cut at WANT frames, not at the end. */
	g_n = n;
	recurse(WANT + 4);
	printf("%s: %ld unwinds of %d frames (flags %u)\n", argv[1], n, g_frames, g_flags);
	return 0;
}
