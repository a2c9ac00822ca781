/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_symbolizer.c - resolving addresses of this very process: a static
 * function of the test (symbol, file, line), libc (symbol, module path), a
 * C++ method in a fixture library (demangled, with its inlined callee
 * expanded), a module dlopen'ed after the symbolizer was made (visible
 * after a refresh, still named after dlclose and another refresh until a
 * library is mapped over it), a stripped module whose debug file is found
 * through .gnu_debuglink, the vDSO, the executable's build id checked
 * against readelf, addresses in no module, the cache (repeat lookups,
 * eviction), a private copy of a module's file mapped right below its
 * image, and JIT code named from a perf map after it was unmapped. The
 * fixtures are in tests/fixtures; this file is built with -g.
 */
#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emberprof.h"
#include "symbols/procmaps.h"
#include "symbols/symbolizer.h"
#include "symfixture.h"

#if !defined(EMBER_FIXTURE_DL) || !defined(EMBER_FIXTURE_SPLIT)
#error "EMBER_FIXTURE_DL and EMBER_FIXTURE_SPLIT must be defined by tests/fixtures"
#endif

static void *volatile captured_pc;
static int captured_line;

/* Out of line so that its return address lies inside the caller. */
__attribute__((noipa)) static void capture_pc(void)
{
	captured_pc = __builtin_return_address(0);
}

__attribute__((noipa)) static int static_target(int x)
{
	captured_line = __LINE__; capture_pc();
	/* Work after the call keeps it from becoming a tail call. */
	return x * 2 + (int)((uintptr_t)captured_pc & 1);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

static const ember__module_info *module_by_path(ember__symbolizer *s, const char *path)
{
	const ember__module_info *mods;
	size_t n = ember__symbolizer_modules(s, &mods);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(mods[i].path, path) == 0)
			return &mods[i];
	}
	return NULL;
}

static int self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static void test_static_function(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	CHECK(static_target(3) >= 6);
	uint64_t pc = (uint64_t)(uintptr_t)captured_pc - 1;
	ember__symbol_info si;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, pc, &si), 0);

	char exe[4096];
	CHECK_EQ_INT(self_exe(exe, sizeof(exe)), 0);
	CHECK(si.module != NULL);
	if (si.module) {
		CHECK_EQ_STR(si.module->path, exe);
		CHECK(si.module->start <= pc && pc < si.module->limit);
		CHECK(si.module->has_symbols);
		CHECK(si.module->has_lines);
	}
	CHECK(si.nframes >= 1);
	if (si.nframes >= 1) {
		const ember__symbol_frame *f = &si.frames[si.nframes - 1];
		CHECK_EQ_STR(f->function, "static_target");
		CHECK_EQ_STR(f->system_name, "static_target");
		CHECK_EQ_STR(base_name(f->file), "test_symbolizer.c");
		CHECK_EQ_INT(f->line, captured_line);
	}

	/* The entry point resolves to the same function. */
	CHECK_EQ_INT(ember__symbolizer_lookup(s, (uint64_t)(uintptr_t)&static_target, &si), 0);
	CHECK(si.nframes >= 1);
	if (si.nframes >= 1)
		CHECK_EQ_STR(si.frames[si.nframes - 1].function, "static_target");
	ember__symbolizer_free(s);
}

static void test_libc(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(libc != NULL);
	void *pf = libc ? dlsym(libc, "printf") : NULL;
	CHECK(pf != NULL);
	if (!pf) {
		ember__symbolizer_free(s);
		return;
	}
	ember__symbol_info si;
	for (int delta = 0; delta <= 4; delta += 4) {
		CHECK_EQ_INT(ember__symbolizer_lookup(s, (uint64_t)(uintptr_t)pf + delta, &si), 0);
		CHECK(si.module && strstr(si.module->path, "libc") != NULL);
		/* With libc's debug info installed, inlined frames may come
		 * first; the outermost frame is printf itself either way. */
		CHECK(si.nframes >= 1);
		if (si.nframes >= 1) {
			const ember__symbol_frame *f = &si.frames[si.nframes - 1];
			const char *name = f->system_name;
			CHECK(name && strstr(name, "printf") != NULL);
			/* Whichever alias the symbol table picked, it must be
			 * a name of this very function. */
			CHECK(name && dlsym(libc, name) == pf);
			CHECK_EQ_STR(f->function, name);
		}
	}
	dlclose(libc);
	ember__symbolizer_free(s);
}

