/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names_prog.c - the program of the names tests, run under
 * `emberprof run`; each mode spends CPU where one kind of name is needed:
 *
 *   plt SECS      calls fx_nop() through the PLT in a tight loop: the
 *                 stub itself is sampled, and must be "fx_nop@plt"
 *   vers SECS     runs fx_vers(), defined as fx_vers@@FX_2
 *   alloc SECS    allocates through the library while running fx_vers()
 *   threads       threads started by libc's own pthread_create (the
 *                 preloaded hook does not see them start) and one through
 *                 the hook, each named with pthread_setname_np
 *   jit SECS      generates two loop functions into an mmap'd executable
 *                 page, names them in /tmp/perf-PID.map (with malformed
 *                 lines around), runs the first, then appends the second's
 *                 line and runs it; removes the map at the end
 *
 * CPU times are per phase, measured with the CPU clocks, so the load of a
 * shared machine only stretches the run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "names_fx.h"

static double cpu_s(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile int sink;

static void run_plt(double secs)
{
	double end = cpu_s(CLOCK_PROCESS_CPUTIME_ID) + secs;
	int x = 0;
	while (cpu_s(CLOCK_PROCESS_CPUTIME_ID) < end)
		for (int i = 0; i < 1000000; i++)
			x = fx_nop(x);
	sink = x;
}

static void run_vers(double secs, int alloc)
{
	double end = cpu_s(CLOCK_PROCESS_CPUTIME_ID) + secs;
	while (cpu_s(CLOCK_PROCESS_CPUTIME_ID) < end) {
		sink = (int)fx_vers(200000);
		if (alloc) {
			void *p = fx_alloc(4096 + (size_t)(sink & 1));
			memset(p, 1, 64);
			free(p);
		}
	}
}

static void *burn(void *name)
{
	pthread_setname_np(pthread_self(), name);
	double end = cpu_s(CLOCK_THREAD_CPUTIME_ID) + 0.4;
	while (cpu_s(CLOCK_THREAD_CPUTIME_ID) < end)
		sink = (int)fx_vers(100000);
	return NULL;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static int run_threads(void)
{
	/* libc's own pthread_create, not the one symbol lookup finds first
	 * (emberprof's, when it is preloaded) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	create_fn raw = libc ? (create_fn)dlsym(libc, "pthread_create") : NULL;
	if (!raw) {
		fprintf(stderr, "names_prog: libc's pthread_create not found\n");
		return 1;
	}
	static char names[3][16] = {"fx-raw-0", "fx-raw-1", "fx-raw-2"};
	pthread_t t[4];
	for (int i = 0; i < 3; i++)
		if (raw(&t[i], NULL, burn, names[i]) != 0)
			return 1;
	if (pthread_create(&t[3], NULL, burn, "fx-hooked") != 0)
		return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* A function `long f(long n)` that counts n down to zero, at `at`. */
static size_t emit_loop(uint8_t *at)
{
#if defined(__x86_64__)
	static const uint8_t code[] = {0x48, 0xff, 0xcf, /* dec %rdi */
				       0x75, 0xfb,       /* jnz .-3 */
				       0x48, 0x89, 0xf8, /* mov %rdi,%rax */
				       0xc3};            /* ret */
	memcpy(at, code, sizeof(code));
	return sizeof(code);
#elif defined(__aarch64__)
	static const uint32_t code[] = {0xf1000400, /* subs x0, x0, #1 */
					0x54ffffe1, /* b.ne .-4 */
					0xd65f03c0}; /* ret */
	memcpy(at, code, sizeof(code));
	return sizeof(code);
#else
	(void)at;
	return 0;
#endif
}

typedef long (*loop_fn)(long);

static void run_jit_fn(loop_fn f, double secs)
{
	double end = cpu_s(CLOCK_PROCESS_CPUTIME_ID) + secs;
	while (cpu_s(CLOCK_PROCESS_CPUTIME_ID) < end)
		sink = (int)f(20000000);
}

static int run_jit(double secs)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	size_t n1 = emit_loop(mem), n2 = emit_loop(mem + 256);
	if (!n1) {
		fprintf(stderr, "names_prog: no code generator for this architecture\n");
		return 77;
	}
	__builtin___clear_cache((char *)mem, (char *)mem + page);
	if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC) != 0)
		return 1;

	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	/* malformed lines the reader must skip (and count) */
	fprintf(f, "not a perf map line\n");
	fprintf(f, "zz12 10 bad_start\n");
	fprintf(f, "%lx 0 zero_size\n", (unsigned long)(uintptr_t)mem);
	fprintf(f, "%lx 10\n", (unsigned long)(uintptr_t)mem);
	/* an old name for the second function's place, replaced below */
	fprintf(f, "%lx %zx jit_stale_name\n", (unsigned long)(uintptr_t)(mem + 256), n2);
	fprintf(f, "%lx %zx jit_fx_first loop\n", (unsigned long)(uintptr_t)mem, n1);
	fflush(f);
	run_jit_fn((loop_fn)(uintptr_t)mem, secs);
	/* written after the first window's symbolization: read as the file grows */
	fprintf(f, "0x%lx 0x%zx jit_fx_second\n", (unsigned long)(uintptr_t)(mem + 256), n2);
	fclose(f);
	run_jit_fn((loop_fn)(uintptr_t)(mem + 256), secs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: names_prog plt|vers|alloc|threads|jit [SECS]\n");
		return 2;
	}
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	if (!strcmp(argv[1], "plt"))
		run_plt(secs);
	else if (!strcmp(argv[1], "vers"))
		run_vers(secs, 0);
	else if (!strcmp(argv[1], "alloc"))
		run_vers(secs, 1);
	else if (!strcmp(argv[1], "threads"))
		return run_threads();
	else if (!strcmp(argv[1], "jit")) {
		int rc = run_jit(secs);
		char path[64];
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		unlink(path);
		return rc;
	} else {
		fprintf(stderr, "names_prog: unknown mode %s\n", argv[1]);
		return 2;
	}
	return 0;
}
