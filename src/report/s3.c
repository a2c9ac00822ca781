/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3.c - the S3 reporter: each JFR window becomes one zip (s3_object.c)
 * uploaded with PutObject, as the async-profiler agent does, signed with
 * AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4), through the upload
 * pipeline (queue, retries, spool) like the Pyroscope reporter.
 *
 * Threads. report() runs on the agent thread: it builds the zip and
 * fixes the key's {pid} and {time} (the report time, UTC, one second
 * later than the previous window's when they would collide), then queues
 * it. Everything that may touch the network - host detection (IMDSv2,
 * ECS task metadata), the region from IMDS, credentials from the ECS or
 * EC2 endpoints, the PutObject itself - runs in the send function, on
 * the pipeline's uploader thread, each lookup bounded (1 s connect, 2 s
 * in all). The application and the agent thread never wait for AWS.
 *
 * Host detection. With no ember_s3_options.host (or kind DETECT), the
 * first upload detects the host. Its outcome decides the key's {machine}:
 *   EC2 or ECS found          ec2_<id>_ / ecs_<task arn>_, kept for good;
 *   nothing answered          onprem__ (no IMDS, no ECS endpoint), checked
 *                             again after detect_retry_max (10 min);
 *   a service answered badly  unknown__ (timeout after connecting, HTTP
 *                             error, broken JSON), logged, checked again
 *                             at the next upload after a backoff of 10 s
 *                             doubling to 10 min.
 * A window keeps the key of its first attempt across retries, so a retry
 * after a lost answer overwrites the same object instead of adding one.
 *
 * Errors. S3's XML <Code> and <Message> are logged. 408, 429 and 5xx are
 * retried; 403 RequestTimeTooSkewed / ExpiredToken are retried after
 * fetching the credentials again; other 4xx (AccessDenied,
 * SignatureDoesNotMatch, NoSuchBucket...) drop the window, counted in
 * uploads_failed. Missing credentials or region are retried (they may
 * appear: an instance role attached later), logged at each first failure.
 */
#include "report/s3.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "aws/awsenv.h"
#include "aws/credentials.h"
#include "aws/hostmeta.h"
#include "upload/http.h"
#include "util/error.h"
#include "util/sha256.h"

#define KEY_MAX 1024
#define URL_MAX 2048

typedef struct s3r {
	pid_t pid;
	char *bucket, *group, *owner, *endpoint, *region_opt, *profile;
	int path_style;
	unsigned flush_timeout_ms;
	ember__aws_env env;
	ember__aws_chain chain;
	ember__http *http;
	ember__pipeline *pipe;
	ember__upload_log log;
	int bound;
	/* uploader thread only */
	ember__hostmeta host;
	int host_final;              /* given, or found */
	int64_t detect_next;         /* CLOCK_MONOTONIC ns of the next detection */
	unsigned detect_backoff_ms;
	unsigned detect_min_ms, detect_max_ms;
	char machine[300];
	char region[64];
	int force_refresh;
	char last_meta[64];
	uint32_t last_seq;
	int64_t last_start;
	time_t last_key_time; /* {time} of the last report (agent thread) */
	char last_key[KEY_MAX];
	_Atomic uint64_t detections, auth_failures, refreshes;
} s3r;

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- uploader thread ---- */

