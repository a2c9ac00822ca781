/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_protobuf.c - the protobuf wire writer and reader: byte-exact
 * encodings from the protobuf documentation's examples, round trips of
 * nested and packed fields (including bodies long enough to need the
 * length shift), and rejection of malformed input. Inputs to the reader
 * are copied into exactly-sized heap buffers so that ASan catches any read
 * past the end.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emberprof.h"
#include "encode/protobuf.h"

/* Runs the reader over a heap copy of data[0..len) until it stops.
 * Returns the last result (0 = clean end, < 0 = error) and the number of
 * fields read in *nfields. */
static int read_all(const uint8_t *data, size_t len, int *nfields)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, data, len);
	ember__pb_reader r;
	ember__pb_field f;
	int rc, n = 0;
	ember__pb_reader_init(&r, copy, len);
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		/* A length-delimited payload lies inside the buffer. */
		if (f.wire == EMBER_PB_LEN && f.len)
			CHECK(f.data >= copy && f.data + f.len <= copy + len);
		n++;
	}
	free(copy);
	if (nfields)
		*nfields = n;
	return rc;
}

static void test_known_encodings(void)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	/* From the protobuf encoding guide: field 1 = 150. */
	ember__pb_uint64(&b, 1, 150);
	static const uint8_t v150[] = {0x08, 0x96, 0x01};
	CHECK_EQ_INT(b.len, sizeof(v150));
	CHECK(memcmp(b.data, v150, sizeof(v150)) == 0);
	b.len = 0;
	/* Field 2 = "testing". */
	ember__pb_bytes(&b, 2, "testing", 7);
	static const uint8_t str[] = {0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
	CHECK_EQ_INT(b.len, sizeof(str));
	CHECK(memcmp(b.data, str, sizeof(str)) == 0);
	b.len = 0;
	/* Packed field 4 = [3, 270, 86942]. */
	uint64_t vals[] = {3, 270, 86942};
	ember__pb_packed_uint64(&b, 4, vals, 3);
	static const uint8_t packed[] = {0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05};
	CHECK_EQ_INT(b.len, sizeof(packed));
	CHECK(memcmp(b.data, packed, sizeof(packed)) == 0);
	b.len = 0;
	/* A negative int64 takes ten bytes. */
	ember__pb_int64(&b, 1, -1);
	CHECK_EQ_INT(b.len, 11);
	CHECK_EQ_INT(b.data[10], 0x01);
	b.len = 0;
	/* _opt writes nothing for zero; packed writes nothing for n == 0. */
	ember__pb_uint64_opt(&b, 3, 0);
	ember__pb_int64_opt(&b, 3, 0);
	ember__pb_packed_int64(&b, 3, NULL, 0);
	CHECK_EQ_INT(b.len, 0);
	CHECK(!ember__pb_failed(&b));
	ember__pb_free(&b);
	CHECK(b.data == NULL && b.len == 0);
}

static void test_varint_roundtrip(void)
{
	static const uint64_t vals[] = {0, 1, 127, 128, 255, 300, 16383, 16384,
					(1ull << 32) - 1, 1ull << 32, (1ull << 56) + 5,
					(uint64_t)INT64_MAX, (uint64_t)-1};
	size_t n = sizeof(vals) / sizeof(vals[0]);
	ember__pbuf b = EMBER_PBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		size_t before = b.len;
		ember__pb_varint(&b, vals[i]);
		CHECK_EQ_INT(b.len - before, ember__pb_varint_size(vals[i]));
	}
	CHECK_EQ_INT(ember__pb_varint_size(0), 1);
	CHECK_EQ_INT(ember__pb_varint_size(127), 1);
	CHECK_EQ_INT(ember__pb_varint_size(128), 2);
	CHECK_EQ_INT(ember__pb_varint_size(UINT64_MAX), 10);
	const uint8_t *p = b.data, *end = b.data + b.len;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 12345;
		CHECK_EQ_INT(ember__pb_read_varint(&p, end, &v), 0);
		CHECK(v == vals[i]);
	}
	CHECK(p == end);
	CHECK_EQ_INT(ember__pb_count_packed(b.data, b.len), (long long)n);
	ember__pb_free(&b);
}

/* Builds a message with nested bodies of three length classes (1, 2 and 3
 * length bytes), nested two deep, and reads it all back. */
