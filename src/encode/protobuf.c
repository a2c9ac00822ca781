/* SPDX-License-Identifier: Apache-2.0 */
/*
 * protobuf.c - the protocol buffers wire-format writer and reader declared
 * in protobuf.h. The writer appends to a doubling malloc'd buffer with a
 * sticky failure flag; the reader checks every byte it touches against the
 * end of its slice.
 */
#include "encode/protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/error.h"

/* ---- writer ---- */

void ember__pb_free(ember__pbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = 0;
}

int ember__pb_failed(const ember__pbuf *b)
{
	return b->failed;
}

int ember__pb_reserve(ember__pbuf *b, size_t extra)
{
	if (b->failed)
		return -1;
	if (b->cap - b->len >= extra)
		return 0;
	if (extra > SIZE_MAX / 2 - b->len) {
		b->failed = 1;
		return -1;
	}
	size_t ncap = b->cap ? b->cap : 256;
	while (ncap - b->len < extra)
		ncap *= 2;
	uint8_t *d = realloc(b->data, ncap);
	if (!d) {
		b->failed = 1;
		return -1;
	}
	b->data = d;
	b->cap = ncap;
	return 0;
}

size_t ember__pb_varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes a varint into room the caller has already reserved. */
static size_t put_varint(uint8_t *d, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		d[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	d[n++] = (uint8_t)v;
	return n;
}

void ember__pb_varint(ember__pbuf *b, uint64_t v)
{
	if (ember__pb_reserve(b, EMBER_PB_VARINT_MAX))
		return;
	b->len += put_varint(b->data + b->len, v);
}

void ember__pb_key(ember__pbuf *b, uint32_t field, unsigned wire)
{
	ember__pb_varint(b, ((uint64_t)field << 3) | (wire & 7u));
}

void ember__pb_uint64(ember__pbuf *b, uint32_t field, uint64_t v)
{
	ember__pb_key(b, field, EMBER_PB_VARINT);
	ember__pb_varint(b, v);
}

void ember__pb_int64(ember__pbuf *b, uint32_t field, int64_t v)
{
	ember__pb_uint64(b, field, (uint64_t)v);
}

void ember__pb_uint64_opt(ember__pbuf *b, uint32_t field, uint64_t v)
{
	if (v)
		ember__pb_uint64(b, field, v);
}

void ember__pb_int64_opt(ember__pbuf *b, uint32_t field, int64_t v)
{
	if (v)
		ember__pb_uint64(b, field, (uint64_t)v);
}

void ember__pb_bytes(ember__pbuf *b, uint32_t field, const void *data, size_t len)
{
	ember__pb_key(b, field, EMBER_PB_LEN);
	ember__pb_varint(b, len);
	if (len == 0 || ember__pb_reserve(b, len))
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

/*
 * The three packed writers differ only in element type; the macro keeps
 * them in step: size the payload first so the length goes in front without
 * shifting, then reserve once and write straight into the buffer.
 */
#define PACKED_BODY(b, field, v, n, conv)                                      \
	do {                                                                   \
		if ((n) == 0)                                                  \
			return;                                                \
		size_t body_ = 0;                                              \
		for (size_t i_ = 0; i_ < (n); i_++)                            \
			body_ += ember__pb_varint_size(conv((v)[i_]));         \
		ember__pb_key((b), (field), EMBER_PB_LEN);                     \
		ember__pb_varint((b), body_);                                  \
		if (ember__pb_reserve((b), body_))                             \
			return;                                                \
		uint8_t *d_ = (b)->data + (b)->len;                            \
		for (size_t i_ = 0; i_ < (n); i_++)                            \
			d_ += put_varint(d_, conv((v)[i_]));                   \
		(b)->len += body_;                                             \
	} while (0)

#define AS_U64(x) ((uint64_t)(x))

void ember__pb_packed_uint64(ember__pbuf *b, uint32_t field, const uint64_t *v, size_t n)
{
	PACKED_BODY(b, field, v, n, AS_U64);
}

void ember__pb_packed_int64(ember__pbuf *b, uint32_t field, const int64_t *v, size_t n)
{
	PACKED_BODY(b, field, v, n, AS_U64);
}

void ember__pb_packed_uint32(ember__pbuf *b, uint32_t field, const uint32_t *v, size_t n)
{
	PACKED_BODY(b, field, v, n, AS_U64);
}

size_t ember__pb_begin(ember__pbuf *b, uint32_t field)
{
	ember__pb_key(b, field, EMBER_PB_LEN);
	/* One byte of length: enough for bodies under 128 bytes. */
	if (ember__pb_reserve(b, 1))
		return 0;
	b->data[b->len++] = 0;
	return b->len;
}

void ember__pb_end(ember__pbuf *b, size_t mark)
{
	if (b->failed)
		return;
	size_t body = b->len - mark;
	size_t need = ember__pb_varint_size(body);
	if (need > 1) {
		if (ember__pb_reserve(b, need - 1))
			return;
		memmove(b->data + mark + need - 1, b->data + mark, body);
		b->len += need - 1;
	}
	put_varint(b->data + mark - 1, body);
}

/* ---- reader ---- */

void ember__pb_reader_init(ember__pb_reader *r, const void *data, size_t len)
{
	r->p = data;
	r->end = r->p ? r->p + len : r->p;
}

int ember__pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t x = 0;
	for (unsigned i = 0; i < EMBER_PB_VARINT_MAX; i++) {
		if (q >= end)
			return ember__error(EMBER_ERR_FORMAT, "protobuf: truncated varint");
		uint8_t c = *q++;
		/* The tenth byte may only carry the top bit of 64. */
		if (i == EMBER_PB_VARINT_MAX - 1 && c > 1)
			return ember__error(EMBER_ERR_FORMAT, "protobuf: varint overflows 64 bits");
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*p = q;
			*v = x;
			return 0;
		}
	}
	return ember__error(EMBER_ERR_FORMAT, "protobuf: varint longer than 10 bytes");
}

