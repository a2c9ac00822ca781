/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyroscope.c - the Grafana Pyroscope reporter: each window becomes one
 * upload, by default a Connect unary call to
 *     POST {url}/push.v1.PusherService/Push   (Content-Type: application/proto)
 * whose body is a push.v1.PushRequest with one series (the labels) holding
 * one sample (the gzip'd pprof as raw_profile, a random UUID as ID), or,
 * for older servers,
 *     POST {url}/ingest?name=<app>&from=&until=&format=pprof&sampleRate=&spyName=emberprof
 * with the gzip'd pprof as body. A reporter made with formats
 * EMBER_FORMAT_JFR (the async-profiler backend) sends JFR recordings as
 * Pyroscope's Java agent does:
 *     POST {url}/ingest?name=<app>{k=v,...}&from=&until=&format=jfr&sampleRate=&spyName=emberprof
 * with a multipart/form-data body holding one part named "jfr"; the
 * server finds the profile types in the recording, the static tags come
 * from the name (the recording does not carry them).
 *
 * The window is encoded on the agent thread (report()) and handed to the
 * upload pipeline (src/upload/pipeline.c), whose thread sends it through
 * libcurl (src/upload/http.c). The encoded body is what is retried and
 * what goes to the spool, so a window keeps its ID across retries and
 * restarts, and the server can tell a repeat.
 *
 * Everything that can be checked is checked when the reporter is created
 * (URL, credentials, tenant, headers, CA file, spool) or bound to the
 * agent at build (application name, tags), each failure with a message
 * naming the setting. Nothing here is async-signal-safe.
 */
#include "report/pyroscope.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "encode/pprof.h"
#include "encode/protobuf.h"
#include "upload/http.h"
#include "upload/pipeline.h"
#include "util/error.h"

#define SPY_NAME "emberprof"
#define MAX_HEADERS 64
#define NOWN EMBER_PYRO_NOWN

static const char *const own_label_values[NOWN] = {SPY_NAME, SPY_NAME, EMBER_VERSION_STRING};

typedef struct pyro {
	pid_t pid;     /* the creating process: a fork child leaves it all alone */
	int protocol;
	char *push_url, *ingest_url;
	char **push_hdr, **ingest_hdr; /* complete header lines, NULL-terminated */
	size_t npush_hdr, ningest_hdr;
	unsigned flush_timeout_ms;
	uint64_t max_age_ms; /* 0: no limit */
	ember__http *http;
	ember__pipeline *pipe;
	ember__upload_log log;
	/* set at bind (agent thread or builder) */
	int bound;
	char *service_name;
	char *own_values[NOWN];        /* a tag may replace a spy label's value */
	unsigned hz;
	int jfr;        /* takes EMBER_FORMAT_JFR reports, not pprof */
	char *jfr_name; /* set at bind: "<service>{tag=value,...}" for format=jfr */
} pyro;

/* ---- encoding ---- */

void ember__uuid4(char out[37])
{
	uint8_t b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);
		if (r > 0) {
			got += (size_t)r;
		} else if (r < 0 && errno != EINTR) {
			int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
			ssize_t k = fd >= 0 ? read(fd, b, sizeof(b)) : -1;
			if (fd >= 0)
				close(fd);
			if (k != (ssize_t)sizeof(b)) /* last resort: never reached on Linux */
				for (size_t i = 0; i < sizeof(b); i++)
					b[i] = (uint8_t)(rand() >> 7);
			break;
		}
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o] = '\0';
}

