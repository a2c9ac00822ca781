/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame_gen.c - writes the synthetic profile of the flame graph benchmark
 * (bench/flame.sh): a gzip'd pprof of 100,000 unique stacks holding
 * 1,000,000 samples in all, with values (samples count, cpu nanoseconds)
 * and a thread_name label of four threads.
 *
 * Shape: three common frames (main, run_loop, dispatch), then a tree of
 * five levels with ten callees each: 10^5 leaves, every stack a path to a
 * leaf, 111,110 nodes in the call tree. Each level has its own ten
 * functions (in one of four modules), so names repeat across the tree as
 * in a real program. Sample counts per stack are 1..19 (a fixed LCG),
 * scaled so that they sum to exactly 1,000,000 (each count >= 1 since
 * 1 * 10^6 / sum >= 1 with sum < 2 * 10^6).
 *
 *     ember_bench_flame_gen OUT.pb.gz
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode/pprof.h"
#include "profile/profile.h"

#define LEVELS 5
#define FANOUT 10
#define PREFIX 3
#define STACKS 100000
#define SAMPLES 1000000
#define PERIOD 10000000 /* 100 Hz */

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ember_bench_flame_gen OUT.pb.gz\n");
		return 2;
	}
	ember__profile *p = ember__profile_new();
	if (!p)
		return 1;
	p->nvalues = 2;
	p->sample_type[0] = (ember__value_type){ "samples", "count" };
	p->sample_type[1] = (ember__value_type){ "cpu", "nanoseconds" };
	p->period_type = (ember__value_type){ "cpu", "nanoseconds" };
	p->period = PERIOD;
	const char *mods[4] = { "/usr/bin/server", "/usr/lib/libcore.so", "/usr/lib/libnet.so",
				"/usr/lib/libdb.so" };
	for (int m = 0; m < 4; m++) {
		ember__mapping map = { 0 };
		map.file = mods[m];
		map.build_id = "";
		map.has_functions = 1;
		ember__profile_add_mapping(p, &map);
	}
	/* locations: PREFIX common ones, then LEVELS x FANOUT */
	uint32_t loc_prefix[PREFIX], loc[LEVELS][FANOUT];
	const char *pre[PREFIX] = { "main", "run_loop", "dispatch" };
	for (int i = 0; i < PREFIX + LEVELS * FANOUT; i++) {
		char name[64];
		if (i < PREFIX)
			snprintf(name, sizeof(name), "%s", pre[i]);
		else
			snprintf(name, sizeof(name), "subsystem%d::handler_%d_%d", (i - PREFIX) / FANOUT,
				 (i - PREFIX) / FANOUT, (i - PREFIX) % FANOUT);
		ember__function f = { 0 };
		f.name = ember__profile_strdup(p, name);
		f.system_name = f.name;
		f.filename = ember__profile_strdup(p, "src/server.c");
		uint32_t fi = ember__profile_add_function(p, &f);
		ember__line *ln = ember__arena_alloc(&p->arena, sizeof(*ln));
		ln->function = fi;
		ln->line = 100 + i;
		ember__location l = { 0 };
		l.address = 0x400000 + (uint64_t)i * 64;
		l.mapping = 1 + (uint32_t)(i % 4);
		l.nlines = 1;
		l.lines = ln;
		uint32_t li = ember__profile_add_location(p, &l);
		if (i < PREFIX)
			loc_prefix[i] = li;
		else
			loc[(i - PREFIX) / FANOUT][(i - PREFIX) % FANOUT] = li;
	}
	static const char *threads[4] = { "worker-1", "worker-2", "worker-3", "io" };
	uint32_t rng = 12345;
	static int64_t counts[STACKS];
	int64_t sum = 0;
	for (int s = 0; s < STACKS; s++) {
		rng = rng * 1103515245u + 12345u;
		counts[s] = 1 + (int64_t)((rng >> 16) % 19);
		sum += counts[s];
	}
	int64_t left = SAMPLES; /* what the rounding down leaves, one more each to the first */
	for (int s = 0; s < STACKS; s++)
		left -= counts[s] * SAMPLES / sum;
	for (int s = 0; s < STACKS; s++) {
		int64_t c = counts[s] * SAMPLES / sum + (s < left ? 1 : 0);
		ember__sample smp = { 0 };
		smp.nlocs = PREFIX + LEVELS;
		smp.locs = ember__arena_alloc(&p->arena, smp.nlocs * sizeof(uint32_t));
		int digits = s;
		for (int l = LEVELS - 1; l >= 0; l--) { /* leaf first */
			smp.locs[LEVELS - 1 - l] = loc[l][digits % FANOUT];
			digits /= FANOUT;
		}
		for (int i = 0; i < PREFIX; i++)
			smp.locs[LEVELS + i] = loc_prefix[PREFIX - 1 - i];
		smp.nlabels = 1;
		smp.labels = ember__arena_alloc(&p->arena, sizeof(ember__label));
		memset(smp.labels, 0, sizeof(ember__label));
		smp.labels[0].key = "thread_name";
		smp.labels[0].str = threads[s % 4];
		smp.values[0] = c;
		smp.values[1] = c * PERIOD;
		ember__profile_add_sample(p, &smp);
	}
	uint8_t *out = NULL;
	size_t len = 0;
	if (ember__pprof_encode(p, &out, &len) != 0) {
		fprintf(stderr, "encode failed\n");
		return 1;
	}
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", argv[1]);
		return 1;
	}
	free(out);
	ember__profile_free(p);
	return 0;
}
