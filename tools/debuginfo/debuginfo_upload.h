/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo_upload.h - a client of Grafana Pyroscope's debug-info service,
 * as grafana/pyroscope defines it:
 *
 *   api/debuginfo/v1alpha1/debuginfo.proto   service debuginfo.v1alpha1.DebuginfoService
 *   pkg/debuginfo/store.go                   the server (Store)
 *   pkg/api/api.go (RegisterDebugInfo)        how it is exposed over HTTP
 *   cmd/profilecli/debuginfo.go              Pyroscope's own client
 *
 * One file, by its GNU build ID, in three HTTP requests:
 *  1. ShouldInitiateUpload, a Connect unary call: POST
 *     {url}/debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload,
 *     Content-Type application/proto, a ShouldInitiateUploadRequest
 *     {file: FileMetadata{gnu_build_id, name, type}}; the answer
 *     {should_initiate_upload, reason}. A "yes" makes the server record an
 *     upload in progress; a "no" says why (already there, an upload in
 *     progress, uploads disabled).
 *  2. The bytes: POST {url}/debuginfo.v1alpha1.DebuginfoService/Upload/<build id>,
 *     the raw file as the body (not a Connect call: a plain handler behind
 *     the same auth); 200, or 412 without a pending upload.
 *  3. UploadFinished, a Connect unary call with UploadFinishedRequest
 *     {gnu_build_id}: the server checks the stored object and marks it
 *     uploaded.
 * Connect errors are non-200 answers with a JSON {"code","message"} body.
 *
 * Every request has a bounded time (connect and total timeouts; the calls
 * also send Connect-Timeout-Ms). Nothing is retried: a failed file is
 * reported, and running again skips what the server already has. One
 * upload at a time per client, from one thread. Not async-signal-safe.
 */
#ifndef EMBER_TOOLS_DEBUGINFO_UPLOAD_H
#define EMBER_TOOLS_DEBUGINFO_UPLOAD_H

#include <stddef.h>

#include "debuginfo/debuginfo_file.h"

typedef struct ember__dbgup ember__dbgup;

typedef struct ember__dbgup_opts {
	const char *url;               /* base URL, checked (http/https, no credentials) */
	const char *const *headers;    /* "Name: value" lines sent with every request
					  (auth, tenant, extras), checked by the caller */
	size_t nheaders;
	const char *ca_file;           /* NULL: the system's */
	int insecure;
	unsigned connect_timeout_ms;   /* 0: 5 s */
	unsigned timeout_ms;           /* each call; 0: 30 s */
	unsigned upload_timeout_ms;    /* the upload of the bytes; 0: 10 min */
} ember__dbgup_opts;

/* Makes a client (loads libcurl). 0, or a negative ember_err with a message. */
int ember__dbgup_new(ember__dbgup **out, const ember__dbgup_opts *o);

/* Frees a client. NULL is fine. */
void ember__dbgup_free(ember__dbgup *u);

/* What became of one file. */
typedef enum ember__dbgup_outcome {
	EMBER__DBGUP_UPLOADED = 1, /* sent and marked finished */
	EMBER__DBGUP_PRESENT = 2,  /* the server has it already: nothing sent */
} ember__dbgup_outcome;

/*
 * Uploads one file under `name` (FileMetadata.name: the file's base name)
 * as the protocol above says. Returns 0 with *outcome set and the
 * server's reason (the "no" of step 1, else "") in reason[cap], or a
 * negative ember_err with a message saying which step failed and the
 * server's answer (HTTP status, Connect code and message) or curl's
 * error; the caller adds the file's name. EMBER_ERR_IO for the network
 * and the server's refusals, EMBER_ERR_FORMAT for an answer that is not
 * the proto's message.
 */
int ember__dbgup_file(ember__dbgup *u, const char *name, const ember__dbgfile *f,
		      ember__dbgup_outcome *outcome, char *reason, size_t cap);

/*
 * Whether the last call of the service got no answer at all (connection
 * refused, unreachable, timed out): the caller stops there rather than
 * wait as long again for each file left.
 */
int ember__dbgup_unreachable(const ember__dbgup *u);

/* ---- the messages, exposed for the tests ---- */

/* Encodes a ShouldInitiateUploadRequest into a malloc'd buffer. 0 or EMBER_ERR_NOMEM. */
int ember__dbgup_encode_should(const char *build_id, const char *name, int type,
			       unsigned char **out, size_t *len);
/* Encodes an UploadFinishedRequest. 0 or EMBER_ERR_NOMEM. */
int ember__dbgup_encode_finished(const char *build_id, unsigned char **out, size_t *len);
/* Decodes a ShouldInitiateUploadResponse: *should and the reason (truncated to cap). */
int ember__dbgup_decode_should(const void *data, size_t len, int *should, char *reason,
			       size_t cap);

/* The server's reasons (store.go), as it words them. */
#define EMBER__DBGUP_REASON_EXISTS \
	"Debuginfo already exists and is not marked as invalid, therefore no new upload is needed."
#define EMBER__DBGUP_REASON_IN_PROGRESS \
	"A previous upload is still in-progress and not stale yet (only stale uploads can be retried)."
#define EMBER__DBGUP_REASON_DISABLED "DebugInfo upload disabled"

#endif