int ember__pyroscope_push_body(const ember__pyro_label *labels, size_t nlabels,
			       const uint8_t *pprof, size_t len, const char *id, uint8_t **out,
			       size_t *out_len)
{
	/* PushRequest{series=1: RawProfileSeries{labels=1: LabelPair{name=1,
	 * value=2}, samples=2: RawSample{raw_profile=1, ID=2}}} */
	ember__pbuf b = EMBER_PBUF_INIT;
	ember__pb_reserve(&b, len + 256);
	size_t series = ember__pb_begin(&b, 1);
	for (size_t i = 0; i < nlabels; i++) {
		size_t lp = ember__pb_begin(&b, 1);
		ember__pb_bytes(&b, 1, labels[i].name, strlen(labels[i].name));
		ember__pb_bytes(&b, 2, labels[i].value, strlen(labels[i].value));
		ember__pb_end(&b, lp);
	}
	size_t sample = ember__pb_begin(&b, 2);
	ember__pb_bytes(&b, 1, pprof, len);
	ember__pb_bytes(&b, 2, id, strlen(id));
	ember__pb_end(&b, sample);
	ember__pb_end(&b, series);
	if (ember__pb_failed(&b)) {
		ember__pb_free(&b);
		return ember__error_oom("Pyroscope push request");
	}
	*out = b.data;
	*out_len = b.len;
	return 0;
}

/* Percent-encodes s (all but unreserved characters) onto buf at *n. */
static void url_encode(char *buf, size_t cap, size_t *n, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p && *n + 4 < cap; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~", *p)) {
			buf[(*n)++] = (char)*p;
		} else {
			buf[(*n)++] = '%';
			buf[(*n)++] = hex[*p >> 4];
			buf[(*n)++] = hex[*p & 15];
		}
	}
	buf[*n] = '\0';
}

/* The /ingest query: name, the window in whole seconds, format, rate, spy. malloc'd or NULL. */
static char *ingest_query(const pyro *p, const ember_report *r, const char *name, const char *format)
{
	size_t cap = strlen(name) * 3 + 200, n;
	char *q = malloc(cap);
	if (!q)
		return NULL;
	n = (size_t)snprintf(q, cap, "name=");
	url_encode(q, cap, &n, name);
	int64_t until = (r->end_ns + 999999999) / 1000000000;
	snprintf(q + n, cap - n, "&from=%" PRId64 "&until=%" PRId64
		 "&format=%s&sampleRate=%u&spyName=" SPY_NAME,
		 r->start_ns / 1000000000, until, format, p->hz ? p->hz : 100);
	return q;
}

/* ---- JFR through /ingest?format=jfr ---- */

/* Characters a tag value may have in the /ingest name ("app{k=v,...}"),
 * which the server splits at ',', '=', '{' and '}'. */
static int ingest_value_char(char c)
{
	return ember__pyroscope_ingest_app_char(c) || c == ':' || c == '+' || c == '@';
}

/* "<service>{k=v,...}" from the tags that are not emberprof's own labels. */
static int make_jfr_name(pyro *p, const char *svc, const ember_agent_info *info)
{
	size_t cap = strlen(svc) + 3;
	for (size_t i = 0; i < info->ntags; i++)
		cap += strlen(info->tags[i].key) + strlen(info->tags[i].value) + 2;
	char *s = malloc(cap);
	if (!s)
		return ember__error_oom("Pyroscope name");
	size_t n = (size_t)snprintf(s, cap, "%s", svc);
	int any = 0;
	for (size_t i = 0; i < info->ntags; i++) {
		const ember_tag *t = &info->tags[i];
		if (ember__pyroscope_own_label(t->key) >= 0)
			continue;
		for (const char *c = t->value; *c; c++)
			if (!ingest_value_char(*c)) {
				free(s);
				return ember__error(EMBER_ERR_INVALID, "Pyroscope /ingest (JFR): the value of "
						    "tag \"%s\" may only contain letters, digits and "
						    "_ . - / : + @ (it travels in the name, app{k=v,...})",
						    t->key);
			}
		n += (size_t)snprintf(s + n, cap - n, "%c%s=%s", any ? ',' : '{', t->key, t->value);
		any = 1;
	}
	if (any)
		snprintf(s + n, cap - n, "}");
	free(p->jfr_name);
	p->jfr_name = s;
	return 0;
}

static const char jfr_part_head[] = "Content-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n"
				    "Content-Type: application/octet-stream\r\n\r\n";

