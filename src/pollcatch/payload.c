/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payload.c - the 16-byte tokio.PollcatchV1 payload (pollcatch.h), shared
 * by the async-profiler path and the JFR decoder.
 */
#include "pollcatch/pollcatch.h"

#include "emberprof.h"
#include "util/error.h"

void ember__pollcatch_payload(uint8_t out[16], uint64_t start, uint64_t end)
{
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(start >> (8 * i));
		out[8 + i] = (uint8_t)(end >> (8 * i));
	}
}

int ember__pollcatch_payload_decode(const uint8_t *data, size_t len, uint64_t *start,
				    uint64_t *end)
{
	if (len != EMBER__POLLCATCH_PAYLOAD)
		return ember__error(EMBER_ERR_FORMAT, EMBER__POLLCATCH_EVENT
				    " payload is %zu bytes, expected 16", len);
	uint64_t s = 0, e = 0;
	for (int i = 7; i >= 0; i--) {
		s = s << 8 | data[i];
		e = e << 8 | data[8 + i];
	}
	*start = s;
	*end = e;
	return 0;
}
