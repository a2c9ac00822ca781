/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_varint.h - a JFR compressed integer appended to protobuf.h's
 * growing buffer: LEB128, seven bits a byte with the high bit saying
 * "more", except that the ninth byte of a 64-bit value carries eight bits
 * (the JDK's RecordingInput.readLong). Shared by the JFR writer (jfr.c)
 * and the tools that rewrite recordings (tools/symbolize/jfr_symbolize.c).
 * The buffer is the caller's; a failed reservation marks it failed.
 * Not async-signal-safe (may allocate).
 */
#ifndef EMBER_ENCODE_JFR_VARINT_H
#define EMBER_ENCODE_JFR_VARINT_H

#include <stdint.h>

#include "encode/protobuf.h"

static inline void ember__jfr_put_varint(ember__pbuf *b, uint64_t v)
{
	if (ember__pb_reserve(b, 9))
		return;
	uint8_t *p = b->data + b->len;
	int i = 0;
	for (; i < 8 && v > 0x7f; i++, v >>= 7)
		p[i] = (uint8_t)(v | 0x80);
	p[i++] = (uint8_t)v;
	b->len += (size_t)i;
}

#endif
