/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_work.c - the program `emberprof attach --alloc` attaches to in
 * test_attach_alloc.sh: `alloc_work OUT`, driven by lines on its standard
 * input (a FIFO the test holds open).
 *
 * At start it calls each allocation function once (binding its lazy PLT
 * entries), records the value of every GOT entry of malloc & co in every
 * loaded module (JUMP_SLOT and GLOB_DAT relocations, read from the
 * modules' own dynamic sections), allocates one block in alwork_site_before
 * that it frees only at the end, and starts three threads that allocate
 * and free in a loop, each block filled with a byte pattern checked before
 * it is freed: alwork_site_malloc (malloc), alwork_site_calloc (calloc,
 * then realloc and posix_memalign) and, in the shared library
 * (alloc_work_lib.c), alwork_lib_site (malloc through a GLOB_DAT entry).
 * Each keeps its last 64 blocks live. OUT gets "ready SLOTS".
 *
 * On "late" (with LATE_LIB, the path of alloc_work_late.c's library, as
 * the second argument) it loads that library with dlopen, records its
 * GOT entries too and starts a thread allocating through it
 * (alwork_late_site); OUT gets "late SLOTS".
 *
 * On "check" OUT gets "check changed=N/SLOTS": how many of the entries
 * differ from the recorded values now. On "stop" the threads end; OUT
 * gets "done restored=N/SLOTS bad=B" (entries equal to the recorded
 * values now, blocks whose bytes were wrong), standard output
 * the program's result lines, which do not depend on anything the attach
 * did; then it waits for EOF and exits 0, or 3 when an entry differs now
 * or a block was corrupted.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

void *alwork_lib_site(size_t n, unsigned char fill);
int alwork_lib_release(void *p, size_t n, unsigned char fill);

void *alwork_site_malloc(size_t n, unsigned char fill);
void *alwork_site_calloc(size_t n, unsigned char fill);
void *alwork_site_memalign(size_t n, unsigned char fill);
void *alwork_site_before(size_t n);

#define KEEP 64
#define MAX_SLOTS 512

static const char *const names[] = {"malloc",	     "free",	 "calloc", "realloc",
				    "reallocarray",  "posix_memalign", "aligned_alloc",
				    "memalign",	     "valloc",	 "pvalloc"};

static uintptr_t slot_addr[MAX_SLOTS], slot_val[MAX_SLOTS];
/* An entry recorded unbound (its value inside its own module: a lazy PLT
 * stub) that the loader binds later, when the module first calls through
 * it, holds the name's definition then: that is not a change of ours
 * (aarch64's libc binds its own calls of malloc lazily). */
static uintptr_t slot_bound[MAX_SLOTS];
static int nslots;
static volatile uintptr_t touched;
static atomic_int stop_flag, bad_blocks;

#if defined(__x86_64__) || defined(__aarch64__)
static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}
#endif

static int record_module(struct dl_phdr_info *info, size_t size, void *ud)
{
	(void)size;
	const char *only = ud; /* NULL: every module */
	if (only && strcmp(info->dlpi_name, only))
		return 0;
#if !defined(__x86_64__) && !defined(__aarch64__)
	(void)info;
	(void)names;
	return 0; /* the test skips there: attach --alloc is x86-64's and aarch64's */
#else
	uintptr_t base = info->dlpi_addr, vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			uintptr_t a = base + info->dlpi_phdr[i].p_vaddr;
			lo = a < lo ? a : lo;
			hi = a + info->dlpi_phdr[i].p_memsz > hi ? a + info->dlpi_phdr[i].p_memsz : hi;
		}
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
		if (info->dlpi_phdr[i].p_type == PT_LOAD && vdso >= base + info->dlpi_phdr[i].p_vaddr &&
		    vdso < base + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz)
			return 0;
	}
	if (!dyn)
		return 0;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	const ElfW(Rela) *rel[2] = {NULL, NULL};
	size_t nrel[2] = {0, 0};
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			str = (const char *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_RELA)
			rel[0] = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_RELASZ)
			nrel[0] = d->d_un.d_val / sizeof(ElfW(Rela));
		else if (d->d_tag == DT_JMPREL)
			rel[1] = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_PLTRELSZ)
			nrel[1] = d->d_un.d_val / sizeof(ElfW(Rela));
	}
	if (!sym || !str)
		return 0;
	for (int t = 0; t < 2; t++)
		for (size_t k = 0; rel[t] && k < nrel[t]; k++) {
			unsigned type = (unsigned)ELF64_R_TYPE(rel[t][k].r_info);
#if defined(__x86_64__)
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
#else
			if (type != R_AARCH64_JUMP_SLOT && type != R_AARCH64_GLOB_DAT)
#endif
				continue;
			const char *name = str + sym[ELF64_R_SYM(rel[t][k].r_info)].st_name;
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (!strcmp(name, names[i]) && nslots < MAX_SLOTS) {
					slot_addr[nslots] = base + rel[t][k].r_offset;
					slot_val[nslots] = *(const uintptr_t *)slot_addr[nslots];
					slot_bound[nslots] =
						slot_val[nslots] >= lo && slot_val[nslots] < hi
							? (uintptr_t)dlsym(RTLD_DEFAULT, name)
							: 0;
					nslots++;
				}
		}
	return 0;