static void refresh_host(s3r *p, const _Atomic int *cancel)
{
	if (p->host_final || mono_ns() < p->detect_next)
		return;
	char why[600];
	ember__hostmeta h;
	memset(&h, 0, sizeof(h));
	atomic_fetch_add(&p->detections, 1);
	int out = ember__hostmeta_detect(&p->env, &h, why, sizeof(why), cancel);
	if (out == EMBER__DETECT_FOUND) {
		p->host = h;
		p->host_final = 1;
		ember__hostmeta_machine(&p->host, p->machine, sizeof(p->machine));
		ember__upload_logf(&p->log, EMBER_LOG_INFO, "host: %s (account %s, region %s)",
				   p->machine, h.account, h.region);
		return;
	}
	unsigned delay;
	if (out == EMBER__DETECT_ABSENT) {
		p->host.kind = EMBER_HOST_ONPREM;
		delay = p->detect_max_ms;
		ember__upload_logf(&p->log, EMBER_LOG_DEBUG, "host: no EC2 or ECS metadata service: "
				   "on premises");
	} else {
		p->host.kind = EMBER_HOST_NONE;
		delay = p->detect_backoff_ms ? p->detect_backoff_ms : p->detect_min_ms;
		p->detect_backoff_ms = delay >= p->detect_max_ms / 2 ? p->detect_max_ms : delay * 2;
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "host metadata lookup failed (%s); keys "
				   "use unknown__ until it succeeds (next try in %u ms)", why, delay);
	}
	ember__hostmeta_machine(&p->host, p->machine, sizeof(p->machine));
	p->detect_next = mono_ns() + (int64_t)delay * 1000000;
}

static int resolve_region(s3r *p, const _Atomic int *cancel, ember__send_result *res)
{
	if (p->region[0])
		return 0;
	if (p->region_opt) {
		snprintf(p->region, sizeof(p->region), "%s", p->region_opt);
		return 0;
	}
	if (ember__aws_region(&p->chain, 1, p->region, sizeof(p->region), cancel) == 0)
		return 0;
	p->region[0] = '\0';
	if (p->path_style && p->endpoint) {
		/* an S3-compatible store: any region signs */
		snprintf(p->region, sizeof(p->region), "us-east-1");
		return 0;
	}
	res->outcome = EMBER__SEND_RETRY;
	snprintf(res->message, sizeof(res->message), "%s", ember_last_error());
	return -1;
}

static void key_for(s3r *p, const ember__upload_item *it, char *key, size_t cap)
{
	if (p->last_key[0] && it->seq == p->last_seq && it->start_ns == p->last_start &&
	    !strcmp(it->meta, p->last_meta)) {
		snprintf(key, cap, "%s", p->last_key);
		return;
	}
	long pid = 0;
	char tm[32] = "";
	if (sscanf(it->meta, "%ld %31s", &pid, tm) != 2)
		snprintf(tm, sizeof(tm), "1970-01-01T00-00-00Z");
	if (ember__s3_key(key, cap, p->group, p->machine, pid, tm) < 0)
		key[0] = '\0';
	snprintf(p->last_key, sizeof(p->last_key), "%s", key);
	snprintf(p->last_meta, sizeof(p->last_meta), "%s", it->meta);
	p->last_seq = it->seq;
	p->last_start = it->start_ns;
}

