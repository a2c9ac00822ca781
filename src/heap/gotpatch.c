/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gotpatch.c - malloc & co's GOT entries pointed at the hook's wrappers
 * in a process emberprof was loaded into late (gotpatch.h).
 */
#include "heap/gotpatch.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap/hook.h"
#include "util/error.h"

#define MAX_FNS 16

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_requested;
static int g_active;
static unsigned g_patched, g_restored; /* of the last patch (rescans included), its restore */

void ember__heap_got_request(int on)
{
	atomic_store(&g_requested, on ? 1 : 0);
}

int ember__heap_got_requested(void)
{
	return atomic_load(&g_requested);
}

int ember__heap_got_active(void)
{
	pthread_mutex_lock(&g_mu);
	int a = g_active;
	pthread_mutex_unlock(&g_mu);
	return a;
}

void ember__heap_got_last(unsigned *patched, unsigned *restored)
{
	pthread_mutex_lock(&g_mu);
	*patched = g_patched;
	*restored = g_restored;
	pthread_mutex_unlock(&g_mu);
}

#if defined(__x86_64__) || defined(__aarch64__)

/* The relocations that bind a call site (the PLT's slot, a GOT slot of
 * -fno-plt code) and an absolute data reference, per architecture. */
#if defined(__x86_64__)
#define R_SLOT_JUMP R_X86_64_JUMP_SLOT
#define R_SLOT_GLOB R_X86_64_GLOB_DAT
#define R_ABS R_X86_64_64
#else
#define R_SLOT_JUMP R_AARCH64_JUMP_SLOT
#define R_SLOT_GLOB R_AARCH64_GLOB_DAT
#define R_ABS R_AARCH64_ABS64
#endif

/* One slot patched: restored to `old` while it still holds `now`. */
typedef struct got_slot {
	uintptr_t addr, old, now;
	const void *phdr; /* its module, as dl_iterate_phdr names it */
	uintptr_t base;
} got_slot;

/* The protection of the process's mappings (/proc/self/maps), read at
 * each pass: a slot's page is made writable for the store only when it
 * is not, and given back exactly the protection it had. */
typedef struct prot_range {
	uintptr_t lo, hi;
	int prot;
} prot_range;

static ember__got_fn g_fns[MAX_FNS];
static uintptr_t g_orig[MAX_FNS]; /* the process allocator's definition of each name; 0: none */
static size_t g_nfns;
static got_slot *g_slots;
static size_t g_nslots, g_capslots;
static unsigned long long g_adds; /* dlpi_adds at the last scan */
static prot_range *g_prot;
static size_t g_nprot;

/* Reads /proc/self/maps into g_prot. 0 or -1 (then every store is
 * refused: a page of unknown protection is not touched). */
static int read_prot(void)
{
	free(g_prot);
	g_prot = NULL;
	g_nprot = 0;
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	size_t cap = 0;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[5];
		size_t len = strlen(line);
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3) {
			if (g_nprot == cap) {
				size_t nc = cap ? cap * 2 : 256;
				prot_range *n = realloc(g_prot, nc * sizeof(*n));
				if (!n)
					break;
				g_prot = n;
				cap = nc;
			}
			g_prot[g_nprot++] = (prot_range){lo, hi,
							 (perm[0] == 'r' ? PROT_READ : 0) |
								 (perm[1] == 'w' ? PROT_WRITE : 0) |
								 (perm[2] == 'x' ? PROT_EXEC : 0)};
		}
		/* the rest of a long line (a path) */
		while (len && line[len - 1] != '\n' && fgets(line, sizeof(line), f))
			len = strlen(line);
	}
	fclose(f);
	return g_nprot ? 0 : -1;
}

/* The protection of the page at pg, or -1 when unknown. */
static int prot_of(uintptr_t pg)
{
	for (size_t i = 0; i < g_nprot; i++)
		if (pg >= g_prot[i].lo && pg < g_prot[i].hi)
			return g_prot[i].prot;
	return -1;
}

/* What a scan needs of one module. */
typedef struct got_mod {
	uintptr_t base, lo, hi; /* load bias, mapped range */
	const ElfW(Sym) *sym;
	const char *str;
	const ElfW(Rela) *rel[2];
	size_t nrel[2];
	const void *phdr;
} got_mod;