#endif
}

/* Does entry i hold what it held at start (or, recorded unbound, what
 * the loader binds it to)? */
static int slot_same(int i)
{
	uintptr_t v = __atomic_load_n((const uintptr_t *)slot_addr[i], __ATOMIC_RELAXED);
	return v == slot_val[i] || (slot_bound[i] && v == slot_bound[i]);
}

static int changed_slots(void)
{
	int n = 0;
	for (int i = 0; i < nslots; i++)
		n += !slot_same(i);
	return n;
}

static int check(const unsigned char *p, size_t n, unsigned char fill)
{
	for (size_t i = 0; i < n; i += 61)
		if (p[i] != fill)
			return -1;
	return 0;
}

__attribute__((noinline)) void *alwork_site_malloc(size_t n, unsigned char fill)
{
	unsigned char *p = malloc(n);
	if (p)
		memset(p, fill, n);
	return p;
}

__attribute__((noinline)) void *alwork_site_calloc(size_t n, unsigned char fill)
{
	unsigned char *p = calloc(n / 8, 8);
	if (p && check(p, n, 0) == 0)
		memset(p, fill, n);
	unsigned char *q = p ? realloc(p, n * 2) : NULL;
	if (!q)
		return p;
	memset(q + n, fill, n);
	return q;
}

__attribute__((noinline)) void *alwork_site_memalign(size_t n, unsigned char fill)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, n) != 0)
		return NULL;
	memset(p, fill, n);
	return p;
}

__attribute__((noinline)) void *alwork_site_before(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 0x5a, n);
	return p;
}

static void *(*late_site)(size_t);
static void (*late_release)(void *);

static void *late_work(void *arg)
{
	(void)arg;
	void *keep[KEEP] = {0};
	struct timespec nap = {0, 200000};
	for (long r = 0; !atomic_load(&stop_flag); r++) {
		int i = (int)(r % KEEP);
		if (keep[i])
			late_release(keep[i]);
		keep[i] = late_site(2000);
		if (r % 16 == 15)
			nanosleep(&nap, NULL);
	}
	for (int i = 0; i < KEEP; i++)
		if (keep[i])
			late_release(keep[i]);
	return NULL;
}

typedef struct worker {
	int kind;
	size_t size;
	long rounds;
} worker;

/* Checks a block's bytes (counting a wrong one) and frees it: the
 * library's blocks in the library. */
static void release(int kind, void *p, size_t n, unsigned char fill)
{
	int bad = kind == 2 ? alwork_lib_release(p, n, fill) : check(p, n, fill);
	if (bad)
		atomic_fetch_add(&bad_blocks, 1);
	if (kind != 2)
		free(p);
}

