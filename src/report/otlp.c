/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.c - the OTLP/HTTP profiles reporter (see otlp.h): a window's
 * profiles gathered into one request on the agent thread, queued on the
 * upload pipeline, POSTed by its thread.
 */
#include "report/otlp.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "encode/pprof.h"
#include "upload/http.h"
#include "upload/pipeline.h"
#include "util/error.h"

#define MAX_HEADERS 64
#define MAX_DIRTY 8
#define NEXE 8 /* processes whose executable is remembered */

/* A process's executable and container, remembered for its last window,
 * reported after it exited (the tree engine's): /proc/<pid> is gone then. */
typedef struct exe_memo {
	int32_t pid;
	char path[PATH_MAX];
	char container[65];
} exe_memo;

typedef struct otlp {
	pid_t pid; /* the creating process: a fork child leaves it all alone */
	char *url;
	char **hdr; /* "Content-Type: ..." then the user's, NULL-terminated */
	size_t nhdr;
	int gzip;
	unsigned flush_timeout_ms;
	char *service_name; /* set by the options, or at bind from the app name */
	ember__otlp_attr *extra;
	size_t nextra;
	ember__http *http;
	ember__pipeline *pipe;
	ember__upload_log log;
	int bound;
	/* the window being gathered (agent thread) */
	ember__otlp_enc *enc;
	int pending, final;
	int32_t wpid;
	uint32_t seq;
	int64_t start_ns, end_ns;
	char wexe[PATH_MAX]; /* the window's main mapping's file ("" if none) */
	exe_memo exe[NEXE];
	unsigned nexe_next;
} otlp;

/* The agent thread's side channel (otlp.h). */
static __thread const ember__profile *tl_profile;
static __thread otlp *tl_dirty[MAX_DIRTY];
static __thread size_t tl_ndirty;

void ember__otlp_window_profile(const ember__profile *p)
{
	tl_profile = p;
}

/* ---- resource ---- */

static const char *arch_name(const char *m)
{
	static const char *const map[][2] = {
		{"x86_64", "amd64"}, {"aarch64", "arm64"}, {"i686", "x86"}, {"i386", "x86"},
		{"ppc64le", "ppc64"}, {"ppc64", "ppc64"}, {"ppc", "ppc32"}, {"s390x", "s390x"},
		{"armv7l", "arm32"}, {"armv6l", "arm32"},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(m, map[i][0]))
			return map[i][1];
	return m;
}

/* The last run of 64 hex digits in file path (a container id), into out[65]. */
static int container_id(const char *path, char out[65])
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char line[1024];
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t run = 0;
		for (char *c = line;; c++) {
			if (isxdigit((unsigned char)*c) && !isupper((unsigned char)*c)) {
				run++;
				continue;
			}
			if (run == 64) {
				memcpy(out, c - 64, 64);
				out[64] = '\0';
				found = 1;
			}
			run = 0;
			if (!*c)
				break;
		}
	}
	fclose(f);
	return found;
}

static const char *put(char *buf, size_t cap, size_t *n, const char *s)
{
	size_t l = strlen(s);
	if (*n + l + 1 > cap)
		return "";
	char *d = buf + *n;
	memcpy(d, s, l + 1);
	*n += l + 1;
	return d;
}

size_t ember__otlp_detect_resource(int32_t pid, ember__otlp_attr out[8], char *buf, size_t cap)
{
	size_t k = 0, n = 0;
	char path[64], exe[PATH_MAX];
	pid_t p = pid > 0 ? pid : getpid();
	out[k++] = (ember__otlp_attr){"process.pid", NULL, p};
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p);
	ssize_t l = readlink(path, exe, sizeof(exe) - 1);
	if (l > 0) {
		exe[l] = '\0';
		const char *slash = strrchr(exe, '/');
		out[k++] = (ember__otlp_attr){"process.executable.path", put(buf, cap, &n, exe), 0};
		out[k++] = (ember__otlp_attr){"process.executable.name",
					      put(buf, cap, &n, slash ? slash + 1 : exe), 0};
	}
	char host[256];
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		out[k++] = (ember__otlp_attr){"host.name", put(buf, cap, &n, host), 0};
	}
	struct utsname u;
	if (uname(&u) == 0)
		out[k++] = (ember__otlp_attr){"host.arch", put(buf, cap, &n, arch_name(u.machine)), 0};
	out[k++] = (ember__otlp_attr){"os.type", "linux", 0};
	char id[65];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)p);
	if (container_id(path, id))
		out[k++] = (ember__otlp_attr){"container.id", put(buf, cap, &n, id), 0};
	return k;
}