/*
 * The multipart body: "--B\r\n<part headers><jfr>\r\n--B--\r\n", with a
 * random boundary B that the recording does not contain. The request's
 * Content-Type is rebuilt from the body's first line when it is sent, so
 * a spooled body needs nothing else.
 */
static ember__upload_item *encode_jfr(pyro *p, const ember_report *r)
{
	char boundary[48];
	for (int tries = 0;; tries++) {
		char id[37];
		ember__uuid4(id);
		snprintf(boundary, sizeof(boundary), "emberprof-%s", id);
		if (!memmem(r->jfr, r->jfr_len, boundary, strlen(boundary)))
			break;
		if (tries == 8) {
			ember__error(EMBER_ERR_FORMAT, "Pyroscope: no multipart boundary found that the "
				     "recording does not contain");
			return NULL;
		}
	}
	size_t bl = strlen(boundary), hl = sizeof(jfr_part_head) - 1;
	size_t len = 2 + bl + 2 + hl + r->jfr_len + 4 + bl + 4;
	uint8_t *body = malloc(len + 1);
	char *q = ingest_query(p, r, p->jfr_name, "jfr");
	if (!body || !q) {
		free(body);
		free(q);
		ember__error_oom("Pyroscope upload");
		return NULL;
	}
	size_t o = (size_t)sprintf((char *)body, "--%s\r\n%s", boundary, jfr_part_head);
	memcpy(body + o, r->jfr, r->jfr_len);
	o += r->jfr_len;
	o += (size_t)sprintf((char *)body + o, "\r\n--%s--\r\n", boundary);
	ember__upload_item *it = ember__upload_item_new(EMBER_PYRO_KIND_JFR, r->seq, r->start_ns,
							r->end_ns, q, body, o);
	free(q);
	return it;
}

/*
 * The headers of a JFR upload: the ingest headers with the multipart
 * Content-Type (boundary from the body's first line) in place of the
 * first. NULL with a message if the body has no boundary line.
 */
static char **jfr_headers(const pyro *p, const ember__upload_item *it, char *ctype, size_t cap)
{
	const char *b = (const char *)it->body;
	size_t i = 2;
	while (i < it->len && i < 80 && b[i] != '\r')
		i++;
	if (it->len < 4 || b[0] != '-' || b[1] != '-' || i == 2 || i >= it->len || i >= 80)
		return NULL;
	snprintf(ctype, cap, "Content-Type: multipart/form-data; boundary=%.*s", (int)(i - 2), b + 2);
	char **h = calloc(p->ningest_hdr + 1, sizeof(*h));
	if (!h)
		return NULL;
	h[0] = ctype;
	for (size_t k = 1; k < p->ningest_hdr; k++)
		h[k] = p->ingest_hdr[k];
	return h;
}

/* ---- sending (uploader thread) ---- */

/* A refusal for the profile's age: the server's message says the profile
 * is "outside of ingestion window" (pkg/validation/validate.go,
 * NotInIngestionWindowErrorMsg), answered as invalid_argument (400). */
static void mark_too_old(ember__send_result *res)
{
	if (res->outcome == EMBER__SEND_PERMANENT && res->http_status >= 400 &&
	    res->http_status < 500 && strstr(res->message, "outside of ingestion window"))
		res->too_old = 1;
}