static void s3_send(void *ctx, const ember__upload_item *it, const _Atomic int *cancel,
		    ember__send_result *res)
{
	s3r *p = ctx;
	memset(res, 0, sizeof(*res));
	res->outcome = EMBER__SEND_RETRY;
	res->retry_after_ms = -1;
	if (it->kind != EMBER_S3_KIND_ZIP) {
		res->outcome = EMBER__SEND_PERMANENT;
		snprintf(res->message, sizeof(res->message), "spooled window of unknown kind %08x",
			 (unsigned)it->kind);
		return;
	}
	refresh_host(p, cancel);
	if (resolve_region(p, cancel, res))
		return;
	char key[KEY_MAX], url[URL_MAX];
	key_for(p, it, key, sizeof(key));
	char ep[128];
	const char *endpoint = p->endpoint;
	if (!endpoint && p->path_style) {
		snprintf(ep, sizeof(ep), "https://s3.%s.amazonaws.com", p->region);
		endpoint = ep;
	}
	if (!key[0] || ember__s3_object_url(url, sizeof(url), endpoint, p->path_style, p->bucket,
					    p->region, key)) {
		res->outcome = EMBER__SEND_PERMANENT;
		snprintf(res->message, sizeof(res->message), "the object key or URL is too long");
		return;
	}
	ember__aws_creds cr;
	int force = p->force_refresh;
	if (force)
		atomic_fetch_add(&p->refreshes, 1);
	if (ember__aws_chain_get(&p->chain, force, &cr, cancel)) {
		snprintf(res->message, sizeof(res->message), "AWS credentials: %s", ember_last_error());
		return;
	}
	p->force_refresh = 0;
	char sha[65], hsha[100], howner[200], sigv4[100], *htoken = NULL, *userpwd = NULL;
	ember__sha256_hex(it->body, it->len, sha);
	snprintf(hsha, sizeof(hsha), "x-amz-content-sha256: %s", sha);
	const char *hv[5];
	size_t nh = 0;
	hv[nh++] = "Content-Type: application/zip";
	hv[nh++] = hsha;
	if (p->owner) {
		snprintf(howner, sizeof(howner), "x-amz-expected-bucket-owner: %s", p->owner);
		hv[nh++] = howner;
	}
	if (cr.token && asprintf(&htoken, "x-amz-security-token: %s", cr.token) < 0)
		htoken = NULL;
	if (asprintf(&userpwd, "%s:%s", cr.access_key_id, cr.secret) < 0)
		userpwd = NULL;
	if (!userpwd || (cr.token && !htoken)) {
		free(htoken);
		free(userpwd);
		ember__aws_creds_clear(&cr);
		snprintf(res->message, sizeof(res->message), "out of memory");
		return;
	}
	if (htoken)
		hv[nh++] = htoken;
	snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", p->region);
	char body[4096];
	ember__http_call call = {.method = "PUT", .url = url, .headers = hv, .nheaders = nh,
				 .body = it->body, .len = it->len, .aws_sigv4 = sigv4,
				 .userpwd = userpwd, .resp = body, .resp_cap = sizeof(body)};
	ember__http_do(p->http, &call, cancel, res);
	memset(userpwd, 0, strlen(userpwd));
	free(userpwd);
	if (htoken) {
		memset(htoken, 0, strlen(htoken));
		free(htoken);
	}
	const char *src = cr.source;
	ember__aws_creds_clear(&cr);
	if (res->http_status <= 0)
		return; /* no answer: curl's message, retryable */
	char code[64], msg[256];
	int refresh;
	int outcome = ember__s3_classify(res->http_status, body, code, sizeof(code), msg,
					 sizeof(msg), &refresh);
	if (outcome == EMBER__SEND_OK) {
		ember__upload_logf(&p->log, EMBER_LOG_DEBUG, "window %" PRIu32 " stored as s3://%s/%s",
				   it->seq, p->bucket, key);
		return;
	}
	if (res->http_status == 403 || res->http_status == 401)
		atomic_fetch_add(&p->auth_failures, 1);
	if (refresh)
		p->force_refresh = 1;
	res->outcome = outcome;
	int auth = res->http_status == 403 && !refresh && src;
	char text[1024];
	/* A message longer than text is cut: it is only logged. */
	if (snprintf(text, sizeof(text), "PutObject s3://%s/%s: HTTP %d %s%s%s%s%s%s",
		     p->bucket, key, res->http_status, code[0] ? code : "(no error code)",
		     msg[0] ? ": " : "", msg, auth ? " (credentials from the " : "",
		     auth ? src : "", auth ? ")" : "") < 0)
		text[0] = '\0';
	size_t tl = strlen(text);
	if (tl >= sizeof(res->message))
		tl = sizeof(res->message) - 1;
	memcpy(res->message, text, tl);
	res->message[tl] = '\0';
}

/* ---- the reporter callbacks ---- */

static int s3_bind(void *ud, const ember_agent_info *info)
{
	s3r *p = ud;
	if (p->bound)
		return ember__error(EMBER_ERR_INVALID, "this S3 reporter is already attached to an "
				    "agent; create one reporter per agent");
	p->log.fn = info->log_fn;
	p->log.ud = info->log_userdata;
	p->log.level = info->log_level;
	p->log.who = "s3";
	p->bound = 1;
	return ember__pipeline_start(p->pipe, &p->log);
}

