/* SPDX-License-Identifier: Apache-2.0 */
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
 * Every variable is a row of the table in options.c (how it is parsed,
 * its message, where it goes); this file holds what the rows cannot say:
 * which server URL, the auth rules across variables, the header and
 * label syntaxes, and the reporter itself. Nothing here is
 * async-signal-safe.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/options.h"
#include "report/local.h"
#include "report/pyroscope.h"
#include "upload/http.h"
#include "util/error.h"

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

/* ---- value parsers ---- */

/* Java agent intervals: N followed by ns, us, ms, s or m; a bare N is nanoseconds. */
int ember__pyro_parse_java_interval(const char *s, ember__opt_value *out)
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
	out->u = (unsigned)(ms + 0.5);
	return 0;
}

/* A byte size: N with an optional K, M or G (powers of 1024; "KiB", "MB"... also read). */
int ember__pyro_parse_size(const char *s, ember__opt_value *out)
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
	out->u = v * mul;
	return 0;
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
static int add_labels(ember_builder *b, const char *name, const char *list)
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
			rc = ember__opt_bad(name, list, 0, "expected key=value[,key=value...] (or key:value)");
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
			rc = ember__opt_bad_last(name, list, 0);
	}
	free(copy);
	return rc;
}

/* PYROSCOPE_LABELS. */
int ember__pyro_apply_labels(ember__opt_ctx *c, const ember__option *o, const char *v,
			     ember__opt_value x)
{
	(void)x;
	return add_labels(c->b, o->name, v);
}

/* PYROSCOPE_APPLICATION_NAME may be "name{k=v,...}", as the Java agent reads it. */
int ember__pyro_apply_app_name(ember__opt_ctx *c, const ember__option *o, const char *v,
			       ember__opt_value x)
{
	(void)x;
	const char *var = o->name;
	const char *brace = strchr(v, '{');
	size_t n = brace ? (size_t)(brace - v) : strlen(v);
	if (n == 0)
		return ember__opt_bad(var, v, 0, "the application name is empty");
	char *name = strndup(v, n);
	if (!name)
		return ember__error_oom("application name");
	if (brace) {
		size_t len = strlen(brace);
		if (len < 2 || brace[len - 1] != '}') {
			free(name);
			return ember__opt_bad(var, v, 0, "expected name or name{key=value,...}");
		}
		char *labels = strndup(brace + 1, len - 2);
		int rc = labels ? (*labels ? add_labels(c->b, var, labels) : 0)
				: ember__error_oom("labels");
		free(labels);
		if (rc) {
			free(name);
			return rc;
		}
	}
	free(c->b->cfg.app_name);
	c->b->cfg.app_name = name;
	return 0;
}

/* ---- the reporter's variables ---- */

/* The SERVER rows' target: the options first (the rows' offsets). */
typedef struct env_opts {
	ember_pyroscope_options o;
	header_list headers;
	const ember__option *url_var;
} env_opts;

int ember__pyro_apply_tenant(ember__opt_ctx *c, const ember__option *o, const char *v,
			     ember__opt_value x)
{
	(void)x;
	if (ember__pyroscope_check_tenant(v))
		return ember__opt_bad_last(o->name, v, 0);
	((env_opts *)c->target)->o.tenant_id = v;
	return 0;
}

/* EMBERPROF_SERVER_HEADERS: JSON or "Name: value" lines; PYROSCOPE_HTTP_HEADERS: JSON. */
int ember__pyro_apply_headers(ember__opt_ctx *c, const ember__option *o, const char *v,
			      ember__opt_value x)
{
	(void)x;
	env_opts *e = c->target;
	int rc = (o->flags & EMBER__OPTF_FOREIGN) && *skip_ws(v) != '{'
			 ? ember__error(EMBER_ERR_INVALID, "expected a JSON object such as "
					"{\"X-Header\": \"value\"}")
			 : parse_headers(v, &e->headers);
	if (rc)
		return ember__opt_bad_last(o->name, v, 1);
	e->o.headers = (const char *const *)e->headers.v;
	e->o.nheaders = e->headers.n;
	return 0;
}

int ember__pyro_apply_spool_dir(ember__opt_ctx *c, const ember__option *o, const char *v,
				ember__opt_value x)
{
	(void)x;
	int fd = ember__local_open_dir(v); /* creates it 0700, refuses symlinks */
	if (fd < 0)
		return ember__opt_bad_last(o->name, v, 0);
	close(fd);
	((env_opts *)c->target)->o.spool_dir = v;
	return 0;
}

