/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_env.c - the OTLP reporter's environment, applied at the end of
 * ember_builder_apply_env() (docs/CONFIG.md, section "OpenTelemetry"),
 * read as the OpenTelemetry specification says (specification/protocol/
 * exporter.md, configuration/sdk-environment-variables.md):
 *
 *   EMBERPROF_OTLP_URL   (`--otlp URL`) the collector's base URL; the
 *                        signal's path /v1development/profiles is appended
 *   OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT  the endpoint, used as is
 *   OTEL_EXPORTER_OTLP_ENDPOINT           the base URL (path appended)
 *   EMBERPROF_OTLP=on    turns the reporter on with the OTEL_* endpoint
 *                        (default http://localhost:4318)
 *   OTEL_EXPORTER_OTLP_[PROFILES_]PROTOCOL     http/protobuf (the only one)
 *   OTEL_EXPORTER_OTLP_[PROFILES_]HEADERS      key=value,... (percent-decoded)
 *   OTEL_EXPORTER_OTLP_[PROFILES_]COMPRESSION  gzip or none
 *   OTEL_EXPORTER_OTLP_[PROFILES_]TIMEOUT      milliseconds (default 10000)
 *   OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
 *   EMBERPROF_OTLP_SPOOL_DIR  keep undelivered windows here
 *
 * The reporter is on when EMBERPROF_OTLP_URL, OTEL_EXPORTER_OTLP_PROFILES_
 * ENDPOINT or EMBERPROF_OTLP=on is set: OTEL_EXPORTER_OTLP_ENDPOINT alone,
 * often set for a program's traces, does not start sending profiles.
 * Precedence: the option (EMBERPROF_OTLP_URL) over the signal's variable
 * over the generic one; a signal-specific HEADERS replaces the generic
 * list. Every variable is read from the start-up snapshot
 * (ember__getenv); every rejection names the variable. Not
 * async-signal-safe.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report/otlp.h"
#include "util/envsnap.h"
#include "util/error.h"

#define MAX_PAIRS 64

static const char *var(const char *name)
{
	const char *v = ember__getenv(name);
	return v && *v ? v : NULL;
}

/* The signal's variable if set, else the generic one; *which names it. */
static const char *pick(const char *signal, const char *generic, const char **which)
{
	const char *v = var(signal);
	*which = signal;
	if (!v) {
		v = var(generic);
		*which = generic;
	}
	return v;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* Trims s[0..n) and percent-decodes it into a malloc'd string; NULL with
 * *bad set on a bad escape (or OOM: *bad 0). */
static char *decode(const char *s, size_t n, int *bad)
{
	*bad = 0;
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	char *o = malloc(n + 1);
	if (!o)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (i + 2 >= n) {
				*bad = 1;
				free(o);
				return NULL;
			}
			int a = hexval((unsigned char)s[i + 1]), b = hexval((unsigned char)s[i + 2]);
			if (a < 0 || b < 0 || (a == 0 && b == 0)) {
				*bad = 1;
				free(o);
				return NULL;
			}
			o[k++] = (char)(a * 16 + b);
			i += 2;
		} else {
			o[k++] = s[i];
		}
	}
	o[k] = '\0';
	return o;
}

typedef struct pairs {
	char *key[MAX_PAIRS], *value[MAX_PAIRS];
	size_t n;
} pairs;

static void pairs_free(pairs *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->key[i]);
		free(p->value[i]);
	}
	p->n = 0;
}

/* Parses "k=v,k2=v2" (W3C Baggage without properties) from variable name. */
static int parse_pairs(const char *name, const char *s, pairs *out)
{
	out->n = 0;
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *eq = memchr(s, '=', len);
		int bad = 0;
		int blank = 1;
		for (size_t i = 0; i < len; i++)
			blank &= isspace((unsigned char)s[i]) != 0;
		if (!blank) {
			if (!eq)
				return ember__error(EMBER_ERR_INVALID, "environment variable %s: entry "
						    "\"%.*s\" is not key=value", name, (int)len, s);
			if (out->n == MAX_PAIRS)
				return ember__error(EMBER_ERR_INVALID, "environment variable %s: more "
						    "than %d entries", name, MAX_PAIRS);
			char *k = decode(s, (size_t)(eq - s), &bad);
			char *v = k ? decode(eq + 1, len - (size_t)(eq - s) - 1, &bad) : NULL;
			if (!k || !v || !*k) {
				int empty = k && v && !*k;
				free(k);
				free(v);
				if (!bad && !empty)
					return ember__error_oom(name);
				return ember__error(EMBER_ERR_INVALID, "environment variable %s: entry "
						    "\"%.*s\" has %s", name, (int)len, s,
						    empty ? "an empty key" : "a bad %-escape");
			}
			out->key[out->n] = k;
			out->value[out->n++] = v;
		}
		if (!end)
			break;
		s = end + 1;
	}
	return 0;
}