static void pyro_send(void *ctx, const ember__upload_item *it, const _Atomic int *cancel,
		      ember__send_result *res)
{
	pyro *p = ctx;
	ember__http_request rq = {.body = it->body, .len = it->len};
	char *url = NULL;
	if (it->kind == EMBER_PYRO_KIND_PUSH) {
		rq.url = p->push_url;
		rq.headers = (const char *const *)p->push_hdr;
		rq.nheaders = p->npush_hdr;
	} else if (it->kind == EMBER_PYRO_KIND_INGEST) {
		size_t n = strlen(p->ingest_url) + strlen(it->meta) + 2;
		if (!(url = malloc(n))) {
			res->outcome = EMBER__SEND_RETRY;
			snprintf(res->message, sizeof(res->message), "out of memory");
			return;
		}
		snprintf(url, n, "%s?%s", p->ingest_url, it->meta);
		rq.url = url;
		rq.headers = (const char *const *)p->ingest_hdr;
		rq.nheaders = p->ningest_hdr;
	} else if (it->kind == EMBER_PYRO_KIND_JFR) {
		char ctype[160];
		char **hdr = jfr_headers(p, it, ctype, sizeof(ctype));
		size_t n = strlen(p->ingest_url) + strlen(it->meta) + 2;
		if (!hdr || !(url = malloc(n))) {
			res->outcome = hdr ? EMBER__SEND_RETRY : EMBER__SEND_PERMANENT;
			snprintf(res->message, sizeof(res->message), "%s", hdr ? "out of memory" :
				 "JFR upload without a multipart boundary (or out of memory)");
			free(hdr);
			return;
		}
		snprintf(url, n, "%s?%s", p->ingest_url, it->meta);
		rq.url = url;
		rq.headers = (const char *const *)hdr;
		rq.nheaders = p->ningest_hdr;
		ember__http_post(p->http, &rq, cancel, res);
		free(hdr);
		free(url);
		mark_too_old(res);
		return;
	} else {
		res->outcome = EMBER__SEND_PERMANENT;
		snprintf(res->message, sizeof(res->message), "spooled window of unknown kind %08x",
			 (unsigned)it->kind);
		return;
	}
	ember__http_post(p->http, &rq, cancel, res);
	free(url);
	mark_too_old(res);
}

/* ---- the reporter callbacks ---- */

static int pyro_bind(void *ud, const ember_agent_info *info)
{
	pyro *p = ud;
	if (p->bound)
		return ember__error(EMBER_ERR_INVALID, "this Pyroscope reporter is already attached "
				    "to an agent; create one reporter per agent");
	int rc = ember__pyroscope_check_info(info, p->jfr ? EMBER__PYRO_JFR : p->protocol);
	if (rc)
		return rc;
	const char *svc = info->app_name;
	const char *own[NOWN];
	memcpy(own, own_label_values, sizeof(own));
	for (size_t i = 0; i < info->ntags; i++) {
		int k = ember__pyroscope_own_label(info->tags[i].key);
		if (k == NOWN)
			svc = info->tags[i].value;
		else if (k >= 0)
			own[k] = info->tags[i].value;
	}
	free(p->service_name);
	if (!(p->service_name = strdup(svc)))
		return ember__error_oom("service name");
	for (int i = 0; i < NOWN; i++) {
		free(p->own_values[i]);
		if (!(p->own_values[i] = strdup(own[i])))
			return ember__error_oom("Pyroscope label");
	}
	if (p->jfr && (rc = make_jfr_name(p, svc, info)))
		return rc;
	if ((rc = ember__pyroscope_check_age(info->interval_ms, p->max_age_ms)))
		return rc;
	p->hz = info->sample_rate_hz;
	p->log.fn = info->log_fn;
	p->log.ud = info->log_userdata;
	p->log.level = info->log_level;
	p->log.who = "pyroscope";
	if (p->max_age_ms && info->interval_ms && info->interval_ms > p->max_age_ms / 2)
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "the reporting interval (%u s) leaves "
				   "less than %u s of retries before a window is older than the %"
				   PRIu64 " s the server accepts; such windows are dropped unsent",
				   info->interval_ms / 1000,
				   (unsigned)((p->max_age_ms - info->interval_ms) / 1000),
				   p->max_age_ms / 1000);
	ember__pyroscope_warn_names(info, &p->log);
	if (info->max_depth > EMBER_PYRO_MAX_DEPTH)
		ember__upload_logf(&p->log, EMBER_LOG_WARN, "stacks are cut to %d frames (leaf side "
				   "kept), the most the server keeps (validation.max-profile-"
				   "stacktrace-depth), instead of the %u asked for",
				   EMBER_PYRO_MAX_DEPTH, info->max_depth);
	p->bound = 1;
	return ember__pipeline_start(p->pipe, &p->log);
}

