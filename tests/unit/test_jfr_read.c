/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jfr_read.c - the JFR reader (tools/read/jfr_read.c) and the JFR side
 * of the long-poll decoder (tools/longpolls/decode_jfr.c) on the
 * async-profiler-shaped recordings of tests/fuzz/corpus_jfr/ (made by
 * make_jfr_seeds.py; the JDK's `jfr print` reads them): values, constant
 * pool references, Latin-1 user event data, two chunks, the tsc clock
 * rule; then every truncation and many byte flips of a recording, which
 * must fail cleanly (EMBER_ERR_FORMAT) or read, never crash; and a
 * recording whose empty types would make billions of values. Real JDK
 * recordings are read in tests/pollcatch/test_longpolls_jfr.sh.
 */
#include <stdlib.h>

#include "check.h"
#include "emberprof.h"
#include "read/jfr_read.h"
#include "longpolls/decode.h"
#include "pollcatch/pollcatch.h"

static uint8_t *load(const char *name, size_t *len)
{
	const char *src = getenv("EMBER_TEST_SRCDIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus_jfr/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return NULL;
	}
	static uint8_t buf[1 << 16];
	*len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	uint8_t *copy = malloc(*len);
	memcpy(copy, buf, *len);
	return copy;
}

static const char *sym(const ember__jfr_value *v)
{
	return ember__jfr_get_str(v, "string");
}

static void test_values(void)
{
	size_t len;
	uint8_t *d = load("asprof_like.jfr", &len);
	CHECK(d != NULL);
	if (!d)
		return;
	ember__jfr *j;
	CHECK_EQ_INT(ember__jfr_open(d, len, &j), 0);
	CHECK_EQ_INT(ember__jfr_nchunks(j), 1);
	const ember__jfr_chunk_info *ci = ember__jfr_chunk(j, 0);
	CHECK_EQ_INT(ci->major, 2);
	CHECK_EQ_INT(ci->ticks_per_second, 1000000000);
	CHECK_EQ_INT(ci->start_ticks, 1000000000);
	CHECK_EQ_INT(ci->size, len);
	CHECK(ember__jfr_class_by_name(j, 0, "jdk.types.StackFrame") != NULL);
	int samples = 0, users = 0, walls = 0, settings = 0, null_stacks = 0, rc;
	ember__jfr_event ev;
	while ((rc = ember__jfr_next_event(j, &ev)) == 1) {
		const char *n = ev.type->name;
		if (!strcmp(n, "jdk.ExecutionSample")) {
			const ember__jfr_value *st = ember__jfr_get(ev.value, "stackTrace");
			if (st->kind == EMBER_JFR_NULL) {
				null_stacks++; /* index 99 is not in the pool */
			} else if (samples == 0) {
				const ember__jfr_value *fr = ember__jfr_get(st, "frames");
				CHECK_EQ_INT(fr->kind, EMBER_JFR_ARRAY);
				CHECK_EQ_INT(fr->n, 3);
				const ember__jfr_value *m = ember__jfr_get(&fr->u.items[0], "method");
				CHECK_EQ_STR(sym(ember__jfr_get(m, "name")), "slow_callback");
				CHECK_EQ_STR(sym(ember__jfr_get(m, "descriptor")), "()V");
				CHECK_EQ_STR(sym(ember__jfr_get(ember__jfr_get(m, "type"), "name")), "");
				CHECK_EQ_STR(ember__jfr_get_str(ember__jfr_get(&fr->u.items[0], "type"),
								"description"), "Native");
				const ember__jfr_value *th = ember__jfr_get(ev.value, "sampledThread");
				CHECK_EQ_INT(ember__jfr_get_int(th, "osThreadId"), 4242);
				CHECK_EQ_STR(ember__jfr_get_str(th, "javaName"), "main");
				CHECK_EQ_INT(ember__jfr_get_int(ev.value, "startTime"), 1005000000);
			}
			samples++;
		} else if (!strcmp(n, "profiler.UserEvent")) {
			const ember__jfr_value *t = ember__jfr_get(ev.value, "type");
			CHECK_EQ_STR(ember__jfr_get_str(t, "name"), "tokio.PollcatchV1");
			const ember__jfr_value *data = ember__jfr_get(ev.value, "data");
			CHECK_EQ_INT(data->kind, EMBER_JFR_STRING);
			CHECK_EQ_INT(data->latin1, 1);
			CHECK_EQ_INT(data->n, 16);
			uint64_t s, e;
			CHECK_EQ_INT(ember__pollcatch_payload_decode((const uint8_t *)data->u.s, data->n, &s, &e), 0);
			if (users == 0) {
				CHECK_EQ_INT(s, 1010000000);
				CHECK_EQ_INT(e, 1060000000);
				CHECK_EQ_INT(ember__jfr_get_int(ev.value, "startTime"), 1060001000);
			}
			users++;
		} else if (!strcmp(n, "profiler.WallClockSample")) {
			CHECK_EQ_INT(ember__jfr_get_int(ev.value, "samples"), 2);
			walls++;
		} else if (!strcmp(n, "jdk.ActiveSetting")) {
			CHECK_EQ_STR(ember__jfr_get_str(ev.value, "name"), "clock");
			CHECK_EQ_STR(ember__jfr_get_str(ev.value, "value"), "tsc");
			CHECK(ember__jfr_is(ev.type, "jdk.jfr.Event")); /* its super type */
			settings++;
		}
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(samples, 7);
	CHECK_EQ_INT(null_stacks, 1);
	CHECK_EQ_INT(users, 2);
	CHECK_EQ_INT(walls, 1);
	CHECK_EQ_INT(settings, 1);
	/* rewind reads the same again */
	ember__jfr_rewind(j);
	int again = 0;
	while (ember__jfr_next_event(j, &ev) == 1)
		again++;
	CHECK_EQ_INT(again, 7 + 2 + 1 + 1);
	ember__jfr_free(j);
	free(d);
}

static void test_longpolls(void)
{
	size_t len;
	uint8_t *d = load("asprof_like.jfr", &len);
	if (!d)
		return;
	ember__longpolls lp;
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, d, len, "asprof_like.jfr"), 0);
	ember__longpolls_sort(&lp);
	CHECK_EQ_INT(lp.n, 2);
	if (lp.n == 2) {
		const ember__lp_poll *p = &lp.polls[0];
		CHECK(p->duration_ms > 49.999 && p->duration_ms < 50.001);
		CHECK_EQ_INT(p->samples, 5); /* three CPU samples and a wall sample of weight 2 */
		CHECK_EQ_INT(p->tid, 4242);
		CHECK_EQ_STR(p->thread, "main");
		CHECK_EQ_INT(p->nstacks, 1); /* not the worker's busy_other, not the sample before */
		CHECK_EQ_INT(p->stacks[0].nframes, 3);
		CHECK_EQ_STR(p->stacks[0].frames[0], "slow_callback");
		CHECK_EQ_STR(p->stacks[0].frames[2], "main");
		CHECK(lp.polls[1].duration_ms > 1.999 && lp.polls[1].duration_ms < 2.001);
		CHECK_EQ_INT(lp.polls[1].samples, 2); /* one with a stack, one without */
	}
	ember__longpolls_free(&lp);
	free(d);

	d = load("clock_monotonic.jfr", &len);
	ember__longpolls_init(&lp);
	CHECK_EQ_INT(ember__longpolls_add_data(&lp, d, len, "mono.jfr"), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "not tsc") != NULL);
	CHECK(strstr(ember_last_error(), "mono.jfr") != NULL);
	ember__longpolls_free(&lp);
	free(d);
}