static void test_cxx_inline(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	CHECK(ember_fixture_spin(2) > 0);
	uint64_t pc = (uint64_t)(uintptr_t)ember_fixture_pc - 1;
	ember__symbol_info si;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, pc, &si), 0);
	CHECK(si.module && strcmp(base_name(si.module->path), "libember_fixture_cxx.so") == 0);
	CHECK_EQ_INT(si.nframes, 3);
	if (si.nframes == 3) {
		/* Innermost: wobble, inlined into twirl; its line is the call
		 * it makes. */
		CHECK(si.frames[0].function &&
		      strncmp(si.frames[0].function, "wobble", 6) == 0);
		CHECK_EQ_STR(base_name(si.frames[0].file), "widget.cpp");
		CHECK_EQ_INT(si.frames[0].line, ember_fixture_record_line);
		/* twirl, inlined into spin, at its call of wobble. */
		CHECK(si.frames[1].function &&
		      strncmp(si.frames[1].function, "twirl", 5) == 0);
		CHECK_EQ_STR(base_name(si.frames[1].file), "widget.cpp");
		CHECK_EQ_INT(si.frames[1].line, ember_fixture_twirl_line);
		/* Outermost: the real function, from the symbol table. */
		CHECK_EQ_STR(si.frames[2].function, "ns::Widget::spin(int)");
		CHECK_EQ_STR(si.frames[2].system_name, "_ZN2ns6Widget4spinEi");
		CHECK_EQ_STR(base_name(si.frames[2].file), "widget.cpp");
		CHECK_EQ_INT(si.frames[2].line, ember_fixture_call_line);
	}
	ember__symbolizer_free(s);
}

static void test_dlopen_refresh_dlclose(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	size_t before = ember__symbolizer_modules(s, NULL);

	void *h = dlopen(EMBER_FIXTURE_DL, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		ember__symbolizer_free(s);
		return;
	}
	int (*fn)(int) = (int (*)(int))dlsym(h, "ember_fixture_dl_func");
	CHECK(fn != NULL && fn(1) == 8);
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	ember__symbol_info si;

	/* Not known until a refresh. */
	CHECK(!ember__symbolizer_covers(s, addr));
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr, &si), 0);
	CHECK(si.module == NULL);
	CHECK_EQ_INT(si.nframes, 0);

	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	CHECK(ember__symbolizer_modules(s, NULL) > before);
	CHECK(ember__symbolizer_covers(s, addr));
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr, &si), 0);
	CHECK(si.module && strcmp(base_name(si.module->path), "ember_fixture_dl.so") == 0);
	CHECK_EQ_INT(si.nframes, 1);
	if (si.nframes == 1) {
		CHECK_EQ_STR(si.frames[0].function, "ember_fixture_dl_func");
		CHECK_EQ_STR(base_name(si.frames[0].file), "dlfunc.c");
		CHECK(si.frames[0].line > 0);
	}
	char path[4096] = "";
	if (si.module)
		snprintf(path, sizeof(path), "%s", si.module->path);

	/* After dlclose and a refresh the module stays, named as before:
	 * samples taken before the dlclose may wait in the window being
	 * built (a fresh lookup, not the cache, shows it: the cache is
	 * emptied when a module goes, and none does here). */
	CHECK_EQ_INT(dlclose(h), 0);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	CHECK(ember__symbolizer_covers(s, addr));
	CHECK(module_by_path(s, path) != NULL);
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr + 1, &si), 0);
	CHECK(si.module && strcmp(si.module->path, path) == 0);
	CHECK_EQ_INT(si.nframes, 1);
	if (si.nframes == 1)
		CHECK_EQ_STR(si.frames[0].function, "ember_fixture_dl_func");
	ember__symbolizer_free(s);
}

/*
 * Libraries dlopen'ed and dlclose'd one after another, each a copy of the
 * fixture under its own name. Without anything in the way the loader maps
 * each where the last was: an address is named after the last library
 * mapped over it, never an older one. With the space of each closed one
 * held by an anonymous mapping (no image), 18 land apart and the 16 most
 * recently closed stay named, the 2 closed first do not.
 */
#define DL_COPIES 22
struct dl_copy {
	char path[64];
	uint64_t addr;      /* ember_fixture_dl_func */
	uint64_t lo, hi;    /* the module's code, as the symbolizer saw it */
	uint64_t ilo, ihi;  /* the whole image (its loaded segments) */
};

/* dl_iterate_phdr callback: the pages of copy c's loaded segments. */
static int image_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct dl_copy *c = arg;
	if (!info->dlpi_name || strcmp(info->dlpi_name, c->path) != 0)
		return 0;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(pg - 1);
		uint64_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + pg - 1) & ~(pg - 1);
		c->ilo = lo < c->ilo ? lo : c->ilo;
		c->ihi = hi > c->ihi ? hi : c->ihi;
	}
	return 1;
}

/* Copies the fixture to DIR/copyII.so and dlopens it: its handle (NULL
 * on failure, checked), c->path and c->addr set. */