/* A dynamic-section pointer: relocated by glibc's loader in place, but
 * not by every loader (an offset below the load bias is not relocated). */
static uintptr_t dyn_ptr(const got_mod *m, uintptr_t v)
{
	return v < m->base ? v + m->base : v;
}

/* Fills m from a module's headers. 0, or -1 to skip it (no dynamic
 * section, the vDSO, libemberprof itself). */
static int load_mod(const struct dl_phdr_info *info, got_mod *m)
{
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->lo = UINTPTR_MAX;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = m->base + ph->p_vaddr;
		if (ph->p_type == PT_LOAD) {
			if (a < m->lo)
				m->lo = a;
			if (a + ph->p_memsz > m->hi)
				m->hi = a + ph->p_memsz;
		} else if (ph->p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)a;
		}
	}
	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	uintptr_t self = (uintptr_t)(void *)ember__heap_got_patch;
	if (!dyn || m->lo >= m->hi || (vdso && vdso >= m->lo && vdso < m->hi) ||
	    (self >= m->lo && self < m->hi))
		return -1;
	uintptr_t rela = 0, relasz = 0, jmprel = 0, pltsz = 0, pltrel = DT_RELA;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: m->sym = (const ElfW(Sym) *)dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_STRTAB: m->str = (const char *)dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_RELA: rela = dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltsz = d->d_un.d_val; break;
		case DT_PLTREL: pltrel = d->d_un.d_val; break;
		default: break;
		}
	}
	if (!m->sym || !m->str)
		return -1;
	m->rel[0] = (const ElfW(Rela) *)rela;
	m->nrel[0] = rela ? relasz / sizeof(ElfW(Rela)) : 0;
	if (pltrel == DT_RELA && jmprel) {
		m->rel[1] = (const ElfW(Rela) *)jmprel;
		m->nrel[1] = pltsz / sizeof(ElfW(Rela));
	}
	return 0;
}

/* The index of `name` in g_fns, or -1. */
static int fn_index(const char *name)
{
	for (size_t i = 0; i < g_nfns; i++)
		if (!strcmp(g_fns[i].name, name))
			return (int)i;
	return -1;
}

/* One 8-byte store into a GOT slot; its page (read-only once the RELRO
 * region was protected) writable meanwhile, then as it was. 0, or -1
 * when its protection is unknown or mprotect refused. */
static int store_slot(uintptr_t addr, uintptr_t v)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)(page > 0 ? page : 4096);
	uintptr_t pg = addr & ~(uintptr_t)(len - 1);
	int prot = prot_of(pg);
	if (prot < 0 || !(prot & PROT_READ))
		return -1;
	int ro = !(prot & PROT_WRITE);
	if (ro && mprotect((void *)pg, len, prot | PROT_WRITE) != 0)
		return -1;
	/* aligned: a call through it sees the old or the new value */
	__atomic_store_n((uintptr_t *)addr, v, __ATOMIC_RELEASE);
	if (ro)
		(void)mprotect((void *)pg, len, prot);
	return 0;
}

static int add_slot(const got_slot *s)
{
	if (g_nslots == g_capslots) {
		size_t cap = g_capslots ? g_capslots * 2 : 64;
		got_slot *n = realloc(g_slots, cap * sizeof(*n));
		if (!n)
			return -1;
		g_slots = n;
		g_capslots = cap;
	}
	g_slots[g_nslots++] = *s;
	return 0;
}

/* Patches one module's slots (dl_iterate_phdr callback, the loader's
 * lock held: the module stays mapped meanwhile). */
