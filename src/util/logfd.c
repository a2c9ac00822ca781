/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logfd.c - the default log destination (logfd.h).
 *
 * The only global state: what descriptor 2 was when the library was
 * loaded, written once by the constructor before main() and read-only
 * afterwards, and the counts of dropped lines (atomics).
 */
#include "util/logfd.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "util/fileio.h"
#include "util/hotpage.h"

static int err_known EMBER_HOT_DATA;      /* descriptor 2 was open at load time */
static dev_t err_dev EMBER_HOT_DATA;
static ino_t err_ino EMBER_HOT_DATA;
static _Atomic uint64_t lost EMBER_HOT_DATA;   /* descriptor 2 not the original any more */
static _Atomic uint64_t failed EMBER_HOT_DATA; /* write(2) failed (a full disk, a closed pipe) */
static _Atomic int failed_errno EMBER_HOT_DATA;

/* Priority 101: before the preloaded agent starts (preload.c's constructor,
 * default priority), whose thread may log at once. */
__attribute__((constructor(101))) static void remember_stderr(void)
{
	struct stat st;
	if (fstat(2, &st) == 0) {
		err_dev = st.st_dev;
		err_ino = st.st_ino;
		err_known = 1;
	}
}

int ember__logfd_write(const char *line, size_t n)
{
	struct stat st;
	if (err_known && fstat(2, &st) == 0 && st.st_dev == err_dev && st.st_ino == err_ino) {
		if (ember__write_all(2, line, n) == 0)
			return 0;
		atomic_store(&failed_errno, errno);
		atomic_fetch_add(&failed, 1);
		return -1;
	}
	atomic_fetch_add(&lost, 1);
	return -1;
}

EMBER_HOT_TEXT size_t ember__logfd_decimal(char *buf, unsigned long v)
{
	char tmp[24];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

uint64_t ember__logfd_lost(void)
{
	return atomic_load(&lost);
}

uint64_t ember__logfd_failed(int *last_errno)
{
	if (last_errno)
		*last_errno = atomic_load(&failed_errno);
	return atomic_load(&failed);
}