static void *dl_copy_open(const char *dir, int i, struct dl_copy *c)
{
	char cmd[4096];
	snprintf(c->path, sizeof(c->path), "%s/copy%02d.so", dir, i);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", EMBER_FIXTURE_DL, c->path);
	CHECK_EQ_INT(system(cmd), 0);
	void *h = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (h)
		c->addr = (uint64_t)(uintptr_t)dlsym(h, "ember_fixture_dl_func");
	return h;
}

/* dlopens copy i, refreshes, records it, dlcloses it. */
static void dl_cycle(ember__symbolizer *s, const char *dir, int i, struct dl_copy *c)
{
	void *h = dl_copy_open(dir, i, c);
	if (!h)
		return;
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	const ember__module_info *mi = module_by_path(s, c->path);
	CHECK(mi != NULL);
	if (mi) {
		c->lo = mi->start;
		c->hi = mi->limit;
	}
	c->ilo = UINT64_MAX;
	c->ihi = 0;
	CHECK_EQ_INT(dl_iterate_phdr(image_range, c), 1);
	CHECK_EQ_INT(dlclose(h), 0);
}

static void test_dlclose_kept(void)
{
	char dir[] = "/tmp/ember-symdl-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	static struct dl_copy c[DL_COPIES];
	memset(c, 0, sizeof(c));

	/* Mapped over: 4 copies in a row, nothing in the way. */
	for (int i = 0; i < 4; i++)
		dl_cycle(s, dir, i, &c[i]);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	int overlapped = 0;
	for (int i = 0; i < 4; i++) {
		int last = -1; /* the last copy mapped over c[i].addr */
		for (int j = 0; j < 4; j++)
			if (c[i].addr >= c[j].lo && c[i].addr < c[j].hi)
				last = j;
		overlapped += last != i;
		ember__symbol_info si;
		CHECK_EQ_INT(ember__symbolizer_lookup(s, c[i].addr, &si), 0);
		CHECK(si.module && last >= 0 && strcmp(si.module->path, c[last].path) == 0);
		if (si.module && last >= 0 && strcmp(si.module->path, c[last].path) != 0)
			fprintf(stderr, "address of copy %d named after %s, not copy %d\n", i,
				si.module->path, last);
		CHECK(module_by_path(s, c[i].path) == NULL || last == i);
	}
	if (!overlapped)
		fprintf(stderr, "note: no copy was mapped over another here\n");

	/* Held apart: 18 copies, the 16 closed last stay. */
	void *held[DL_COPIES] = {0};
	for (int i = 4; i < DL_COPIES; i++) {
		dl_cycle(s, dir, i, &c[i]);
		if (c[i].ilo < c[i].ihi) {
			held[i] = mmap((void *)(uintptr_t)c[i].ilo, c[i].ihi - c[i].ilo, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			CHECK(held[i] == (void *)(uintptr_t)c[i].ilo);
		}
	}
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	int kept = 0;
	for (int i = 0; i < DL_COPIES; i++)
		kept += module_by_path(s, c[i].path) != NULL;
	CHECK_EQ_INT(kept, 16);
	CHECK(module_by_path(s, c[4].path) == NULL && module_by_path(s, c[5].path) == NULL);
	for (int i = DL_COPIES - 16; i < DL_COPIES; i++) {
		ember__symbol_info si;
		CHECK_EQ_INT(ember__symbolizer_lookup(s, c[i].addr, &si), 0);
		CHECK(si.module && strcmp(si.module->path, c[i].path) == 0);
		CHECK(si.nframes == 1 && strcmp(si.frames[0].function, "ember_fixture_dl_func") == 0);
	}
	for (int i = 0; i < DL_COPIES; i++)
		if (held[i] && held[i] != MAP_FAILED)
			munmap(held[i], c[i].ihi - c[i].ilo);
	ember__symbolizer_free(s);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(cmd), 0);
}


/*
 * A library the loader maps where a dlclose'd one was: a lookup alone
 * still names the address after the gone one (its range stays covered),
 * ember__symbolizer_poll() sees the loader's counters move and refreshes,
 * and then the new library names it. With nothing changed it does not
 * refresh.
 */
