/* SPDX-License-Identifier: Apache-2.0 */
/*
 * awsenv.h - the AWS settings the S3 reporter reads from the environment,
 * copied once when the reporter is created (on the application's thread,
 * at setup), so that the uploader thread never calls getenv() while the
 * application may be changing its environment.
 *
 * Also the small helpers every AWS lookup shares: the bounded HTTP handle
 * for link-local metadata services, JSON field access and the IMDSv2
 * client (token, then GET). Nothing here is async-signal-safe.
 */
#ifndef EMBER_AWS_AWSENV_H
#define EMBER_AWS_AWSENV_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "upload/http.h"

/* Every string is malloc'd or NULL (unset or empty). */
typedef struct ember__aws_env {
	char *access_key_id, *secret_access_key, *session_token;
	char *shared_credentials_file, *config_file, *profile, *home;
	char *container_relative_uri, *container_full_uri;
	char *container_auth_token, *container_auth_token_file;
	char *imds_endpoint;         /* AWS_EC2_METADATA_SERVICE_ENDPOINT */
	int imds_disabled;           /* AWS_EC2_METADATA_DISABLED=true */
	char *region, *default_region;
	char *endpoint_url_s3, *endpoint_url;
	char *ecs_metadata_uri_v4;   /* ECS_CONTAINER_METADATA_URI_V4 */
	/* Not from the environment: where relative container credential URIs
	 * go, "http://169.254.170.2" unless a test points it elsewhere. */
	char *ecs_credentials_host;
	unsigned lookup_connect_ms;  /* 1000 */
	unsigned lookup_timeout_ms;  /* 2000 */
} ember__aws_env;

/* Snapshots the environment. 0 or EMBER_ERR_NOMEM. */
int ember__aws_env_load(ember__aws_env *e);

/* Frees the strings (wiping the secrets). */
void ember__aws_env_free(ember__aws_env *e);

/* A bounded GET/PUT to a metadata service: no proxy, the lookup timeouts.
 * Makes a short-lived handle. Fills *res (classified as ember__http_do)
 * and *connected (whether a connection was made at all). */
void ember__aws_lookup(const ember__aws_env *e, const char *method, const char *url,
		       const char *const *headers, size_t nheaders, char *resp, size_t cap,
		       const _Atomic int *cancel, ember__send_result *res, int *connected);

/* IMDSv2: a session token (PUT /latest/api/token), then GET `path`.
 * Returns 0 with the body in resp, or -1 with *res and *connected telling
 * why; -2 when IMDS is disabled. */
int ember__imds_get(const ember__aws_env *e, const char *path, char *resp, size_t cap,
		    const _Atomic int *cancel, ember__send_result *res, int *connected);

/* JSON helpers (jansson): parse with a message naming the error's place. */
struct json_t;
struct json_t *ember__json_parse(const char *what, const char *text, size_t len);
/* A string member copied into out; 0, or EMBER_ERR_FORMAT if missing,
 * not a string, or too long. */
int ember__json_str(const char *what, struct json_t *obj, const char *key, char *out, size_t cap);

#endif
