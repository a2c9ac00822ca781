/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gzstore.c - the gzip written without zlib (encode/gzstore.h): its
 * CRC-32 against the standard check value, and streams of 0 bytes to
 * several stored blocks decompressed by zlib itself (through
 * ember__gunzip, which checks the CRC-32 and length of the trailer) and by
 * gzip(1), byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emberprof.h"
#include "encode/gunzip.h"
#include "encode/gzstore.h"

static void test_crc32(void)
{
	CHECK(ember__crc32(0, (const uint8_t *)"123456789", 9) == 0xCBF43926u);
	CHECK(ember__crc32(0, NULL, 0) == 0);
	/* in pieces: the same */
	CHECK(ember__crc32(ember__crc32(0, (const uint8_t *)"1234", 4), (const uint8_t *)"56789", 5) ==
	      0xCBF43926u);
}

/* n pseudo-random bytes, compressed neither here nor by anyone */
static uint8_t *bytes(size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	uint32_t x = 2463534242u;
	for (size_t i = 0; b && i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)x;
	}
	return b;
}

static void test_zlib_reads_it(void)
{
	static const size_t sizes[] = {0, 1, 65534, 65535, 65536, 200000};
	unsigned long before = ember__gzip_stored_count();
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], gzlen = 0, outlen = 0;
		uint8_t *in = bytes(n), *gz = NULL, *out = NULL;
		CHECK(in != NULL);
		CHECK_EQ_INT(ember__gzip_stored(in, n, &gz, &gzlen), 0);
		CHECK(gzlen == 18 + n + 5 * (n ? (n + 65534) / 65535 : 1));
		int rc = ember__gunzip(gz, gzlen, 1 << 20, "test", &out, &outlen);
		if (rc != 0)
			fprintf(stderr, "  %zu bytes: %s\n", n, ember_last_error());
		CHECK_EQ_INT(rc, 0);
		CHECK(outlen == n && (n == 0 || memcmp(out, in, n) == 0));
		/* a flipped byte of data: the CRC-32 says so */
		if (n) {
			gz[10 + 5 + n / 2 + 5 * ((n / 2) / 65535)] ^= 1;
			free(out);
			out = NULL;
			CHECK(ember__gunzip(gz, gzlen, 1 << 20, "test", &out, &outlen) != 0);
		}
		free(in);
		free(gz);
		free(out);
	}
	CHECK(ember__gzip_stored_count() == before + 6);
}

static void test_gzip_tool_reads_it(void)
{
	if (system("command -v gzip >/dev/null 2>&1") != 0) {
		printf("  gzip(1) not installed: that reader is skipped\n");
		return;
	}
	size_t n = 150000, gzlen = 0;
	uint8_t *in = bytes(n), *gz = NULL;
	CHECK_EQ_INT(ember__gzip_stored(in, n, &gz, &gzlen), 0);
	char path[] = "/tmp/ember-gzstore-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	CHECK(f && fwrite(gz, 1, gzlen, f) == gzlen);
	fclose(f);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "gzip -dc <%s >%s.out", path, path);
	CHECK_EQ_INT(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.out", path);
	f = fopen(cmd, "rb");
	uint8_t *back = malloc(n + 1);
	size_t got = f && back ? fread(back, 1, n + 1, f) : 0;
	if (f)
		fclose(f);
	CHECK(got == n && memcmp(back, in, n) == 0);
	remove(cmd);
	remove(path);
	free(back);
	free(in);
	free(gz);
}

int main(void)
{
	RUN(test_crc32);
	RUN(test_zlib_reads_it);
	RUN(test_gzip_tool_reads_it);
	return CHECK_DONE();
}