static void test_poll_mapped_over(void)
{
	char dir[] = "/tmp/ember-sympoll-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	CHECK_EQ_INT(ember__symbolizer_poll(s), 0); /* nothing since new() */
	struct dl_copy a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	dl_cycle(s, dir, 0, &a); /* loaded, refreshed, closed */
	CHECK_EQ_INT(ember__symbolizer_poll(s), 1); /* the dlclose */
	CHECK_EQ_INT(ember__symbolizer_poll(s), 0);
	ember__symbol_info si;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, a.addr, &si), 0);
	CHECK(si.module && strcmp(si.module->path, a.path) == 0); /* kept named */

	void *h = dl_copy_open(dir, 1, &b);
	if (h) {
		if (b.addr != a.addr)
			fprintf(stderr, "note: the second copy was not mapped over the first "
					"(%#" PRIx64 " against %#" PRIx64 ")\n",
				b.addr, a.addr);
		CHECK_EQ_INT(ember__symbolizer_poll(s), 1);
		CHECK_EQ_INT(ember__symbolizer_lookup(s, b.addr, &si), 0);
		CHECK(si.module && strcmp(si.module->path, b.path) == 0);
		if (si.module && strcmp(si.module->path, b.path) != 0)
			fprintf(stderr, "address of the new copy named after %s\n", si.module->path);
		CHECK(si.nframes == 1 && strcmp(si.frames[0].function, "ember_fixture_dl_func") == 0);
		CHECK_EQ_INT(ember__symbolizer_poll(s), 0);
		CHECK_EQ_INT(dlclose(h), 0);
	}
	ember__symbolizer_free(s);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(cmd), 0);
}


static void test_debuglink(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	void *h = dlopen(EMBER_FIXTURE_SPLIT, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		ember__symbolizer_free(s);
		return;
	}
	int (*fn)(int) = (int (*)(int))dlsym(h, "ember_fixture_split_func");
	void *(*helper)(void) = (void *(*)(void))dlsym(h, "ember_fixture_split_helper");
	CHECK(fn && helper);
	/* The helper is static: the stripped file's .dynsym cannot name it. */
	CHECK(dlsym(h, "split_helper") == NULL);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	if (fn && helper) {
		CHECK_EQ_INT(fn(1), 14);
		ember__symbol_info si;
		CHECK_EQ_INT(ember__symbolizer_lookup(s, (uint64_t)(uintptr_t)helper(), &si), 0);
		CHECK(si.module &&
		      strcmp(base_name(si.module->path), "ember_fixture_split.so") == 0);
		if (si.module) {
			CHECK_EQ_STR(si.module->build_id, "");
			CHECK(si.module->has_symbols);
			CHECK(si.module->has_lines);
		}
		CHECK_EQ_INT(si.nframes, 1);
		if (si.nframes == 1) {
			CHECK_EQ_STR(si.frames[0].function, "split_helper");
			CHECK_EQ_STR(base_name(si.frames[0].file), "dlsplit.c");
			CHECK(si.frames[0].line > 0);
		}
	}
	dlclose(h);
	ember__symbolizer_free(s);
}

/* The outermost name of addr, "" if none (copied into buf). */
static const char *outer_name(ember__symbolizer *s, uint64_t addr, char *buf, size_t len)
{
	ember__symbol_info si;
	buf[0] = '\0';
	if (ember__symbolizer_lookup(s, addr, &si) == 0 && si.nframes > 0 &&
	    si.frames[si.nframes - 1].function)
		snprintf(buf, len, "%s", si.frames[si.nframes - 1].function);
	return buf;
}

/* The names test_nearest_symbol expects (see there). */
static void nearest_names(ember__symbolizer *s, uint64_t o, uint64_t shorty, uint64_t sizeless,
			  uint64_t a, uint64_t bias)
{
	char want[128], got[256];
	/* the function's own start: its FDE's */
	snprintf(want, sizeof(want), "ember_fixture_nearest.so+0x%" PRIx64, o - bias);
	CHECK_EQ_STR(outer_name(s, o, got, sizeof(got)), want);
	CHECK_EQ_STR(outer_name(s, shorty - 1, got, sizeof(got)), want);
	/* within the short label's byte: the label covers it */
	CHECK_EQ_STR(outer_name(s, shorty, got, sizeof(got)), "ember_nearest_short");
	/* past it, no symbol covers: the label starts closer than the FDE */
	CHECK_EQ_STR(outer_name(s, shorty + 1, got, sizeof(got)), "ember_nearest_short");
	CHECK_EQ_STR(outer_name(s, sizeless - 1, got, sizeof(got)), "ember_nearest_short");
	/* the sizeless label, to the end of the FDE */
	CHECK_EQ_STR(outer_name(s, sizeless, got, sizeof(got)), "ember_nearest_sizeless");
	CHECK_EQ_STR(outer_name(s, sizeless + 1, got, sizeof(got)), "ember_nearest_sizeless");
	/* the next function: its FDE starts after the sizeless label */
	snprintf(want, sizeof(want), "ember_fixture_nearest.so+0x%" PRIx64, a - bias);
	CHECK_EQ_STR(outer_name(s, a, got, sizeof(got)), want);
	CHECK_EQ_STR(outer_name(s, a + 1, got, sizeof(got)), want);
}