static void test_two_chunks(void)
{
	size_t len;
	uint8_t *d = load("two_chunks.jfr", &len);
	if (!d)
		return;
	ember__jfr *j;
	CHECK_EQ_INT(ember__jfr_open(d, len, &j), 0);
	CHECK_EQ_INT(ember__jfr_nchunks(j), 2);
	CHECK_EQ_INT(ember__jfr_chunk(j, 1)->offset, len / 2);
	ember__jfr_event ev;
	int n = 0, in_second = 0;
	while (ember__jfr_next_event(j, &ev) == 1) {
		n++;
		in_second += ev.chunk == 1;
	}
	CHECK_EQ_INT(n, 22);
	CHECK_EQ_INT(in_second, 11);
	ember__jfr_free(j);
	free(d);
}

static void test_bad_input(void)
{
	ember__jfr *j;
	static const uint8_t junk[100] = "not a recording";
	CHECK_EQ_INT(ember__jfr_open(junk, sizeof(junk), &j), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "FLR") != NULL);
	CHECK_EQ_INT(ember__jfr_open(junk, 10, &j), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "too short") != NULL);

	size_t len;
	uint8_t *d = load("asprof_like.jfr", &len);
	if (!d)
		return;
	/* every truncation fails cleanly: the chunk size no longer fits */
	int bad_rc = 0;
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *t = malloc(cut ? cut : 1);
		memcpy(t, d, cut);
		int rc = ember__jfr_open(t, cut, &j);
		if (rc != EMBER_ERR_FORMAT)
			bad_rc++;
		if (rc == 0)
			ember__jfr_free(j);
		free(t);
	}
	CHECK_EQ_INT(bad_rc, 0);
	/* flipped bytes: read what can be read, fail with FORMAT otherwise */
	int opened = 0, failed = 0, other = 0;
	uint8_t *t = malloc(len);
	for (size_t i = 0; i < len; i++)
		for (int k = 0; k < 3; k++) {
			memcpy(t, d, len);
			t[i] = k == 0 ? 0xff : k == 1 ? 0x00 : (uint8_t)(t[i] + 1);
			int rc = ember__jfr_open(t, len, &j);
			if (rc == 0) {
				ember__jfr_event ev;
				while ((rc = ember__jfr_next_event(j, &ev)) == 1)
					ember__jfr_get_int(ev.value, "startTime");
				ember__jfr_free(j);
				opened++;
			}
			if (rc == EMBER_ERR_FORMAT)
				failed++;
			else if (rc != 0)
				other++;
			/* and the decoder on top */
			ember__longpolls lp;
			ember__longpolls_init(&lp);
			rc = ember__longpolls_add_data(&lp, t, len, "x");
			if (rc != 0 && rc != EMBER_ERR_FORMAT)
				other++;
			ember__longpolls_free(&lp);
		}
	free(t);
	CHECK(opened > 0);
	CHECK(failed > 0);
	CHECK_EQ_INT(other, 0);
	free(d);
}

/* Types without fields take no bytes: the budget of values read, not the
 * bytes, must stop a pool of 1000 x 8 million empty values. */
static void test_empty_fields(void)
{
	size_t len;
	uint8_t *d = load("empty_fields.jfr", &len);
	if (!d)
		return;
	ember__jfr *j;
	CHECK_EQ_INT(ember__jfr_open(d, len, &j), EMBER_ERR_FORMAT);
	CHECK(strstr(ember_last_error(), "more values than the input can hold") != NULL);
	free(d);
}

int main(void)
{
	RUN(test_values);
	RUN(test_longpolls);
	RUN(test_two_chunks);
	RUN(test_bad_input);
	RUN(test_empty_fields);
	return CHECK_DONE();
}
