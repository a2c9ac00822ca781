/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gzstore.c - gzip with stored blocks and its CRC-32 (gzstore.h): RFC 1952
 * framing around RFC 1951 blocks of type 00.
 */
#include "encode/gzstore.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

static atomic_ulong stored_count;

unsigned long ember__gzip_stored_count(void)
{
	return atomic_load(&stored_count);
}

uint32_t ember__crc32(uint32_t crc, const uint8_t *b, size_t n)
{
	/* reflected polynomial 0xEDB88320, four bits at a time */
	static const uint32_t t[16] = {0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC,
				       0x76DC4190, 0x6B6B51F4, 0x4DB26158, 0x5005713C,
				       0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C,
				       0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C};
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= b[i];
		crc = (crc >> 4) ^ t[crc & 15];
		crc = (crc >> 4) ^ t[crc & 15];
	}
	return ~crc;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int ember__gzip_stored(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	enum { BLOCK = 65535 };
	size_t blocks = len ? (len + BLOCK - 1) / BLOCK : 1;
	if (blocks > (SIZE_MAX - len - 18) / 5)
		return ember__error_oom("gzip stream (stored)");
	size_t n = 10 + len + 5 * blocks + 8;
	uint8_t *o = malloc(n), *w = o;
	if (!o)
		return ember__error_oom("gzip stream (stored)");
	/* magic, deflate, no flags, no time, no extra flags, OS unknown */
	static const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
	memcpy(w, head, sizeof(head));
	w += sizeof(head);
	size_t left = len;
	const uint8_t *p = in;
	for (size_t i = 0; i < blocks; i++) {
		uint16_t k = (uint16_t)(left < BLOCK ? left : BLOCK);
		*w++ = i + 1 == blocks; /* BFINAL, BTYPE 00, then byte-aligned */
		w[0] = (uint8_t)k;
		w[1] = (uint8_t)(k >> 8);
		w[2] = (uint8_t)~k;
		w[3] = (uint8_t)(~k >> 8);
		w += 4;
		if (k)
			memcpy(w, p, k);
		w += k;
		p += k;
		left -= k;
	}
	le32(w, ember__crc32(0, in, len));
	le32(w + 4, (uint32_t)len);
	*out = o;
	*out_len = n;
	atomic_fetch_add(&stored_count, 1);
	return 0;
}