/*
 * "Nearest start wins" for code no symbol covers (symbolizer.h): in the
 * stripped fixture (nearest.c), the code of the static nearest_outer
 * before its exported 1-byte label is named after its FDE, the code after
 * that label's byte by the label (it starts closer than the FDE), the
 * code after the sizeless label by it, and the static function after it
 * by its own FDE (a function starts between the sizeless label and it).
 */
static void test_nearest_symbol(void)
{
	void *h = dlopen(EMBER_FIXTURE_NEAREST, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return;
	}
	void *(*outer)(void) = (void *(*)(void))dlsym(h, "ember_nearest_outer");
	void *(*after)(void) = (void *(*)(void))dlsym(h, "ember_nearest_after");
	uint64_t shorty = (uint64_t)(uintptr_t)dlsym(h, "ember_nearest_short");
	uint64_t sizeless = (uint64_t)(uintptr_t)dlsym(h, "ember_nearest_sizeless");
	struct link_map *lm = NULL;
	CHECK_EQ_INT(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	CHECK(outer && after && shorty && sizeless && lm);
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!outer || !after || !shorty || !sizeless || !lm || !s) {
		ember__symbolizer_free(s);
		dlclose(h);
		return;
	}
	uint64_t o = (uint64_t)(uintptr_t)outer(), a = (uint64_t)(uintptr_t)after();
	uint64_t bias = (uint64_t)lm->l_addr;
	/* the layout nearest.c asks the compiler for */
	CHECK(o < shorty && shorty < sizeless && sizeless < a);
	if (!(o < shorty && shorty < sizeless && sizeless < a))
		fprintf(stderr, "layout: outer %#" PRIx64 " short %#" PRIx64 " sizeless %#" PRIx64
				" after %#" PRIx64 "\n", o, shorty, sizeless, a);
	/* twice: names from the module's symbol index, then from a scan
	 * (ember__symbolizer_prefetch, a fresh symbolizer: no index yet) */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			ember__symbolizer_free(s);
			s = NULL;
			CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
			if (!s)
				break;
			uint64_t addrs[] = {o, shorty - 1, shorty, shorty + 1, sizeless - 1,
					    sizeless, sizeless + 1, a, a + 1};
			CHECK_EQ_INT(ember__symbolizer_prefetch(s, addrs, sizeof(addrs) / sizeof(*addrs)), 0);
		}
		nearest_names(s, o, shorty, sizeless, a, bias);
	}
	ember__fde_stats fs;
	ember__symbolizer_fde_stats(s, &fs);
	CHECK(fs.modules >= 1 && fs.named >= 4);
	ember__symbolizer_free(s);
	dlclose(h);
}

/* The build id as readelf prints it, independently of libdwfl. */
static int readelf_build_id(const char *path, char *out, size_t len)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[512];
	int found = -1;
	while (fgets(line, sizeof(line), p)) {
		const char *k = strstr(line, "Build ID: ");
		if (k && found < 0) {
			snprintf(out, len, "%s", k + strlen("Build ID: "));
			out[strcspn(out, " \r\n")] = '\0';
			found = 0;
		}
	}
	pclose(p);
	return found;
}

static void test_build_id(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	char exe[4096], want[256];
	CHECK_EQ_INT(self_exe(exe, sizeof(exe)), 0);
	CHECK_EQ_INT(readelf_build_id(exe, want, sizeof(want)), 0);
	CHECK(strlen(want) >= 16);
	const ember__module_info *m = module_by_path(s, exe);
	CHECK(m != NULL);
	if (m)
		CHECK_EQ_STR(m->build_id, want);
	ember__symbolizer_free(s);
}

static void test_vdso(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	uint64_t ehdr = getauxval(AT_SYSINFO_EHDR);
	if (!ehdr && getenv("EMBER_TEST_NO_VDSO")) {
		/* qemu-user 7.2 maps no vDSO for aarch64 guests (make test-aarch64) */
		fprintf(stderr, "note: no vDSO (EMBER_TEST_NO_VDSO set): vDSO part skipped\n");
		ember__symbolizer_free(s);
		return;
	}
	CHECK(ehdr != 0);
	const ember__module_info *m = module_by_path(s, "[vdso]");
	CHECK(m != NULL);
	if (m) {
		CHECK(m->start <= ehdr && ehdr < m->limit);
		CHECK(m->has_symbols);
		CHECK(strlen(m->build_id) > 0);
	}
	/* glibc finds the vDSO's symbols through this soname. */
	void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	if (fn) {
		ember__symbol_info si;
		CHECK_EQ_INT(ember__symbolizer_lookup(s, (uint64_t)(uintptr_t)fn, &si), 0);
		CHECK(si.module == m);
		CHECK_EQ_INT(si.nframes, 1);
		if (si.nframes == 1)
			CHECK(si.frames[0].function &&
			      strstr(si.frames[0].function, "clock_gettime") != NULL);
	} else {
		fprintf(stderr, "note: no vDSO handle from dlopen; vDSO lookup skipped\n");
	}
	if (h)
		dlclose(h);
	ember__symbolizer_free(s);
}