static uint64_t load_le(const uint8_t *p, unsigned n)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

int ember__pb_next(ember__pb_reader *r, ember__pb_field *f)
{
	if (r->p >= r->end)
		return 0;
	uint64_t key = 0; /* set when the read succeeds; gcc -O3 cannot tell */
	int err = ember__pb_read_varint(&r->p, r->end, &key);
	if (err)
		return err;
	uint64_t num = key >> 3;
	if (num == 0 || num > 0x1fffffff)
		return ember__error(EMBER_ERR_FORMAT, "protobuf: invalid field number %llu",
				    (unsigned long long)num);
	f->num = (uint32_t)num;
	f->wire = (unsigned)(key & 7);
	f->u = 0;
	f->data = NULL;
	f->len = 0;
	size_t left;
	switch (f->wire) {
	case EMBER_PB_VARINT:
		return ember__pb_read_varint(&r->p, r->end, &f->u) ? EMBER_ERR_FORMAT : 1;
	case EMBER_PB_FIXED64:
	case EMBER_PB_FIXED32: {
		unsigned n = f->wire == EMBER_PB_FIXED64 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			return ember__error(EMBER_ERR_FORMAT, "protobuf: truncated fixed%u field %u",
					    n * 8, f->num);
		f->u = load_le(r->p, n);
		r->p += n;
		return 1;
	}
	case EMBER_PB_LEN:
		if (ember__pb_read_varint(&r->p, r->end, &f->u))
			return EMBER_ERR_FORMAT;
		left = (size_t)(r->end - r->p);
		if (f->u > left)
			return ember__error(EMBER_ERR_FORMAT,
					    "protobuf: field %u claims %llu bytes, %zu left",
					    f->num, (unsigned long long)f->u, left);
		f->data = r->p;
		f->len = (size_t)f->u;
		r->p += f->len;
		return 1;
	default:
		return ember__error(EMBER_ERR_FORMAT, "protobuf: unsupported wire type %u in field %u",
				    f->wire, f->num);
	}
}

int64_t ember__pb_count_packed(const uint8_t *data, size_t len)
{
	if (len == 0)
		return 0;
	const uint8_t *p = data, *end = data + len;
	int64_t n = 0;
	while (p < end) {
		uint64_t v;
		if (ember__pb_read_varint(&p, end, &v))
			return EMBER_ERR_FORMAT;
		n++;
	}
	return n;
}