/* ---- sending (uploader thread) ---- */

static void otlp_send(void *ctx, const ember__upload_item *it, const _Atomic int *cancel,
		      ember__send_result *res)
{
	otlp *o = ctx;
	if (it->kind != EMBER_OTLP_KIND) {
		res->outcome = EMBER__SEND_PERMANENT;
		snprintf(res->message, sizeof(res->message), "spooled window of unknown kind %08x",
			 (unsigned)it->kind);
		return;
	}
	const char *h[MAX_HEADERS + 3];
	size_t n = 0;
	for (size_t i = 0; i < o->nhdr; i++)
		h[n++] = o->hdr[i];
	/* a request body never starts with 0x1f (field 3, wire type 7) */
	if (it->len >= 2 && it->body[0] == 0x1f && it->body[1] == 0x8b)
		h[n++] = "Content-Encoding: gzip";
	ember__http_request rq = {.url = o->url, .headers = h, .nheaders = n, .body = it->body,
				  .len = it->len};
	ember__http_post(o->http, &rq, cancel, res);
}

/* ---- gathering a window (agent thread) ---- */

static void forget_dirty(otlp *o)
{
	for (size_t i = 0; i < tl_ndirty; i++)
		if (tl_dirty[i] == o) {
			tl_dirty[i] = tl_dirty[--tl_ndirty];
			return;
		}
}

static const char *find_attr(const ember__otlp_attr *a, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(a[i].key, key))
			return a[i].str;
	return NULL;
}

/* Remembers the process's executable and container while /proc has them,
 * and puts them back in det (room for 8) once it has not; for a process
 * /proc never showed, the executable is the window's main mapping.
 * Returns the count. */
static size_t remember_exe(otlp *o, ember__otlp_attr det[8], size_t nd)
{
	int32_t pid = o->wpid > 0 ? o->wpid : (int32_t)getpid();
	exe_memo *m = NULL;
	for (unsigned i = 0; i < NEXE; i++)
		if (o->exe[i].pid == pid)
			m = &o->exe[i];
	const char *path = find_attr(det, nd, "process.executable.path");
	const char *cid = find_attr(det, nd, "container.id");
	if (path) {
		if (!m) {
			m = &o->exe[o->nexe_next++ % NEXE];
			m->pid = pid;
		}
		snprintf(m->path, sizeof(m->path), "%s", path);
		snprintf(m->container, sizeof(m->container), "%s", cid ? cid : "");
		return nd;
	}
	/* a process gone before any window of it was sent (the tree engine
	 * reports a short one's only window at its end): the executable its
	 * profile names as its main mapping */
	const char *known = m ? m->path : o->wexe;
	if (!known[0] || nd + 3 > 8)
		return nd;
	const char *slash = strrchr(known, '/');
	det[nd++] = (ember__otlp_attr){"process.executable.path", known, 0};
	det[nd++] = (ember__otlp_attr){"process.executable.name", slash ? slash + 1 : known, 0};
	if (m && m->container[0] && !cid)
		det[nd++] = (ember__otlp_attr){"container.id", m->container, 0};
	return nd;
}

/* Encodes and queues the pending window (and, final, waits as the pipeline does). */
static int flush_pending(otlp *o)
{
	int rc = 0, final = o->final;
	ember__upload_item *it = NULL;
	if (o->enc && ember__otlp_enc_count(o->enc)) {
		ember__otlp_attr res[8 + 1 + 64];
		char buf[2 * PATH_MAX + 512];
		size_t n = 0;
		if (o->service_name)
			res[n++] = (ember__otlp_attr){"service.name", o->service_name, 0};
		ember__otlp_attr det[8];
		size_t nd = ember__otlp_detect_resource(o->wpid, det, buf, sizeof(buf));
		nd = remember_exe(o, det, nd);
		for (size_t i = 0; i < nd; i++) {
			int over = 0;
			for (size_t k = 0; k < o->nextra; k++)
				over |= !strcmp(o->extra[k].key, det[i].key);
			if (!over)
				res[n++] = det[i];
		}
		for (size_t k = 0; k < o->nextra && n < sizeof(res) / sizeof(res[0]); k++)
			res[n++] = o->extra[k];
		uint8_t *body = NULL, *gz = NULL;
		size_t len = 0, gzlen = 0;
		rc = ember__otlp_enc_finish(o->enc, res, n, "emberprof", EMBER_VERSION_STRING, &body,
					    &len);
		if (rc == 0 && o->gzip) {
			rc = ember__gzip(body, len, &gz, &gzlen);
			free(body);
			body = gz;
			len = gzlen;
		}
		if (rc == 0)
			it = ember__upload_item_new(EMBER_OTLP_KIND, o->seq, o->start_ns, o->end_ns, NULL,
						    body, len);
		else
			free(body);
		if (rc == 0 && !it)
			rc = EMBER_ERR_NOMEM;
		if (rc)
			ember__upload_logf(&o->log, EMBER_LOG_ERROR, "window %" PRIu32 " could not be "
					   "encoded: %s", o->seq, ember_last_error());
	}
	ember__otlp_enc_free(o->enc);
	o->enc = NULL;
	o->pending = 0;
	o->final = 0;
	if (it || final)
		ember__pipeline_submit(o->pipe, it, final, o->flush_timeout_ms, &o->log);
	return rc;
}

