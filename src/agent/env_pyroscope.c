/*
 * env_pyroscope.c - the environment variables of the Pyroscope reporter,
 * applied at the end of ember_builder_apply_env() (see docs/CONFIG.md,
 * section "Pyroscope", for every name, its format and where the
 * PYROSCOPE_* spellings come from).
 *
 * emberprof's own EMBERPROF_SERVER_* variables come first; the names
 * Pyroscope's other agents read (PYROSCOPE_SERVER_ADDRESS, ...) are used
 * where the EMBERPROF_* equivalent is unset. PYROSCOPE_* variables are
 * only looked at when a server URL is set (EMBERPROF_SERVER_URL or
 * PYROSCOPE_SERVER_ADDRESS): without one they may belong to another
 * agent. Every rejection names the variable; secrets are never echoed.
 *
 * Nothing here is async-signal-safe.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "report/local.h"
#include "report/pyroscope.h"
#include "upload/http.h"
#include "util/error.h"
#include "util/redact.h"
#include "util/envsnap.h"

#define MAX_ENV_HEADERS 64

typedef struct header_list {
	char *v[MAX_ENV_HEADERS];
	size_t n;
} header_list;

static void headers_free(header_list *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->v[i]);
	h->n = 0;
}

/* The message for a bad value; a secret's value is not shown. */
static int bad_var(const char *name, const char *value, int secret, const char *why)
{
	char shown[256];
	if (secret)
		return ember__error(EMBER_ERR_INVALID, "environment variable %s=" EMBER_REDACTED
				    " is invalid: %s", name, why);
	return ember__error(EMBER_ERR_INVALID, "environment variable %s=\"%.200s\" is invalid: %s",
			    name, ember__redact_value(name, value, shown, sizeof(shown)), why);
}

/* The same with the last error message as the reason. */
static int bad_var_last(const char *name, const char *value, int secret)
{
	char why[EMBER_ERROR_MAX];
	snprintf(why, sizeof(why), "%s", ember_last_error());
	return bad_var(name, value, secret, why);
}

/* A non-empty variable, or NULL. *which receives its name. */
static const char *env2(const char *ours, const char *theirs, const char **which)
{
	const char *v = ember__getenv(ours);
	if (v && *v) {
		*which = ours;
		return v;
	}
	v = theirs ? ember__getenv(theirs) : NULL;
	if (v && *v) {
		*which = theirs;
		return v;
	}
	*which = ours;
	return NULL;
}

static int set_env_default(const char *name)
{
	const char *v = ember__getenv(name);
	return v && *v;
}

/* ---- value parsers ---- */

/* Java agent intervals: N followed by ns, us, ms, s or m; a bare N is nanoseconds. */
static int parse_java_interval_ms(const char *s, unsigned *out)
{
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	double ms;
	if (!*end || !strcmp(end, "ns"))
		ms = (double)v / 1e6;
	else if (!strcmp(end, "us"))
		ms = (double)v / 1e3;
	else if (!strcmp(end, "ms"))
		ms = (double)v;
	else if (!strcmp(end, "s"))
		ms = (double)v * 1e3;
	else if (!strcmp(end, "m"))
		ms = (double)v * 6e4;
	else
		return -1;
	if (ms < 1 || ms > (double)UINT_MAX)
		return -1;
	*out = (unsigned)(ms + 0.5);
	return 0;
}