static void test_no_module(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	char *heap = malloc(64);
	uint64_t addrs[] = {0, 16, (uint64_t)(uintptr_t)heap, (uint64_t)(uintptr_t)&captured_line,
			    UINT64_MAX};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		ember__symbol_info si;
		si.nframes = 99;
		si.module = (const ember__module_info *)&si;
		CHECK_EQ_INT(ember__symbolizer_lookup(s, addrs[i], &si), 0);
		CHECK(si.module == NULL);
		CHECK_EQ_INT(si.nframes, 0);
		CHECK(!ember__symbolizer_covers(s, addrs[i]));
	}
	free(heap);
	ember__symbol_info si;
	CHECK_EQ_INT(ember__symbolizer_lookup(NULL, 0, &si), EMBER_ERR_INVALID);
	CHECK_EQ_INT(ember__symbolizer_lookup(s, 0, NULL), EMBER_ERR_INVALID);
	CHECK(!ember__symbolizer_covers(NULL, 0));
	ember__symbolizer_free(s);
	ember__symbolizer_free(NULL);
}

static void test_table_and_cache(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	const ember__module_info *mods;
	size_t n = ember__symbolizer_modules(s, &mods);
	/* exe, fixture, libc, ld.so, vdso at least (no vdso under qemu-user) */
	CHECK(n >= (getauxval(AT_SYSINFO_EHDR) ? 5u : 4u));
	for (size_t i = 0; i < n; i++) {
		CHECK(mods[i].start < mods[i].limit);
		if (i > 0)
			CHECK(mods[i - 1].limit <= mods[i].start);
		for (size_t j = 0; j < i; j++)
			CHECK(mods[i].id != mods[j].id);
		for (const char *c = mods[i].build_id; *c; c++)
			CHECK((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'));
		CHECK(ember__symbolizer_covers(s, mods[i].start));
		CHECK(ember__symbolizer_covers(s, mods[i].limit - 1));
	}

	/* Repeated lookups give the very same strings (cached). */
	ember__symbol_info a, b;
	uint64_t addr = (uint64_t)(uintptr_t)&static_target;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr, &a), 0);
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr, &b), 0);
	CHECK(a.nframes >= 1 && a.nframes == b.nframes);
	CHECK(a.module == b.module);
	if (a.nframes >= 1 && a.nframes == b.nframes)
		CHECK(a.frames[0].function == b.frames[0].function);

	/* A refresh keeps surviving modules' ids and strings. */
	uint32_t id = a.module ? a.module->id : 0;
	const char *path = a.module ? a.module->path : NULL;
	const char *fn = a.nframes ? a.frames[a.nframes - 1].function : NULL;
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr, &b), 0);
	CHECK(b.module != NULL);
	if (b.module) {
		CHECK_EQ_INT(b.module->id, id);
		CHECK(b.module->path == path);
	}
	CHECK(b.nframes >= 1 && b.frames[b.nframes - 1].function == fn);
	CHECK_EQ_STR(fn, "static_target");

	/* Many distinct addresses in libc resolve, most of them to a symbol. */
	const ember__module_info *libm = NULL;
	for (size_t i = 0; i < ember__symbolizer_modules(s, &mods); i++) {
		if (strstr(mods[i].path, "libc.so"))
			libm = &mods[i];
	}
	CHECK(libm != NULL);
	if (libm) {
		uint64_t resolved = 0;
		for (uint64_t p = libm->start; p < libm->start + 200000 && p < libm->limit; p += 7) {
			ember__symbol_info si;
			CHECK_EQ_INT(ember__symbolizer_lookup(s, p, &si), 0);
			resolved += si.nframes > 0;
		}
		CHECK(resolved > 1000);
	}
	ember__symbolizer_free(s);
}

/* More distinct addresses than the cache holds (64K): results must stay
 * right and earlier strings valid after the cache empties itself. */
