/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_aws.c - libFuzzer target for the S3 reporter's parsers of outside
 * input: the AWS shared files (INI), credential answers (ECS container,
 * IMDS role), the EC2 instance identity document, the ECS task metadata,
 * S3's XML error bodies, and ISO 8601 times. The first byte picks the
 * parser; the rest is its input, in an exact-size heap copy (NUL added
 * only where the parser takes a C string), so any stray read is caught.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aws/credentials.h"
#include "aws/hostmeta.h"
#include "report/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int which = data[0] % 6;
	size_t n = size - 1;
	char *buf = malloc(n + 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, n);
	buf[n] = '\0';
	char out[64];
	switch (which) {
	case 0: {
		char *exact = malloc(n ? n : 1);
		memcpy(exact, data + 1, n);
		ember__aws_ini_get_text(exact, n, "profile x", "aws_access_key_id", out, sizeof(out));
		ember__aws_ini_get_text(exact, n, "default", "region", out, sizeof(out));
		free(exact);
		break;
	}
	case 1: {
		ember__aws_creds c;
		memset(&c, 0, sizeof(c));
		if (ember__aws_parse_creds_json("fuzz", buf, n, &c) == 0)
			ember__aws_creds_clear(&c);
		break;
	}
	case 2: {
		ember__hostmeta h;
		if (ember__hostmeta_parse_ec2(buf, n, &h) == 0)
			ember__hostmeta_machine(&h, out, sizeof(out));
		break;
	}
	case 3: {
		ember__hostmeta h;
		if (ember__hostmeta_parse_ecs(buf, n, &h) == 0)
			ember__hostmeta_machine(&h, out, sizeof(out));
		break;
	}
	case 4: {
		char code[64], msg[256];
		int refresh;
		ember__s3_classify(403, buf, code, sizeof(code), msg, sizeof(msg), &refresh);
		break;
	}
	default:
		ember__aws_parse_time(buf);
		break;
	}
	free(buf);
	return 0;
}
