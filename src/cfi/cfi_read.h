/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cfi_read.h - bounded little-endian reading of CFI data: fixed-size
 * integers, LEB128, and the pointer encodings (DW_EH_PE_*) of .eh_frame
 * and .eh_frame_hdr. A cursor never reads outside [pos, end) of its
 * buffer; a read that does not fit marks it bad and returns 0, and callers
 * check `bad` once after a group of reads. Private to src/cfi/.
 */
#ifndef EMBER_CFI_READ_H
#define EMBER_CFI_READ_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/arch.h"

/* Pointer encodings (DW_EH_PE_*). */
enum {
	PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04, PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10, PE_TEXTREL = 0x20, PE_DATAREL = 0x30, PE_FUNCREL = 0x40,
	PE_ALIGNED = 0x50, PE_INDIRECT = 0x80, PE_OMIT = 0xff
};

/* A bounded cursor over one buffer; pos is an offset into base. */
typedef struct rd {
	const uint8_t *base;
	size_t pos, end;
	int bad;
} rd;

static inline int rd_need(rd *r, size_t n)
{
	if (r->bad || r->pos > r->end || r->end - r->pos < n) {
		r->bad = 1;
		return 0;
	}
	return 1;
}

static inline uint64_t rd_uint(rd *r, size_t n)
{
	if (!rd_need(r, n))
		return 0;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) /* little-endian (x86-64, aarch64) */
		v |= (uint64_t)r->base[r->pos + i] << (8 * i);
	r->pos += n;
	return v;
}

static inline uint8_t rd_u8(rd *r) { return (uint8_t)rd_uint(r, 1); }

static inline uint64_t rd_uleb(rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (shift >= 70 || !rd_need(r, 1)) {
			r->bad = 1;
			return 0;
		}
		uint8_t byte = r->base[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
}

static inline int64_t rd_sleb(rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (shift >= 70 || !rd_need(r, 1)) {
			r->bad = 1;
			return 0;
		}
		uint8_t byte = r->base[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			if (shift + 7 < 64 && (byte & 0x40))
				v |= ~(uint64_t)0 << (shift + 7);
			return (int64_t)v;
		}
	}
}

static inline void rd_skip(rd *r, uint64_t n)
{
	if (r->bad)
		return;
	if (r->pos > r->end || n > r->end - r->pos)
		r->bad = 1;
	else
		r->pos += (size_t)n;
}

/* What pc-relative and data-relative pointers are relative to. */
typedef struct ptr_ctx {
	uint64_t vaddr;     /* link-time address of base[0] */
	uint64_t data_base; /* for PE_DATAREL */
	int has_data_base;
} ptr_ctx;

/*
 * Reads a pointer in encoding `enc`. With `skip_only` any application and
 * indirection is accepted (the value is not used: personality pointers);
 * otherwise only absolute, pc-relative, data-relative (where a base is
 * known) and aligned pointers are, and indirect ones are refused.
 */
static inline uint64_t rd_encoded(rd *r, uint8_t enc, const ptr_ctx *c, int skip_only)
{
	if (enc == PE_OMIT) {
		r->bad = 1;
		return 0;
	}
	uint64_t here = c->vaddr + r->pos;
	if ((enc & 0x70) == PE_ALIGNED) {
		size_t a = EMBER_ARCH_ADDR_SIZE;
		uint64_t mis = here % a;
		if (mis)
			rd_skip(r, a - mis);
		here = c->vaddr + r->pos;
	}
	uint64_t v;
	switch (enc & 0x0f) {
	case PE_ABSPTR: v = rd_uint(r, EMBER_ARCH_ADDR_SIZE); break;
	case PE_ULEB128: v = rd_uleb(r); break;
	case PE_UDATA2: v = rd_uint(r, 2); break;
	case PE_UDATA4: v = rd_uint(r, 4); break;
	case PE_UDATA8: v = rd_uint(r, 8); break;
	case PE_SLEB128: v = (uint64_t)rd_sleb(r); break;
	case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)rd_uint(r, 2); break;
	case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)rd_uint(r, 4); break;
	case PE_SDATA8: v = rd_uint(r, 8); break;
	default:
		r->bad = 1;
		return 0;
	}
	if (skip_only)
		return 0;
	switch (enc & 0x70) {
	case PE_ABSPTR:
	case PE_ALIGNED:
		break;
	case PE_PCREL:
		v += here;
		break;
	case PE_DATAREL:
		if (!c->has_data_base)
			r->bad = 1;
		v += c->data_base;
		break;
	default: /* textrel, funcrel: not used for the pointers we need */
		r->bad = 1;
	}
	if (enc & PE_INDIRECT)
		r->bad = 1; /* would need to read the module's memory */
	return v;
}

/* Just the size part of an encoding (FDE address ranges). */
static inline uint64_t rd_encoded_value(rd *r, uint8_t enc)
{
	ptr_ctx none = {0, 0, 0};
	return rd_encoded(r, (uint8_t)(enc & 0x0f), &none, 0);
}

#endif
