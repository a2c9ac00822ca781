/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_symbolizer_libelf.c - the symbolizer of this process names the
 * modules that need no DWARF with libelf alone (symbolizer_elf.c):
 *  - libc (a system library: its DWARF, if libc6-dbg is installed, is not
 *    wanted by the default line policy) is named without libdw, liblzma or
 *    libbz2 being loaded;
 *  - for every module named that way (libc, libz, libelf, the vDSO...),
 *    the load bias equals libdwfl's (dwfl_module_getelf), the symbol
 *    index equals the one built through libdwfl entry for entry, and the
 *    names of every function's start+1 and middle equal those a libdwfl
 *    symbolizer gives, and name the symbol dwfl_module_addrinfo finds (or
 *    an alias of it: another symbol at the same address).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "check.h"
#include "self_dwfl.h"
#include "selfmaps.h"
#include "symbols/symbolizer.h"
#include "symbols/symbolizer_internal.h"
#include "symbols/symindex.h"

static const char *last_name(const ember__symbol_info *si)
{
	return si->nframes ? si->frames[si->nframes - 1].system_name : NULL;
}

/* First, before anything here loads libdw. */
static void test_libc_without_libdw(void)
{
	int unmapped_ok = ember_test_unmapped_checkable("test_libc_without_libdw");
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	ember__symbol_info si;
	uint64_t addr = (uint64_t)(uintptr_t)&getpid;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, addr + 1, &si), 0);
	const char *name = last_name(&si);
	CHECK(si.module && strstr(si.module->path, "/libc.so"));
	CHECK(name && strstr(name, "getpid"));
	CHECK(si.module && si.module->has_symbols);
	uint64_t bias;
	CHECK(si.module && ember__symbolizer_elf_bias(s, si.module - s->infos, &bias));
	CHECK(!unmapped_ok || !ember_test_mapped("/libdw"));
	CHECK(!unmapped_ok || !ember_test_mapped("/liblzma"));
	CHECK(!unmapped_ok || !ember_test_mapped("/libbz2"));
	CHECK(atomic_load(&ember__elfutils.state) == 0);
	ember__symbolizer_free(s);
}

static sym_module *module_at(ember__symbolizer *s, uint64_t start)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i]->info.start == start)
			return s->mods[i];
	return NULL;
}

/* The symbol's name without its version ("memcpy@@GLIBC_2.14"). */
static int same_base(const char *a, const char *b)
{
	size_t la = strcspn(a, "@"), lb = strcspn(b, "@");
	return la == lb && !strncmp(a, b, la);
}

/* Is `name` a function symbol of dm at address at (relocated)? */
/* Is there a symbol called `name` at an address in [lo, hi]? */
static int symbol_in(Dwfl_Module *dm, uint64_t lo, uint64_t hi, const char *name)
{
	int n = dwfl_module_getsymtab(dm);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		const char *nm = dwfl_module_getsym_info(dm, i, &sym, &a, NULL, NULL, NULL);
		if (nm && a >= lo && a <= hi && same_base(nm, name))
			return 1;
	}
	return 0;
}

/* dwfl_module_addrinfo, from the libdw the symbolizer loaded (the
 * library calls libdw through its table, util/dep_elfutils.h, which does
 * not list it; a direct call would make libdw this test's DT_NEEDED). */
typedef const char *addrinfo_fn(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *,
				Elf **, Dwarf_Addr *);
static addrinfo_fn *addrinfo;

typedef struct counts {
	size_t modules, entries, addrs, addrinfo, bad;
} counts;

