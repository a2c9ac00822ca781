/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_lazydep.c - libraries loaded at first use (src/util/lazydep.h):
 * the real ones load and work through the redirected names; a library
 * that is missing, or lacks a function, fails with a message naming it
 * and its package, and its table never leads to address 0.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "selfmaps.h"
#include "emberprof.h"
#include "util/dep_elfutils.h"
#include "util/dep_zlib.h"
#include "util/lazydep.h"

static void test_zlib_through_table(void)
{
	CHECK(ember__lazydep_load(&ember__zlib) == 0);
	/* the standard check value of CRC-32 */
	const char *s = "123456789";
	uLong c = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)s, 9);
	CHECK_EQ_INT(c, 0xCBF43926UL);
}

/* libelf alone: its functions work and neither libdw nor what libdw
 * brings (liblzma, libbz2) is mapped. Run first, before anything loads
 * libdw into this process. */
static void test_libelf_alone(void)
{
	int unmapped_ok = ember_test_unmapped_checkable("test_libelf_alone");
	CHECK(!unmapped_ok || !ember_test_mapped("/libdw"));
	CHECK(ember__lazydep_load(&ember__libelf) == 0);
	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	int fd = open("/proc/self/exe", O_RDONLY);
	CHECK(fd >= 0);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	CHECK(e != NULL && elf_kind(e) == ELF_K_ELF);
	elf_end(e);
	close(fd);
	CHECK(ember_test_mapped("/libelf"));
	CHECK(!unmapped_ok || !ember_test_mapped("/libdw"));
	CHECK(!unmapped_ok || !ember_test_mapped("/liblzma"));
	CHECK(!unmapped_ok || !ember_test_mapped("/libbz2"));
	CHECK(atomic_load(&ember__elfutils.state) == 0);
}

static void test_elfutils_through_table(void)
{
	CHECK(ember__lazydep_load(&ember__elfutils) == 0);
	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	const char *v = dwfl_version(NULL);
	CHECK(v != NULL && *v != '\0');
	CHECK(ember_test_mapped("/libdw"));
}

struct two_fns {
	long (*p_f)(void);
	long (*p_g)(void);
};

/* A library that is not there. */
static const char *const nosuch_sonames[] = {"libember-no-such-library.so.7", NULL};
static const char *const nosuch_names[] = {"f", "g", NULL};
static struct two_fns nosuch_fn;
static struct ember__lazydep nosuch = {
	.what = "libnosuch (a test)",
	.package = "no-such-package",
	.sonames = nosuch_sonames,
	.names = nosuch_names,
	.slots = &nosuch_fn,
};

/* A library that is there (zlib) but lacks the second function. */
static const char *const lacking_sonames[] = {"libember-no-such-library.so.7", "libz.so.1", NULL};
static const char *const lacking_names[] = {"crc32", "ember_no_such_function", NULL};
static struct two_fns lacking_fn;
static struct ember__lazydep lacking = {
	.what = "zlib (a test)",
	.package = "zlib1g",
	.sonames = lacking_sonames,
	.names = lacking_names,
	.slots = &lacking_fn,
};

static void test_missing_library(void)
{
	CHECK(ember__lazydep_load(&nosuch) == EMBER_ERR_UNSUPPORTED);
	const char *msg = ember_last_error();
	CHECK(strstr(msg, "cannot load libnosuch (a test)") != NULL);
	CHECK(strstr(msg, "install no-such-package") != NULL);
	/* the same outcome again, without another attempt within 100 ms */
	int64_t retry = atomic_load(&nosuch.retry_after_ns);
	CHECK(retry > 0);
	CHECK(ember__lazydep_load(&nosuch) == EMBER_ERR_UNSUPPORTED);
	/* a failed open is tried again later (memory may have been short) */
	struct timespec nap = {0, 120000000};
	nanosleep(&nap, NULL);
	CHECK(ember__lazydep_load(&nosuch) == EMBER_ERR_UNSUPPORTED);
	CHECK(atomic_load(&nosuch.retry_after_ns) > retry);
	/* never address 0: the stub answers 0 ("no result") */
	CHECK(nosuch_fn.p_f != NULL && nosuch_fn.p_g != NULL);
	CHECK(nosuch_fn.p_f() == 0 && nosuch_fn.p_g() == 0);
}

static void test_missing_function(void)
{
	CHECK(ember__lazydep_load(&lacking) == EMBER_ERR_UNSUPPORTED);
	const char *msg = ember_last_error();
	CHECK(strstr(msg, "(libz.so.1) lacks ember_no_such_function") != NULL);
	CHECK(strstr(msg, "zlib1g") != NULL);
	/* none of its table is used: crc32 too leads to the stub */
	CHECK(lacking_fn.p_f != NULL && lacking_fn.p_f() == 0);
	/* a library that lacks a function stays failed: no retry */
	CHECK(atomic_load(&lacking.state) == -1);
}

int main(void)
{
	RUN(test_libelf_alone);
	RUN(test_zlib_through_table);
	RUN(test_elfutils_through_table);
	RUN(test_missing_library);
	RUN(test_missing_function);
	return CHECK_DONE();
}