/* An HTTP header name: an RFC 9110 token. */
static int token(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return 0;
	return 1;
}

int ember__otlp_apply_env(ember_builder *b)
{
	const char *opt = var("EMBERPROF_OTLP_URL"), *sig = var("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	const char *on = var("EMBERPROF_OTLP");
	int enabled = opt || sig;
	if (on) {
		if (!strcasecmp(on, "on") || !strcmp(on, "1") || !strcasecmp(on, "true"))
			enabled = 1;
		else if (strcasecmp(on, "off") && strcmp(on, "0") && strcasecmp(on, "false"))
			return ember__error(EMBER_ERR_INVALID, "environment variable EMBERPROF_OTLP: "
					    "\"%s\" is not on or off", on);
	}
	if (!enabled)
		return 0;
	char *url = NULL;
	const char *url_var;
	if (opt || !sig) {
		const char *base = opt ? opt : var("OTEL_EXPORTER_OTLP_ENDPOINT");
		url_var = opt ? "EMBERPROF_OTLP_URL (--otlp)" : base ? "OTEL_EXPORTER_OTLP_ENDPOINT"
								       : "the default endpoint";
		if (!base)
			base = "http://localhost:4318";
		size_t n = strlen(base);
		const char *path = EMBER_OTLP_HTTP_PATH;
		if (n && base[n - 1] == '/')
			path++; /* the base's own slash stands for the path's */
		if (asprintf(&url, "%s%s", base, path) < 0)
			return ember__error_oom("OTLP URL");
	} else {
		url_var = "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT";
		if (!(url = strdup(sig)))
			return ember__error_oom("OTLP URL");
	}
	char what[128];
	snprintf(what, sizeof(what), "environment variable %s", url_var);
	ember__otlp_options o = {.url = url, .what = what};
	int rc = 0;
	pairs hp = {0}, rp = {0};
	char *lines[MAX_PAIRS] = {0};
	ember__otlp_attr attrs[MAX_PAIRS];
	const char *which;

	const char *v = pick("OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL",
			     &which);
	if (v && strcmp(v, "http/protobuf")) {
		rc = ember__error(EMBER_ERR_INVALID, "environment variable %s: \"%s\": emberprof "
				  "sends profiles over http/protobuf only (set "
				  "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL=http/protobuf)", which, v);
		goto out;
	}
	v = pick("OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION",
			     "OTEL_EXPORTER_OTLP_COMPRESSION", &which);
	if (v && !strcmp(v, "gzip"))
		o.gzip = 1;
	else if (v && strcmp(v, "none")) {
		rc = ember__error(EMBER_ERR_INVALID, "environment variable %s: \"%s\" is not gzip or "
				  "none", which, v);
		goto out;
	}
	if ((v = pick("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", &which))) {
		char *end;
		unsigned long t = strtoul(v, &end, 10);
		if (*end || end == v || t == 0 || t > 3600000) {
			rc = ember__error(EMBER_ERR_INVALID, "environment variable %s: \"%s\" is not "
					  "a timeout in milliseconds (1..3600000)", which, v);
			goto out;
		}
		o.timeout_ms = (unsigned)t;
	}
	if ((v = pick("OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS", &which))) {
		if ((rc = parse_pairs(which, v, &hp)))
			goto out;
		for (size_t i = 0; i < hp.n; i++) {
			if (!token(hp.key[i])) {
				rc = ember__error(EMBER_ERR_INVALID, "environment variable %s: \"%s\" "
						  "is not a header name", which, hp.key[i]);
				goto out;
			}
			if (asprintf(&lines[i], "%s: %s", hp.key[i], hp.value[i]) < 0) {
				lines[i] = NULL;
				rc = ember__error_oom(which);
				goto out;
			}
		}
		o.headers = (const char *const *)lines;
		o.nheaders = hp.n;
	}
	if ((v = var("OTEL_RESOURCE_ATTRIBUTES"))) {
		if ((rc = parse_pairs("OTEL_RESOURCE_ATTRIBUTES", v, &rp)))
			goto out;
		for (size_t i = 0; i < rp.n; i++) {
			if (!strcmp(rp.key[i], "service.name"))
				o.service_name = rp.value[i];
			else
				attrs[o.nresource++] = (ember__otlp_attr){rp.key[i], rp.value[i], 0};
		}
		o.resource = attrs;
	}
	if ((v = var("OTEL_SERVICE_NAME")))
		o.service_name = v;
	o.spool_dir = var("EMBERPROF_OTLP_SPOOL_DIR");
	ember_reporter r;
	if ((rc = ember__reporter_otlp(&r, &o)))
		goto out;
	if ((rc = ember_builder_add_reporter(b, &r)) && r.destroy)
		r.destroy(r.userdata);
out:
	for (size_t i = 0; i < MAX_PAIRS; i++)
		free(lines[i]);
	pairs_free(&hp);
	pairs_free(&rp);
	free(url);
	return rc;
}