/* A reporter used without a builder learns what it can from the first window. */
static int bind_from_report(pyro *p, const ember_report *r)
{
	ember_agent_info info;
	memset(&info, 0, sizeof(info));
	info.app_name = r->app_name;
	info.sample_rate_hz = 100;
	info.log_level = EMBER_LOG_WARN;
	return pyro_bind(p, &info);
}

static ember__upload_item *encode_push(pyro *p, const ember_report *r, const char *metric)
{
	ember__pyro_label labels[3 + NOWN];
	size_t n = 0;
	labels[n++] = (ember__pyro_label){"__name__", metric};
	labels[n++] = (ember__pyro_label){"service_name", p->service_name};
	for (int i = 0; i < NOWN; i++)
		labels[n++] = (ember__pyro_label){ember__pyro_own_names[i], p->own_values[i]};
	/* Each window's memory profile holds that window's allocations, not
	 * running totals: without __delta__="false" a 1.x ingester takes
	 * alloc_* as cumulative, drops each series' first profile and
	 * subtracts the previous one from the next (pkg/phlaredb/head.go,
	 * Head.Ingest). Pyroscope's own agents send it for such profiles;
	 * /ingest adds it by itself. */
	if (!strcmp(metric, "memory"))
		labels[n++] = (ember__pyro_label){"__delta__", "false"};
	char id[37];
	ember__uuid4(id);
	uint8_t *body;
	size_t len;
	if (ember__pyroscope_push_body(labels, n, r->pprof, r->pprof_len, id, &body, &len))
		return NULL;
	return ember__upload_item_new(EMBER_PYRO_KIND_PUSH, r->seq, r->start_ns, r->end_ns, id, body,
				      len);
}

static ember__upload_item *encode_ingest(pyro *p, const ember_report *r)
{
	char *q = ingest_query(p, r, p->service_name, "pprof");
	uint8_t *body = malloc(r->pprof_len ? r->pprof_len : 1);
	if (!q || !body) {
		free(q);
		free(body);
		ember__error_oom("Pyroscope upload");
		return NULL;
	}
	memcpy(body, r->pprof, r->pprof_len);
	ember__upload_item *it = ember__upload_item_new(EMBER_PYRO_KIND_INGEST, r->seq, r->start_ns,
							r->end_ns, q, body, r->pprof_len);
	free(q);
	return it;
}

/* Does the report's pprof hold no sample? (Also for an unreadable one: no.) */
static int pyro_report(void *ud, const ember_report *r)
{
	pyro *p = ud;
	if (!r || (!r->pprof && r->pprof_len))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope reporter: no profile data");
	int jfr = r->format == EMBER_FORMAT_JFR;
	if (jfr != p->jfr)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope reporter: got a %s report but was made "
				    "for %s (ember_pyroscope_options.formats)", jfr ? "JFR" : "pprof",
				    p->jfr ? "JFR" : "pprof");
	if (jfr && (!r->jfr || !r->jfr_len))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope reporter: empty JFR report");
	if (!p->bound) {
		int rc = bind_from_report(p, r);
		if (rc)
			return rc;
	}
	const char *metric = jfr ? "jfr" : ember__pyroscope_metric(r->profile_type);
	if (!metric)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope reporter: profile type \"%s\" has no "
				    "Pyroscope name", r->profile_type ? r->profile_type : "");
	/* A profile without samples (the final window's memory profile, say)
	 * is stored by nobody (the server drops it: pkg/phlaredb/head.go
	 * Head.Ingest, distributor pushSeries): send nothing, but a final
	 * window still waits for what is queued. */
	if (!jfr && r->samples == 0 && ember__pprof_is_empty(r->pprof, r->pprof_len)) {
		ember__upload_logf(&p->log, EMBER_LOG_DEBUG, "window %" PRIu32 " (%s) has no samples: "
				   "not sent", r->seq, r->profile_type ? r->profile_type : "");
		if (r->final)
			return ember__pipeline_submit(p->pipe, NULL, 1, p->flush_timeout_ms, &p->log);
		return 0;
	}
	ember__upload_item *it = jfr ? encode_jfr(p, r)
			       : p->protocol == EMBER_PYROSCOPE_INGEST ? encode_ingest(p, r)
								       : encode_push(p, r, metric);
	if (!it)
		return EMBER_ERR_NOMEM;
	return ember__pipeline_submit(p->pipe, it, r->final, p->flush_timeout_ms, &p->log);
}