void ember__otlp_window_done(void)
{
	while (tl_ndirty) {
		otlp *o = tl_dirty[--tl_ndirty];
		flush_pending(o);
	}
	tl_profile = NULL;
}

static int mark_dirty(otlp *o)
{
	for (size_t i = 0; i < tl_ndirty; i++)
		if (tl_dirty[i] == o)
			return 0;
	if (tl_ndirty == MAX_DIRTY)
		return flush_pending(o); /* more reporters than we track: one request per report */
	tl_dirty[tl_ndirty++] = o;
	return 0;
}

/* ---- the reporter callbacks ---- */

static int otlp_bind(void *ud, const ember_agent_info *info)
{
	otlp *o = ud;
	if (o->bound)
		return ember__error(EMBER_ERR_INVALID, "this OTLP reporter is already attached to an "
				    "agent; create one reporter per agent");
	if (!o->service_name && !(o->service_name = strdup(info->app_name ? info->app_name : "")))
		return ember__error_oom("service name");
	o->log.fn = info->log_fn;
	o->log.ud = info->log_userdata;
	o->log.level = info->log_level;
	o->log.who = "otlp";
	o->bound = 1;
	return ember__pipeline_start(o->pipe, &o->log);
}

static int otlp_report(void *ud, const ember_report *r)
{
	otlp *o = ud;
	if (!r || r->format != EMBER_FORMAT_PPROF)
		return ember__error(EMBER_ERR_INVALID, "OTLP reporter: takes the agent's pprof reports "
				    "only");
	if (!o->bound) {
		ember_agent_info info;
		memset(&info, 0, sizeof(info));
		info.app_name = r->app_name;
		info.log_level = EMBER_LOG_WARN;
		int rc = otlp_bind(o, &info);
		if (rc)
			return rc;
	}
	const ember__profile *p = tl_profile;
	if (!p)
		return ember__error(EMBER_ERR_INVALID, "OTLP reporter: window %" PRIu32 " (%s) came "
				    "without the agent's profile; the OTLP reporter encodes from "
				    "the agent's profiles and cannot take reports made elsewhere",
				    r->seq, r->profile_type ? r->profile_type : "");
	int rc = 0;
	if (o->pending && (o->wpid != r->pid || o->seq != r->seq))
		rc = flush_pending(o);
	if (!o->pending) {
		o->pending = 1;
		o->wpid = r->pid;
		o->seq = r->seq;
		o->start_ns = r->start_ns;
		o->end_ns = r->end_ns;
		o->wexe[0] = '\0';
	}
	if (!o->wexe[0] && p->nmappings && p->mappings[0].file && p->mappings[0].file[0] == '/')
		snprintf(o->wexe, sizeof(o->wexe), "%s", p->mappings[0].file);
	if (r->final)
		o->final = 1;
	if (p->nsamples) {
		if (!o->enc && (rc = ember__otlp_enc_new(&o->enc)))
			return rc;
		if ((rc = ember__otlp_enc_add(o->enc, p, 1)))
			return rc;
	}
	return mark_dirty(o);
}

static void otlp_stats(void *ud, ember_stats *acc)
{
	otlp *o = ud;
	ember__pipeline_stats(o->pipe, acc);
}