static int s3_report(void *ud, const ember_report *r)
{
	s3r *p = ud;
	if (!r)
		return ember__error(EMBER_ERR_INVALID, "S3 reporter: no report");
	if (r->format != EMBER_FORMAT_JFR || (!r->jfr && r->jfr_len))
		return ember__error(EMBER_ERR_INVALID, "S3 reporter: it takes JFR reports only (got "
				    "format %u)", r->format);
	if (!p->bound) {
		ember_agent_info info;
		memset(&info, 0, sizeof(info));
		info.log_level = EMBER_LOG_WARN;
		int rc = s3_bind(p, &info);
		if (rc)
			return rc;
	}
	char json[128];
	ember__s3_metadata_json(json, sizeof(json), r->start_ns / 1000000, r->end_ns / 1000000,
				r->interval_ms);
	uint8_t *zip;
	size_t len;
	int rc = ember__s3_zip(r->jfr, r->jfr_len, json, &zip, &len);
	if (rc)
		return rc;
	/* {time} has whole seconds: two windows reported within one second
	 * (a short final window, sub-second intervals) would get the same key
	 * and the second would overwrite the first. Each window takes a
	 * second of its own, so every key of this reporter is unique (two
	 * reporters with the same bucket and group in one process would
	 * upload the same windows twice anyway). */
	time_t now = time(NULL);
	if (now <= p->last_key_time)
		now = p->last_key_time + 1;
	p->last_key_time = now;
	char meta[64], tm[32];
	ember__s3_time(now, tm);
	snprintf(meta, sizeof(meta), "%ld %s", (long)getpid(), tm);
	ember__upload_item *it = ember__upload_item_new(EMBER_S3_KIND_ZIP, r->seq, r->start_ns,
							r->end_ns, meta, zip, len);
	if (!it)
		return EMBER_ERR_NOMEM;
	return ember__pipeline_submit(p->pipe, it, r->final, p->flush_timeout_ms, &p->log);
}

static void s3_stats(void *ud, ember_stats *acc)
{
	s3r *p = ud;
	ember__pipeline_stats(p->pipe, acc);
}

static void s3_destroy(void *ud)
{
	s3r *p = ud;
	if (!p)
		return;
	if (p->pid != getpid())
		return; /* a fork child: leave the parent's connection and spool alone */
	ember__pipeline_free(p->pipe); /* first: its thread uses the rest */
	ember__http_free(p->http);
	ember__aws_chain_fini(&p->chain);
	ember__aws_env_free(&p->env);
	free(p->bucket);
	free(p->group);
	free(p->owner);
	free(p->endpoint);
	free(p->region_opt);
	free(p->profile);
	free(p);
}

void ember__s3_set_detect_retry_ms(void *ud, unsigned min_ms, unsigned max_ms)
{
	s3r *p = ud;
	p->detect_min_ms = min_ms;
	p->detect_max_ms = max_ms;
}

void ember__s3_set_lookup_timeouts(void *ud, unsigned connect_ms, unsigned total_ms)
{
	s3r *p = ud;
	p->env.lookup_connect_ms = connect_ms;
	p->env.lookup_timeout_ms = total_ms;
}

int ember__s3_set_ecs_credentials_host(void *ud, const char *host)
{
	s3r *p = ud;
	char *h = strdup(host);
	if (!h)
		return ember__error_oom("ECS credentials host");
	free(p->env.ecs_credentials_host);
	p->env.ecs_credentials_host = h;
	return 0;
}

void ember__s3_counters(void *ud, uint64_t *detections, uint64_t *auth_failures,
			uint64_t *refreshes)
{
	s3r *p = ud;
	if (detections)
		*detections = atomic_load(&p->detections);
	if (auth_failures)
		*auth_failures = atomic_load(&p->auth_failures);
	if (refreshes)
		*refreshes = atomic_load(&p->refreshes);
}