static void pyro_stats(void *ud, ember_stats *acc)
{
	pyro *p = ud;
	ember__pipeline_stats(p->pipe, acc);
}

static void free_lines(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void pyro_destroy(void *ud)
{
	pyro *p = ud;
	if (!p)
		return;
	if (p->pid != getpid())
		return; /* a fork child: a TLS close here would corrupt the parent's stream */
	ember__pipeline_free(p->pipe); /* first: its thread uses the rest */
	ember__http_free(p->http);
	free(p->push_url);
	free(p->ingest_url);
	free_lines(p->push_hdr);
	free_lines(p->ingest_hdr);
	free(p->service_name);
	free(p->jfr_name);
	for (int i = 0; i < NOWN; i++)
		free(p->own_values[i]);
	free(p);
}

/* ---- creation ---- */

static int copy_options(ember_pyroscope_options *o, const ember_pyroscope_options *in)
{
	return ember__options_copy(o, sizeof(*o), in, offsetof(ember_pyroscope_options, url) +
				   sizeof(in->url), "ember_reporter_pyroscope", "EMBER_PYROSCOPE_OPTIONS_INIT");
}

static int is_set(const char *s)
{
	return s && *s;
}

static int check_printable(const char *what, const char *s, int allow_space)
{
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || (!allow_space && *c == ' '))
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: %s contains %s", what,
					    allow_space ? "a control character" : "a space or a control "
					    "character");
	return 0;
}