static void test_cache_eviction(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	const ember__module_info *mods;
	size_t n = ember__symbolizer_modules(s, &mods);
	const ember__module_info *libc = NULL;
	for (size_t i = 0; i < n; i++) {
		if (strstr(mods[i].path, "libc.so"))
			libc = &mods[i];
	}
	CHECK(libc != NULL);
	if (!libc || libc->limit - libc->start < 80000) {
		ember__symbolizer_free(s);
		return;
	}
	uint64_t first = (uint64_t)(uintptr_t)&static_target;
	ember__symbol_info a, b;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, first, &a), 0);
	CHECK(a.nframes >= 1);
	const char *name = a.nframes ? a.frames[a.nframes - 1].function : NULL;
	for (uint64_t p = libc->start; p < libc->start + 80000; p++) {
		ember__symbol_info si;
		if (ember__symbolizer_lookup(s, p, &si) != 0) {
			CHECK(0);
			break;
		}
	}
	CHECK_EQ_STR(name, "static_target"); /* still readable */
	CHECK_EQ_INT(ember__symbolizer_lookup(s, first, &b), 0);
	CHECK(b.nframes == a.nframes);
	if (b.nframes >= 1)
		CHECK(b.frames[b.nframes - 1].function == name); /* same interned string */
	ember__symbolizer_free(s);
}

/* Whether the lookup of addr names ember_fixture_dl_func. */
static int names_dl_func(ember__symbolizer *s, uint64_t addr)
{
	ember__symbol_info si;
	return ember__symbolizer_lookup(s, addr, &si) == 0 && si.module && si.nframes >= 1 &&
	       si.frames[0].function && !strcmp(si.frames[0].function, "ember_fixture_dl_func");
}

/*
 * A private copy of a module's file mapped right below its loaded image,
 * as libelf maps a file it reads (libdwfl keeps one per module it loaded,
 * the symbolizer's own included): the image keeps its names, in a
 * symbolizer refreshed while the copy is there (at an address not looked
 * up before) and in one made then. libdwfl's maps parser merged the copy
 * into the image: a wrong low address, a wrong load bias, no names (under
 * ASan it_dwarf's .debug_frame library lost its names so, intermittently).
 * Copy and image side by side, then with an anonymous page between.
 */
