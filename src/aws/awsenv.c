/* SPDX-License-Identifier: Apache-2.0 */
/*
 * awsenv.c - the AWS environment snapshot, bounded metadata lookups, the
 * IMDSv2 client and JSON helpers shared by src/aws/ (see awsenv.h).
 *
 * IMDSv2. Every lookup first PUTs /latest/api/token with
 * X-aws-ec2-metadata-token-ttl-seconds, then GETs the path with
 * X-aws-ec2-metadata-token. The token is not cached: lookups are rare
 * (host detection, region, role credentials about once an hour), and a
 * fresh token is never a stale one. Endpoint: AWS_EC2_METADATA_SERVICE_ENDPOINT
 * or http://169.254.169.254; AWS_EC2_METADATA_DISABLED=true turns it off.
 */
#include "aws/awsenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/error.h"
#include "util/envsnap.h"
#include "util/dep_jansson.h"

#define IMDS_DEFAULT "http://169.254.169.254"
#define ECS_CREDS_HOST "http://169.254.170.2"

static int dup_env(char **slot, const char *name)
{
	const char *v = ember__getenv(name);
	*slot = NULL;
	if (!v || !*v)
		return 0;
	return (*slot = strdup(v)) ? 0 : -1;
}

int ember__aws_env_load(ember__aws_env *e)
{
	memset(e, 0, sizeof(*e));
	struct { char **slot; const char *name; } vars[] = {
		{&e->access_key_id, "AWS_ACCESS_KEY_ID"},
		{&e->secret_access_key, "AWS_SECRET_ACCESS_KEY"},
		{&e->session_token, "AWS_SESSION_TOKEN"},
		{&e->shared_credentials_file, "AWS_SHARED_CREDENTIALS_FILE"},
		{&e->config_file, "AWS_CONFIG_FILE"},
		{&e->profile, "AWS_PROFILE"},
		{&e->home, "HOME"},
		{&e->container_relative_uri, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"},
		{&e->container_full_uri, "AWS_CONTAINER_CREDENTIALS_FULL_URI"},
		{&e->container_auth_token, "AWS_CONTAINER_AUTHORIZATION_TOKEN"},
		{&e->container_auth_token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"},
		{&e->imds_endpoint, "AWS_EC2_METADATA_SERVICE_ENDPOINT"},
		{&e->region, "AWS_REGION"},
		{&e->default_region, "AWS_DEFAULT_REGION"},
		{&e->endpoint_url_s3, "AWS_ENDPOINT_URL_S3"},
		{&e->endpoint_url, "AWS_ENDPOINT_URL"},
		{&e->ecs_metadata_uri_v4, "ECS_CONTAINER_METADATA_URI_V4"},
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (dup_env(vars[i].slot, vars[i].name))
			goto oom;
	const char *d = ember__getenv("AWS_EC2_METADATA_DISABLED");
	e->imds_disabled = d && !strcasecmp(d, "true");
	if (!(e->ecs_credentials_host = strdup(ECS_CREDS_HOST)))
		goto oom;
	e->lookup_connect_ms = 1000;
	e->lookup_timeout_ms = 2000;
	return 0;
oom:
	ember__aws_env_free(e);
	return ember__error_oom("AWS settings");
}

static void wipe_free(char *s)
{
	if (s) {
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		free(s);
	}
}

void ember__aws_env_free(ember__aws_env *e)
{
	wipe_free(e->secret_access_key);
	wipe_free(e->session_token);
	wipe_free(e->container_auth_token);
	char *plain[] = {e->access_key_id, e->shared_credentials_file, e->config_file, e->profile,
			 e->home, e->container_relative_uri, e->container_full_uri,
			 e->container_auth_token_file, e->imds_endpoint, e->region, e->default_region,
			 e->endpoint_url_s3, e->endpoint_url, e->ecs_metadata_uri_v4,
			 e->ecs_credentials_host};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		free(plain[i]);
	memset(e, 0, sizeof(*e));
}

void ember__aws_lookup(const ember__aws_env *e, const char *method, const char *url,
		       const char *const *headers, size_t nheaders, char *resp, size_t cap,
		       const _Atomic int *cancel, ember__send_result *res, int *connected)
{
	*connected = 0;
	resp[0] = '\0';
	ember__http_opts o = {
		.connect_timeout_ms = e->lookup_connect_ms ? e->lookup_connect_ms : 1000,
		.timeout_ms = e->lookup_timeout_ms ? e->lookup_timeout_ms : 2000,
		.user_agent = "emberprof/" EMBER_VERSION_STRING,
		.no_proxy = 1,
	};
	ember__http *h;
	if (ember__http_new(&h, &o)) {
		memset(res, 0, sizeof(*res));
		res->outcome = EMBER__SEND_RETRY;
		snprintf(res->message, sizeof(res->message), "%s", ember_last_error());
		return;
	}
	ember__http_call call = {.method = method, .url = url, .headers = headers,
				 .nheaders = nheaders, .resp = resp, .resp_cap = cap};
	ember__http_do(h, &call, cancel, res);
	*connected = call.connected;
	if (res->outcome == EMBER__SEND_OK && call.resp_truncated) {
		res->outcome = EMBER__SEND_PERMANENT;
		snprintf(res->message, sizeof(res->message), "answer longer than %zu bytes", cap - 1);
	}
	ember__http_free(h);
}

/* Puts `prefix: ` before res->message, truncating as needed. */
static void prefix_message(ember__send_result *res, const char *a, const char *b)
{
	char m[sizeof(res->message)];
	memcpy(m, res->message, sizeof(m));
	m[sizeof(m) - 1] = '\0';
	size_t n = 0, cap = sizeof(res->message);
	const char *parts[] = {a, b, ": ", m};
	for (size_t i = 0; i < 4; i++)
		for (const char *p = parts[i]; *p && n + 1 < cap; p++)
			res->message[n++] = *p;
	res->message[n] = '\0';
}

int ember__imds_get(const ember__aws_env *e, const char *path, char *resp, size_t cap,
		    const _Atomic int *cancel, ember__send_result *res, int *connected)
{
	*connected = 0;
	if (e->imds_disabled) {
		memset(res, 0, sizeof(*res));
		snprintf(res->message, sizeof(res->message), "IMDS is disabled "
			 "(AWS_EC2_METADATA_DISABLED)");
		return -2;
	}
	const char *base = e->imds_endpoint ? e->imds_endpoint : IMDS_DEFAULT;
	size_t bl = strlen(base);
	while (bl > 0 && base[bl - 1] == '/')
		bl--;
	char url[512], token[256];
	snprintf(url, sizeof(url), "%.*s/latest/api/token", (int)bl, base);
	const char *ttl[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600"};
	ember__aws_lookup(e, "PUT", url, ttl, 1, token, sizeof(token), cancel, res, connected);
	if (res->outcome != EMBER__SEND_OK) {
		prefix_message(res, "IMDS token: PUT ", url);
		return -1;
	}
	size_t tl = strlen(token);
	while (tl > 0 && (token[tl - 1] == '\n' || token[tl - 1] == '\r' || token[tl - 1] == ' '))
		token[--tl] = '\0';
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)token[i] < 0x21 || token[i] == 0x7f)
			tl = 0;
	if (tl == 0) {
		res->outcome = EMBER__SEND_RETRY;
		snprintf(res->message, sizeof(res->message), "IMDS returned an empty or invalid token");
		return -1;
	}
	char hdr[300];
	snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", token);
	const char *hv[] = {hdr};
	snprintf(url, sizeof(url), "%.*s%s", (int)bl, base, path);
	ember__aws_lookup(e, "GET", url, hv, 1, resp, cap, cancel, res, connected);
	if (res->outcome != EMBER__SEND_OK) {
		prefix_message(res, "IMDS GET ", path);
		*connected = 1; /* the token request did connect */
		return -1;
	}
	return 0;
}

struct json_t *ember__json_parse(const char *what, const char *text, size_t len)
{
	if (ember__lazydep_load(&ember__jansson) < 0) /* every JSON value starts here */
		return NULL;
	json_error_t err;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!j) {
		ember__error(EMBER_ERR_FORMAT, "%s is not valid JSON (line %d, column %d: %s)", what,
			     err.line, err.column, err.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		ember__error(EMBER_ERR_FORMAT, "%s is not a JSON object", what);
		return NULL;
	}
	return j;
}

int ember__json_str(const char *what, struct json_t *obj, const char *key, char *out, size_t cap)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return ember__error(EMBER_ERR_FORMAT, "%s has no \"%s\"", what, key);
	if (!json_is_string(v))
		return ember__error(EMBER_ERR_FORMAT, "%s: \"%s\" is not a string", what, key);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n >= cap || strlen(s) != n)
		return ember__error(EMBER_ERR_FORMAT, "%s: \"%s\" is empty, too long or holds a NUL",
				    what, key);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return ember__error(EMBER_ERR_FORMAT, "%s: \"%s\" holds a control character",
					    what, key);
	memcpy(out, s, n + 1);
	return 0;
}
