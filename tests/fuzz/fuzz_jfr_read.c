/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_jfr_read.c - libFuzzer target for the JFR reader (src/encode/
 * jfr_read.c) and what reads through it: the long-poll decoder
 * (tools/longpolls/decode*.c) and the conversion to a profile for `emberprof
 * top` (tools/read/jfr_profile.c). Seeds: corpus_jfr/ (make_jfr_seeds.py: async-profiler-shaped
 * recordings; jdk_small.jfr: a JDK 17 recording of PollJfr.java with only
 * jdk.ExecutionSample and profiler.UserEvent enabled; emberprof_longpoll.jfr:
 * a window emberprof wrote for tests/pollcatch/uv_slow, with an
 * emberprof.LongPoll event).
 */
#include <stddef.h>
#include <stdint.h>

#include "read/jfr_profile.h"
#include "read/jfr_read.h"
#include "longpolls/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile int64_t sink; /* keeps the reads */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ember__jfr *j;
	if (ember__jfr_open(data, size, &j) == 0) {
		ember__jfr_event ev;
		while (ember__jfr_next_event(j, &ev) == 1) {
			sink += ember__jfr_get_int(ev.value, "startTime");
			const ember__jfr_value *st = ember__jfr_get(ev.value, "stackTrace");
			const ember__jfr_value *fr = ember__jfr_get(st, "frames");
			if (fr && fr->kind == EMBER_JFR_ARRAY && fr->n)
				sink += ember__jfr_get_int(&fr->u.items[0], "lineNumber");
		}
		ember__jfr_free(j);
	}
	ember__profile *p = NULL;
	if (ember__jfr_to_profile(data, size, &p) == 0) {
		sink += p->nsamples;
		ember__profile_free(p);
	}
	ember__longpolls lp;
	ember__longpolls_init(&lp);
	ember__longpolls_add_data(&lp, data, size, "fuzz");
	ember__longpolls_sort(&lp);
	ember__longpolls_free(&lp);
	return 0;
}