static void test_file_copy_beside_image(void)
{
	void *h = dlopen(EMBER_FIXTURE_DL, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h)
		return;
	int (*fn)(int) = (int (*)(int))dlsym(h, "ember_fixture_dl_func");
	CHECK(fn != NULL);
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	ember__procmaps maps = EMBER_PROCMAPS_INIT;
	CHECK_EQ_INT(ember__procmaps_read_self(&maps), 0);
	const ember__procmap *code = fn ? ember__procmaps_find(&maps, addr) : NULL;
	CHECK(code && code->inode != 0);
	int fd = code ? open(code->path, O_RDONLY | O_CLOEXEC) : -1;
	struct stat st;
	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	/* the image's lowest mapping: same file, just below, down to offset 0 */
	const ember__procmap *low = code;
	while (low && low > maps.maps && low->offset != 0 && low[-1].inode == code->inode &&
	       low[-1].end == low->start)
		low--;
	CHECK(low && low->offset == 0);
	uint64_t image = low ? low->start : 0;
	ember__procmaps_free(&maps);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = fd >= 0 ? ((size_t)st.st_size + page - 1) / page * page : 0;
	/* Room below the image for the copy and a page: kept by an anonymous
	 * reservation, since every symbolizer made maps files of its own. */
	size_t room = size + page;
	void *resv = fd >= 0 && image ? mmap((void *)(uintptr_t)(image - room), room, PROT_NONE,
					     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
				      : MAP_FAILED;
	if (resv == MAP_FAILED || (uint64_t)(uintptr_t)resv != image - room) {
		fprintf(stderr, "note: the pages below %s are taken: copy beside the image not "
			"checked\n", EMBER_FIXTURE_DL);
		if (resv != MAP_FAILED)
			munmap(resv, room);
		if (fd >= 0)
			close(fd);
		dlclose(h);
		return;
	}
	for (size_t gap = 0; gap <= page; gap += page) {
		ember__symbolizer *before = NULL, *after = NULL;
		CHECK_EQ_INT(ember__symbolizer_new(&before), 0);
		CHECK(before && names_dl_func(before, addr));
		/* as libelf's ELF_C_READ_MMAP_PRIVATE maps it, over our room */
		void *copy = mmap((void *)(uintptr_t)(image - gap - size), size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_FIXED, fd, 0);
		CHECK(copy != MAP_FAILED);
		if (before) {
			CHECK_EQ_INT(ember__symbolizer_refresh(before), 0);
			CHECK(names_dl_func(before, addr + 1)); /* not cached */
		}
		CHECK_EQ_INT(ember__symbolizer_new(&after), 0);
		CHECK(after && names_dl_func(after, addr));
		ember__symbolizer_free(after);
		ember__symbolizer_free(before);
		/* the room again */
		CHECK(mmap((void *)(uintptr_t)(image - room), room, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED);
	}
	munmap(resv, room);
	close(fd);
	dlclose(h);
}

/*
 * JIT code named from /tmp/perf-PID.map stays named after its mapping is
 * gone (a runtime unmaps its code space on the way out, before the last
 * window is built), until new code is mapped over it; the 64 most
 * recently gone ranges are kept, older ones forgotten.
 */
#define JIT_PAGES 72
static void test_jit_gone(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	/* JIT_PAGES executable pages, each its own mapping (a hole after each) */
	char *area = mmap(NULL, (size_t)pg * 2 * JIT_PAGES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(area != MAP_FAILED);
	if (area == MAP_FAILED)
		return;
	for (int i = 0; i < JIT_PAGES; i++)
		CHECK_EQ_INT(mprotect(area + (size_t)pg * 2 * i, (size_t)pg, PROT_READ | PROT_EXEC), 0);
	char map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(map, "w");
	CHECK(f != NULL);
	if (!f) {
		munmap(area, (size_t)pg * 2 * JIT_PAGES);
		return;
	}
	for (int i = 0; i < JIT_PAGES; i++)
		fprintf(f, "%lx %lx jit_fn_%d\n", (unsigned long)(uintptr_t)(area + (size_t)pg * 2 * i + 16), 32UL, i);
	fclose(f);

	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
#define JIT_AT(i) ((uint64_t)(uintptr_t)(area + (size_t)pg * 2 * (i) + 20))
	char want[32];
	ember__symbol_info si;
	uint32_t id0 = 0;
	for (int i = 0; s && i < JIT_PAGES; i++) {
		CHECK(ember__symbolizer_covers(s, JIT_AT(i)));
		CHECK_EQ_INT(ember__symbolizer_lookup(s, JIT_AT(i), &si), 0);
		CHECK(si.module && strcmp(si.module->path, map) == 0);
		CHECK_EQ_INT(si.nframes, 1);
		snprintf(want, sizeof(want), "jit_fn_%d", i);
		if (si.nframes == 1)
			CHECK_EQ_STR(si.frames[0].function, want);
		if (i == 0 && si.module)
			id0 = si.module->id;
	}
	/* the holes between are no JIT code */
	CHECK(!s || !ember__symbolizer_covers(s, JIT_AT(0) + (uint64_t)pg));

	/* the first 8 go, and a refresh still names them ... */
	CHECK_EQ_INT(munmap(area, (size_t)pg * 2 * 8), 0);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	for (int i = 0; s && i < 8; i++) {
		CHECK(ember__symbolizer_covers(s, JIT_AT(i)));
		CHECK_EQ_INT(ember__symbolizer_lookup(s, JIT_AT(i), &si), 0);
		CHECK(si.module && strcmp(si.module->path, map) == 0 && si.nframes == 1);
		snprintf(want, sizeof(want), "jit_fn_%d", i);
		if (si.nframes == 1)
			CHECK_EQ_STR(si.frames[0].function, want);
		if (i == 0)
			CHECK(si.module && si.module->id == id0);
	}
	/* ... until new code is mapped over page 0 */
	char *again = mmap(area, (size_t)pg * 3, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(again == area);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	CHECK_EQ_INT(ember__symbolizer_lookup(s, JIT_AT(0), &si), 0);
	CHECK(si.module && si.module->id != id0 && si.module->limit == JIT_AT(0) - 20 + (uint64_t)pg * 3);
	if (again == area)
		munmap(again, (size_t)pg * 3);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);

	/* the other 64 go: the 64 most recently gone are kept, none of those
	 * gone before */
	CHECK_EQ_INT(munmap(area + (size_t)pg * 2 * 8, (size_t)pg * 2 * (JIT_PAGES - 8)), 0);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	int kept = 0, kept_old = 0;
	for (int i = 0; s && i < JIT_PAGES; i++) {
		CHECK_EQ_INT(ember__symbolizer_lookup(s, JIT_AT(i), &si), 0);
		kept += si.module != NULL;
		kept_old += si.module != NULL && i < 8;
	}
	CHECK_EQ_INT(kept, 64);
	CHECK_EQ_INT(kept_old, 0);
#undef JIT_AT
	ember__symbolizer_free(s);
	unlink(map);
}

int main(void)
{
	RUN(test_static_function);
	RUN(test_libc);
	RUN(test_cxx_inline);
	RUN(test_dlopen_refresh_dlclose);
	RUN(test_dlclose_kept);
	RUN(test_poll_mapped_over);
	RUN(test_debuglink);
	RUN(test_nearest_symbol);
	RUN(test_build_id);
	RUN(test_vdso);
	RUN(test_no_module);
	RUN(test_table_and_cache);
	RUN(test_cache_eviction);
	RUN(test_file_copy_beside_image);
	RUN(test_jit_gone);
	return CHECK_DONE();
}
