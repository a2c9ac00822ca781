/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c - libcurl POSTs for the network reporters, classified for the
 * upload pipeline, and the HTTP helpers they share (see http.h).
 *
 * libcurl is loaded with dlopen() the first time a network reporter is
 * created, not linked: libemberprof.so is preloaded into arbitrary
 * programs, and libcurl brings some thirty libraries (TLS, Kerberos,
 * LDAP, ...) whose constructors and destructors would then run in every
 * profiled program, even one that sends nothing anywhere (one of them,
 * p11-kit, deadlocks in its exit-time destructor under some programs).
 * The functions used are looked up once into a table; a program that
 * already uses libcurl.so.4 shares the same library and global state.
 *
 * The handle is configured once: no signals (CURLOPT_NOSIGNAL, as we run
 * inside someone else's process and must not touch SIGALRM/SIGPIPE
 * dispositions), http and https only, no redirects, connect and total
 * timeouts, certificate and host name verification unless insecure, a
 * progress callback that aborts when the pipeline asks.
 *
 * No getenv on the upload thread: libcurl reads the proxy variables on
 * every transfer unless told the proxy, and glibc's getenv is not safe
 * while a program thread calls setenv (the environ array it walks may be
 * moved and freed). So the handle takes, when it is made, what curl would
 * read - http_proxy (http URLs; never HTTP_PROXY, as curl), https_proxy or
 * HTTPS_PROXY (https URLs), all_proxy or ALL_PROXY, no_proxy or NO_PROXY -
 * from ember__getenv() (the start-up copy on our threads, envsnap.h) and
 * sets CURLOPT_PROXY and CURLOPT_NOPROXY on every request, an empty string
 * where unset (which keeps libcurl from reading the variables). Without a
 * CA file of our own, SSL_CERT_FILE and SSL_CERT_DIR (which OpenSSL would
 * only read in its default-paths fallback) become CURLOPT_CAINFO and
 * CURLOPT_CAPATH. libcurl and its TLS library are initialized (their
 * configuration files and variables read) by ember__http_global_init(),
 * on the thread that makes the first network reporter: the program's,
 * before the agent starts, except in an image whose agent starts lazily
 * (fork_child.c), where that one-time load runs on the helper thread.
 */
#include "upload/http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/socket.h>

#include "util/envsnap.h"
#include "util/error.h"
#include "util/ownfd.h"
#include "util/redact.h"
#include "util/forkguard.h"

#define BODY_KEEP 4096 /* bytes of a response body kept for messages */

struct ember__http {
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
	/* per request */
	char body[BODY_KEEP];
	size_t body_len;
	char *rbuf;             /* where the response body goes: body or the caller's */
	size_t rcap;
	int rtrunc;
	char retry_after[128];
	const _Atomic int *cancel;
	/* from the environment when the handle was made (above); NULL: unset */
	int ignore_proxy;
	char *proxy_http, *proxy_https, *proxy_all, *noproxy;
};

/* A copy of the first of two variables set and not empty (ember__getenv;
 * libcurl skips empty ones too), or NULL. *oom is set if the copy cannot
 * be made. */
static char *env_dup(const char *a, const char *b, int *oom)
{
	const char *v = ember__getenv(a);
	if ((!v || !*v) && b)
		v = ember__getenv(b);
	if (!v || !*v)
		return NULL;
	char *s = strdup(v);
	if (!s)
		*oom = 1;
	return s;
}

/* ---- loading libcurl ---- */

static struct curl_api {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode e);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	time_t (*getdate)(const char *p, const time_t *unused);
	CURLU *(*url)(void);
	CURLUcode (*url_set)(CURLU *u, CURLUPart what, const char *part, unsigned int flags);
	CURLUcode (*url_get)(const CURLU *u, CURLUPart what, char **part, unsigned int flags);
	void (*url_cleanup)(CURLU *u);
	const char *(*url_strerror)(CURLUcode e);
	void (*free)(void *p);
} C;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[EMBER_ERROR_MAX];

static void load_curl_guarded(void);

