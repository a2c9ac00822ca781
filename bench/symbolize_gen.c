/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize_gen.c - the unsymbolized profile `bench/symbolize.sh` names:
 * SAMPLES samples whose stacks (DEPTH frames each) are drawn from ADDRS
 * distinct code addresses of the ELF file FILE, as an addresses-only run
 * (EMBERPROF_SYMBOLIZE=0) would write them: one mapping for FILE's
 * executable segment (with its GNU build id), locations without lines.
 * The addresses are spread evenly over the segment; the draw is seeded,
 * so a file gives the same profile every time.
 *
 *     ember_bench_symbolize_gen FILE OUT.pb.gz [SAMPLES [ADDRS [DEPTH]]]
 *
 * Defaults: 100000 samples, 20000 addresses, depth 8.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode/pprof.h"
#include "profile/profile.h"
#include "util/dep_elfutils.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s FILE OUT.pb.gz [SAMPLES [ADDRS [DEPTH]]]\n", argv[0]);
		return 2;
	}
	long nsamples = argc > 3 ? atol(argv[3]) : 100000;
	long naddrs = argc > 4 ? atol(argv[4]) : 20000;
	long depth = argc > 5 ? atol(argv[5]) : 8;
	if (nsamples <= 0 || naddrs <= 0 || depth <= 0 || depth > 64) {
		fprintf(stderr, "bad counts\n");
		return 2;
	}
	if (ember__lazydep_load(&ember__elfutils) < 0)
		return 1;
	int fd = open(argv[1], O_RDONLY);
	elf_version(EV_CURRENT);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	size_t nph = 0;
	if (!elf || elf_getphdrnum(elf, &nph) != 0) {
		fprintf(stderr, "%s: not an ELF file\n", argv[1]);
		return 1;
	}
	GElf_Phdr x = {0};
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			x = ph;
			break;
		}
	}
	const void *idp = NULL;
	ssize_t idn = dwelf_elf_gnu_build_id(elf, &idp);
	char id[130] = "";
	for (ssize_t i = 0; i < idn && i < 64; i++)
		snprintf(id + 2 * i, 3, "%02x", ((const unsigned char *)idp)[i]);
	if (!x.p_filesz || (uint64_t)naddrs > x.p_filesz) {
		fprintf(stderr, "%s: no executable segment of %ld bytes\n", argv[1], naddrs);
		return 1;
	}

	ember__profile *p = ember__profile_new();
	const uint64_t base = 0x555555554000ull, pg = 4096;
	ember__mapping mp = {
		.start = base + (x.p_vaddr & ~(pg - 1)),
		.limit = base + ((x.p_vaddr + x.p_memsz + pg - 1) & ~(pg - 1)),
		.offset = x.p_offset & ~(pg - 1),
		.file = ember__profile_strdup(p, argv[1]),
		.build_id = ember__profile_strdup(p, id),
	};
	ember__profile_add_mapping(p, &mp);
	for (long i = 0; i < naddrs; i++) {
		ember__location l = {.address = base + x.p_vaddr + (uint64_t)i * (x.p_filesz / (uint64_t)naddrs),
				     .mapping = 1};
		ember__profile_add_location(p, &l);
	}
	p->nvalues = 2;
	p->sample_type[0] = (ember__value_type){ember__profile_strdup(p, "samples"),
						ember__profile_strdup(p, "count")};
	p->sample_type[1] = (ember__value_type){ember__profile_strdup(p, "cpu"),
						ember__profile_strdup(p, "nanoseconds")};
	p->period_type = (ember__value_type){ember__profile_strdup(p, "cpu"),
					     ember__profile_strdup(p, "nanoseconds")};
	p->period = 10000000;
	for (long s = 0; s < nsamples; s++) {
		ember__sample smp = {.nlocs = (uint32_t)depth, .values = {1, 10000000}};
		smp.locs = ember__arena_alloc(&p->arena, (size_t)depth * sizeof(*smp.locs));
		if (!smp.locs)
			return 1;
		for (long d = 0; d < depth; d++)
			smp.locs[d] = (uint32_t)(next_rand() % (uint64_t)naddrs) + 1;
		ember__profile_add_sample(p, &smp);
	}
	uint8_t *out;
	size_t len;
	if (ember__pprof_encode(p, &out, &len) != 0)
		return 1;
	FILE *f = fopen(argv[2], "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", argv[2]);
		return 1;
	}
	printf("%s: %ld samples, %ld addresses, depth %ld, build id %s\n", argv[2], nsamples,
	       naddrs, depth, id[0] ? id : "(none)");
	return 0;
}