/* A byte size: N with an optional K, M or G (powers of 1024; "KiB", "MB"... also read). */
static int parse_size(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	uint64_t mul = 1;
	if (*end) {
		char u = (char)toupper((unsigned char)*end);
		mul = u == 'K' ? 1ull << 10 : u == 'M' ? 1ull << 20 : u == 'G' ? 1ull << 30 : 0;
		const char *rest = end + 1;
		if (!mul || !(!*rest || !strcasecmp(rest, "B") || !strcasecmp(rest, "iB")))
			return -1;
	}
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* A duration that may be "0" (off). */
static int parse_duration_or_zero(const char *s, unsigned *ms)
{
	if (!strcmp(s, "0")) {
		*ms = 0;
		return 0;
	}
	return ember__parse_duration_ms(s, ms);
}

/* Appends "Name: value" to the list after checking it. */
static int header_add(header_list *h, const char *name, size_t nl, const char *value, size_t vl)
{
	if (h->n == MAX_ENV_HEADERS)
		return ember__error(EMBER_ERR_INVALID, "more than %d headers", MAX_ENV_HEADERS);
	char *line = malloc(nl + vl + 3);
	if (!line)
		return ember__error_oom("header");
	memcpy(line, name, nl);
	memcpy(line + nl, ": ", 2);
	memcpy(line + nl + 2, value, vl);
	line[nl + 2 + vl] = '\0';
	size_t check_nl = 0;
	int rc = ember__http_check_header(line, &check_nl);
	if (rc == 0 && (strlen(line) != nl + 2 + vl || check_nl != nl))
		rc = ember__error(EMBER_ERR_INVALID, "header name \"%.*s\" is invalid", (int)nl, name);
	if (rc) {
		free(line);
		return rc;
	}
	h->v[h->n++] = line;
	return 0;
}

/* Reads a JSON string at *p (after the opening quote) into a malloc'd buffer. */
static char *json_string(const char **pp, size_t *len)
{
	const char *p = *pp;
	size_t cap = strlen(p) * 3 + 1, n = 0; /* \u escapes expand to at most 3 bytes each */
	char *out = malloc(cap);
	if (!out)
		return NULL;
	while (*p && *p != '"') {
		unsigned char c = (unsigned char)*p++;
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*p++;
		switch (c) {
		case '"': case '\\': case '/': out[n++] = (char)c; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'u': {
			unsigned cp = 0;
			for (int i = 0; i < 4; i++) {
				if (!isxdigit((unsigned char)*p)) {
					free(out);
					return NULL;
				}
				char h = *p++;
				cp = cp * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0'
										 : (tolower((unsigned char)h) - 'a' + 10));
			}
			if (cp >= 0xd800 && cp <= 0xdfff) {
				free(out);
				return NULL; /* surrogates: not in header values anyway */
			}
			if (cp < 0x80) {
				out[n++] = (char)cp;
			} else if (cp < 0x800) {
				out[n++] = (char)(0xc0 | cp >> 6);
				out[n++] = (char)(0x80 | (cp & 0x3f));
			} else {
				out[n++] = (char)(0xe0 | cp >> 12);
				out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[n++] = (char)(0x80 | (cp & 0x3f));
			}
			break;
		}
		default:
			free(out);
			return NULL;
		}
	}
	if (*p != '"') {
		free(out);
		return NULL;
	}
	out[n] = '\0';
	*len = n;
	*pp = p + 1;
	return out;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* {"Name": "value", ...}, as the Java agent's PYROSCOPE_HTTP_HEADERS. */
static int parse_json_headers(const char *s, header_list *h)
{
	const char *p = skip_ws(s);
	if (*p++ != '{')
		return ember__error(EMBER_ERR_INVALID, "expected a JSON object such as "
				    "{\"X-Header\": \"value\"}");
	p = skip_ws(p);
	if (*p == '}')
		return *skip_ws(p + 1) ? ember__error(EMBER_ERR_INVALID, "text after the JSON object")
				       : 0;
	for (;;) {
		size_t nl, vl;
		if (*p++ != '"')
			return ember__error(EMBER_ERR_INVALID, "expected a quoted header name");
		char *name = json_string(&p, &nl);
		if (!name)
			return ember__error(EMBER_ERR_INVALID, "bad JSON string");
		p = skip_ws(p);
		char *value = NULL;
		if (*p == ':') {
			p = skip_ws(p + 1);
			if (*p == '"') {
				p++;
				value = json_string(&p, &vl);
			}
		}
		if (!value) {
			free(name);
			return ember__error(EMBER_ERR_INVALID, "header values must be JSON strings");
		}
		int rc = header_add(h, name, nl, value, vl);
		free(name);
		free(value);
		if (rc)
			return rc;
		p = skip_ws(p);
		if (*p == ',') {
			p = skip_ws(p + 1);
			continue;
		}
		if (*p == '}' && !*skip_ws(p + 1))
			return 0;
		return ember__error(EMBER_ERR_INVALID, "malformed JSON object");
	}
}

/* JSON, or one "Name: value" per line (what `emberprof run --header` passes). */
static int parse_headers(const char *s, header_list *h)
{
	if (*skip_ws(s) == '{')
		return parse_json_headers(s, h);
	for (const char *p = s; *p;) {
		size_t len = strcspn(p, "\n");
		size_t end = len;
		while (end > 0 && (p[end - 1] == '\r' || p[end - 1] == ' '))
			end--;
		if (end > 0) {
			const char *colon = memchr(p, ':', end);
			if (!colon)
				return ember__error(EMBER_ERR_INVALID, "expected \"Name: value\" lines or a "
						    "JSON object");
			const char *v = colon + 1;
			while (v < p + end && (*v == ' ' || *v == '\t'))
				v++;
			int rc = header_add(h, p, (size_t)(colon - p), v, (size_t)(p + end - v));
			if (rc)
				return rc;
		}
		p += len + (p[len] == '\n');
	}
	return 0;
}

/* k=v or k:v pairs separated by commas (Java: '=', .NET: ':'). */
static int apply_labels(ember_builder *b, const char *name, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return ember__error_oom("labels");
	int rc = 0;
	for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ')
			item++;
		char *sep = strpbrk(item, "=:");
		if (!sep || sep == item) {
			rc = bad_var(name, list, 0, "expected key=value[,key=value...] (or key:value)");
			break;
		}
		*sep = '\0';
		char *k = item, *v = sep + 1;
		for (char *e = k + strlen(k); e > k && e[-1] == ' ';)
			*--e = '\0';
		while (*v == ' ')
			v++;
		for (char *e = v + strlen(v); e > v && e[-1] == ' ';)
			*--e = '\0';
		int dup = 0;
		for (size_t i = 0; i < b->cfg.ntags; i++)
			dup |= !strcmp(b->cfg.tags[i].key, k);
		if (dup)
			continue; /* already set, e.g. by EMBERPROF_TAGS, which wins */
		if (ember_builder_add_tag(b, k, v))
			rc = bad_var_last(name, list, 0);
	}
	free(copy);
	return rc;
}