/* libcurl's and its TLS library's initialization run here (forkguard.h). */
static void load_curl(void)
{
	ember__forkguard_enter();
	load_curl_guarded();
	ember__forkguard_leave();
}

static void load_curl_guarded(void)
{
	static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};
	void *lib = NULL;
	for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		snprintf(load_error, sizeof(load_error), "network reporters need libcurl, which "
			 "cannot be loaded (%s); install libcurl4", why ? why : "not found");
		return;
	}
	struct { void **slot; const char *name; } syms[] = {
		{(void **)&C.global_init, "curl_global_init"},
		{(void **)&C.easy_init, "curl_easy_init"},
		{(void **)&C.easy_setopt, "curl_easy_setopt"},
		{(void **)&C.easy_perform, "curl_easy_perform"},
		{(void **)&C.easy_getinfo, "curl_easy_getinfo"},
		{(void **)&C.easy_cleanup, "curl_easy_cleanup"},
		{(void **)&C.easy_strerror, "curl_easy_strerror"},
		{(void **)&C.slist_append, "curl_slist_append"},
		{(void **)&C.slist_free_all, "curl_slist_free_all"},
		{(void **)&C.getdate, "curl_getdate"},
		{(void **)&C.url, "curl_url"},
		{(void **)&C.url_set, "curl_url_set"},
		{(void **)&C.url_get, "curl_url_get"},
		{(void **)&C.url_cleanup, "curl_url_cleanup"},
		{(void **)&C.url_strerror, "curl_url_strerror"},
		{(void **)&C.free, "curl_free"},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(lib, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(load_error, sizeof(load_error), "the libcurl found lacks %s (7.80 or "
				 "newer is needed)", syms[i].name);
			C.global_init = NULL;
			return; /* the library stays loaded: unloading is never safe */
		}
	}
	/* Once per process, never undone (see http.h). */
	CURLcode rc = C.global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		snprintf(load_error, sizeof(load_error), "libcurl initialization failed: %s",
			 C.easy_strerror(rc));
		C.global_init = NULL;
	}
}

int ember__http_global_init(void)
{
	pthread_once(&load_once, load_curl);
	if (!C.global_init)
		return ember__error(EMBER_ERR_UNSUPPORTED, "%s", load_error);
	return 0;
}

/* ---- callbacks ---- */

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	ember__http *h = ud;
	size_t len = size * n, room = h->rcap - 1 - h->body_len;
	size_t take = len < room ? len : room;
	memcpy(h->rbuf + h->body_len, data, take);
	h->body_len += take;
	if (take < len)
		h->rtrunc = 1;
	return len; /* keep reading (and discarding) the rest */
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	ember__http *h = ud;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len > sizeof(name) - 1 && !strncasecmp(data, name, sizeof(name) - 1)) {
		size_t v = sizeof(name) - 1;
		while (v < len && (data[v] == ' ' || data[v] == '\t'))
			v++;
		size_t e = len;
		while (e > v && (data[e - 1] == '\r' || data[e - 1] == '\n' || data[e - 1] == ' '))
			e--;
		size_t k = e - v < sizeof(h->retry_after) - 1 ? e - v : sizeof(h->retry_after) - 1;
		memcpy(h->retry_after, data + v, k);
		h->retry_after[k] = '\0';
	}
	return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	ember__http *h = ud;
	return h->cancel && atomic_load(h->cancel) ? 1 : 0;
}

/*
 * The connection's socket, made here rather than by libcurl: closed on
 * exec and at 256 or above (util/ownfd.h), out of the program's way for
 * as long as the connection is kept alive (from one upload to the next):
 * libcurl's own was a low number without FD_CLOEXEC, passed to every
 * command the program ran, and a daemon that closed and reused it would
 * have had our requests written into its file. Its wake-up socket pair is
 * the library's (preload/fd_hook.c).
 */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)ud;
	(void)purpose;
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	return fd < 0 ? CURL_SOCKET_BAD : ember__ownfd_raise(fd);
}

/* ---- handle ---- */

