/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_symbolizer_elfonly.c - the addresses-only symbolizer of this
 * process (EMBER__SYM_ADDRESSES_ONLY: the agent's --no-symbolize) reads
 * its modules with libelf alone (symbolizer.c, module_load_elf): the same
 * module table as the libdwfl-based one (paths, ranges, build ids, the
 * vDSO's included), and libdw is not loaded for it.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "selfmaps.h"
#include "emberprof.h"
#include "symbols/symbolizer.h"
#include "util/dep_elfutils.h"

/* First, before anything here loads libdw. */
static void test_no_libdw(void)
{
	int unmapped_ok = ember_test_unmapped_checkable("test_no_libdw");
	ember__symbolizer *s = NULL;
	CHECK_EQ_INT(ember__symbolizer_new_opts(&s, EMBER__SYM_ADDRESSES_ONLY), 0);
	CHECK(s != NULL);
	const ember__module_info *mods = NULL;
	size_t n = ember__symbolizer_modules(s, &mods);
	CHECK(n >= 2);
	size_t with_id = 0;
	for (size_t i = 0; i < n; i++)
		with_id += mods[i].build_id[0] != '\0';
	CHECK(with_id >= 1);
	/* a lookup gives the module and no frame */
	ember__symbol_info si;
	CHECK_EQ_INT(ember__symbolizer_lookup(s, (uint64_t)(uintptr_t)test_no_libdw, &si), 0);
	CHECK(si.module != NULL && si.nframes == 0);
	CHECK_EQ_INT(ember__symbolizer_refresh(s), 0);
	CHECK(ember_test_mapped("/libelf"));
	CHECK(!unmapped_ok || !ember_test_mapped("/libdw"));
	CHECK(!unmapped_ok || !ember_test_mapped("/liblzma"));
	CHECK(!unmapped_ok || !ember_test_mapped("/libbz2"));
	CHECK(atomic_load(&ember__elfutils.state) == 0);
	ember__symbolizer_free(s);
}

/* The same table as libdwfl's, build ids included. */
static void test_same_table(void)
{
	ember__symbolizer *elf = NULL, *dwfl = NULL;
	CHECK_EQ_INT(ember__symbolizer_new_opts(&elf, EMBER__SYM_ADDRESSES_ONLY), 0);
	CHECK_EQ_INT(ember__symbolizer_new(&dwfl), 0);
	if (!elf || !dwfl) {
		ember__symbolizer_free(elf);
		ember__symbolizer_free(dwfl);
		return;
	}
	/* both from the layout after libdw was loaded */
	CHECK_EQ_INT(ember__symbolizer_refresh(elf), 0);
	CHECK_EQ_INT(ember__symbolizer_refresh(dwfl), 0);
	const ember__module_info *a = NULL, *b = NULL;
	size_t na = ember__symbolizer_modules(elf, &a);
	size_t nb = ember__symbolizer_modules(dwfl, &b);
	CHECK_EQ_INT(na, nb);
	size_t ids = 0;
	for (size_t i = 0; i < na && i < nb; i++) {
		CHECK_EQ_STR(a[i].path, b[i].path);
		CHECK(a[i].start == b[i].start && a[i].limit == b[i].limit);
		CHECK_EQ_STR(a[i].build_id, b[i].build_id);
		ids += b[i].build_id[0] != '\0';
	}
	CHECK(ids >= 2); /* the test program and libc at least, and the vDSO */
	ember__symbolizer_free(elf);
	ember__symbolizer_free(dwfl);
}

int main(void)
{
	RUN(test_no_libdw);
	RUN(test_same_table);
	return CHECK_DONE();
}
