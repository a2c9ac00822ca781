/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h - HTTP POST over libcurl for the network reporters, with the
 * outcome already classified for the upload pipeline (ok / retryable /
 * permanent), plus the small HTTP helpers they share: URL checks,
 * Retry-After, error bodies, header validation, base64.
 *
 * libcurl is used through its easy interface: one handle per reporter,
 * reused for every request (keeping the connection alive) and only ever
 * used by one thread at a time. It is not linked but loaded (dlopen of
 * libcurl.so.4) by ember__http_global_init(), the first time a network
 * reporter is created, so programs profiled without one never load it.
 * That call also runs the process-wide curl_global_init() once, and it is
 * never undone: emberprof does not call curl_global_cleanup(), so an
 * application that uses libcurl itself keeps working (libcurl counts
 * init/cleanup pairs, and 7.84+ makes the init thread-safe).
 *
 * Nothing here is async-signal-safe.
 */
#ifndef EMBER_UPLOAD_HTTP_H
#define EMBER_UPLOAD_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "upload/pipeline.h"

/*
 * Loads libcurl and runs curl_global_init(CURL_GLOBAL_DEFAULT), once per
 * process. Returns 0, or EMBER_ERR_UNSUPPORTED with a message if libcurl
 * cannot be loaded or initialized. Every other function here calls it.
 */
int ember__http_global_init(void);

typedef struct ember__http ember__http;

typedef struct ember__http_opts {
	const char *ca_file;         /* NULL: the system's CA store */
	int insecure;                /* skip certificate and host name checks */
	unsigned connect_timeout_ms;
	unsigned timeout_ms;
	const char *user_agent;      /* copied */
	int no_proxy;                /* ignore http_proxy & co (link-local metadata services) */
} ember__http_opts;

/* Makes a handle. 0, or a negative ember_err with a message. */
int ember__http_new(ember__http **out, const ember__http_opts *o);

/* Frees a handle. NULL is fine. */
void ember__http_free(ember__http *h);

typedef struct ember__http_request {
	const char *url;
	const char *const *headers; /* "Name: value" lines, sent as given */
	size_t nheaders;
	const void *body;
	size_t len;
} ember__http_request;

/*
 * POSTs the request and classifies the outcome into *res:
 *   2xx                                   ok
 *   429, 408, 5xx                         retryable (Retry-After honoured)
 *   other statuses                        permanent, with the server's message
 *                                         (Connect JSON "code"/"message", or
 *                                         the body's text)
 *   connection errors, timeouts, TLS      retryable, with curl's message
 * A nonzero *cancel aborts the transfer within about a second (retryable).
 */
void ember__http_post(ember__http *h, const ember__http_request *rq, const _Atomic int *cancel,
		      ember__send_result *res);

/*
 * A request with any method, optionally signed with AWS Signature V4 by
 * libcurl (CURLOPT_AWS_SIGV4 = aws_sigv4, e.g. "aws:amz:us-east-1:s3",
 * CURLOPT_USERPWD = "<access key>:<secret>"), keeping up to resp_cap-1
 * bytes of the response body in `resp` (NUL-terminated; NULL: the handle's
 * own 4 KiB buffer, as for POSTs). The outcome is classified as for
 * ember__http_post(); the caller may reclassify from the status and body.
 * Retry-After is honoured as there.
 */
typedef struct ember__http_call {
	const char *method;         /* "GET", "PUT", "POST" */
	const char *url;
	const char *const *headers; /* "Name: value" lines */
	size_t nheaders;
	const void *body;           /* PUT/POST */
	size_t len;
	const char *aws_sigv4;      /* NULL: unsigned */
	const char *userpwd;        /* with aws_sigv4; wiped from the handle after the call */
	char *resp;                 /* caller's buffer, or NULL */
	size_t resp_cap;
	/* out */
	size_t resp_len;            /* bytes kept */
	int resp_truncated;         /* the body was longer than resp_cap-1 */
	int connected;              /* a connection was made (or reused) */
} ember__http_call;

void ember__http_do(ember__http *h, ember__http_call *call, const _Atomic int *cancel,
		    ember__send_result *res);

/*
 * A Retry-After value: delay-seconds or an HTTP-date, relative to `now`.
 * Returns milliseconds (0 for a date in the past) or -1 if unparsable.
 */
int64_t ember__http_retry_after_ms(const char *value, time_t now);

/*
 * Describes an error response body in out (cap bytes): "code: message"
 * for a Connect/JSON error body {"code":"...","message":"..."}, else the
 * body's first line of text with control characters replaced; "" if empty.
 */
void ember__http_error_text(const char *body, size_t len, char *out, size_t cap);

/*
 * Checks a base URL for an upload endpoint: http or https, a host, no
 * user:password (credentials belong in the options, not in logs), no
 * query or fragment. Returns 0 or EMBER_ERR_INVALID with a message naming
 * the problem; `what` names the setting in the message.
 */
int ember__http_check_base_url(const char *url, const char *what);

/*
 * Checks one "Name: value" header line: a token name, no CR/LF or other
 * control characters. Returns 0 or EMBER_ERR_INVALID with a message.
 * *name_len receives the length of the name.
 */
int ember__http_check_header(const char *line, size_t *name_len);

/* Base64 (RFC 4648, padded) of in[0..n) into a malloc'd string; NULL on OOM. */
char *ember__base64(const void *in, size_t n);

#endif