int ember__http_new(ember__http **out, const ember__http_opts *o)
{
	*out = NULL;
	int rc = ember__http_global_init();
	if (rc)
		return rc;
	ember__http *h = calloc(1, sizeof(*h));
	if (!h)
		return ember__error_oom("HTTP client");
	h->curl = C.easy_init();
	if (!h->curl) {
		free(h);
		return ember__error(EMBER_ERR_NOMEM, "curl_easy_init failed");
	}
	CURL *c = h->curl;
	CURLcode e = CURLE_OK;
#define SET(opt, val) \
	if (e == CURLE_OK) \
	e = C.easy_setopt(c, opt, val)
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
	SET(CURLOPT_SSL_VERIFYPEER, o->insecure ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, o->insecure ? 0L : 2L);
	int oom = 0;
	if (o->ca_file) {
		SET(CURLOPT_CAINFO, o->ca_file);
	} else if (!o->insecure) {
		const char *f = ember__getenv("SSL_CERT_FILE"), *d = ember__getenv("SSL_CERT_DIR");
		if (f && *f)
			SET(CURLOPT_CAINFO, f);
		if (d && *d)
			SET(CURLOPT_CAPATH, d);
	}
	h->ignore_proxy = o->no_proxy;
	if (!o->no_proxy) {
		h->proxy_http = env_dup("http_proxy", NULL, &oom);
		h->proxy_https = env_dup("https_proxy", "HTTPS_PROXY", &oom);
		h->proxy_all = env_dup("all_proxy", "ALL_PROXY", &oom);
		h->noproxy = env_dup("no_proxy", "NO_PROXY", &oom);
	}
	if (oom) {
		ember__http_free(h);
		return ember__error_oom("HTTP proxy settings");
	}
	if (o->user_agent)
		SET(CURLOPT_USERAGENT, o->user_agent);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_NOPROXY, o->no_proxy ? "*" : h->noproxy ? h->noproxy : "");
	SET(CURLOPT_ERRORBUFFER, h->errbuf);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, h);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, h);
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_XFERINFOFUNCTION, on_progress);
	SET(CURLOPT_XFERINFODATA, h);
#undef SET
	/* Belt and braces (the URL was checked, redirects are off); an older
	 * libcurl without this option is fine too. */
	(void)C.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (e != CURLE_OK) {
		ember__http_free(h);
		return ember__error(EMBER_ERR_INVALID, "cannot configure libcurl: %s",
				    C.easy_strerror(e));
	}
	*out = h;
	return 0;
}

void ember__http_free(ember__http *h)
{
	if (!h)
		return;
	if (h->curl)
		C.easy_cleanup(h->curl);
	free(h->proxy_http);
	free(h->proxy_https);
	free(h->proxy_all);
	free(h->noproxy);
	free(h);
}

/* ---- one request ---- */

/* The proxy for this URL as libcurl would pick it from the environment
 * (the copy taken by ember__http_new): "" for none. */
static const char *proxy_for(const ember__http *h, const char *url)
{
	if (h->ignore_proxy)
		return "";
	const char *p = !strncasecmp(url, "https:", 6) ? h->proxy_https
			: !strncasecmp(url, "http:", 5) ? h->proxy_http : NULL;
	if (!p)
		p = h->proxy_all;
	return p ? p : "";
}

static int curl_error_is_permanent(CURLcode e)
{
	return e == CURLE_URL_MALFORMAT || e == CURLE_UNSUPPORTED_PROTOCOL ||
	       e == CURLE_NOT_BUILT_IN || e == CURLE_BAD_FUNCTION_ARGUMENT;
}

/*
 * A connection that failed at once: refused (nothing listens on the port),
 * or no route to the host or its network. The server is down, not slow:
 * waiting for it at exit would only delay the program. A connect timeout,
 * a name that does not resolve or a proxy's failure is not this.
 */
static int connection_refused(ember__http *h, CURLcode e)
{
	if (e != CURLE_COULDNT_CONNECT)
		return 0;
	long os_errno = 0;
	C.easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &os_errno);
	return os_errno == ECONNREFUSED || os_errno == ENETUNREACH || os_errno == EHOSTUNREACH;
}

