/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gunzip.c - inflating gzip data (pprof files and report payloads), with
 * zlib loaded on first use (util/lazydep.h). See gunzip.h.
 */
#include "encode/gunzip.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "util/dep_zlib.h"
#include "util/error.h"

/* Inflates a gzip stream (several members are concatenated, as gzip
 * allows) into a malloc'd buffer of at most max bytes. */
int ember__gunzip(const uint8_t *in, size_t len, size_t max, const char *what, uint8_t **out,
		  size_t *out_len)
{
	int lrc = ember__lazydep_load(&ember__zlib);
	if (lrc < 0)
		return lrc;
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	int zrc = inflateInit2(&zs, 15 + 16);
	if (zrc == Z_MEM_ERROR)
		return ember__error_oom(what);
	if (zrc != Z_OK)
		return ember__error(EMBER_ERR_FORMAT, "%s: inflateInit2 failed (%d)", what, zrc);
	/* One byte beyond the limit, so that reaching it can be told apart
	 * from exceeding it. */
	const size_t limit = max + 1;
	size_t cap = len < limit / 4 ? len * 4 : limit;
	if (cap < 4096)
		cap = 4096;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		inflateEnd(&zs);
		return ember__error_oom(what);
	}
	size_t used = 0, in_left = len;
	int err = 0;
	zs.next_in = (Bytef *)in;
	for (;;) {
		if (zs.avail_in == 0 && in_left) {
			zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
			in_left -= zs.avail_in;
		}
		if (used == cap) {
			if (cap == limit) {
				err = ember__error(EMBER_ERR_FORMAT,
						   "%s: decompressed data exceeds %zu bytes",
						   what, max);
				break;
			}
			size_t ncap = cap > limit / 2 ? limit : cap * 2;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				err = ember__error_oom(what);
				break;
			}
			buf = nb;
			cap = ncap;
		}
		size_t room = cap - used;
		zs.next_out = buf + used;
		zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
		uInt before = zs.avail_out;
		int ret = inflate(&zs, Z_NO_FLUSH);
		used += before - zs.avail_out;
		if (ret == Z_STREAM_END) {
			size_t rest = zs.avail_in + in_left;
			if (rest == 0)
				break;
			/* Another gzip member may follow; anything else is junk. */
			if (rest < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
				err = ember__error(EMBER_ERR_FORMAT,
						   "%s: %zu bytes of trailing data after gzip stream",
						   what, rest);
				break;
			}
			inflateReset(&zs);
			continue;
		}
		if (ret == Z_OK)
			continue;
		if (ret == Z_BUF_ERROR && zs.avail_out == 0)
			continue; /* out of room: grow and go on */
		if (ret == Z_BUF_ERROR) {
			err = ember__error(EMBER_ERR_FORMAT, "%s: truncated gzip data", what);
			break;
		}
		if (ret == Z_MEM_ERROR) {
			err = ember__error_oom(what);
			break;
		}
		err = ember__error(EMBER_ERR_FORMAT, "%s: corrupt gzip data: %s", what,
				   zs.msg ? zs.msg : "unknown zlib error");
		break;
	}
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = used;
	return 0;
}