/* ---- creation ---- */

static int is_set(const char *s)
{
	return s && *s;
}

/* S3 bucket naming rules (the general-purpose bucket subset). */
static int check_bucket(const char *b)
{
	size_t n = strlen(b);
	int ok = n >= 3 && n <= 63 && isalnum((unsigned char)b[0]) &&
		 isalnum((unsigned char)b[n - 1]);
	for (size_t i = 0; ok && i < n; i++)
		ok = islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '-' ||
		     b[i] == '.';
	if (!ok)
		return ember__error(EMBER_ERR_INVALID, "S3: bucket name \"%.80s\" is invalid: 3 to 63 "
				    "lowercase letters, digits, '-' and '.', starting and ending "
				    "with a letter or digit", b);
	return 0;
}

static int check_options(const ember_s3_options *o)
{
	int rc;
	if (!is_set(o->bucket))
		return ember__error(EMBER_ERR_INVALID, "S3: the bucket is required");
	if ((rc = check_bucket(o->bucket)))
		return rc;
	if (!is_set(o->profiling_group))
		return ember__error(EMBER_ERR_INVALID, "S3: the profiling group is required");
	if (strlen(o->profiling_group) > 200)
		return ember__error(EMBER_ERR_INVALID, "S3: the profiling group is longer than 200 "
				    "bytes");
	for (const char *c = o->profiling_group; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '/')
			return ember__error(EMBER_ERR_INVALID, "S3: the profiling group contains '/' or "
					    "a control character");
	if (is_set(o->bucket_owner)) {
		size_t n = strlen(o->bucket_owner);
		for (size_t i = 0; i < n; i++)
			if (!isdigit((unsigned char)o->bucket_owner[i]))
				n = 0;
		if (n != 12)
			return ember__error(EMBER_ERR_INVALID, "S3: bucket owner \"%.40s\" is not a "
					    "12-digit AWS account id", o->bucket_owner);
	}
	if (is_set(o->region)) {
		size_t n = strlen(o->region);
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)o->region[i]) && o->region[i] != '-')
				n = 0;
		if (n == 0 || n > 40)
			return ember__error(EMBER_ERR_INVALID, "S3: region \"%.40s\" is not a region "
					    "name such as eu-west-1", o->region);
	}
	if (is_set(o->endpoint) && (rc = ember__http_check_base_url(o->endpoint, "S3 endpoint")))
		return rc;
	if (is_set(o->ca_file) && access(o->ca_file, R_OK) < 0)
		return ember__error_errno(EMBER_ERR_INVALID, errno, "S3: CA file '%s' cannot be read",
					  o->ca_file);
	if (o->connect_timeout_ms > 600000 || o->timeout_ms > 3600000 || o->flush_timeout_ms > 600000)
		return ember__error(EMBER_ERR_INVALID, "S3: timeouts are limited to 10 min (connect, "
				    "flush) and 1 h (total)");
	if (o->queue_len > 4096)
		return ember__error(EMBER_ERR_INVALID, "S3: queue length %u is out of range 1..4096",
				    o->queue_len);
	if (is_set(o->spool_dir) && o->spool_max_bytes && o->spool_max_bytes < 65536)
		return ember__error(EMBER_ERR_INVALID, "S3: spool size %" PRIu64 " bytes is below the "
				    "minimum of 64 KiB", o->spool_max_bytes);
	return 0;
}

static int copy_options(ember_s3_options *o, const ember_s3_options *in)
{
	return ember__options_copy(o, sizeof(*o), in, offsetof(ember_s3_options, profiling_group) +
				   sizeof(in->profiling_group), "ember_reporter_s3", "EMBER_S3_OPTIONS_INIT");
}

static int dup_opt(char **slot, const char *s)
{
	*slot = NULL;
	if (!is_set(s))
		return 0;
	return (*slot = strdup(s)) ? 0 : -1;
}