static void classify_status(ember__http *h, long status, ember__send_result *res)
{
	res->http_status = (int)status;
	if (status >= 200 && status < 300) {
		res->outcome = EMBER__SEND_OK;
		snprintf(res->message, sizeof(res->message), "HTTP %ld", status);
		return;
	}
	char text[300];
	ember__http_error_text(h->rbuf, h->body_len, text, sizeof(text));
	int retry = status == 429 || status == 408 || status >= 500;
	res->outcome = retry ? EMBER__SEND_RETRY : EMBER__SEND_PERMANENT;
	if (retry && h->retry_after[0])
		res->retry_after_ms = ember__http_retry_after_ms(h->retry_after, time(NULL));
	snprintf(res->message, sizeof(res->message), "HTTP %ld%s%s%s", status, text[0] ? ": " : "",
		 text, status >= 300 && status < 400 ? " (redirects are not followed: fix the URL)"
		 : status == 401 || status == 403 ? " (check the credentials and tenant)" : "");
}

void ember__http_do(ember__http *h, ember__http_call *call, const _Atomic int *cancel,
		    ember__send_result *res)
{
	res->outcome = EMBER__SEND_RETRY;
	res->retry_after_ms = -1;
	res->http_status = 0;
	res->server_down = 0;
	res->message[0] = '\0';
	h->rbuf = call->resp && call->resp_cap > 1 ? call->resp : h->body;
	h->rcap = call->resp && call->resp_cap > 1 ? call->resp_cap : sizeof(h->body);
	h->body_len = 0;
	h->rtrunc = 0;
	h->rbuf[0] = '\0';
	h->retry_after[0] = '\0';
	h->errbuf[0] = '\0';
	h->cancel = cancel;
	call->resp_len = 0;
	call->resp_truncated = 0;

	struct curl_slist *list = NULL, *t;
	/* No "Expect: 100-continue" round trip for larger bodies. Not for
	 * SigV4: libcurl (7.88) would sign the removed header as an empty
	 * one, and the server would find a signed header missing. */
	int oom = !call->aws_sigv4 && !(list = C.slist_append(NULL, "Expect:"));
	for (size_t i = 0; !oom && i < call->nheaders; i++) {
		if (!(t = C.slist_append(list, call->headers[i])))
			oom = 1;
		else
			list = t;
	}
	if (oom) {
		C.slist_free_all(list);
		snprintf(res->message, sizeof(res->message), "out of memory building the request");
		return;
	}
	CURL *c = h->curl;
	int has_body = strcmp(call->method, "GET") != 0;
	/* The options libcurl copies fail when that copy cannot be allocated,
	 * and the request would go out without them: without its URL, libcurl
	 * says "No URL set", taken for a permanent refusal that dropped the
	 * window (found by tests/faults). Then nothing is sent: retried. */
	int unset = C.easy_setopt(c, CURLOPT_URL, call->url) != CURLE_OK;
	/* Never unset: libcurl would read the variables itself (above). */
	unset |= C.easy_setopt(c, CURLOPT_PROXY, proxy_for(h, call->url)) != CURLE_OK;
	if (has_body) {
		/* A body in memory (POSTFIELDS) also lets libcurl's SigV4 hash the
		 * payload instead of signing it as UNSIGNED-PAYLOAD. */
		C.easy_setopt(c, CURLOPT_POST, 1L);
		C.easy_setopt(c, CURLOPT_POSTFIELDS, call->body ? call->body : "");
		C.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->len);
		unset |= C.easy_setopt(c, CURLOPT_CUSTOMREQUEST,
				       strcmp(call->method, "POST") ? call->method : NULL) != CURLE_OK;
	} else {
		C.easy_setopt(c, CURLOPT_HTTPGET, 1L);
		C.easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
	}
	C.easy_setopt(c, CURLOPT_HTTPHEADER, list);
	if (call->aws_sigv4) {
		unset |= C.easy_setopt(c, CURLOPT_AWS_SIGV4, call->aws_sigv4) != CURLE_OK;
		unset |= C.easy_setopt(c, CURLOPT_USERPWD, call->userpwd) != CURLE_OK;
	}
	CURLcode e = unset ? CURLE_OUT_OF_MEMORY : C.easy_perform(c);
	C.easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	if (call->aws_sigv4) {
		C.easy_setopt(c, CURLOPT_AWS_SIGV4, NULL);
		C.easy_setopt(c, CURLOPT_USERPWD, NULL);
		C.easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	}
	C.easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
	C.slist_free_all(list);
	h->rbuf[h->body_len] = '\0';
	call->resp_len = h->body_len;
	call->resp_truncated = h->rtrunc;
	long nconn = 0, status = 0;
	C.easy_getinfo(c, CURLINFO_NUM_CONNECTS, &nconn);
	C.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	call->connected = nconn > 0 || status > 0;
	if (e != CURLE_OK) {
		res->outcome = curl_error_is_permanent(e) ? EMBER__SEND_PERMANENT : EMBER__SEND_RETRY;
		res->server_down = connection_refused(h, e);
		if (e == CURLE_ABORTED_BY_CALLBACK)
			snprintf(res->message, sizeof(res->message), "cancelled");
		else
			snprintf(res->message, sizeof(res->message), "%s", h->errbuf[0] ? h->errbuf
											 : C.easy_strerror(e));
		return;
	}
	classify_status(h, status, res);
}

