/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_pprof_read.c - libFuzzer target for the pprof reader: any input
 * must either decode into a profile (which is then re-encoded and freed,
 * exercising the encoder on whatever the reader accepted) or fail with an
 * error; crashes, leaks and sanitizer reports are bugs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "emberprof.h"
#include "encode/pprof.h"
#include "read/pprof_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ember__profile *p = NULL;
	if (ember__pprof_read(data, size, &p) != 0)
		return 0;
	/* What the reader accepts, the encoder must accept too. */
	uint8_t *out = NULL;
	size_t len = 0;
	if (ember__pprof_encode_raw(p, &out, &len) != 0)
		abort();
	ember__profile *q = NULL;
	if (ember__pprof_read(out, len, &q) != 0)
		abort();
	if (q->nsamples != p->nsamples || q->nlocations != p->nlocations)
		abort();
	ember__profile_free(q);
	free(out);
	ember__profile_free(p);
	return 0;
}