static void free_lines(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void otlp_destroy(void *ud)
{
	otlp *o = ud;
	if (!o)
		return;
	if (o->pid != getpid())
		return; /* a fork child: a TLS close here would corrupt the parent's stream */
	forget_dirty(o);
	if (o->pending && o->pipe)
		flush_pending(o);
	ember__otlp_enc_free(o->enc);
	ember__pipeline_free(o->pipe); /* first: its thread uses the rest */
	ember__http_free(o->http);
	free(o->url);
	free_lines(o->hdr);
	free(o->service_name);
	for (size_t i = 0; i < o->nextra; i++) {
		free((char *)o->extra[i].key);
		free((char *)o->extra[i].str);
	}
	free(o->extra);
	free(o);
}

/* ---- creation ---- */

static int check_options(const ember__otlp_options *o, const char *what)
{
	int rc = ember__http_check_base_url(o->url, what);
	if (rc)
		return rc;
	if (o->nheaders > MAX_HEADERS)
		return ember__error(EMBER_ERR_INVALID, "%s: %zu headers; at most %d", what,
				    o->nheaders, MAX_HEADERS);
	static const char *const ours[] = {"Content-Type", "Content-Length", "Content-Encoding",
					   "Host", "Transfer-Encoding", "Expect"};
	for (size_t i = 0; i < o->nheaders; i++) {
		size_t nl;
		if ((rc = ember__http_check_header(o->headers[i], &nl))) {
			char why[EMBER_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", ember_last_error());
			return ember__error(rc, "%s: %s", what, why);
		}
		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			if (strlen(ours[k]) == nl && !strncasecmp(o->headers[i], ours[k], nl))
				return ember__error(EMBER_ERR_INVALID, "%s: header %s is set by "
						    "emberprof and cannot be given", what, ours[k]);
	}
	if (o->timeout_ms > 3600000)
		return ember__error(EMBER_ERR_INVALID, "%s: the timeout is limited to 1 h", what);
	if (o->queue_len > 4096)
		return ember__error(EMBER_ERR_INVALID, "%s: queue length %u is out of range 1..4096",
				    what, o->queue_len);
	return 0;
}

int ember__reporter_otlp(ember_reporter *out, const ember__otlp_options *opt)
{
	memset(out, 0, sizeof(*out));
	const char *what = opt->what ? opt->what : "OTLP endpoint";
	int rc = check_options(opt, what);
	if (rc)
		return rc;
	otlp *o = calloc(1, sizeof(*o));
	if (!o)
		return ember__error_oom("OTLP reporter");
	o->pid = getpid();
	o->gzip = opt->gzip != 0;
	o->flush_timeout_ms = opt->flush_timeout_ms ? opt->flush_timeout_ms : 5000;
	o->log.level = EMBER_LOG_WARN;
	o->log.who = "otlp";
	rc = EMBER_ERR_NOMEM;
	if (!(o->url = strdup(opt->url)) || !(o->hdr = calloc(opt->nheaders + 2, sizeof(*o->hdr))) ||
	    !(o->hdr[0] = strdup("Content-Type: application/x-protobuf")))
		goto oom;
	o->nhdr = 1;
	for (size_t i = 0; i < opt->nheaders; i++)
		if (!(o->hdr[o->nhdr++] = strdup(opt->headers[i])))
			goto oom;
	if (opt->service_name && !(o->service_name = strdup(opt->service_name)))
		goto oom;
	if (opt->nresource && !(o->extra = calloc(opt->nresource, sizeof(*o->extra))))
		goto oom;
	for (size_t i = 0; i < opt->nresource; i++) {
		const ember__otlp_attr *a = &opt->resource[i];
		o->extra[o->nextra].num = a->num;
		if (!(o->extra[o->nextra].key = strdup(a->key)) ||
		    (a->str && !(o->extra[o->nextra].str = strdup(a->str)))) {
			o->nextra++;
			goto oom;
		}
		o->nextra++;
	}
	ember__http_opts ho = {
		.connect_timeout_ms = opt->timeout_ms && opt->timeout_ms < 5000 ? opt->timeout_ms : 5000,
		.timeout_ms = opt->timeout_ms ? opt->timeout_ms : 10000,
		.user_agent = "emberprof/" EMBER_VERSION_STRING " (OTLP/HTTP, opentelemetry-proto "
			      EMBER_OTLP_PROTO_TAG ")",
	};
	if ((rc = ember__http_new(&o->http, &ho)))
		goto fail;
	ember__pipeline_opts po = {
		.name = "otlp",
		.queue_len = opt->queue_len ? opt->queue_len : 16,
		.spool_dir = opt->spool_dir && *opt->spool_dir ? opt->spool_dir : NULL,
		.spool_max_bytes = 64ull << 20,
		.send = otlp_send,
		.send_ctx = o,
	};
	if ((rc = ember__pipeline_new(&o->pipe, &po)))
		goto fail;
	out->name = "otlp";
	out->report = otlp_report;
	out->destroy = otlp_destroy;
	out->bind = otlp_bind;
	out->stats = otlp_stats;
	out->userdata = o;
	out->formats = EMBER_FORMAT_PPROF;
	return 0;
oom:
	rc = ember__error_oom("OTLP reporter");
fail:
	otlp_destroy(o);
	return rc;
}