static int check_options(const ember_pyroscope_options *o)
{
	int rc = ember__http_check_base_url(o->url, "Pyroscope server URL");
	if (rc)
		return rc;
	if (o->protocol != EMBER_PYROSCOPE_PUSH && o->protocol != EMBER_PYROSCOPE_INGEST)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: unknown protocol %d (expected push "
				    "or ingest)", (int)o->protocol);
	if (o->formats & ~(EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR) ||
	    o->formats == (EMBER_FORMAT_PPROF | EMBER_FORMAT_JFR))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: formats 0x%x: give EMBER_FORMAT_PPROF "
				    "or EMBER_FORMAT_JFR, not both (each window would count twice)",
				    o->formats);
	int user = is_set(o->basic_auth_user), pass = is_set(o->basic_auth_password);
	if (user != pass)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: basic auth needs both a user and a "
				    "password (only the %s is set)", user ? "user" : "password");
	if (user && strchr(o->basic_auth_user, ':'))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: the basic auth user may not contain "
				    "':'");
	if (user && ((rc = check_printable("the basic auth user", o->basic_auth_user, 1)) ||
		     (rc = check_printable("the basic auth password", o->basic_auth_password, 1))))
		return rc;
	if (is_set(o->bearer_token)) {
		if (user)
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: give either basic auth or a "
					    "bearer token, not both");
		if ((rc = check_printable("the bearer token", o->bearer_token, 0)))
			return rc;
	}
	if (is_set(o->tenant_id) && (rc = ember__pyroscope_check_tenant(o->tenant_id)))
		return rc;
	if (o->nheaders > MAX_HEADERS)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: %zu extra headers; at most %d",
				    o->nheaders, MAX_HEADERS);
	if (o->nheaders && !o->headers)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: nheaders is %zu but headers is NULL",
				    o->nheaders);
	static const char *const ours[] = {"Content-Type", "Content-Length", "Host",
					   "Transfer-Encoding", "Expect", "Connect-Protocol-Version",
					   "User-Agent"};
	for (size_t i = 0; i < o->nheaders; i++) {
		size_t nl;
		if ((rc = ember__http_check_header(o->headers[i], &nl))) {
			char why[EMBER_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", ember_last_error());
			return ember__error(rc, "Pyroscope: extra %s", why);
		}
		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			if (strlen(ours[k]) == nl && !strncasecmp(o->headers[i], ours[k], nl))
				return ember__error(EMBER_ERR_INVALID, "Pyroscope: header %s is set by "
						    "emberprof and cannot be given%s", ours[k],
						    k == 6 ? " (use user_agent_suffix)" : "");
		if (nl == 13 && !strncasecmp(o->headers[i], "Authorization", nl) &&
		    (user || is_set(o->bearer_token)))
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: an Authorization header and "
					    "basic auth or a bearer token are both given");
		if (nl == 13 && !strncasecmp(o->headers[i], "X-Scope-OrgID", nl) &&
		    is_set(o->tenant_id))
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: an X-Scope-OrgID header and a "
					    "tenant id are both given");
	}
	if (is_set(o->ca_file) && access(o->ca_file, R_OK) < 0)
		return ember__error_errno(EMBER_ERR_INVALID, errno, "Pyroscope: CA file '%s' cannot be "
					  "read", o->ca_file);
	if (o->connect_timeout_ms > 600000 || o->timeout_ms > 3600000)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: timeouts are limited to 10 min "
				    "(connect) and 1 h (total)");
	if (o->connect_timeout_ms && o->timeout_ms && o->connect_timeout_ms > o->timeout_ms)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: the connect timeout (%u ms) is longer "
				    "than the total timeout (%u ms)", o->connect_timeout_ms, o->timeout_ms);
	if (o->queue_len > 4096)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: queue length %u is out of range "
				    "1..4096", o->queue_len);
	if (o->upload_jitter_ms > 3600000 || o->flush_timeout_ms > 600000)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: upload jitter is limited to 1 h and "
				    "the flush timeout to 10 min");
	if (is_set(o->spool_dir) && o->spool_max_bytes && o->spool_max_bytes < 65536)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: spool size %" PRIu64 " bytes is "
				    "below the minimum of 64 KiB", o->spool_max_bytes);
	if (is_set(o->user_agent_suffix) &&
	    ((rc = check_printable("the user agent suffix", o->user_agent_suffix, 1)) ||
	     strlen(o->user_agent_suffix) > 200))
		return rc ? rc : ember__error(EMBER_ERR_INVALID, "Pyroscope: user agent suffix longer "
					      "than 200 bytes");
	return 0;
}

/* Builds the NULL-terminated header list: content type, auth, tenant, extras. */
static char **build_headers(const ember_pyroscope_options *o, const char *const *fixed,
			    size_t nfixed, size_t *count)
{
	size_t cap = nfixed + 2 + o->nheaders + 1, n = 0;
	char **v = calloc(cap, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < nfixed; i++)
		if (!(v[n++] = strdup(fixed[i])))
			goto oom;
	if (is_set(o->basic_auth_user)) {
		size_t ul = strlen(o->basic_auth_user), pl = strlen(o->basic_auth_password);
		char *cred = malloc(ul + pl + 2);
		if (!cred)
			goto oom;
		snprintf(cred, ul + pl + 2, "%s:%s", o->basic_auth_user, o->basic_auth_password);
		char *b64 = ember__base64(cred, ul + pl + 1);
		memset(cred, 0, ul + pl + 1);
		free(cred);
		if (!b64 || asprintf(&v[n++], "Authorization: Basic %s", b64) < 0) {
			v[n - 1] = NULL;
			free(b64);
			goto oom;
		}
		free(b64);
	} else if (is_set(o->bearer_token)) {
		if (asprintf(&v[n++], "Authorization: Bearer %s", o->bearer_token) < 0) {
			v[n - 1] = NULL;
			goto oom;
		}
	}
	if (is_set(o->tenant_id) && asprintf(&v[n++], "X-Scope-OrgID: %s", o->tenant_id) < 0) {
		v[n - 1] = NULL;
		goto oom;
	}
	for (size_t i = 0; i < o->nheaders; i++)
		if (!(v[n++] = strdup(o->headers[i])))
			goto oom;
	*count = n;
	return v;
oom:
	free_lines(v);
	return NULL;
}