static int patch_module(struct dl_phdr_info *info, size_t size, void *ud)
{
	(void)size;
	ember__got_stats *st = ud;
	got_mod m;
	if (load_mod(info, &m) != 0)
		return 0;
	st->modules++;
	for (int t = 0; t < 2; t++) {
		for (size_t k = 0; k < m.nrel[t]; k++) {
			const ElfW(Rela) *r = &m.rel[t][k];
			unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
			if (type != R_SLOT_JUMP && type != R_SLOT_GLOB && type != R_ABS)
				continue;
			const ElfW(Sym) *sym = &m.sym[ELF64_R_SYM(r->r_info)];
			if (!sym->st_name)
				continue;
			int i = fn_index(m.str + sym->st_name);
			if (i < 0)
				continue;
			uintptr_t addr = m.base + r->r_offset;
			uintptr_t v = __atomic_load_n((uintptr_t *)addr, __ATOMIC_ACQUIRE);
			uintptr_t w = (uintptr_t)g_fns[i].wrapper;
			if (v == w)
				continue; /* patched already (a rescan) */
			if (type == R_ABS) {
				st->absolute++; /* data, not a call site: left (gotpatch.h) */
				continue;
			}
			if (v == 0 || (m.base && v + m.base >= m.lo && v + m.base < m.hi)) {
				/* not relocated yet (0, or a link-time address of
				 * the module itself): a dlopen under way on another
				 * thread (the module is listed before the loader
				 * relocates it); the next rescan looks again */
				st->pending++;
				continue;
			}
			int own_def = sym->st_shndx != SHN_UNDEF && m.base + sym->st_value == v;
			int lazy = type == R_SLOT_JUMP && !own_def && v >= m.lo && v < m.hi;
			if (!g_orig[i] || (v != g_orig[i] && !lazy)) {
				st->elsewhere++;
				continue;
			}
			got_slot s = {addr, v, w, m.phdr, m.base};
			if (add_slot(&s) != 0 || store_slot(addr, w) != 0) {
				if (g_nslots && g_slots[g_nslots - 1].addr == addr)
					g_nslots--;
				st->failed++;
				continue;
			}
			st->patched++;
			g_patched++;
		}
	}
	return 0;
}

static int restore_module(struct dl_phdr_info *info, size_t size, void *ud)
{
	(void)size;
	unsigned *n = ud;
	for (size_t k = 0; k < g_nslots; k++) {
		got_slot *s = &g_slots[k];
		if (s->phdr != info->dlpi_phdr || s->base != info->dlpi_addr)
			continue;
		if (__atomic_load_n((uintptr_t *)s->addr, __ATOMIC_ACQUIRE) == s->now &&
		    store_slot(s->addr, s->old) == 0)
			(*n)++;
	}
	return 0;
}

/* Whether p is the start of a symbol definition (not a PLT entry whose
 * address a program took: dlsym returns those too). */
static int is_definition(void *p)
{
	Dl_info di;
	return p && dladdr(p, &di) && di.dli_saddr == p;
}

extern void *__libc_malloc(size_t);