void ember__http_post(ember__http *h, const ember__http_request *rq, const _Atomic int *cancel,
		      ember__send_result *res)
{
	ember__http_call call = {.method = "POST", .url = rq->url, .headers = rq->headers,
				 .nheaders = rq->nheaders, .body = rq->body, .len = rq->len};
	ember__http_do(h, &call, cancel, res);
}

/* ---- helpers ---- */

int64_t ember__http_retry_after_ms(const char *v, time_t now)
{
	if (!v || !*v)
		return -1;
	if (isdigit((unsigned char)*v)) {
		char *end;
		unsigned long long secs = strtoull(v, &end, 10);
		while (*end == ' ')
			end++;
		if (*end)
			return -1;
		if (secs > 86400ULL * 365)
			secs = 86400ULL * 365;
		return (int64_t)secs * 1000;
	}
	if (ember__http_global_init())
		return -1;
	time_t when = C.getdate(v, NULL);
	if (when == (time_t)-1)
		return -1;
	return when <= now ? 0 : (int64_t)(when - now) * 1000;
}

/* Finds "key": "<string>" in a small JSON object; copies the unescaped string. */
static int json_string_field(const char *body, const char *key, char *out, size_t cap)
{
	char pat[32];
	snprintf(pat, sizeof(pat), "\"%s\"", key);
	const char *p = strstr(body, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p++ != ':')
		return 0;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p++ != '"')
		return 0;
	size_t n = 0;
	while (*p && *p != '"' && n + 1 < cap) {
		char c = *p++;
		if (c == '\\' && *p) {
			c = *p++;
			if (c == 'n' || c == 't' || c == 'r')
				c = ' ';
			else if (c == 'u') {
				c = '?';
				for (int i = 0; i < 4 && isxdigit((unsigned char)*p); i++)
					p++;
			}
		}
		out[n++] = (unsigned char)c < 0x20 ? ' ' : c;
	}
	out[n] = '\0';
	return 1;
}

/* Appends s to the string in out[cap], cutting it to fit (cap >= 1). */
static void append_cut(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out), k = strlen(s);
	if (k > cap - 1 - n)
		k = cap - 1 - n;
	memcpy(out + n, s, k);
	out[n + k] = '\0';
}

