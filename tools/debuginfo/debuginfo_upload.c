/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo_upload.c - the debug-info service's client (see
 * debuginfo_upload.h): its three messages encoded and decoded by hand on
 * encode/protobuf.h, and the three requests through upload/http.h.
 */
#include "debuginfo/debuginfo_upload.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "encode/protobuf.h"
#include "upload/http.h"
#include "util/error.h"

#define SERVICE "/debuginfo.v1alpha1.DebuginfoService/"
#define RESP_CAP 4096

struct ember__dbgup {
	ember__http *rpc;    /* the Connect calls: timeout_ms */
	ember__http *bytes;  /* the upload: upload_timeout_ms */
	char *base;          /* the URL without trailing '/' */
	char **call_hdr;     /* Connect headers + the caller's, NULL-terminated */
	size_t ncall_hdr;
	char **up_hdr;       /* the upload's */
	size_t nup_hdr;
	int unreachable;     /* the last Connect call got no answer */
};

/* ---- messages (api/debuginfo/v1alpha1/debuginfo.proto) ---- */

static int take(ember__pbuf *b, unsigned char **out, size_t *len)
{
	if (ember__pb_failed(b)) {
		ember__pb_free(b);
		return ember__error_oom("debug-info request");
	}
	*out = b->data;
	*len = b->len;
	return 0;
}

int ember__dbgup_encode_should(const char *build_id, const char *name, int type,
			       unsigned char **out, size_t *len)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	ember__pb_reserve(&b, 1); /* an empty message still has a buffer */
	size_t m = ember__pb_begin(&b, 1);            /* file: FileMetadata */
	ember__pb_bytes(&b, 1, build_id, strlen(build_id)); /* gnu_build_id */
	if (name && *name)
		ember__pb_bytes(&b, 4, name, strlen(name));   /* name */
	ember__pb_uint64_opt(&b, 5, (uint64_t)type);        /* type */
	ember__pb_end(&b, m);
	return take(&b, out, len);
}

int ember__dbgup_encode_finished(const char *build_id, unsigned char **out, size_t *len)
{
	ember__pbuf b = EMBER_PBUF_INIT;
	ember__pb_reserve(&b, 1);
	ember__pb_bytes(&b, 1, build_id, strlen(build_id)); /* gnu_build_id */
	return take(&b, out, len);
}

int ember__dbgup_decode_should(const void *data, size_t len, int *should, char *reason,
			       size_t cap)
{
	ember__pb_reader r;
	ember__pb_field f;
	int rc;
	*should = 0;
	if (cap)
		reason[0] = '\0';
	ember__pb_reader_init(&r, data, len);
	while ((rc = ember__pb_next(&r, &f)) == 1) {
		if (f.num == 1 && f.wire == EMBER_PB_VARINT) {
			*should = f.u != 0;
		} else if (f.num == 2 && f.wire == EMBER_PB_LEN && cap) {
			size_t n = f.len < cap - 1 ? f.len : cap - 1;
			memcpy(reason, f.data, n);
			reason[n] = '\0';
		} else if (f.num == 1 || f.num == 2) {
			return ember__error(EMBER_ERR_FORMAT, "field %" PRIu32 " has wire type %u",
					    f.num, f.wire);
		} /* else: a field of a newer server, skipped as protobuf does */
	}
	return rc;
}

/* ---- the client ---- */