EMBER_API int ember_reporter_s3(ember_reporter *out, const ember_s3_options *opts)
{
	ember_s3_options o;
	if (!out)
		return ember__error(EMBER_ERR_INVALID, "ember_reporter_s3: out is NULL");
	memset(out, 0, sizeof(*out));
	int rc = copy_options(&o, opts);
	if (rc || (rc = check_options(&o)))
		return rc;
	if ((rc = ember__zip_global_init()) || (rc = ember__http_global_init()))
		return rc;
	s3r *p = calloc(1, sizeof(*p));
	if (!p)
		return ember__error_oom("S3 reporter");
	p->pid = getpid();
	p->flush_timeout_ms = o.flush_timeout_ms ? o.flush_timeout_ms : 5000;
	p->log.level = EMBER_LOG_WARN;
	p->log.who = "s3";
	p->detect_min_ms = 10000;
	p->detect_max_ms = 600000;
	snprintf(p->machine, sizeof(p->machine), "unknown__");
	if ((rc = ember__aws_env_load(&p->env)))
		goto fail_early;
	if ((rc = ember__hostmeta_from_public(&p->host, o.host)))
		goto fail;
	if (p->host.kind != EMBER_HOST_DETECT) {
		p->host_final = 1;
		ember__hostmeta_machine(&p->host, p->machine, sizeof(p->machine));
	}
	rc = EMBER_ERR_NOMEM;
	if (dup_opt(&p->bucket, o.bucket) || dup_opt(&p->group, o.profiling_group) ||
	    dup_opt(&p->owner, o.bucket_owner) || dup_opt(&p->region_opt, o.region) ||
	    dup_opt(&p->profile, o.aws_profile)) {
		ember__error_oom("S3 reporter");
		goto fail;
	}
	const char *ep = is_set(o.endpoint) ? o.endpoint : p->env.endpoint_url_s3 ?
			 p->env.endpoint_url_s3 : p->env.endpoint_url;
	if (ep) {
		if (!is_set(o.endpoint) && (rc = ember__http_check_base_url(ep, p->env.endpoint_url_s3 ?
			"AWS_ENDPOINT_URL_S3" : "AWS_ENDPOINT_URL")))
			goto fail;
		if (!(p->endpoint = strdup(ep))) {
			rc = ember__error_oom("S3 endpoint");
			goto fail;
		}
		p->path_style = 1;
	} else if (strchr(p->bucket, '.')) {
		p->path_style = 1; /* dots break the TLS name of virtual-hosted buckets */
	}
	if ((rc = ember__aws_chain_init(&p->chain, &p->env, p->profile)))
		goto fail;
	ember__http_opts ho = {
		.ca_file = is_set(o.ca_file) ? o.ca_file : NULL,
		.connect_timeout_ms = o.connect_timeout_ms ? o.connect_timeout_ms : 5000,
		.timeout_ms = o.timeout_ms ? o.timeout_ms : 60000,
		.user_agent = "emberprof/" EMBER_VERSION_STRING,
	};
	if ((rc = ember__http_new(&p->http, &ho)))
		goto fail;
	ember__pipeline_opts po = {
		.name = "s3",
		.queue_len = o.queue_len ? o.queue_len : 16,
		.spool_dir = is_set(o.spool_dir) ? o.spool_dir : NULL,
		.spool_max_bytes = o.spool_max_bytes ? o.spool_max_bytes : 64ull << 20,
		.send = s3_send,
		.send_ctx = p,
	};
	if ((rc = ember__pipeline_new(&p->pipe, &po)))
		goto fail;
	out->name = "s3";
	out->report = s3_report;
	out->destroy = s3_destroy;
	out->bind = s3_bind;
	out->stats = s3_stats;
	out->userdata = p;
	out->formats = EMBER_FORMAT_JFR;
	return 0;
fail_early:
	free(p);
	return rc;
fail:
	s3_destroy(p);
	return rc;
}
