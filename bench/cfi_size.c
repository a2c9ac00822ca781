/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_size.c - the DWARF unwind table of each module named: its rows,
 * the memory it holds (rows and index, or the packed form: cfi_pack.h),
 * bytes a row, and the CPU time to build it (median of a few builds; the
 * build reads the file, parses its CFI, sorts, merges and packs):
 *
 *     ember_bench_cfi_size [-n REPEAT] FILE...
 *
 * Uses only what every version of the table has (nrows, bytes, stats),
 * so that the same source built against an older tree compares the two
 * (docs/BENCHMARKS.md, "Unwind table size"). A benchmark: judges nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfi/cfi.h"
#include "cfi/cfi_elf.h"
#include "emberprof.h"

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int repeat = 3, first = 1;
	if (argc > 2 && !strcmp(argv[1], "-n")) {
		repeat = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
		first = 3;
	}
	printf("%-40s %8s %10s %12s %9s %10s\n", "module", "FDEs", "rows", "KiB", "B/row",
	       "build ms");
	double rows_all = 0, bytes_all = 0;
	for (int a = first; a < argc; a++) {
		double ms[64];
		int n = repeat < 64 ? repeat : 64, ok = 1;
		ember__cfi_table *t = NULL;
		for (int r = 0; r < n && ok; r++) {
			ember__cfi_table_free(t);
			t = NULL;
			ember__cfi_module_info info;
			double t0 = cpu_ms();
			ok = ember__cfi_build_file(argv[a], &t, &info) == 0;
			ms[r] = cpu_ms() - t0;
		}
		const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
		if (!ok || !t || t->nrows == 0) {
			printf("%-40.40s (no table: %s)\n", name, ok ? "no rows" : ember_last_error());
			ember__cfi_table_free(t);
			continue;
		}
		qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
		printf("%-40.40s %8u %10u %12.1f %9.2f %10.1f\n", name, t->stats.fdes, t->nrows,
		       (double)t->bytes / 1024, (double)t->bytes / t->nrows, ms[n / 2]);
		rows_all += t->nrows;
		bytes_all += (double)t->bytes;
		ember__cfi_table_free(t);
	}
	if (rows_all > 0)
		printf("%-40s %8s %10.0f %12.1f %9.2f\n", "all", "", rows_all, bytes_all / 1024,
		       bytes_all / rows_all);
	return 0;
}