static char *join_url(const char *base, const char *path)
{
	size_t n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	char *s = NULL;
	if (asprintf(&s, "%.*s%s", (int)n, base, path) < 0)
		return NULL;
	return s;
}

EMBER_API int ember_reporter_pyroscope(ember_reporter *out, const ember_pyroscope_options *opts)
{
	ember_pyroscope_options o;
	if (!out)
		return ember__error(EMBER_ERR_INVALID, "ember_reporter_pyroscope: out is NULL");
	memset(out, 0, sizeof(*out));
	int rc = copy_options(&o, opts);
	if (rc || (rc = check_options(&o)))
		return rc;
	pyro *p = calloc(1, sizeof(*p));
	if (!p)
		return ember__error_oom("Pyroscope reporter");
	p->pid = getpid();
	p->protocol = o.protocol;
	p->jfr = o.formats == EMBER_FORMAT_JFR;
	p->flush_timeout_ms = o.flush_timeout_ms ? o.flush_timeout_ms : 5000;
	p->max_age_ms = ember__pyroscope_max_age_ms(&o);
	p->log.level = EMBER_LOG_WARN;
	p->log.who = "pyroscope";
	static const char *const push_fixed[] = {"Content-Type: application/proto",
						 "Connect-Protocol-Version: 1"};
	static const char *const ingest_fixed[] = {"Content-Type: binary/octet-stream"};
	rc = EMBER_ERR_NOMEM;
	if (!(p->push_url = join_url(o.url, "/push.v1.PusherService/Push")) ||
	    !(p->ingest_url = join_url(o.url, "/ingest")) ||
	    !(p->push_hdr = build_headers(&o, push_fixed, 2, &p->npush_hdr)) ||
	    !(p->ingest_hdr = build_headers(&o, ingest_fixed, 1, &p->ningest_hdr))) {
		ember__error_oom("Pyroscope reporter");
		goto fail;
	}
	char ua[300];
	snprintf(ua, sizeof(ua), "emberprof/" EMBER_VERSION_STRING "%s%s",
		 is_set(o.user_agent_suffix) ? " " : "", is_set(o.user_agent_suffix) ? o.user_agent_suffix : "");
	ember__http_opts ho = {
		.ca_file = is_set(o.ca_file) ? o.ca_file : NULL,
		.insecure = o.insecure != 0,
		.connect_timeout_ms = o.connect_timeout_ms ? o.connect_timeout_ms : 5000,
		.timeout_ms = o.timeout_ms ? o.timeout_ms : 30000,
		.user_agent = ua,
	};
	if ((rc = ember__http_new(&p->http, &ho)))
		goto fail;
	ember__pipeline_opts po = {
		.name = "pyroscope",
		.queue_len = o.queue_len ? o.queue_len : 16,
		.spool_dir = is_set(o.spool_dir) ? o.spool_dir : NULL,
		.spool_max_bytes = o.spool_max_bytes ? o.spool_max_bytes : 64ull << 20,
		.jitter_ms = o.upload_jitter_ms,
		.send = pyro_send,
		.send_ctx = p,
		.max_age_ms = p->max_age_ms,
		.max_age_what = "EMBERPROF_SERVER_MAX_AGE, the server's validation.reject-older-than",
	};
	if ((rc = ember__pipeline_new(&p->pipe, &po)))
		goto fail;
	out->name = "pyroscope";
	out->report = pyro_report;
	out->destroy = pyro_destroy;
	out->bind = pyro_bind;
	out->stats = pyro_stats;
	out->userdata = p;
	out->formats = p->jfr ? EMBER_FORMAT_JFR : EMBER_FORMAT_PPROF;
	return 0;
fail:
	pyro_destroy(p);
	return rc;
}

unsigned ember__reporter_max_depth(const ember_reporter *r)
{
	return r && r->report == pyro_report ? EMBER_PYRO_MAX_DEPTH : ember__multi_max_depth(r);
}
