/* SPDX-License-Identifier: Apache-2.0 */
/*
 * count_samples.c - sums the samples in profiles, for the overhead
 * benchmark's "delivered / expected" column (bench/abrun.c runs it after
 * every profiled run).
 *
 *     ember_bench_count pprof FILE...   emberprof's gzip'd pprof files
 *     ember_bench_count gperf FILE      a gperftools CPU profile
 *
 * pprof: prints "signals N weighted_ns W": N sums the "samples"/"count"
 * value (one per signal the handler recorded), W the "cpu"/"nanoseconds"
 * value (each signal weighted by 1 + its timer overruns, times the period).
 *
 * gperf: prints "signals N period_us P". The file is the legacy binary
 * format documented at gperftools.github.io/gperftools/cpuprofile-fileformat:
 * native-endian machine words; a header {0, 3, 0, period_us, 0}; records
 * {count, npcs, pc[npcs]}; a trailer {0, 1, 0}; then text. N is the sum of
 * the records' counts (one per SIGPROF that libprofiler recorded).
 *
 * Exit status 0 on success, 1 with a message on stderr otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "profile/profile.h"

static int value_index(const ember__profile *p, const char *type, const char *unit)
{
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (p->sample_type[i].type && p->sample_type[i].unit &&
		    !strcmp(p->sample_type[i].type, type) && !strcmp(p->sample_type[i].unit, unit))
			return (int)i;
	return -1;
}

static int count_pprof(int nfiles, char **files)
{
	int64_t signals = 0, weighted = 0;
	for (int f = 0; f < nfiles; f++) {
		ember__profile *p = NULL;
		if (ember__pprof_read_file(files[f], &p) != 0) {
			fprintf(stderr, "ember_bench_count: %s: %s\n", files[f], ember_last_error());
			return 1;
		}
		int is = value_index(p, "samples", "count");
		int iw = value_index(p, "cpu", "nanoseconds");
		if (is < 0 || iw < 0) {
			fprintf(stderr, "ember_bench_count: %s: no samples/count and cpu/nanoseconds values\n",
				files[f]);
			ember__profile_free(p);
			return 1;
		}
		for (uint32_t i = 0; i < p->nsamples; i++) {
			signals += p->samples[i].values[is];
			weighted += p->samples[i].values[iw];
		}
		ember__profile_free(p);
	}
	printf("signals %" PRId64 " weighted_ns %" PRId64 "\n", signals, weighted);
	return 0;
}

static int count_gperf(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "ember_bench_count: %s: %s\n", path, strerror(errno));
		return 1;
	}
	uintptr_t hdr[5];
	if (fread(hdr, sizeof(hdr[0]), 5, f) != 5 || hdr[0] != 0 || hdr[1] < 3 || hdr[2] != 0) {
		fprintf(stderr, "ember_bench_count: %s: not a gperftools CPU profile\n", path);
		fclose(f);
		return 1;
	}
	uintptr_t period_us = hdr[3];
	/* Skip any header words beyond the three we know. */
	for (uintptr_t i = 3; i < hdr[1]; i++) {
		uintptr_t skip;
		if (fread(&skip, sizeof(skip), 1, f) != 1)
			goto truncated;
	}
	uint64_t signals = 0;
	for (;;) {
		uintptr_t rec[2];
		if (fread(rec, sizeof(rec[0]), 2, f) != 2)
			goto truncated;
		if (rec[1] > 4096) {
			fprintf(stderr, "ember_bench_count: %s: record with %ju pcs, not a profile?\n", path,
				(uintmax_t)rec[1]);
			fclose(f);
			return 1;
		}
		uintptr_t pcs[4096];
		if (rec[1] && fread(pcs, sizeof(pcs[0]), rec[1], f) != rec[1])
			goto truncated;
		if (rec[0] == 0 && rec[1] == 1 && pcs[0] == 0)
			break; /* trailer */
		signals += rec[0];
	}
	fclose(f);
	printf("signals %" PRIu64 " period_us %ju\n", signals, (uintmax_t)period_us);
	return 0;
truncated:
	fprintf(stderr, "ember_bench_count: %s: truncated profile\n", path);
	fclose(f);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "pprof"))
		return count_pprof(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "gperf"))
		return count_gperf(argv[2]);
	fprintf(stderr, "usage: ember_bench_count pprof FILE... | gperf FILE\n");
	return 1;
}
