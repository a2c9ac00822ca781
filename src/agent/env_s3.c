/*
 * env_s3.c - the S3 reporter's environment variables, applied by
 * ember_builder_apply_env() (docs/CONFIG.md, section "S3"):
 *
 *   EMBERPROF_S3_BUCKET           the bucket; setting it adds an S3 reporter
 *   EMBERPROF_S3_PROFILING_GROUP  the key's {profiling_group} (default: the
 *                                 application name)
 *   EMBERPROF_S3_BUCKET_OWNER     x-amz-expected-bucket-owner (12 digits)
 *   EMBERPROF_S3_ENDPOINT         an S3-compatible endpoint (path-style)
 *   EMBERPROF_S3_REGION           the region
 *   EMBERPROF_S3_AWS_PROFILE      the shared config/credentials profile
 *   EMBERPROF_S3_SPOOL_DIR        keep undelivered windows here
 *   EMBERPROF_S3_HOST             detect (default), onprem or none
 *
 * The AWS_* variables (credentials, region, endpoints) are read by the
 * reporter itself. Every rejection names the variable. Not
 * async-signal-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "report/s3.h"
#include "util/error.h"
#include "util/redact.h"
#include "util/envsnap.h"

static const char *const s3_vars[] = {
	"EMBERPROF_S3_PROFILING_GROUP", "EMBERPROF_S3_BUCKET_OWNER", "EMBERPROF_S3_ENDPOINT",
	"EMBERPROF_S3_REGION", "EMBERPROF_S3_AWS_PROFILE", "EMBERPROF_S3_SPOOL_DIR",
	"EMBERPROF_S3_HOST",
};

static const char *var(const char *name)
{
	const char *v = ember__getenv(name);
	return v && *v ? v : NULL;
}

int ember__s3_apply_env(ember_builder *b)
{
	const char *bucket = var("EMBERPROF_S3_BUCKET");
	if (!bucket) {
		for (size_t i = 0; i < sizeof(s3_vars) / sizeof(s3_vars[0]); i++)
			if (var(s3_vars[i]))
				return ember__error(EMBER_ERR_INVALID, "environment variable %s is set but "
						    "EMBERPROF_S3_BUCKET is not", s3_vars[i]);
		return 0;
	}
	ember_s3_options o = EMBER_S3_OPTIONS_INIT;
	ember_host_metadata host = EMBER_HOST_METADATA_INIT;
	o.bucket = bucket;
	o.profiling_group = var("EMBERPROF_S3_PROFILING_GROUP");
	if (!o.profiling_group)
		o.profiling_group = b->cfg.app_name;
	o.bucket_owner = var("EMBERPROF_S3_BUCKET_OWNER");
	o.endpoint = var("EMBERPROF_S3_ENDPOINT");
	o.region = var("EMBERPROF_S3_REGION");
	o.aws_profile = var("EMBERPROF_S3_AWS_PROFILE");
	o.spool_dir = var("EMBERPROF_S3_SPOOL_DIR");
	const char *h = var("EMBERPROF_S3_HOST");
	if (h) {
		if (!strcmp(h, "onprem"))
			host.kind = EMBER_HOST_ONPREM;
		else if (!strcmp(h, "none"))
			host.kind = EMBER_HOST_NONE;
		else if (strcmp(h, "detect"))
			return ember__error(EMBER_ERR_INVALID, "environment variable EMBERPROF_S3_HOST="
					    "\"%.60s\" is invalid: expected detect, onprem or none", h);
		o.host = &host;
	}
	ember_reporter r;
	int rc = ember_reporter_s3(&r, &o);
	if (rc) {
		/* name the variable behind the message where one is named */
		char why[EMBER_ERROR_MAX], shown[256];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		static const struct { const char *word, *name; } map[] = {
			{"bucket owner", "EMBERPROF_S3_BUCKET_OWNER"}, {"bucket", "EMBERPROF_S3_BUCKET"},
			{"profiling group", "EMBERPROF_S3_PROFILING_GROUP"},
			{"endpoint", "EMBERPROF_S3_ENDPOINT"}, {"region", "EMBERPROF_S3_REGION"},
			{"profile", "EMBERPROF_S3_AWS_PROFILE"}, {"spool", "EMBERPROF_S3_SPOOL_DIR"}};
		for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (strstr(why, map[i].word) && var(map[i].name))
				return ember__error(rc, "environment variable %s=\"%.200s\" is invalid: %s",
						    map[i].name,
						    ember__redact_value(map[i].name, var(map[i].name),
									shown, sizeof(shown)),
						    why);
		return ember__error(rc, "the S3 reporter (EMBERPROF_S3_BUCKET=\"%.100s\") cannot be "
				    "created: %s", bucket, why);
	}
	if ((rc = ember_builder_add_reporter(b, &r)))
		r.destroy(r.userdata);
	return rc;
}
