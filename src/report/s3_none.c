/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3_none.c - the S3 reporter's entry points in a build without it
 * (EMBER_S3=OFF, or jansson or libzip missing at configure time: see the
 * top-level CMakeLists.txt). Each fails with EMBER_ERR_UNSUPPORTED and a
 * message naming what is missing, so a user who asks for S3 learns why
 * and what to install. Not async-signal-safe.
 */
#include <stdlib.h>
#include <string.h>

#include "report/s3.h"
#include "util/envsnap.h"
#include "util/error.h"

#define S3_MISSING                                                                     \
	"this emberprof was built without the S3 reporter (EMBER_S3=OFF, or jansson and "  \
	"libzip missing at build time; Debian: apt install libjansson-dev libzip-dev and " \
	"rebuild; libzip4 is needed at run time)"

EMBER_API int ember_reporter_s3(ember_reporter *out, const ember_s3_options *opts)
{
	(void)opts;
	if (out)
		memset(out, 0, sizeof(*out));
	return ember__error(EMBER_ERR_UNSUPPORTED, "%s", S3_MISSING);
}

int ember__zip_global_init(void)
{
	return ember__error(EMBER_ERR_UNSUPPORTED, "%s", S3_MISSING);
}

/* Only a request for S3 fails: a build without it runs the rest as usual. */
int ember__s3_apply_env(ember_builder *b)
{
	(void)b;
	const char *v = ember__getenv("EMBERPROF_S3_BUCKET");
	if (v && *v)
		return ember__error(EMBER_ERR_UNSUPPORTED, "EMBERPROF_S3_BUCKET is set, but %s",
				    S3_MISSING);
	return 0;
}
