/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_flame.c - libFuzzer target for the input path of `emberprof flame`
 * and `emberprof diff`: the first byte picks options (reverse, --min, a
 * diff, a --where), the rest is a pprof profile or a JFR recording, read
 * by the same readers as the CLI. Whatever they accept goes into the flame
 * tree and out as the page's JSON, folded stacks and, for a diff, the
 * significance table; a crash or sanitizer report is a bug, an error
 * return is fine.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "emberprof.h"
#include "read/jfr_profile.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"
#include "flame/flame.h"
#include "flame/flame_diff.h"

/* The page is constant bytes (cmake/embed.cmake); the fuzzer uses a small
 * one with the same data marker. */
extern const unsigned char ember__flame_page[];
extern const unsigned long ember__flame_page_len;
const unsigned char ember__flame_page[] = "<p>/*@EMBERPROF_DATA@*/</p>";
const unsigned long ember__flame_page_len = sizeof(ember__flame_page) - 1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	data++, size--;
	ember__profile *p = NULL;
	int rc = ember__jfr_magic(data, size) ? ember__jfr_to_profile(data, size, &p)
					      : ember__pprof_read(data, size, &p);
	if (rc != 0)
		return 0;
	ember__flame_opts o = { .reverse = flags & 1, .min_pct = (flags & 2) ? 5.0 : 0,
				.diff = (flags & 4) != 0 };
	if (flags & 8) {
		o.nwhere = 1;
		o.where_key[0] = "thread_name";
		o.where_val[0] = "main";
	}
	if (o.diff && p->nvalues > 0)
		o.type = p->sample_type[0].type;
	ember__flame *fl = ember__flame_new(&o);
	if (!fl)
		abort();
	if (ember__flame_add(fl, p, "fuzz", 0) == 0 &&
	    (!o.diff || ember__flame_add(fl, p, "fuzz", 1) == 0)) {
		FILE *out = fopen("/dev/null", "w");
		if (!out)
			abort();
		ember__flame_diff d = { 0 };
		if (o.diff && ember__flame_diff_compute(fl, &d) == 0)
			ember__flame_diff_print(fl, &d, 20, out);
		ember__flame_write_html(fl, o.diff ? &d : NULL, out);
		ember__flame_write_folded(fl, out);
		ember__flame_diff_free(&d);
		fclose(out);
	}
	ember__flame_free(fl);
	ember__profile_free(p);
	return 0;
}