static void test_nested(void)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	static const size_t sizes[] = {0, 5, 127, 128, 200, 16383, 16384, 70000};
	size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	char *payload = malloc(70000);
	for (size_t i = 0; i < 70000; i++)
		payload[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < nsizes; i++) {
		size_t outer = ember__pb_begin(&b, 7);
		ember__pb_uint64(&b, 1, i);
		size_t inner = ember__pb_begin(&b, 2);
		ember__pb_bytes(&b, 3, payload, sizes[i]);
		ember__pb_end(&b, inner);
		ember__pb_int64(&b, 4, -(int64_t)i);
		ember__pb_end(&b, outer);
	}
	ember__pb_uint64(&b, 9, 99);
	CHECK(!ember__pb_failed(&b));

	ember__pb_reader r;
	ember__pb_field f;
	ember__pb_reader_init(&r, b.data, b.len);
	size_t seen = 0;
	int rc;
	while ((rc = ember__pb_next(&r, &f)) > 0) {
		if (f.num == 9) {
			CHECK_EQ_INT(f.wire, EMBER_PB_VARINT);
			CHECK_EQ_INT(f.u, 99);
			continue;
		}
		CHECK_EQ_INT(f.num, 7);
		CHECK_EQ_INT(f.wire, EMBER_PB_LEN);
		ember__pb_reader r2;
		ember__pb_field g;
		ember__pb_reader_init(&r2, f.data, f.len);
		int got = 0;
		while (ember__pb_next(&r2, &g) > 0) {
			if (g.num == 1) {
				CHECK_EQ_INT(g.u, seen);
				got |= 1;
			} else if (g.num == 2) {
				ember__pb_reader r3;
				ember__pb_field h;
				ember__pb_reader_init(&r3, g.data, g.len);
				CHECK_EQ_INT(ember__pb_next(&r3, &h), 1);
				CHECK_EQ_INT(h.num, 3);
				CHECK_EQ_INT(h.len, sizes[seen]);
				CHECK(h.len == 0 || memcmp(h.data, payload, h.len) == 0);
				CHECK_EQ_INT(ember__pb_next(&r3, &h), 0);
				got |= 2;
			} else if (g.num == 4) {
				CHECK_EQ_INT((int64_t)g.u, -(int64_t)seen);
				got |= 4;
			}
		}
		CHECK_EQ_INT(got, 7);
		seen++;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(seen, nsizes);
	free(payload);
	ember__pb_free(&b);
}

static void test_packed_roundtrip(void)
{
	int64_t iv[] = {0, -1, 5, INT64_MIN, INT64_MAX, 1000000};
	uint32_t uv[] = {1, 2, 300, UINT32_MAX};
	ember__pbuf b = EMBER_PBUF_INIT;
	ember__pb_packed_int64(&b, 2, iv, 6);
	ember__pb_packed_uint32(&b, 1, uv, 4);
	ember__pb_reader r;
	ember__pb_field f;
	ember__pb_reader_init(&r, b.data, b.len);
	CHECK_EQ_INT(ember__pb_next(&r, &f), 1);
	CHECK_EQ_INT(f.num, 2);
	CHECK_EQ_INT(ember__pb_count_packed(f.data, f.len), 6);
	const uint8_t *p = f.data;
	for (int i = 0; i < 6; i++) {
		uint64_t v;
		CHECK_EQ_INT(ember__pb_read_varint(&p, f.data + f.len, &v), 0);
		CHECK((int64_t)v == iv[i]);
	}
	CHECK_EQ_INT(ember__pb_next(&r, &f), 1);
	CHECK_EQ_INT(f.num, 1);
	p = f.data;
	for (int i = 0; i < 4; i++) {
		uint64_t v;
		CHECK_EQ_INT(ember__pb_read_varint(&p, f.data + f.len, &v), 0);
		CHECK_EQ_INT(v, uv[i]);
	}
	CHECK_EQ_INT(ember__pb_next(&r, &f), 0);
	ember__pb_free(&b);
}