void ember__http_error_text(const char *body, size_t len, char *out, size_t cap)
{
	out[0] = '\0';
	if (!body || !len || cap < 2)
		return;
	char code[64], msg[256];
	size_t i = 0;
	while (i < len && isspace((unsigned char)body[i]))
		i++;
	if (i < len && body[i] == '{' && json_string_field(body, "message", msg, sizeof(msg))) {
		/* A longer text is cut at cap on purpose: it is only shown. */
		if (json_string_field(body, "code", code, sizeof(code))) {
			append_cut(out, cap, code);
			append_cut(out, cap, ": ");
		}
		append_cut(out, cap, msg);
		return;
	}
	size_t n = 0;
	for (; i < len && n + 1 < cap && body[i] != '\n'; i++)
		out[n++] = (unsigned char)body[i] < 0x20 || body[i] == 0x7f ? ' ' : body[i];
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

int ember__http_check_base_url(const char *url, const char *what)
{
	if (!url || !*url)
		return ember__error(EMBER_ERR_INVALID, "%s: the URL is empty", what);
	char shown[512]; /* messages show the URL without its secrets */
	ember__redact_url(url, shown, sizeof(shown));
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return ember__error(EMBER_ERR_INVALID, "%s: URL \"%s\" contains a space or a "
					    "control character", what, shown);
	int rc = ember__http_global_init();
	if (rc)
		return rc;
	CURLU *u = C.url();
	if (!u)
		return ember__error_oom("URL");
	char *scheme = NULL, *host = NULL, *user = NULL, *query = NULL, *frag = NULL;
	rc = 0;
	CURLUcode uc = C.url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
	if (uc != CURLUE_OK) {
		rc = ember__error(EMBER_ERR_INVALID, "%s: \"%s\" is not a valid URL (%s); expected "
				  "http(s)://host[:port][/path]", what, shown, C.url_strerror(uc));
		goto out;
	}
	C.url_get(u, CURLUPART_SCHEME, &scheme, 0);
	C.url_get(u, CURLUPART_HOST, &host, 0);
	C.url_get(u, CURLUPART_USER, &user, 0);
	C.url_get(u, CURLUPART_QUERY, &query, 0);
	C.url_get(u, CURLUPART_FRAGMENT, &frag, 0);
	if (!scheme || (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")))
		rc = ember__error(EMBER_ERR_INVALID, "%s: URL \"%s\" has scheme \"%s\"; only http and "
				  "https are supported", what, shown, scheme ? scheme : "");
	else if (!host || !*host)
		rc = ember__error(EMBER_ERR_INVALID, "%s: URL \"%s\" has no host", what, shown);
	else if (user)
		rc = ember__error(EMBER_ERR_INVALID, "%s: the URL carries credentials; give them as "
				  "basic auth options instead, so that they stay out of logs", what);
	else if (query || frag)
		rc = ember__error(EMBER_ERR_INVALID, "%s: URL \"%s\" has a query or fragment; give a "
				  "base URL such as https://host:4040/base/path", what, shown);
out:
	C.free(scheme);
	C.free(host);
	C.free(user);
	C.free(query);
	C.free(frag);
	C.url_cleanup(u);
	return rc;
}

static int is_tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

int ember__http_check_header(const char *line, size_t *name_len)
{
	if (!line)
		return ember__error(EMBER_ERR_INVALID, "header is NULL");
	char shown[160];
	size_t n = 0;
	while (is_tchar((unsigned char)line[n]))
		n++;
	if (n == 0 || line[n] != ':')
		return ember__error(EMBER_ERR_INVALID, "header \"%s\" is invalid: expected "
				    "\"Name: value\" with a name made of letters, digits and "
				    "!#$%%&'*+-.^_`|~", ember__redact_header(line, shown, sizeof(shown)));
	const char *v = line + n + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!*v)
		return ember__error(EMBER_ERR_INVALID, "header \"%.*s\" has no value", (int)n, line);
	for (const char *p = v; *p; p++)
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			return ember__error(EMBER_ERR_INVALID, "header \"%.*s\" contains a control "
					    "character (line breaks are not allowed)", (int)n, line);
	*name_len = n;
	return 0;
}

char *ember__base64(const void *in, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *s = in;
	char *out = malloc((n + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}
