/* SPDX-License-Identifier: Apache-2.0 */
/*
 * env_s3.c - the S3 reporter's environment variables, applied by
 * ember_builder_apply_env() (docs/CONFIG.md, section "S3"). Each is a row
 * of the table in options.c (reader EMBER__OPT_S3): EMBERPROF_S3_BUCKET
 * adds an S3 reporter; the others set its options and are an error
 * without it.
 *
 * The AWS_* variables (credentials, region, endpoints) are read by the
 * reporter itself. Every rejection names the variable. Not
 * async-signal-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "agent/options.h"
#include "report/s3.h"
#include "util/error.h"

/* The S3 variable behind the reporter's message, where one is named. */
static int name_the_variable(int rc, const char *bucket)
{
	char why[EMBER_ERROR_MAX];
	snprintf(why, sizeof(why), "%s", ember_last_error());
	static const struct { const char *word, *name; } map[] = {
		{"bucket owner", "EMBERPROF_S3_BUCKET_OWNER"}, {"bucket", "EMBERPROF_S3_BUCKET"},
		{"profiling group", "EMBERPROF_S3_PROFILING_GROUP"},
		{"endpoint", "EMBERPROF_S3_ENDPOINT"}, {"region", "EMBERPROF_S3_REGION"},
		{"profile", "EMBERPROF_S3_AWS_PROFILE"}, {"spool", "EMBERPROF_S3_SPOOL_DIR"}};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		const char *v = ember__opt_getenv(ember__opt_find(map[i].name));
		if (strstr(why, map[i].word) && v) {
			ember__opt_bad(map[i].name, v, 0, why);
			return rc;
		}
	}
	return ember__error(rc, "the S3 reporter (EMBERPROF_S3_BUCKET=\"%.100s\") cannot be "
			    "created: %s", bucket, why);
}

int ember__s3_apply_env(ember_builder *b)
{
	const char *bucket = ember__opt_getenv(ember__opt_find("EMBERPROF_S3_BUCKET"));
	if (!bucket) {
		for (size_t i = 0; i < ember__noptions; i++)
			if (ember__options[i].reader == EMBER__OPT_S3 &&
			    ember__opt_getenv(&ember__options[i]))
				return ember__error(EMBER_ERR_INVALID, "environment variable %s is set but "
						    "EMBERPROF_S3_BUCKET is not", ember__options[i].name);
		return 0;
	}
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	ember_host_metadata host = EMBER_HOST_METADATA_INIT;
	o.bucket = bucket;
	o.profiling_group = b->cfg.app_name; /* unless EMBERPROF_S3_PROFILING_GROUP */
	ember__opt_ctx c = {.b = b, .target = &o};
	int rc = ember__options_apply(&c, EMBER__OPT_S3);
	const char *h;
	ember__opt_value x;
	if (rc == 0 && (rc = ember__opt_read(ember__opt_find("EMBERPROF_S3_HOST"), &h, &x)) > 0) {
		host.kind = (ember_host_kind)x.i;
		o.host = &host;
		rc = 0;
	}
	if (rc)
		return rc;
	ember_reporter r;
	if ((rc = ember_reporter_s3(&r, &o)))
		return name_the_variable(rc, bucket);
	if ((rc = ember_builder_add_reporter(b, &r)))
		r.destroy(r.userdata);
	return rc;
}