/* The auth variables, one set: ours if any of ours is set, else Pyroscope's. */
static int read_auth(env_opts *e, ember_builder *b)
{
	static const char *const names[2][3] = {
		{"EMBERPROF_SERVER_AUTH_TOKEN", "EMBERPROF_SERVER_BASIC_AUTH_USER",
		 "EMBERPROF_SERVER_BASIC_AUTH_PASSWORD"},
		{"PYROSCOPE_AUTH_TOKEN", "PYROSCOPE_BASIC_AUTH_USER", "PYROSCOPE_BASIC_AUTH_PASSWORD"}};
	int ours = ember__opt_is_set(names[0][0]) || ember__opt_is_set(names[0][1]) ||
		   ember__opt_is_set(names[0][2]);
	const char *const *set = names[ours ? 0 : 1];
	const char *tok_var = set[0], *user_var = set[1], *pass_var = set[2];
	const char *tok = ember__opt_getenv(ember__opt_find(tok_var));
	const char *user = ember__opt_getenv(ember__opt_find(user_var));
	const char *pass = ember__opt_getenv(ember__opt_find(pass_var));
	if (!!user != !!pass)
		return ember__opt_bad(user ? pass_var : user_var, "", 1, user ? "the basic auth user is "
				      "set but the password is not" : "the basic auth password is set "
				      "but the user is not");
	if (user && strchr(user, ':'))
		return ember__opt_bad(user_var, user, 0, "the user may not contain ':'");
	if (user && tok) {
		if (ours)
			return ember__opt_bad(tok_var, tok, 1, "give either a bearer token or basic "
					      "auth, not both");
		/* The Java agent's rule: basic auth wins. */
		ember__log(&b->cfg, EMBER_LOG_WARN, "PYROSCOPE_AUTH_TOKEN is ignored: basic auth "
			   "(PYROSCOPE_BASIC_AUTH_USER) is set too");
		tok = NULL;
	}
	for (const char *c = tok; c && *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return ember__opt_bad(tok_var, tok, 1, "the token contains a space or a "
					      "control character");
	e->o.bearer_token = tok;
	e->o.basic_auth_user = user;
	e->o.basic_auth_password = pass;
	return 0;
}

/* The reporter's variables other than the URL and auth: the table's SERVER rows. */
static int read_settings(env_opts *e, ember_builder *b)
{
	ember__opt_ctx c = {.b = b, .target = e};
	int rc = ember__options_apply(&c, EMBER__OPT_SERVER);
	if (rc)
		return rc;
	if (e->o.connect_timeout_ms && e->o.timeout_ms && e->o.connect_timeout_ms > e->o.timeout_ms)
		return ember__opt_bad("EMBERPROF_SERVER_CONNECT_TIMEOUT",
				      ember__opt_getenv(ember__opt_find(
					      "EMBERPROF_SERVER_CONNECT_TIMEOUT")), 0,
				      "longer than the total timeout");
	return 0;
}

/* The first of our SERVER variables set without a URL, or NULL. */
static const char *server_var_without_url(void)
{
	for (size_t i = 0; i < ember__noptions; i++) {
		const ember__option *o = &ember__options[i];
		if (o->reader == EMBER__OPT_SERVER && !(o->flags & EMBER__OPTF_FOREIGN) &&
		    strcmp(o->name, "EMBERPROF_SERVER_URL") && ember__opt_is_set(o->name))
			return o->name;
	}
	return NULL;
}

/* The name and tags as they stand now must fit the server's rules. */
static int check_name_and_tags(const env_opts *e, ember_builder *b)
{
	ember_tag *tags = calloc(b->cfg.ntags ? b->cfg.ntags : 1, sizeof(*tags));
	if (!tags)
		return ember__error_oom("tags");
	for (size_t i = 0; i < b->cfg.ntags; i++)
		tags[i] = (ember_tag){b->cfg.tags[i].key, b->cfg.tags[i].value};
	int asprof = b->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER;
	ember_agent_info info = {.app_name = b->cfg.app_name, .tags = tags, .ntags = b->cfg.ntags,
				 .thread_labels = b->cfg.thread_labels,
				 .interval_ms = b->cfg.interval_ms,
				 .wall_ms = asprof ? 0 : b->cfg.wall_ms,
				 .alloc = b->cfg.alloc_mean != 0,
				 .max_depth = b->cfg.max_depth};
	int rc = ember__pyroscope_check_info(&info, e->o.formats == EMBER_FORMAT_JFR
							    ? EMBER__PYRO_JFR
							    : e->o.protocol);
	if (rc == 0)
		rc = ember__pyroscope_check_age(info.interval_ms, ember__pyroscope_max_age_ms(&e->o));
	free(tags);
	if (rc) {
		char why[EMBER_ERROR_MAX];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		rc = ember__error(rc, "the application name or tags do not suit Pyroscope (%s is set): "
				  "%s", e->url_var->name, why);
	}
	return rc;
}

int ember__pyroscope_apply_env(ember_builder *b)
{
	env_opts e;
	memset(&e, 0, sizeof(e));
	e.o.sz = sizeof(e.o);
	const char *url;
	ember__opt_value x;
	int rc = ember__opt_read2(ember__opt_find("EMBERPROF_SERVER_URL"),
				  ember__opt_find("PYROSCOPE_SERVER_ADDRESS"), &e.url_var, &url, &x);
	if (rc < 0)
		return rc;
	if (!url) {
		const char *stray = server_var_without_url();
		if (stray)
			return ember__error(EMBER_ERR_INVALID, "environment variable %s is set but "
					    "EMBERPROF_SERVER_URL is not", stray);
		return 0;
	}
	if (ember__http_check_base_url(url, "Pyroscope server URL"))
		return ember__opt_bad_last(e.url_var->name, url, 0);
	e.o.url = url;
	ember__opt_ctx app = {.b = b, .target = &b->cfg};
	if ((rc = ember__options_apply(&app, EMBER__OPT_PYRO_APP)) || (rc = read_auth(&e, b)) ||
	    (rc = read_settings(&e, b)))
		goto out;
	/* The async-profiler backend produces JFR, sent to /ingest?format=jfr. */
	if (b->cfg.backend == EMBER_BACKEND_ASYNC_PROFILER)
		e.o.formats = EMBER_FORMAT_JFR;
	if ((rc = check_name_and_tags(&e, b)))
		goto out;
	ember_reporter r;
	if ((rc = ember_reporter_pyroscope(&r, &e.o))) {
		rc = ember__opt_bad_last(e.url_var->name, url, 0);
		goto out;
	}
	if ((rc = ember_builder_add_reporter(b, &r)))
		r.destroy(r.userdata);
out:
	headers_free(&e.headers);
	return rc;
}