static void free_lines(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* fixed[] then the caller's lines, copied, NULL-terminated. */
static char **header_lines(const char *const *fixed, size_t nfixed, const ember__dbgup_opts *o,
			   size_t *count)
{
	if (o->nheaders > 4096)
		return NULL; /* far more than any command line gives */
	char **v = calloc(nfixed + o->nheaders + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < nfixed + o->nheaders; i++)
		if (!(v[i] = strdup(i < nfixed ? fixed[i] : o->headers[i - nfixed]))) {
			free_lines(v);
			return NULL;
		}
	*count = nfixed + o->nheaders;
	return v;
}

int ember__dbgup_new(ember__dbgup **out, const ember__dbgup_opts *o)
{
	*out = NULL;
	int rc = ember__http_check_base_url(o->url, "Pyroscope server URL");
	if (rc)
		return rc;
	ember__dbgup *u = calloc(1, sizeof(*u));
	if (!u)
		return ember__error_oom("debug-info client");
	unsigned call_ms = o->timeout_ms ? o->timeout_ms : 30000;
	char timeout_hdr[48];
	snprintf(timeout_hdr, sizeof(timeout_hdr), "Connect-Timeout-Ms: %u", call_ms);
	const char *call_fixed[] = {"Content-Type: application/proto", "Connect-Protocol-Version: 1",
				    timeout_hdr};
	const char *up_fixed[] = {"Content-Type: application/octet-stream"};
	size_t n = strlen(o->url);
	while (n > 0 && o->url[n - 1] == '/')
		n--;
	if (!(u->base = strndup(o->url, n)) ||
	    !(u->call_hdr = header_lines(call_fixed, 3, o, &u->ncall_hdr)) ||
	    !(u->up_hdr = header_lines(up_fixed, 1, o, &u->nup_hdr))) {
		ember__dbgup_free(u);
		return ember__error_oom("debug-info client");
	}
	ember__http_opts ho = {
		.ca_file = o->ca_file,
		.insecure = o->insecure,
		.connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 5000,
		.timeout_ms = call_ms,
		.user_agent = "emberprof/" EMBER_VERSION_STRING,
	};
	if ((rc = ember__http_new(&u->rpc, &ho))) {
		ember__dbgup_free(u);
		return rc;
	}
	ho.timeout_ms = o->upload_timeout_ms ? o->upload_timeout_ms : 600000;
	if ((rc = ember__http_new(&u->bytes, &ho))) {
		ember__dbgup_free(u);
		return rc;
	}
	*out = u;
	return 0;
}

void ember__dbgup_free(ember__dbgup *u)
{
	if (!u)
		return;
	ember__http_free(u->rpc);
	ember__http_free(u->bytes);
	free(u->base);
	free_lines(u->call_hdr);
	free_lines(u->up_hdr);
	free(u);
}

/*
 * POSTs body to {base}{SERVICE}{what} with the Connect headers (or the
 * upload's), keeping the answer in resp[RESP_CAP]. 0 on a 2xx answer
 * (*resp_len set), else EMBER_ERR_IO with "<step>: <why>".
 */
static int post(ember__dbgup *u, int upload, const char *what, const void *body, size_t len,
		char *resp, size_t *resp_len)
{
	char *url = NULL;
	if (asprintf(&url, "%s" SERVICE "%s", u->base, what) < 0)
		return ember__error_oom("debug-info URL");
	ember__http_call call = {
		.method = "POST",
		.url = url,
		.headers = (const char *const *)(upload ? u->up_hdr : u->call_hdr),
		.nheaders = upload ? u->nup_hdr : u->ncall_hdr,
		.body = body,
		.len = len,
		.resp = resp,
		.resp_cap = RESP_CAP,
	};
	ember__send_result res;
	ember__http_do(upload ? u->bytes : u->rpc, &call, NULL, &res);
	free(url);
	u->unreachable = 0;
	if (res.outcome == EMBER__SEND_OK) {
		*resp_len = call.resp_len;
		return 0;
	}
	const char *step = upload ? "upload of the bytes" : what;
	u->unreachable = !upload && !res.http_status;
	if (!res.http_status)
		return ember__error(EMBER_ERR_IO, "%s: no answer from the server: %s%s", step,
				    res.message, res.server_down ? " (connection refused: is the "
				    "server running, is the URL right?)" : "");
	return ember__error(EMBER_ERR_IO, "%s: the server answered %s", step, res.message);
}

int ember__dbgup_unreachable(const ember__dbgup *u)
{
	return u->unreachable;
}

int ember__dbgup_file(ember__dbgup *u, const char *name, const ember__dbgfile *f,
		      ember__dbgup_outcome *outcome, char *reason, size_t cap)
{
	char resp[RESP_CAP];
	size_t rlen = 0;
	unsigned char *msg;
	size_t len;
	if (cap)
		reason[0] = '\0';
	int rc = ember__dbgup_encode_should(f->build_id, name, f->type, &msg, &len);
	if (rc)
		return rc;
	rc = post(u, 0, "ShouldInitiateUpload", msg, len, resp, &rlen);
	free(msg);
	if (rc)
		return rc;
	int should;
	char why[512];
	if ((rc = ember__dbgup_decode_should(resp, rlen, &should, why, sizeof(why)))) {
		char e[EMBER_ERROR_MAX];
		snprintf(e, sizeof(e), "%s", ember_last_error());
		return ember__error(EMBER_ERR_FORMAT, "ShouldInitiateUpload: the answer is not a "
				    "ShouldInitiateUploadResponse (%s): is the URL a Pyroscope "
				    "server?", e);
	}
	if (!should) {
		if (!strcmp(why, EMBER__DBGUP_REASON_DISABLED))
			return ember__error(EMBER_ERR_IO, "the server has debug-info uploads disabled "
					    "(\"%s\"; Pyroscope enables them with v2 storage)", why);
		if (!strcmp(why, EMBER__DBGUP_REASON_IN_PROGRESS))
			return ember__error(EMBER_ERR_IO, "the server has an upload of this build ID "
					    "in progress, not finished (\"%s\"): run again once it "
					    "is done, or after the server's "
					    "debug-info.upload-stale-period (5 min by default) and "
					    "2 min", why);
		if (!why[0])
			return ember__error(EMBER_ERR_FORMAT, "ShouldInitiateUpload: the server said "
					    "no without a reason (Pyroscope always gives one): is "
					    "the URL a Pyroscope server?");
		snprintf(reason, cap, "%s", why);
		*outcome = EMBER__DBGUP_PRESENT;
		return 0;
	}
	char path[16 + sizeof(f->build_id)];
	snprintf(path, sizeof(path), "Upload/%s", f->build_id);
	if ((rc = post(u, 1, path, f->data, f->size, resp, &rlen))) {
		char e[EMBER_ERROR_MAX];
		snprintf(e, sizeof(e), "%s", ember_last_error());
		return ember__error(rc, "%s (the server now has an upload of this build ID in "
				    "progress: it takes a new one after its "
				    "debug-info.upload-stale-period, 5 min by default, and 2 min)", e);
	}
	if ((rc = ember__dbgup_encode_finished(f->build_id, &msg, &len)))
		return rc;
	rc = post(u, 0, "UploadFinished", msg, len, resp, &rlen);
	free(msg);
	if (rc)
		return rc;
	*outcome = EMBER__DBGUP_UPLOADED;
	return 0;
}
