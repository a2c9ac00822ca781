/* SPDX-License-Identifier: Apache-2.0 */
/*
 * protobuf.h - a small hand-written protocol buffers wire-format writer and
 * a bounds-checked reader, just enough for profile.proto.
 *
 * Writer. An ember__pbuf is a malloc'd byte buffer that grows as fields are
 * appended. Allocation failure is sticky: once a write fails, every later
 * write is a no-op and ember__pb_failed() says so, so an encoder can emit a
 * whole message and check once at the end. Nested messages are written in
 * place: ember__pb_begin() reserves one byte for the length and returns a
 * mark; ember__pb_end() patches the length in, shifting the body up when the
 * length needs more than one byte (rare for profile.proto's small messages).
 *
 * Reader. An ember__pb_reader walks the fields of one message in a byte
 * slice. It never reads outside [data, data+len): truncated fields, varints
 * longer than 10 bytes, field number 0, group wire types (3, 4), unknown
 * wire types (6, 7) and lengths beyond the buffer are errors
 * (EMBER_ERR_FORMAT, with a message). Fixed32 and fixed64 fields are
 * decoded so that callers can skip them like any other unknown field.
 *
 * Nothing here is async-signal-safe (malloc, error messages).
 */
#ifndef EMBER_PROTOBUF_H
#define EMBER_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

/* Wire types. */
enum {
	EMBER_PB_VARINT = 0,
	EMBER_PB_FIXED64 = 1,
	EMBER_PB_LEN = 2,
	EMBER_PB_FIXED32 = 5
};

/* The longest varint: ten bytes carry 64 bits. */
#define EMBER_PB_VARINT_MAX 10

typedef struct ember__pbuf {
	uint8_t *data; /* malloc'd; owned by the pbuf until taken */
	size_t len, cap;
	int failed;    /* an allocation failed; the contents are incomplete */
} ember__pbuf;

#define EMBER_PBUF_INIT {NULL, 0, 0, 0}

/* Frees the buffer's memory and resets it to empty. NULL data is fine. */
void ember__pb_free(ember__pbuf *b);

/* Nonzero if any write since the last reset failed for lack of memory. */
int ember__pb_failed(const ember__pbuf *b);

/*
 * Makes room for at least `extra` more bytes. Returns 0, or nonzero (and
 * marks the buffer failed) on out-of-memory. Writers call it themselves;
 * callers may use it to presize.
 */
int ember__pb_reserve(ember__pbuf *b, size_t extra);

/* Number of bytes the varint encoding of v takes, 1..10. */
size_t ember__pb_varint_size(uint64_t v);

/* Appends a bare varint (no key). */
void ember__pb_varint(ember__pbuf *b, uint64_t v);

/* Appends a field key: (field << 3) | wire. */
void ember__pb_key(ember__pbuf *b, uint32_t field, unsigned wire);

/* Appends a varint field (key and value). int64 values are cast, so a
 * negative number takes ten bytes, as protobuf's int64 requires. */
void ember__pb_uint64(ember__pbuf *b, uint32_t field, uint64_t v);
void ember__pb_int64(ember__pbuf *b, uint32_t field, int64_t v);

/* Same, but writes nothing when v is 0 (proto3's default). */
void ember__pb_uint64_opt(ember__pbuf *b, uint32_t field, uint64_t v);
void ember__pb_int64_opt(ember__pbuf *b, uint32_t field, int64_t v);

/* Appends a length-delimited field holding `len` bytes copied from `data`
 * (a string, bytes, or an already-encoded message). */
void ember__pb_bytes(ember__pbuf *b, uint32_t field, const void *data, size_t len);

/* Appends a packed repeated varint field. Nothing is written for n == 0. */
void ember__pb_packed_uint64(ember__pbuf *b, uint32_t field, const uint64_t *v, size_t n);
void ember__pb_packed_int64(ember__pbuf *b, uint32_t field, const int64_t *v, size_t n);
void ember__pb_packed_uint32(ember__pbuf *b, uint32_t field, const uint32_t *v, size_t n);

/*
 * Starts a nested message in `field`. Returns a mark to hand to
 * ember__pb_end() once the body has been appended. Begin/end pairs nest.
 */
size_t ember__pb_begin(ember__pbuf *b, uint32_t field);
void ember__pb_end(ember__pbuf *b, size_t mark);

/* ---- reader ---- */

typedef struct ember__pb_reader {
	const uint8_t *p, *end;
} ember__pb_reader;

typedef struct ember__pb_field {
	uint32_t num;         /* field number, >= 1 */
	unsigned wire;        /* EMBER_PB_* */
	uint64_t u;           /* the value for VARINT, FIXED64 and FIXED32 */
	const uint8_t *data;  /* the payload for LEN (borrowed from the input) */
	size_t len;
} ember__pb_field;

/* Starts reading the message in data[0..len). The data is borrowed and must
 * outlive the reader. */
void ember__pb_reader_init(ember__pb_reader *r, const void *data, size_t len);

/*
 * Reads the next field into *f. Returns 1 if a field was read, 0 at the
 * clean end of the message, or EMBER_ERR_FORMAT (message set) on malformed
 * input. After an error the reader must not be used again.
 */
int ember__pb_next(ember__pb_reader *r, ember__pb_field *f);

/*
 * Decodes one varint at *p (not reading at or past `end`) and advances *p.
 * Returns 0, or EMBER_ERR_FORMAT if it is truncated or longer than ten
 * bytes. Used to walk packed repeated fields.
 */
int ember__pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/*
 * Counts the varints in a packed payload, validating them. Returns the
 * count (>= 0) or EMBER_ERR_FORMAT.
 */
int64_t ember__pb_count_packed(const uint8_t *data, size_t len);

#endif