static void test_fixed_fields_skipped(void)
{
	/* field 1 fixed64, field 2 fixed32, field 3 varint 7. */
	static const uint8_t msg[] = {0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x15, 9, 10, 11, 12, 0x18, 7};
	ember__pb_reader r;
	ember__pb_field f;
	ember__pb_reader_init(&r, msg, sizeof(msg));
	CHECK_EQ_INT(ember__pb_next(&r, &f), 1);
	CHECK_EQ_INT(f.wire, EMBER_PB_FIXED64);
	CHECK(f.u == 0x0807060504030201ull);
	CHECK_EQ_INT(ember__pb_next(&r, &f), 1);
	CHECK_EQ_INT(f.wire, EMBER_PB_FIXED32);
	CHECK(f.u == 0x0c0b0a09u);
	CHECK_EQ_INT(ember__pb_next(&r, &f), 1);
	CHECK_EQ_INT(f.num, 3);
	CHECK_EQ_INT(f.u, 7);
	CHECK_EQ_INT(ember__pb_next(&r, &f), 0);
}

static void test_malformed(void)
{
	struct {
		const char *what;
		uint8_t bytes[16];
		size_t len;
	} cases[] = {
		{"truncated key", {0x80}, 1},
		{"truncated varint value", {0x08, 0x80}, 2},
		{"key without value", {0x08}, 1},
		{"11-byte varint", {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 12},
		{"varint overflowing 64 bits", {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 11},
		{"field number 0", {0x00, 0x01}, 2},
		{"start group", {0x0b}, 1},
		{"end group", {0x0c}, 1},
		{"wire type 6", {0x0e, 0x00}, 2},
		{"wire type 7", {0x0f, 0x00}, 2},
		{"length beyond buffer", {0x12, 0x05, 'a', 'b'}, 4},
		{"huge length", {0x12, 0xff, 0xff, 0xff, 0xff, 0x0f}, 6},
		{"truncated fixed64", {0x09, 1, 2, 3}, 4},
		{"truncated fixed32", {0x0d, 1, 2}, 3},
		{"truncated length", {0x12}, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = read_all(cases[i].bytes, cases[i].len, NULL);
		if (rc != EMBER_ERR_FORMAT)
			fprintf(stderr, "case '%s' gave %d\n", cases[i].what, rc);
		CHECK_EQ_INT(rc, EMBER_ERR_FORMAT);
		CHECK(ember_last_error()[0] != '\0');
	}
	/* A 10-byte varint with the top bit is the largest legal value. */
	static const uint8_t max[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	int n;
	CHECK_EQ_INT(read_all(max, sizeof(max), &n), 0);
	CHECK_EQ_INT(n, 1);
	/* Truncated packed payload. */
	static const uint8_t bad_packed[] = {0x01, 0x80};
	CHECK_EQ_INT(ember__pb_count_packed(bad_packed, sizeof(bad_packed)), EMBER_ERR_FORMAT);
	CHECK_EQ_INT(ember__pb_count_packed(NULL, 0), 0);
}

/* Every prefix of a valid message either reads cleanly or fails with
 * EMBER_ERR_FORMAT, and random bytes never crash the reader. */
static void test_truncations_and_noise(void)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	size_t m = ember__pb_begin(&b, 1);
	ember__pb_uint64(&b, 1, 123456789);
	ember__pb_bytes(&b, 2, "hello", 5);
	ember__pb_end(&b, m);
	ember__pb_int64(&b, 2, -5);
	uint64_t v[] = {1, 1000, 1000000};
	ember__pb_packed_uint64(&b, 3, v, 3);
	int full = 0;
	CHECK_EQ_INT(read_all(b.data, b.len, &full), 0);
	CHECK_EQ_INT(full, 3);
	int errors = 0;
	for (size_t len = 0; len < b.len; len++) {
		int rc = read_all(b.data, len, NULL);
		CHECK(rc == 0 || rc == EMBER_ERR_FORMAT);
		errors += rc != 0;
	}
	CHECK(errors > 0);
	ember__pb_free(&b);

	uint32_t seed = 12345;
	uint8_t buf[64];
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = iter % 64;
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (uint8_t)(seed >> 16);
		}
		int rc = read_all(buf, len, NULL);
		CHECK(rc == 0 || rc == EMBER_ERR_FORMAT);
	}
}

int main(void)
{
	RUN(test_known_encodings);
	RUN(test_varint_roundtrip);
	RUN(test_nested);
	RUN(test_packed_roundtrip);
	RUN(test_fixed_fields_skipped);
	RUN(test_malformed);
	RUN(test_truncations_and_noise);
	return CHECK_DONE();
}