/* PYROSCOPE_APPLICATION_NAME may be "name{k=v,...}", as the Java agent reads it. */
static int apply_app_name(ember_builder *b, const char *var, const char *v)
{
	const char *brace = strchr(v, '{');
	size_t n = brace ? (size_t)(brace - v) : strlen(v);
	if (n == 0)
		return bad_var(var, v, 0, "the application name is empty");
	char *name = strndup(v, n);
	if (!name)
		return ember__error_oom("application name");
	if (brace) {
		size_t len = strlen(brace);
		if (len < 2 || brace[len - 1] != '}') {
			free(name);
			return bad_var(var, v, 0, "expected name or name{key=value,...}");
		}
		char *labels = strndup(brace + 1, len - 2);
		int rc = labels ? (*labels ? apply_labels(b, var, labels) : 0)
				: ember__error_oom("labels");
		free(labels);
		if (rc) {
			free(name);
			return rc;
		}
	}
	free(b->cfg.app_name);
	b->cfg.app_name = name;
	return 0;
}

/* ---- the builder-level variables ---- */

static int apply_agent_vars(ember_builder *b)
{
	const char *v;
	unsigned long n;
	unsigned ms;
	if (!set_env_default("EMBERPROF_APP_NAME") && (v = ember__getenv("PYROSCOPE_APPLICATION_NAME")) && *v) {
		int rc = apply_app_name(b, "PYROSCOPE_APPLICATION_NAME", v);
		if (rc)
			return rc;
	}
	if (!ember__getenv("EMBERPROF_SAMPLE_RATE") && (v = ember__getenv("PYROSCOPE_SAMPLE_RATE")) && *v) {
		if (ember__parse_uint(v, 1, 10000, &n))
			return bad_var("PYROSCOPE_SAMPLE_RATE", v, 0, "expected a rate in Hz, 1..10000");
		b->cfg.hz = (unsigned)n;
	}
	if (!ember__getenv("EMBERPROF_INTERVAL") && (v = ember__getenv("PYROSCOPE_UPLOAD_INTERVAL")) && *v) {
		if (parse_java_interval_ms(v, &ms) || ms < 100 || ms > 3600000)
			return bad_var("PYROSCOPE_UPLOAD_INTERVAL", v, 0, "expected a duration such as "
				       "10s or 500ms (100ms..1h; a bare number is nanoseconds, as in "
				       "the Java agent)");
		b->cfg.interval_ms = ms;
	}
	if ((v = ember__getenv("PYROSCOPE_LABELS")) && *v) {
		int rc = apply_labels(b, "PYROSCOPE_LABELS", v);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the reporter's variables ---- */

typedef struct env_opts {
	ember_pyroscope_options o;
	header_list headers;
	const char *url_var;
} env_opts;

static int read_auth(env_opts *e, ember_builder *b)
{
	const char *ut = ember__getenv("EMBERPROF_SERVER_AUTH_TOKEN");
	const char *uu = ember__getenv("EMBERPROF_SERVER_BASIC_AUTH_USER");
	const char *up = ember__getenv("EMBERPROF_SERVER_BASIC_AUTH_PASSWORD");
	int ours = (ut && *ut) || (uu && *uu) || (up && *up);
	const char *tok_var = ours ? "EMBERPROF_SERVER_AUTH_TOKEN" : "PYROSCOPE_AUTH_TOKEN";
	const char *user_var = ours ? "EMBERPROF_SERVER_BASIC_AUTH_USER" : "PYROSCOPE_BASIC_AUTH_USER";
	const char *pass_var = ours ? "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD"
				    : "PYROSCOPE_BASIC_AUTH_PASSWORD";
	const char *tok = ember__getenv(tok_var), *user = ember__getenv(user_var), *pass = ember__getenv(pass_var);
	tok = tok && *tok ? tok : NULL;
	user = user && *user ? user : NULL;
	pass = pass && *pass ? pass : NULL;
	if (!!user != !!pass)
		return bad_var(user ? pass_var : user_var, "", 1, user ? "the basic auth user is set "
			       "but the password is not" : "the basic auth password is set but the "
			       "user is not");
	if (user && strchr(user, ':'))
		return bad_var(user_var, user, 0, "the user may not contain ':'");
	if (user && tok) {
		if (ours)
			return bad_var(tok_var, tok, 1, "give either a bearer token or basic auth, "
				       "not both");
		/* The Java agent's rule: basic auth wins. */
		ember__log(&b->cfg, EMBER_LOG_WARN, "PYROSCOPE_AUTH_TOKEN is ignored: basic auth "
			   "(PYROSCOPE_BASIC_AUTH_USER) is set too");
		tok = NULL;
	}
	for (const char *c = tok; c && *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return bad_var(tok_var, tok, 1, "the token contains a space or a control "
				       "character");
	e->o.bearer_token = tok;
	e->o.basic_auth_user = user;
	e->o.basic_auth_password = pass;
	return 0;
}

static int read_transport(env_opts *e)
{
	const char *v, *which;
	unsigned ms;
	unsigned long n;
	int x;
	if ((v = ember__getenv("EMBERPROF_SERVER_PROTOCOL")) && *v) {
		if (!strcmp(v, "push"))
			e->o.protocol = EMBER_PYROSCOPE_PUSH;
		else if (!strcmp(v, "ingest"))
			e->o.protocol = EMBER_PYROSCOPE_INGEST;
		else
			return bad_var("EMBERPROF_SERVER_PROTOCOL", v, 0, "expected push or ingest");
	}
	if ((v = env2("EMBERPROF_SERVER_TENANT_ID", "PYROSCOPE_TENANT_ID", &which))) {
		if (ember__pyroscope_check_tenant(v))
			return bad_var_last(which, v, 0);
		e->o.tenant_id = v;
	}
	if ((v = env2("EMBERPROF_SERVER_HEADERS", "PYROSCOPE_HTTP_HEADERS", &which))) {
		int rc = !strcmp(which, "PYROSCOPE_HTTP_HEADERS") && *skip_ws(v) != '{'
				 ? ember__error(EMBER_ERR_INVALID, "expected a JSON object such as "
						"{\"X-Header\": \"value\"}")
				 : parse_headers(v, &e->headers);
		if (rc)
			return bad_var_last(which, v, 1);
		e->o.headers = (const char *const *)e->headers.v;
		e->o.nheaders = e->headers.n;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_CA_FILE")) && *v) {
		if (access(v, R_OK) < 0)
			return bad_var("EMBERPROF_SERVER_CA_FILE", v, 0, strerror(errno));
		e->o.ca_file = v;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_INSECURE"))) {
		if (ember__parse_bool(v, &x))
			return bad_var("EMBERPROF_SERVER_INSECURE", v, 0, "expected 0 or 1");
		e->o.insecure = x;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_CONNECT_TIMEOUT")) && *v) {
		if (ember__parse_duration_ms(v, &ms) || ms > 600000)
			return bad_var("EMBERPROF_SERVER_CONNECT_TIMEOUT", v, 0, "expected a duration "
				       "such as 5s (at most 10m)");
		e->o.connect_timeout_ms = ms;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_TIMEOUT")) && *v) {
		if (ember__parse_duration_ms(v, &ms) || ms > 3600000)
			return bad_var("EMBERPROF_SERVER_TIMEOUT", v, 0, "expected a duration such as "
				       "30s (at most 1h)");
		e->o.timeout_ms = ms;
	} else if ((v = ember__getenv("PYROSCOPE_PROFILE_EXPORT_TIMEOUT")) && *v) {
		if (parse_java_interval_ms(v, &ms) || ms > 3600000)
			return bad_var("PYROSCOPE_PROFILE_EXPORT_TIMEOUT", v, 0, "expected a duration "
				       "such as 10s (a bare number is nanoseconds, as in the Java "
				       "agent)");
		e->o.timeout_ms = ms;
	}
	if (e->o.connect_timeout_ms && e->o.timeout_ms && e->o.connect_timeout_ms > e->o.timeout_ms)
		return bad_var("EMBERPROF_SERVER_CONNECT_TIMEOUT", ember__getenv("EMBERPROF_SERVER_CONNECT_TIMEOUT"),
			       0, "longer than the total timeout");
	if ((v = env2("EMBERPROF_SERVER_QUEUE_LEN", "PYROSCOPE_PUSH_QUEUE_CAPACITY", &which))) {
		if (ember__parse_uint(v, 1, 4096, &n))
			return bad_var(which, v, 0, "expected a number of windows, 1..4096");
		e->o.queue_len = (unsigned)n;
	}
	return 0;
}

static int read_delivery(env_opts *e)
{
	const char *v;
	unsigned ms;
	uint64_t sz;
	if ((v = ember__getenv("EMBERPROF_SERVER_SPOOL_DIR")) && *v) {
		int fd = ember__local_open_dir(v); /* creates it 0700, refuses symlinks */
		if (fd < 0)
			return bad_var_last("EMBERPROF_SERVER_SPOOL_DIR", v, 0);
		close(fd);
		e->o.spool_dir = v;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_SPOOL_MAX")) && *v) {
		if (parse_size(v, &sz) || sz < 65536)
			return bad_var("EMBERPROF_SERVER_SPOOL_MAX", v, 0, "expected a size such as "
				       "64M or 1G (at least 64K)");
		e->o.spool_max_bytes = sz;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_UPLOAD_JITTER")) && *v) {
		if (parse_duration_or_zero(v, &ms) || ms > 3600000)
			return bad_var("EMBERPROF_SERVER_UPLOAD_JITTER", v, 0, "expected a duration "
				       "such as 2s or 0 (at most 1h)");
		e->o.upload_jitter_ms = ms;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_FLUSH_TIMEOUT")) && *v) {
		if (ember__parse_duration_ms(v, &ms) || ms > 600000)
			return bad_var("EMBERPROF_SERVER_FLUSH_TIMEOUT", v, 0, "expected a duration "
				       "such as 5s (at most 10m)");
		e->o.flush_timeout_ms = ms;
	}
	if ((v = ember__getenv("EMBERPROF_SERVER_USER_AGENT")) && *v)
		e->o.user_agent_suffix = v;
	/* The server's validation.reject-older-than: "0" for a server that
	 * has it off (no limit), else a duration of whole seconds. */
	if ((v = ember__getenv("EMBERPROF_SERVER_MAX_AGE")) && *v) {
		if (!strcmp(v, "0")) {
			e->o.max_age_s = UINT_MAX;
		} else if (ember__parse_duration_ms(v, &ms) || ms < 60000 || ms % 1000) {
			return bad_var("EMBERPROF_SERVER_MAX_AGE", v, 0, "expected the server's "
				       "validation.reject-older-than as a duration of at least 1m, "
				       "such as 1h, or 0 for no limit");
		} else {
			e->o.max_age_s = (unsigned)(ms / 1000);
		}
	}
	return 0;
}

/* EMBERPROF_SERVER_* variables other than the URL, for the "no URL" check. */
static const char *const server_vars[] = {
	"EMBERPROF_SERVER_PROTOCOL",	   "EMBERPROF_SERVER_AUTH_TOKEN",
	"EMBERPROF_SERVER_BASIC_AUTH_USER", "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD",
	"EMBERPROF_SERVER_TENANT_ID",	   "EMBERPROF_SERVER_HEADERS",
	"EMBERPROF_SERVER_CA_FILE",	   "EMBERPROF_SERVER_INSECURE",
	"EMBERPROF_SERVER_CONNECT_TIMEOUT", "EMBERPROF_SERVER_TIMEOUT",
	"EMBERPROF_SERVER_SPOOL_DIR",	   "EMBERPROF_SERVER_SPOOL_MAX",
	"EMBERPROF_SERVER_QUEUE_LEN",	   "EMBERPROF_SERVER_UPLOAD_JITTER",
	"EMBERPROF_SERVER_FLUSH_TIMEOUT",   "EMBERPROF_SERVER_USER_AGENT",
	"EMBERPROF_SERVER_MAX_AGE",
};

int ember__pyroscope_apply_env(ember_builder *b)
{
	env_opts e;
	memset(&e, 0, sizeof(e));
	e.o.sz = sizeof(e.o);
	const char *url = env2("EMBERPROF_SERVER_URL", "PYROSCOPE_SERVER_ADDRESS", &e.url_var);
	if (!url) {
		for (size_t i = 0; i < sizeof(server_vars) / sizeof(server_vars[0]); i++) {
			const char *v = ember__getenv(server_vars[i]);
			if (v && *v)
				return ember__error(EMBER_ERR_INVALID, "environment variable %s is set but "
						    "EMBERPROF_SERVER_URL is not", server_vars[i]);
		}
		return 0;
	}
	if (ember__http_check_base_url(url, "Pyroscope server URL"))
		return bad_var_last(e.url_var, url, 0);
	e.o.url = url;
	int rc;
	if ((rc = apply_agent_vars(b)) || (rc = read_auth(&e, b)) || (rc = read_transport(&e)) ||
	    (rc = read_delivery(&e)))
		goto out;

	/* The name and tags as they stand now must fit the server's rules. */
	ember_tag *tags = calloc(b->cfg.ntags ? b->cfg.ntags : 1, sizeof(*tags));
	if (!tags) {
		rc = ember__error_oom("tags");
		goto out;
	}
	for (size_t i = 0; i < b->cfg.ntags; i++)
		tags[i] = (ember_tag){b->cfg.tags[i].key, b->cfg.tags[i].value};
	int asprof = b->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER;
	ember_agent_info info = {.app_name = b->cfg.app_name, .tags = tags, .ntags = b->cfg.ntags,
				 .thread_labels = b->cfg.thread_labels,
				 .interval_ms = b->cfg.interval_ms,
				 .wall_ms = asprof ? 0 : b->cfg.wall_ms,
				 .alloc = b->cfg.alloc_mean != 0,
				 .max_depth = b->cfg.max_depth};
	/* The async-profiler backend produces JFR, sent to /ingest?format=jfr. */
	if (asprof)
		e.o.formats = EMBER_FORMAT_JFR;
	rc = ember__pyroscope_check_info(&info, e.o.formats == EMBER_FORMAT_JFR ? EMBER__PYRO_JFR
										 : e.o.protocol);
	if (rc == 0)
		rc = ember__pyroscope_check_age(info.interval_ms, ember__pyroscope_max_age_ms(&e.o));
	free(tags);
	if (rc) {
		char why[EMBER_ERROR_MAX];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		rc = ember__error(rc, "the application name or tags do not suit Pyroscope (%s is set): "
				  "%s", e.url_var, why);
		goto out;
	}

	ember_reporter r;
	if ((rc = ember_reporter_pyroscope(&r, &e.o))) {
		rc = bad_var_last(e.url_var, url, 0);
		goto out;
	}
	if ((rc = ember_builder_add_reporter(b, &r)))
		r.destroy(r.userdata);
out:
	headers_free(&e.headers);
	return rc;
}