static void *work(void *arg)
{
	worker *w = arg;
	void *keep[KEEP] = {0};
	size_t keep_n[KEEP] = {0};
	unsigned char fill = (unsigned char)(0x11 * (w->kind + 1));
	struct timespec nap = {0, 200000};
	for (long r = 0; !atomic_load(&stop_flag); r++) {
		int i = (int)(r % KEEP);
		if (keep[i])
			release(w->kind, keep[i], keep_n[i], fill);
		size_t n = w->size + (size_t)(r % 7) * 16;
		if (w->kind == 0) {
			keep[i] = alwork_site_malloc(n, fill);
		} else if (w->kind == 1) {
			keep[i] = r % 2 ? alwork_site_calloc(n, fill) : alwork_site_memalign(n, fill);
			n = r % 2 ? n * 2 : n;
		} else {
			keep[i] = alwork_lib_site(n, fill);
		}
		keep_n[i] = n;
		w->rounds++;
		if (r % 16 == 15)
			nanosleep(&nap, NULL); /* the machine is shared */
	}
	for (int i = 0; i < KEEP; i++)
		if (keep[i])
			release(w->kind, keep[i], keep_n[i], fill);
	return NULL;
}

/* Each allocation function once: their lazy PLT entries bound before
 * the GOT is recorded. */
static void touch_all(void)
{
	void *p = malloc(16), *q = calloc(2, 8);
	p = realloc(p, 32);
	p = reallocarray(p, 4, 16);
	void *a = aligned_alloc(64, 64), *m = memalign(64, 64), *v = valloc(64), *pv = pvalloc(64);
	void *pm = NULL;
	if (posix_memalign(&pm, 64, 64) != 0)
		pm = NULL;
	/* (kept observable: a compiler drops an allocation nothing reads) */
	touched = (uintptr_t)p ^ (uintptr_t)q ^ (uintptr_t)a ^ (uintptr_t)m ^ (uintptr_t)v ^
		  (uintptr_t)pv ^ (uintptr_t)pm;
	free(p);
	free(q);
	free(a);
	free(m);
	free(v);
	free(pv);
	free(pm);
	free(alwork_lib_site(8, 1));
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: alloc_work OUT [LATE_LIB]\n");
		return 2;
	}
	touch_all();
	dl_iterate_phdr(record_module, NULL);
	void *before = alwork_site_before(1 << 20);
	worker w[3] = {{0, 1000, 0}, {1, 400, 0}, {2, 3000, 0}};
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, work, &w[i]);
	FILE *out = fopen(argv[1], "w");
	if (!out)
		return 2;
	fprintf(out, "ready %d\n", nslots);
	fflush(out);
	char line[64];
	pthread_t late_th;
	int late = 0;
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "stop\n")) {
		if (!strcmp(line, "late\n") && argc == 3 && !late) {
			void *h = dlopen(argv[2], RTLD_NOW);
			late_site = h ? (void *(*)(size_t))dlsym(h, "alwork_late_site") : NULL;
			late_release = h ? (void (*)(void *))dlsym(h, "alwork_late_release") : NULL;
			if (!late_site || !late_release) {
				fprintf(stderr, "alloc_work: cannot load %s: %s\n", argv[2], dlerror());
				return 2;
			}
			late_release(late_site(8)); /* its lazy entries bound */
			dl_iterate_phdr(record_module, argv[2]);
			late = pthread_create(&late_th, NULL, late_work, NULL) == 0;
			if (late)
				pthread_setname_np(late_th, "late-alloc");
			fprintf(out, "late %d\n", nslots);
			fflush(out);
		}
		if (!strcmp(line, "check\n")) {
			fprintf(out, "check changed=%d/%d\n", changed_slots(), nslots);
			fflush(out);
		}
	}
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	if (late)
		pthread_join(late_th, NULL);
	int same = nslots - changed_slots();
	for (int i = 0; i < nslots; i++)
		if (!slot_same(i))
			fprintf(stderr, "alloc_work: GOT entry at %#lx holds %#lx, not %#lx as at start\n",
				(unsigned long)slot_addr[i], (unsigned long)*(const uintptr_t *)slot_addr[i],
				(unsigned long)slot_val[i]);
	free(before);
	fprintf(out, "done restored=%d/%d bad=%d\n", same, nslots, atomic_load(&bad_blocks));
	fflush(out);
	/* the result: the same whether or not anything attached */
	printf("threads: 3 stopped, blocks %s\n", atomic_load(&bad_blocks) ? "CORRUPTED" : "intact");
	printf("rounds: %s\n", w[0].rounds > 0 && w[1].rounds > 0 && w[2].rounds > 0 ? "all ran" : "some never ran");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return same == nslots && !atomic_load(&bad_blocks) ? 0 : 3;
}