static void compare_module(ember__symbolizer *l, ember__symbolizer *d, sym_module *ml,
			   sym_module *md, counts *c)
{
	Dwarf_Addr dbias = 0;
	CHECK(dwfl_module_getelf(md->dm, &dbias) != NULL);
	CHECK(ml->bias == dbias);
	if (ml->bias != dbias)
		fprintf(stderr, "  %s: bias %#llx, libdwfl %#llx\n", ml->info.path,
			(unsigned long long)ml->bias, (unsigned long long)dbias);
	CHECK_EQ_INT(ml->info.has_symbols, md->info.has_symbols);

	/* the index, entry for entry */
	ember__symindex a = EMBER_SYMINDEX_INIT, b = EMBER_SYMINDEX_INIT;
	CHECK_EQ_INT(ember__symindex_build_syms_elf(&a, &ml->syms_src, ml->info.start,
						    ml->info.limit),
		     0);
	CHECK_EQ_INT(ember__symindex_build_syms_ex(&b, md->dm, md->info.start, md->info.limit, 1),
		     0);
	CHECK_EQ_INT(a.nsyms, b.nsyms);
	for (size_t i = 0; i < a.nsyms && i < b.nsyms; i++) {
		const ember__sym_entry *x = &a.syms[i], *y = &b.syms[i];
		if (x->addr != y->addr || x->size != y->size ||
		    (x->rank & 0x7fffffffu) != (y->rank & 0x7fffffffu) || strcmp(x->name, y->name)) {
			if (!c->bad++)
				fprintf(stderr, "  %s: entry %zu: %#llx %s, libdwfl %#llx %s\n",
					ml->info.path, i, (unsigned long long)x->addr, x->name,
					(unsigned long long)y->addr, y->name);
		}
	}
	c->entries += a.nsyms;

	/* names: each function's start+1 and middle */
	for (size_t i = 0; i < b.nsyms; i++) {
		const ember__sym_entry *e = &b.syms[i];
		uint64_t probe[2] = {e->addr + 1, e->addr + e->size / 2};
		for (int k = 0; k < 2; k++) {
			if (e->size < 2 || probe[k] >= ml->info.limit)
				continue;
			ember__symbol_info sl, sd;
			CHECK_EQ_INT(ember__symbolizer_lookup(l, probe[k], &sl), 0);
			CHECK_EQ_INT(ember__symbolizer_lookup(d, probe[k], &sd), 0);
			const char *nl = last_name(&sl), *nd = last_name(&sd);
			int same = (!nl && !nd) || (nl && nd && !strcmp(nl, nd));
			GElf_Off off = 0;
			GElf_Sym sym;
			const char *ai = addrinfo(md->dm, probe[k], &off, &sym, NULL, NULL, NULL);
			/* aarch64's mapping symbols ($x code, $d data) are no
			 * function names, but addrinfo may answer with one (seen in
			 * .plt under qemu, where both our paths give the stub's
			 * name): no reference there */
			if (ai && ai[0] == '$')
				ai = NULL;
			/* addrinfo names the symbol at probe - off; ours is it or an alias */
			/* or a symbol starting between addrinfo's and the
			 * address, nearer: the nearest start wins in ours
			 * (symbolizer.h; seen: ld.so's _dl_start_user inside
			 * _start on aarch64, for both our paths) */
			int agrees = ai && nl && (same_base(ai, nl) ||
						  symbol_in(md->dm, probe[k] - off, probe[k], nl));
			if (ai && nl)
				c->addrinfo++;
			if (!same || (ai && nl && !agrees)) {
				if (!c->bad++ || c->bad < 5)
					fprintf(stderr, "  %s: %#llx: libelf %s, libdwfl %s, addrinfo %s\n",
						ml->info.path, (unsigned long long)probe[k],
						nl ? nl : "(none)", nd ? nd : "(none)",
						ai ? ai : "(none)");
			}
			c->addrs++;
		}
	}
	ember__symindex_reset(&a);
	ember__symindex_reset(&b);
	(void)d;
	c->modules++;
}

static void test_same_as_libdwfl(void)
{
	ember__symbolizer *l = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&l), 0);
	ember__symbolizer *d = ember_test_dwfl_symbolizer();
	CHECK(d != NULL);
	if (!l || !d) {
		ember__symbolizer_free(l);
		ember__symbolizer_free(d);
		return;
	}
	CHECK_EQ_INT(ember__symbolizer_refresh(l), 0); /* libdw's modules too */
	void *libdw = dlopen("libdw.so.1", RTLD_NOW | RTLD_NOLOAD);
	addrinfo = libdw ? (addrinfo_fn *)dlsym(libdw, "dwfl_module_addrinfo") : NULL;
	CHECK(addrinfo != NULL);
	if (!addrinfo) {
		ember__symbolizer_free(l);
		ember__symbolizer_free(d);
		return;
	}
	counts c = {0};
	int libc = 0, vdso = 0;
	for (size_t i = 0; i < l->nmods; i++) {
		uint64_t bias;
		if (!ember__symbolizer_elf_bias(l, i, &bias))
			continue;
		sym_module *ml = l->mods[i], *md = module_at(d, ml->info.start);
		CHECK(md && md->dm);
		if (!md || !md->dm)
			continue;
		libc |= strstr(ml->info.path, "/libc.so") != NULL;
		vdso |= strcmp(ml->info.path, "[vdso]") == 0;
		compare_module(l, d, ml, md, &c);
	}
	fprintf(stderr,
		"  %zu modules on the libelf path, %zu index entries, %zu addresses (%zu checked "
		"against dwfl_module_addrinfo), %zu differences\n",
		c.modules, c.entries, c.addrs, c.addrinfo, c.bad);
	CHECK(libc);
	/* (qemu-user gives an emulated process no vDSO) */
	CHECK(vdso || getauxval(AT_SYSINFO_EHDR) == 0);
	CHECK(c.modules >= 3); /* libc, libelf, libz, the vDSO... */
	CHECK(c.entries > 2000);
	CHECK(c.addrs > 2000 && c.addrinfo > 2000);
	CHECK_EQ_INT(c.bad, 0);
	ember__symbolizer_free(l);
	ember__symbolizer_free(d);
}

/* A module with DWARF the policy wants (this test program, built with
 * -g) goes to libdwfl on its first lookup: lines, as before. */
static void test_dwarf_goes_to_libdwfl(void)
{
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new(&s), 0);
	if (!s)
		return;
	ember__symbol_info si;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, (uint64_t)(uintptr_t)test_dwarf_goes_to_libdwfl + 1,
					      &si),
		     0);
	CHECK(si.nframes >= 1);
	const char *name = last_name(&si);
	CHECK(name && !strcmp(name, "test_dwarf_goes_to_libdwfl"));
	CHECK(si.nframes >= 1 && si.frames[0].file && si.frames[0].line > 0);
	CHECK(si.module && !ember__symbolizer_elf_bias(s, si.module - s->infos, &(uint64_t){0}));
	CHECK(ember_test_mapped("/libdw"));
	ember__symbolizer_free(s);
}

int main(void)
{
	RUN(test_libc_without_libdw);
	RUN(test_same_as_libdwfl);
	RUN(test_dwarf_goes_to_libdwfl);
	return CHECK_DONE();
}
