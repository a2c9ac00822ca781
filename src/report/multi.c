/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multi.c - ember_reporter_multi(): one reporter that fans each window out
 * to several.
 *
 * Its formats are the union of its reporters'; each report goes only to
 * the reporters that take its format (0 meaning pprof, as everywhere).
 * All of them are called even when one fails, and the error names every
 * one that failed with its own message. bind() and stats() are forwarded
 * to each reporter that has them, destroy() to every one.
 *
 * Runs where the agent calls its reporters: report() and bind() on the
 * agent thread (or the builder's caller); stats() on any thread, reading
 * only what the inner reporters' stats() read. Not async-signal-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emberprof.h"
#include "report/pyroscope.h"
#include "util/error.h"

typedef struct multi_state {
	ember_reporter *r; /* copies, with names we own */
	size_t n;
	char *name;        /* "multi(a,b,...)" */
} multi_state;

static unsigned formats_of(const ember_reporter *r)
{
	return r->formats ? r->formats : EMBER_FORMAT_PPROF;
}

/* Appends "reporter <name>: <why>" to msg (cut to its size). */
static void add_failure(char *msg, size_t cap, const char *name, int rc)
{
	const char *why = ember_last_error()[0] ? ember_last_error() : ember_strerror(rc);
	size_t used = strlen(msg);
	if (used + 1 < cap)
		snprintf(msg + used, cap - used, "%sreporter %s: %s", used ? "; " : "", name, why);
}

static int multi_report(void *userdata, const ember_report *rep)
{
	multi_state *m = userdata;
	char msg[EMBER_ERROR_MAX] = "";
	int failed = 0;
	unsigned format = rep->format ? rep->format : EMBER_FORMAT_PPROF; /* 0: as before 0.2 */
	for (size_t i = 0; i < m->n; i++) {
		ember_reporter *r = &m->r[i];
		if (!(formats_of(r) & format))
			continue;
		ember__error_clear();
		int rc = r->report(r->userdata, rep);
		if (rc) {
			failed++;
			add_failure(msg, sizeof(msg), r->name, rc);
		}
	}
	if (failed)
		return ember__error(EMBER_ERR_REPORTER, "%s", msg);
	return 0;
}

static int multi_bind(void *userdata, const ember_agent_info *info)
{
	multi_state *m = userdata;
	for (size_t i = 0; i < m->n; i++) {
		ember_reporter *r = &m->r[i];
		if (!r->bind)
			continue;
		ember__error_clear();
		int rc = r->bind(r->userdata, info);
		if (rc) {
			char msg[EMBER_ERROR_MAX] = "";
			add_failure(msg, sizeof(msg), r->name, rc);
			return ember__error(rc < 0 ? rc : EMBER_ERR_REPORTER, "%s", msg);
		}
	}
	return 0;
}

static void multi_stats(void *userdata, ember_stats *acc)
{
	multi_state *m = userdata;
	for (size_t i = 0; i < m->n; i++)
		if (m->r[i].stats)
			m->r[i].stats(m->r[i].userdata, acc);
}

static void multi_destroy(void *userdata)
{
	multi_state *m = userdata;
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		if (m->r[i].destroy)
			m->r[i].destroy(m->r[i].userdata);
		free((char *)m->r[i].name);
	}
	free(m->r);
	free(m->name);
	free(m);
}

/* Destroys reporters the multi-reporter was given but could not keep. */
static void destroy_given(const ember_reporter *reporters, size_t n)
{
	for (size_t i = 0; reporters && i < n; i++)
		if (reporters[i].destroy)
			reporters[i].destroy(reporters[i].userdata);
}

static int fail(const ember_reporter *reporters, size_t n, int rc)
{
	char msg[EMBER_ERROR_MAX];
	snprintf(msg, sizeof(msg), "%s", ember_last_error());
	destroy_given(reporters, n);
	return ember__error(rc, "%s", msg); /* destroy() may have set another message */
}

EMBER_API int ember_reporter_multi(ember_reporter *out, const ember_reporter *reporters, size_t n)
{
	if (!out) {
		ember__error(EMBER_ERR_INVALID, "ember_reporter_multi: out is NULL");
		return fail(reporters, n, EMBER_ERR_INVALID);
	}
	memset(out, 0, sizeof(*out));
	if (!reporters || n == 0) {
		ember__error(EMBER_ERR_INVALID, "ember_reporter_multi: no reporters");
		return fail(reporters, n, EMBER_ERR_INVALID);
	}
	for (size_t i = 0; i < n; i++)
		if (!reporters[i].report) {
			ember__error(EMBER_ERR_INVALID,
				     "ember_reporter_multi: reporter %zu (%s) has no report callback", i,
				     reporters[i].name ? reporters[i].name : "unnamed");
			return fail(reporters, n, EMBER_ERR_INVALID);
		}
	multi_state *m = calloc(1, sizeof(*m));
	if (!m || !(m->r = calloc(n, sizeof(*m->r)))) {
		free(m);
		ember__error_oom("multi reporter");
		return fail(reporters, n, EMBER_ERR_NOMEM);
	}
	size_t namelen = sizeof("multi()");
	for (size_t i = 0; i < n; i++) {
		m->r[i] = reporters[i];
		m->r[i].name = strdup(reporters[i].name ? reporters[i].name : "reporter");
		if (!m->r[i].name) {
			for (size_t j = 0; j < i; j++)
				free((char *)m->r[j].name);
			free(m->r);
			free(m);
			ember__error_oom("multi reporter");
			return fail(reporters, n, EMBER_ERR_NOMEM);
		}
		namelen += strlen(m->r[i].name) + 1;
		out->formats |= formats_of(&m->r[i]);
		if (reporters[i].bind)
			out->bind = multi_bind;
		if (reporters[i].stats)
			out->stats = multi_stats;
	}
	m->n = n;
	m->name = malloc(namelen);
	if (!m->name) {
		m->n = 0; /* the reporters are destroyed below, once */
		for (size_t j = 0; j < n; j++)
			free((char *)m->r[j].name);
		multi_destroy(m);
		memset(out, 0, sizeof(*out));
		ember__error_oom("multi reporter");
		return fail(reporters, n, EMBER_ERR_NOMEM);
	}
	size_t k = (size_t)sprintf(m->name, "multi(");
	for (size_t i = 0; i < n; i++)
		k += (size_t)sprintf(m->name + k, "%s%s", i ? "," : "", m->r[i].name);
	sprintf(m->name + k, ")");
	out->name = m->name;
	out->report = multi_report;
	out->destroy = multi_destroy;
	out->userdata = m;
	return 0;
}

/* The smallest depth cap of the reporters inside a multi reporter (0: none). */
unsigned ember__multi_max_depth(const ember_reporter *r)
{
	if (!r || r->report != multi_report)
		return 0;
	const multi_state *m = r->userdata;
	unsigned cap = 0;
	for (size_t i = 0; i < m->n; i++) {
		unsigned c = ember__reporter_max_depth(&m->r[i]);
		if (c && (!cap || c < cap))
			cap = c;
	}
	return cap;
}