/* The process's allocator: into g_orig, and the hook bound to it. */
static int find_allocator(void)
{
	void *m = dlsym(RTLD_DEFAULT, "malloc");
	void *h = RTLD_DEFAULT, *libc = NULL;
	Dl_info di;
	if (!is_definition(m)) {
		/* The program's PLT entry (a non-PIE program took malloc's
		 * address): the definition is libc's. */
		if (!dladdr((void *)__libc_malloc, &di) || !di.dli_fname ||
		    !(libc = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
			return ember__error(EMBER_ERR_UNSUPPORTED, "cannot find the process's malloc");
		h = libc;
		m = dlsym(h, "malloc");
	}
	for (size_t i = 0; i < g_nfns; i++) {
		void *p = dlsym(h, g_fns[i].name);
		g_orig[i] = is_definition(p) ? (uintptr_t)p : 0;
	}
	if (libc)
		dlclose(libc);
	int rc;
	if (m == (void *)__libc_malloc) {
		rc = ember__heap_use_next(NULL);
	} else {
		ember__heap_next n = {0};
#define ORIG(f) ((uintptr_t)(fn_index(#f) >= 0 ? g_orig[fn_index(#f)] : 0))
		n.malloc = (void *(*)(size_t))ORIG(malloc);
		n.free = (void (*)(void *))ORIG(free);
		n.calloc = (void *(*)(size_t, size_t))ORIG(calloc);
		n.realloc = (void *(*)(void *, size_t))ORIG(realloc);
		n.memalign = (void *(*)(size_t, size_t))ORIG(memalign);
		n.posix_memalign = (int (*)(void **, size_t, size_t))ORIG(posix_memalign);
		n.aligned_alloc = (void *(*)(size_t, size_t))ORIG(aligned_alloc);
		n.valloc = (void *(*)(size_t))ORIG(valloc);
		n.pvalloc = (void *(*)(size_t))ORIG(pvalloc);
#undef ORIG
		if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.memalign)
			return ember__error(EMBER_ERR_UNSUPPORTED, "the process's allocator (%s) lacks "
					    "one of malloc, free, calloc, realloc, memalign",
					    dladdr(m, &di) && di.dli_fname ? di.dli_fname : "?");
		rc = ember__heap_use_next(&n);
	}
	if (rc != 0)
		return ember__error(EMBER_ERR_BUSY, "emberprof's malloc is bound to another allocator "
				    "already");
	return 0;
}

/* The loader's count of modules loaded so far (dlpi_adds). */
static int adds_of(struct dl_phdr_info *info, size_t size, void *ud)
{
	(void)size;
	*(unsigned long long *)ud = info->dlpi_adds;
	return 1;
}

int ember__heap_got_patch(const ember__got_fn *fns, size_t n, const ember__logger *log,
			  ember__got_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!fns || !n || n > MAX_FNS)
		return ember__error(EMBER_ERR_UNSUPPORTED, "this library does not define malloc (the "
				    "library without it, or a sanitizer build)");
	pthread_mutex_lock(&g_mu);
	int rc = 0;
	if (g_active) {
		rc = ember__error(EMBER_ERR_BUSY, "the GOT entries are patched already");
		goto out;
	}
	memcpy(g_fns, fns, n * sizeof(*fns));
	g_nfns = n;
	if ((rc = find_allocator()) != 0)
		goto out;
	g_nslots = 0;
	g_adds = 0;
	g_patched = g_restored = 0;
	if (read_prot() != 0) {
		rc = ember__error(EMBER_ERR_SYS, "cannot read /proc/self/maps");
		goto out;
	}
	unsigned long long adds = 0;
	dl_iterate_phdr(adds_of, &adds);
	dl_iterate_phdr(patch_module, st);
	g_adds = st->pending ? 0 : adds; /* (0: the first rescan looks again) */
	g_active = 1;
	ember__logf(log, EMBER_LOG_INFO, "allocation profiling by GOT patching: %u slots patched in %u "
		    "modules, %u bound elsewhere and %u absolute references left, %u refused; "
		    "allocations made before now are not seen",
		    st->patched, st->modules, st->elsewhere, st->absolute, st->failed);
out:
	pthread_mutex_unlock(&g_mu);
	return rc;
}

void ember__heap_got_rescan(const ember__logger *log)
{
	pthread_mutex_lock(&g_mu);
	unsigned long long adds = 0;
	if (g_active) {
		dl_iterate_phdr(adds_of, &adds);
		if (adds != g_adds && read_prot() == 0) {
			/* (adds read before the scan: a module added during it
			 * makes the next rescan look again) */
			ember__got_stats st = {0};
			dl_iterate_phdr(patch_module, &st);
			if (!st.pending)
				g_adds = adds;
			if (st.patched || st.failed)
				ember__logf(log, EMBER_LOG_INFO, "allocation profiling: %u more slots "
					    "patched in modules loaded since (%u refused)",
					    st.patched, st.failed);
		}
	}
	pthread_mutex_unlock(&g_mu);
}

unsigned ember__heap_got_restore(void)
{
	unsigned n = 0;
	pthread_mutex_lock(&g_mu);
	if (g_active) {
		if (read_prot() == 0)
			dl_iterate_phdr(restore_module, &n);
		g_restored = n;
		g_active = 0;
		g_nslots = 0;
		free(g_prot); /* (read again at the next patch) */
		g_prot = NULL;
		g_nprot = 0;
	}
	pthread_mutex_unlock(&g_mu);
	return n;
}

#else /* neither x86-64 nor aarch64 */

int ember__heap_got_patch(const ember__got_fn *fns, size_t n, const ember__logger *log,
			  ember__got_stats *st)
{
	(void)fns;
	(void)n;
	(void)log;
	memset(st, 0, sizeof(*st));
	return ember__error(EMBER_ERR_UNSUPPORTED, "allocation profiling of a running process "
			    "(GOT patching) is implemented for x86-64 and aarch64 only");
}

void ember__heap_got_rescan(const ember__logger *log)
{
	(void)log;
}

unsigned ember__heap_got_restore(void)
{
	return 0;
}

#endif
